"""The hybrid memory's search with its query embedded beside the keyword side
(himga.memory.beside): what an interrupt in the caller, another connection's write and the
interpreter's exit do to it while the embedding or the scan beside is under way. Every ordering
is forced with events."""

import dataclasses
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from himga.data.conversation import Message, Session
from himga.memory import hybrid
from himga.memory.beside import QueryVector
from himga.memory.hybrid import HybridIndex
from himga.memory.hybrid_options import HybridOptions
from himga.memory.hybrid_sqlite import HybridSQLiteMemory
from himga.memory.vectors import Gathered, SharedNearest, VectorIndex
from tests.memory.test_hybrid import SAID, SESSION

QUERY = "Where did Caroline go?"
GUARD = 30
"""Seconds an event is waited for before the test calls it a hang (not a speed limit)."""


def said(messages: Sequence[Message] = SAID) -> list[tuple[Message, Session]]:
    return [(message, SESSION) for message in messages]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "hybrid.sqlite3"


@pytest.fixture
def sketched(path: Path) -> Iterator[HybridSQLiteMemory]:
    """A memory whose vectors are sketched, and more of them than a search's candidates, so
    that its scan may run beside the keyword side."""
    notes = [Message(role="Ada", content=f"Garden note {i}.", turn_id=f"N{i}") for i in range(20)]
    options = HybridOptions(sketch_threshold=8, sketch_fetch=1, sketch_per_hit=2, dense_depth=10)
    with HybridSQLiteMemory(path, options) as memory:
        memory.store(said([*SAID, *notes]))
        assert memory._index.vectors.sketched  # type: ignore[attr-defined]
        yield memory


def interrupted_once_while_waiting(
    monkeypatch: pytest.MonkeyPatch, armed: threading.Event, release: threading.Event
) -> None:
    """The test's thread gets a KeyboardInterrupt (as from Ctrl-C) in its first blocking wait
    once `armed` is set; any later wait of that thread first sets `release`."""
    wait = threading.Condition.wait
    caller = threading.get_ident()
    raised: list[bool] = []

    def interrupted(self: threading.Condition, timeout: float | None = None) -> bool:
        if threading.get_ident() == caller and armed.is_set():
            if not raised:
                raised.append(True)
                raise KeyboardInterrupt
            release.set()
        return wait(self, timeout)

    monkeypatch.setattr(threading.Condition, "wait", interrupted)


@pytest.mark.parametrize("where", ["embedded first", "ranked deeper"])
def test_an_interrupt_while_the_scan_runs_beside_holds_the_lock_until_it_ends(
    sketched: HybridSQLiteMemory, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """The scan beside reads the index the caller's lock guards: a KeyboardInterrupt raised in
    the caller while it waits for the scan still lets the lock go only once the scan ends (a
    writer let in sooner changes the arrays the scan is reading)."""
    answered = [hit.turn_id for hit in sketched.search(QUERY)]
    scanning, release = threading.Event(), threading.Event()
    scans: list[str] = []
    share, best = SharedNearest.share, HybridIndex.best

    def shared(self: SharedNearest, then: Callable[[], object] | None = None) -> object:
        scans.append("started")  # the part of the thread that began the scan
        scanning.set()
        assert release.wait(GUARD)
        found = share(self, then)
        scans.append("ended")
        return found

    def keyword_side(self: HybridIndex, *args: object) -> object:
        assert scanning.wait(GUARD)  # the keyword side ends while the scan runs beside
        return best(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(SharedNearest, "share", shared)
    monkeypatch.setattr(HybridIndex, "best", keyword_side)
    interrupted_once_while_waiting(monkeypatch, scanning, release)
    index = sketched._vectors
    with pytest.raises(KeyboardInterrupt):
        if where == "embedded first":  # the scan after the embedding, on its thread
            sketched.search(QUERY)
        else:  # the scan of a search ranked again (deeper, or on a changed index)
            with sketched._lock.reading():
                vector = sketched._query_vector(QUERY, set())
                index.ranked(["caroline"], vector, 5, None, sketched._fusion)
    seen = list(scans)
    release.set()
    assert seen == ["started", "ended"]  # the caller waited for the scan before it let go
    monkeypatch.undo()
    assert [hit.turn_id for hit in sketched.search(QUERY)] == answered  # and it serves on


def test_an_interrupt_after_the_caller_said_it_waits_holds_the_lock_until_the_scan_ends(
    sketched: HybridSQLiteMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the model in process the caller, its keyword side ranked, says it waits for the
    vector, and the scan then begins on the model's thread once the vector is made: a
    KeyboardInterrupt landing in the caller just after that still lets the lock go only once
    the scan, and the statistics its thread reads after it, have ended."""
    assert sketched.embedder.in_process
    answered = [hit.turn_id for hit in sketched.search(QUERY)]
    events: list[str] = []
    go = threading.Event()
    embed, share, ranked = (
        type(sketched.embedder).embed_queries,
        SharedNearest.share,
        QueryVector.ranked,
    )

    def held(self: object, texts: Sequence[str]) -> object:
        assert go.wait(GUARD)  # the vector is made after the caller said it waits
        return embed(self, texts)  # type: ignore[arg-type]

    def shared(self: SharedNearest, then: Callable[[], object] | None = None) -> object:
        events.append("scan started")
        found = share(self, then)
        events.append("scan and statistics ended")
        return found

    def interrupted(self: QueryVector, wait: bool = False) -> bool:
        said = ranked(self, wait)
        if wait:  # an interrupt as the caller learns the scan will run beside
            threading.Timer(0.1, go.set).start()
            raise KeyboardInterrupt
        return said

    monkeypatch.setattr(type(sketched.embedder), "embed_queries", held)
    monkeypatch.setattr(SharedNearest, "share", shared)
    monkeypatch.setattr(QueryVector, "ranked", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sketched.search(QUERY)
    events.append("the search let the lock go")
    assert events == ["scan started", "scan and statistics ended", "the search let the lock go"]
    monkeypatch.undo()
    assert [hit.turn_id for hit in sketched.search(QUERY)] == answered  # and it serves on


@pytest.mark.parametrize("first", ["the embedding", "the keyword side"])
def test_a_search_after_another_connections_write_embeds_its_query_once(
    path: Path, monkeypatch: pytest.MonkeyPatch, first: str
) -> None:
    """A search that finds the store changed by another connection reads the change in and
    ranks again; the query it embeds does not change with the store (the speakers it names
    are the same), so it is embedded once, as before the embedding moved beside the keyword
    side: an embeddings server is not asked twice, nor a local model run twice. It answers
    as a search made after the read-in does, whether the embedding or the keyword side ranked
    again ends first."""
    with HybridSQLiteMemory(path) as writer, HybridSQLiteMemory(path) as reader:
        writer.store(said())
        query = "what beverage do I prefer?"
        assert reader.search(query)[0].turn_id == "M1"
        tea = Message(role="Melanie", content="Coffee keeps me awake.", turn_id="M9")
        writer.store(said([tea]))
        embed, best = type(reader.embedder).embed_queries, HybridIndex.keyword_side
        asked: list[Sequence[str]] = []
        begun: list[QueryVector] = []
        ranked: list[int] = []
        go = threading.Event()

        def counted(self: object, texts: Sequence[str]) -> object:
            asked.append(list(texts))
            if first == "the keyword side":
                assert go.wait(GUARD)
            return embed(self, texts)  # type: ignore[arg-type]

        class Noted(QueryVector):
            def result(self) -> np.ndarray:
                go.set()  # the search waits for its vector: let the embedding end
                return super().result()

        def noted(*args: object) -> QueryVector:
            begun.append(Noted(*args))  # type: ignore[arg-type]
            return begun[-1]

        def keyword_side(self: HybridIndex, *args: object) -> object:
            ranked.append(self.changes)
            if len(ranked) == 2 and first == "the embedding":  # ranked again, after the read-in
                begun[0].wait()
            return best(self, *args)  # type: ignore[arg-type]

        monkeypatch.setattr(type(reader.embedder), "embed_queries", counted)
        # an endpoint's model: the search lets the lock go while it waits for the vector
        monkeypatch.setattr(type(reader.embedder), "in_process", False)
        monkeypatch.setattr(hybrid, "QueryVector", noted)
        monkeypatch.setattr(HybridIndex, "keyword_side", keyword_side)
        found = reader.search(query)
        for job in begun:  # every embedding begun has ended, awaited or not
            job.wait()
        assert len(ranked) == 2 and ranked[0] != ranked[1]  # ranked again on the index read in
        assert len(asked) == 1, asked
        assert "M9" in [hit.turn_id for hit in found]  # the other connection's turn
        monkeypatch.undo()
        assert [(hit.turn_id, hit.score) for hit in found] == [
            (hit.turn_id, hit.score) for hit in reader.search(query)
        ]


_AT_EXIT = """
import atexit, sys
from pathlib import Path
from himga.data.conversation import Message, Session
from himga.memory.hybrid_options import HybridOptions
from himga.memory.hybrid_sqlite import HybridSQLiteMemory

options = HybridOptions(sketch_threshold=int(sys.argv[2]))
memory = HybridSQLiteMemory(Path(sys.argv[1]), options)
said = Message(role="Caroline", content="I went to an LGBTQ support group.", turn_id="C1")
memory.store([(said, Session(session_id="s1"))])
atexit.register(lambda: print([hit.turn_id for hit in memory.search("Where did Caroline go?")]))
"""


@pytest.mark.parametrize("sketch_threshold", [1, 1_000_000])
def test_a_search_made_as_the_interpreter_exits_still_answers(
    path: Path, sketch_threshold: int
) -> None:
    """Interpreter shutdown shuts every ThreadPoolExecutor down before the atexit handlers run
    (and while daemon threads still run): a search made then embeds its query in its caller,
    as before the embedding moved to a pool, rather than failing to submit it there."""
    child = subprocess.run(
        [sys.executable, "-c", _AT_EXIT, str(path), str(sketch_threshold)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert child.returncode == 0 and child.stdout.splitlines() == ["['C1']"], child.stderr


def test_a_scan_beside_on_a_shut_down_pool_runs_in_the_caller(
    sketched: HybridSQLiteMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan of a keyword side ranked again (HybridIndex.ranked) runs in its caller when its
    pool refuses work, as at interpreter shutdown."""
    index = sketched._vectors
    vector = sketched._query_vector(QUERY, set())
    with sketched._lock.reading():
        expected = index.ranked(["caroline"], vector, 5, None, sketched._fusion)
    refusing = ThreadPoolExecutor(1)
    refusing.shutdown()
    monkeypatch.setattr(hybrid, "BESIDE", refusing)
    with sketched._lock.reading():
        assert index.ranked(["caroline"], vector, 5, None, sketched._fusion) == expected


@pytest.mark.parametrize("in_process", [True, False])
def test_the_keyword_hits_rows_copied_while_waiting_score_as_the_index_scores_them(
    path: Path, monkeypatch: pytest.MonkeyPatch, in_process: bool
) -> None:
    """A search whose keyword side is ranked before its vector is made copies the hits' rows
    while it waits (holding the lock, with a model in process; else having let it go), and
    scores those of them the vectors' search did not return from the copy: it answers, scores
    and all, as the same search looking the rows up after the vector."""
    teas = [
        Message(role="Melanie", content="Tea with lemon helps my throat.", turn_id="T1"),
        Message(role="Caroline", content="We drank tea by the lake.", turn_id="T2"),
        Message(role="Melanie", content="The tea shop closed early today.", turn_id="T3"),
    ]
    # the vectors' search returns the best `limit` (2) turns: the other hits need their cosines
    options = HybridOptions(dense_depth=1)
    with HybridSQLiteMemory(path, options) as memory:
        memory.store(said([*SAID, *teas]))
        assert memory.embedder.in_process
        monkeypatch.setattr(type(memory.embedder), "in_process", in_process)
        embed, gathered = type(memory.embedder).embed_queries, VectorIndex.gathered
        ranked = HybridIndex.ranked
        copied: list[Gathered] = []
        keep = [True]
        waiting = threading.Event()

        def after_the_keyword_side(self: object, texts: Sequence[str]) -> object:
            assert waiting.wait(GUARD)  # the caller waits for the vector: make it
            return embed(self, texts)  # type: ignore[arg-type]

        def noted(self: VectorIndex, keys: object) -> Gathered:
            copied.append(gathered(self, keys))  # type: ignore[arg-type]
            waiting.set()
            return copied[-1]

        def without_the_copy(self: HybridIndex, *args: Any) -> object:
            first = args[5] if len(args) > 5 else None
            if first is not None and not keep[0]:  # look the rows up after the vector
                args = (*args[:5], dataclasses.replace(first, gathered=None), *args[6:])
            return ranked(self, *args)

        monkeypatch.setattr(type(memory.embedder), "embed_queries", after_the_keyword_side)
        monkeypatch.setattr(VectorIndex, "gathered", noted)
        monkeypatch.setattr(HybridIndex, "ranked", without_the_copy)
        with_copy = memory.search("tea in the morning", 2)
        waiting.clear()
        keep[0] = False
        looked_up = memory.search("tea in the morning", 2)
        # each search's copy made while waiting, and the second's look-up after the vector
        assert len(copied) == 3 and copied[0].count >= 4
        assert [(hit.turn_id, hit.score) for hit in with_copy] == [
            (hit.turn_id, hit.score) for hit in looked_up
        ]
        assert len(with_copy) == 2


def test_the_scans_thread_scores_the_copied_hits_as_the_caller_would(
    sketched: HybridSQLiteMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the model in process and the scan beside, the keyword hits' rows copied while the
    caller waits are scored on the scan's thread once its part of the scan is done, while the
    caller ends the scan: the search answers, scores and all, as the same search with the
    caller scoring them after the scan."""
    assert sketched.embedder.in_process
    query = "What did the garden note say?"  # more keyword hits than the vectors' nearest turns
    embed, joined = type(sketched.embedder).embed_queries, QueryVector.nearest
    similarities, ranked = VectorIndex.similarities, HybridIndex.ranked
    copied = threading.Event()
    scored_on: list[str] = []
    given: list[int] = []
    keep = [True]

    def after_the_copy(self: object, texts: Sequence[str]) -> object:
        assert copied.wait(GUARD)  # the vector is made once the caller copied the hits' rows
        return embed(self, texts)  # type: ignore[arg-type]

    def joined_after_the_copy(self: QueryVector) -> object:
        copied.set()  # the caller joins the scan once it has copied the rows
        return joined(self)

    def noted_scoring(self: VectorIndex, query: Any, keys: Any) -> Any:
        scored_on.append(threading.current_thread().name)
        return similarities(self, query, keys)

    def given_or_not(self: HybridIndex, *args: Any) -> object:
        first = args[5] if len(args) > 5 else None
        if first is not None:
            given.append(-1 if first.cosines is None else first.cosines.size)
            if not keep[0]:  # the caller scores the copied rows itself
                args = (*args[:5], dataclasses.replace(first, cosines=None), *args[6:])
        return ranked(self, *args)

    monkeypatch.setattr(type(sketched.embedder), "embed_queries", after_the_copy)
    monkeypatch.setattr(QueryVector, "nearest", joined_after_the_copy)
    monkeypatch.setattr(VectorIndex, "similarities", noted_scoring)
    monkeypatch.setattr(HybridIndex, "ranked", given_or_not)
    by_the_scan = sketched.search(query, 5)
    assert len(given) == 1 and given[0] > sketched._fusion.dense_depth  # hits the scan missed
    assert len(scored_on) == 1 and scored_on[0].startswith("himga-query")  # not the caller
    copied.clear()
    keep[0] = False
    by_the_caller = sketched.search(query, 5)
    # scored on the scan's thread again, then by the caller, whose cosines rank
    assert given[1] == given[0] and scored_on[2:] == [threading.current_thread().name]
    assert by_the_scan and [(hit.turn_id, hit.score) for hit in by_the_scan] == [
        (hit.turn_id, hit.score) for hit in by_the_caller
    ]
