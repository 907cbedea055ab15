"""The hybrid memory over SQLite (himga.memory.hybrid, himga.memory.hybrid_sqlite), with the
real default model from the model cache (`make setup` fetches it): what it finds by meaning,
and that its vectors are kept as its messages are (written with them, deleted and corrected
with them, read in by another connection, refused when another model made them, embedded when
a store without them opens, and there after SIGKILL).

The memory contract suite (tests/memory/test_contract.py) and `himga conformance`
(tests/conformance/test_kit.py) run over it as over every registry memory."""

import dataclasses
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from himga.cli import main
from himga.data.conversation import Message, Session
from himga.errors import IncompatibleStoreError, InvalidArgument
from himga.memory.filters import MessageFilter
from himga.memory.fusion import passage
from himga.memory.hybrid_options import HybridOptions
from himga.memory.hybrid_sqlite import HybridSQLiteMemory, namespace_path
from himga.memory.registry import memory_options, open_memory
from himga.memory.sqlite import SQLiteKeywordMemory
from himga.storage import layout
from tests.killed import acknowledged_until_killed
from tests.other_model import OTHER_MODEL, use_other_model

SESSION = Session(session_id="s1", date_str="1:56 pm on 8 May, 2023")
OTHER = Session(session_id="s2", date_str="2:10 pm on 9 May, 2023")
SAID = [
    Message(role="Caroline", content="I went to an LGBTQ support group.", turn_id="C1"),
    Message(role="Melanie", content="I like green tea in the morning.", turn_id="M1"),
    Message(role="Caroline", content="The sunset over the lake was gorgeous.", turn_id="C2"),
    Message(role="Melanie", content="My kids start school next week.", turn_id="M2"),
]
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "stores"
OPTION_NAMES = [field.name for field in dataclasses.fields(HybridOptions)]


def said(messages: Sequence[Message] = SAID, session: Session = SESSION) -> list:
    return [(message, session) for message in messages]


def top(memory: object, query: str, **options: object) -> str:
    hits = memory.search(query, 5, **options)  # type: ignore[attr-defined]
    return hits[0].turn_id if hits else ""


def vector_rows(path: Path) -> dict[int, np.ndarray]:
    """The vectors a store holds on disk, by message row id."""
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT id, vector FROM himga_vectors").fetchall()
    return {key: np.frombuffer(blob, dtype="<f4") for key, blob in rows}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "hybrid.sqlite3"


@pytest.fixture
def memory(path: Path) -> Iterator[HybridSQLiteMemory]:
    with HybridSQLiteMemory(path) as opened:
        yield opened


def test_it_finds_by_meaning_what_the_keyword_kind_cannot(
    memory: HybridSQLiteMemory, tmp_path: Path
) -> None:
    memory.store(said())
    keyword = SQLiteKeywordMemory(tmp_path / "keyword.sqlite3")
    keyword.store(said())
    for query, evidence in (
        ("what beverage do I prefer?", "M1"),
        ("Where did Caroline go?", "C1"),
        ("Does Melanie have children?", "M2"),
    ):
        assert top(memory, query) == evidence
        assert evidence not in [hit.turn_id for hit in keyword.search(query, 5)]
    assert top(memory, "green tea") == "M1"  # the words still count
    keyword.close()


def test_a_write_stores_each_turns_vector_with_it(memory: HybridSQLiteMemory, path: Path) -> None:
    memory.store(said())
    stored = vector_rows(path)
    assert sorted(stored) == [1, 2, 3, 4]
    again = memory.embedder.embed_passages([passage(SAID[1].role, SAID[1].content)])[0]
    assert np.allclose(stored[2], again, atol=1e-6)
    with HybridSQLiteMemory(path) as reopened:  # read from the table, not embedded again
        assert reopened.embedded_at_open == 0
        assert top(reopened, "what beverage do I prefer?") == "M1"


def test_an_empty_text_gets_no_vector_and_the_others_still_match(
    memory: HybridSQLiteMemory, path: Path
) -> None:
    blank = [Message(role="Ada", content="", turn_id="E1"), Message(role="Ada", content="  ")]
    memory.store(said([*SAID, *blank]))
    assert len(vector_rows(path)) == len(SAID)
    assert top(memory, "green tea") == "M1"
    assert top(memory, "what beverage do I prefer?") == "M1"
    assert "E1" in [stored.id for stored in memory.list(page_size=10).messages]
    with HybridSQLiteMemory(path) as reopened:
        assert reopened.embedded_at_open == 0  # an empty text is not a missing vector


def test_a_delete_takes_the_vector_and_a_correction_embeds_again(
    memory: HybridSQLiteMemory, path: Path
) -> None:
    memory.store(said())
    assert memory.delete(["M1"]) == 1
    assert 2 not in vector_rows(path)
    assert "M1" not in [hit.turn_id for hit in memory.search("what beverage do I prefer?")]
    corrected = Message(role="Caroline", content="I adopted a puppy named Max.", turn_id="C2")
    memory.store([(corrected, SESSION)])
    assert top(memory, "Does Caroline have a pet?") == "C2"
    expected = memory.embedder.embed_passages([passage(corrected.role, corrected.content)])[0]
    assert np.allclose(vector_rows(path)[3], expected, atol=1e-6)
    memory.store([(Message(role="Caroline", content="", turn_id="C2"), SESSION)])
    assert 3 not in vector_rows(path)  # corrected to an empty text: no vector
    assert "C2" not in [hit.turn_id for hit in memory.search("Does Caroline have a pet?")]
    memory.reset()
    assert vector_rows(path) == {}
    assert memory.search("what beverage do I prefer?") == []


def test_another_connection_reads_in_the_vectors_others_wrote(path: Path) -> None:
    with HybridSQLiteMemory(path) as writer, HybridSQLiteMemory(path) as reader:
        assert reader.search("what beverage do I prefer?") == []
        writer.store(said())
        assert top(reader, "what beverage do I prefer?") == "M1"
        writer.store([(Message(role="Melanie", content="I adopted a cat.", turn_id="M1"), SESSION)])
        assert top(reader, "Does Melanie have a pet?") == "M1"
        writer.delete(["M1"])
        assert "M1" not in [hit.turn_id for hit in reader.search("Does Melanie have a pet?")]


def test_a_filter_is_applied_to_the_turns_found_by_meaning(memory: HybridSQLiteMemory) -> None:
    tea = Message(role="Melanie", content="Coffee keeps me awake.", turn_id="M9")
    memory.store([*said(), (tea, OTHER)])
    everything = memory.search("what beverage do I prefer?", 10)
    only = MessageFilter(session_ids=["s2"])
    filtered = memory.search("what beverage do I prefer?", 10, filter=only)
    assert [hit.turn_id for hit in filtered] == ["M9"]
    # Both sides return every turn of so small a store: the filter leaves the score as it was.
    assert filtered[0].score == next(hit.score for hit in everything if hit.turn_id == "M9")


def test_a_turn_said_in_the_month_a_question_names_ranks_first(memory: HybridSQLiteMemory) -> None:
    # The same words said in three sessions, the last without a time, beside other turns: the
    # question's month picks the turn said in it, its score doubled; another year picks none.
    memory.store(said())
    for number, date in enumerate(["8 May, 2023", "31 July, 2023", ""]):
        memory.ingest(
            Message(role="Ada", content="We went kayaking on the lake.", turn_id=f"T{number}"),
            Session(session_id=f"k{number}", date_str=f"1:56 pm on {date}" if date else ""),
        )
    plain = {hit.turn_id: hit.score for hit in memory.search("kayaking on the lake", 3)}
    assert plain["T0"] == plain["T1"] == plain["T2"]
    dated = memory.search("Where did Ada go kayaking in July 2023?", 3)
    assert [hit.turn_id for hit in dated] == ["T1", "T0", "T2"]
    scores = {hit.turn_id: hit.score for hit in dated}
    assert scores["T1"] == pytest.approx(2 * scores["T0"]) and scores["T0"] == scores["T2"]
    kept = MessageFilter(session_ids=["k0", "k2"])  # a filter keeps the month's scores
    filtered = memory.search("Where did Ada go kayaking in July 2023?", 3, filter=kept)
    assert [hit.turn_id for hit in filtered] == ["T0", "T2"]
    assert [hit.score for hit in filtered] == [scores["T0"], scores["T2"]]
    only_july = MessageFilter(session_ids=["k1"])
    assert (
        memory.search("Where did Ada go kayaking in July 2023?", 3, filter=only_july)[0].score
        == (scores["T1"])
    )
    other_year = memory.search("Where did Ada go kayaking in July 2022?", 3)
    assert [hit.turn_id for hit in other_year] == ["T0", "T1", "T2"]


def test_with_sketches_a_scan_beside_the_keyword_side_ends_before_the_search_does(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from himga.memory.hybrid import HybridIndex
    from himga.memory.vectors import SharedNearest

    # enough turns past the threshold that a search's candidates are fewer than the turns
    notes = [Message(role="Ada", content=f"Garden note {i}.", turn_id=f"N{i}") for i in range(20)]
    options = HybridOptions(sketch_threshold=8, sketch_fetch=1, sketch_per_hit=2, dense_depth=10)
    with HybridSQLiteMemory(path, options) as sketched:
        sketched.ingest_many(said([*SAID, *notes]))
        answered = [hit.turn_id for hit in sketched.search("Where did Caroline go?")]
        assert sketched._index.vectors.sketched  # type: ignore[attr-defined]
        scans: list[str] = []
        scanning = threading.Event()
        share = SharedNearest.share

        def shared(self: SharedNearest, then: Callable[[], object] | None = None) -> object:
            scans.append("started")  # the part of the thread that began the scan
            scanning.set()
            found = share(self, then)
            time.sleep(0.2)  # a slow scan: a caller that did not wait would be gone by now
            scans.append("ended")
            return found

        def failing(*_: object) -> None:  # a keyword side that ends after the scan began
            assert scanning.wait(30)
            raise RuntimeError("the keyword side failed")

        monkeypatch.setattr(SharedNearest, "share", shared)
        monkeypatch.setattr(HybridIndex, "best", failing)
        with pytest.raises(RuntimeError, match="keyword side failed"):
            sketched.search("Where did Caroline go?")
        assert scans == ["started", "ended"]  # the caller waited for it, under its lock
        monkeypatch.undo()
        assert [hit.turn_id for hit in sketched.search("Where did Caroline go?")] == answered


def test_a_turn_stored_while_the_query_is_embedded_is_ranked_by_words_too(
    memory: HybridSQLiteMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keyword side is ranked while the query is embedded; with a model out of process (an
    endpoint's, whose answer may take long) the lock is not held while the search waits for its
    vector, and a write in between has the keyword side ranked again: the search answers as one
    made after the write does."""
    monkeypatch.setattr(type(memory.embedder), "in_process", False)
    memory.store(said())
    query = "Where did Caroline go with the support group?"
    again = Message(role="Caroline", content="The support group went hiking.", turn_id="C9")
    embed = type(memory.embedder).embed_queries
    written: list[str] = []

    def slow_embedding(self: object, texts: Sequence[str]) -> np.ndarray:
        if not written:  # the first search's: a write lands before its vector is made
            written.extend(memory.store(said([again])))
        return embed(self, texts)  # type: ignore[arg-type]

    monkeypatch.setattr(type(memory.embedder), "embed_queries", slow_embedding)
    raced = memory.search(query, 5)
    assert written == ["C9"]
    after = memory.search(query, 5)
    assert [(hit.turn_id, hit.score) for hit in raced] == [
        (hit.turn_id, hit.score) for hit in after
    ]
    assert "C9" in [hit.turn_id for hit in raced]


def test_with_the_model_in_process_a_write_waits_for_a_search_that_waits_for_its_vector(
    memory: HybridSQLiteMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local model's query takes milliseconds: the search waits for it holding the lock, its
    scan begun the moment the vector is made. A write meanwhile waits for the search, which
    answers as one made before the write does."""
    assert memory.embedder.in_process
    memory.store(said())
    query = "Where did Caroline go with the support group?"
    before = [(hit.turn_id, hit.score) for hit in memory.search(query, 5)]
    again = Message(role="Caroline", content="The support group went hiking.", turn_id="C9")
    embed = type(memory.embedder).embed_queries
    embedding, go = threading.Event(), threading.Event()

    def held_embedding(self: object, texts: Sequence[str]) -> np.ndarray:
        embedding.set()
        assert go.wait(30)
        return embed(self, texts)  # type: ignore[arg-type]

    monkeypatch.setattr(type(memory.embedder), "embed_queries", held_embedding)
    found: list[list[tuple[str, float]]] = []
    search = threading.Thread(
        target=lambda: found.append([(h.turn_id, h.score) for h in memory.search(query, 5)])
    )
    search.start()
    assert embedding.wait(30)
    written: list[str] = []
    write = threading.Thread(target=lambda: written.extend(memory.store(said([again]))))
    write.start()
    write.join(0.3)
    assert write.is_alive() and not written  # held back by the search's lock
    go.set()
    search.join(30)
    write.join(30)
    assert found == [before] and written == ["C9"]
    monkeypatch.undo()
    assert "C9" in [hit.turn_id for hit in memory.search(query, 5)]


@pytest.fixture
def other_model(monkeypatch: pytest.MonkeyPatch) -> str:
    """The name of a model other than the default (the default's weights, another id)."""
    return use_other_model(monkeypatch)


def test_a_store_of_another_model_is_refused_naming_the_command_that_embeds_it_again(
    tmp_path: Path, other_model: str, capsys: pytest.CaptureFixture[str]
) -> None:
    options = memory_options("hybrid", {"embedding_model": other_model})
    with open_memory("hybrid", "ns", tmp_path, options) as written:
        written.store(said())  # opened by the library: no server's record of its kind
    with pytest.raises(IncompatibleStoreError) as refused:
        open_memory("hybrid", "ns", tmp_path)
    message = str(refused.value)
    assert "other-model:0" in message
    assert f"himga reembed --data-dir {tmp_path} --namespace ns --embedding-model" in message
    assert main(["reembed", "--data-dir", str(tmp_path), "--namespace", "ns",
                 "--embedding-model", HybridOptions().embedding_model]) == 0  # fmt: skip
    assert "4 vectors deleted, 4 messages embedded" in capsys.readouterr().out
    with open_memory("hybrid", "ns", tmp_path) as reembedded:
        assert reembedded.embedded_at_open == 0  # type: ignore[attr-defined]
        assert top(reembedded, "what beverage do I prefer?") == "M1"
    # The other way round, a memory holding the store refuses its calls once it is re-embedded.
    with open_memory("hybrid", "ns", tmp_path) as holding:
        assert main(["reembed", "--data-dir", str(tmp_path), "--namespace", "ns",
                     "--embedding-model", other_model]) == 0  # fmt: skip
        with pytest.raises(IncompatibleStoreError, match="embedded again"):
            holding.search("what beverage do I prefer?")


def test_a_model_is_recorded_only_if_no_other_embedded_the_store_meanwhile(
    path: Path, other_model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A keyword store opened by two models at once: the default embeds it between the other's
    # first look (no vectors yet) and its recording of its own model.
    with SQLiteKeywordMemory(path) as keyword:
        keyword.store(said())
    looked = HybridSQLiteMemory._checked_model
    embedded_meanwhile: list[int] = []

    def looked_then_embedded_by_another(self: HybridSQLiteMemory) -> tuple[bool, str | None]:
        found = looked(self)
        if self._embedder.model_id.startswith(OTHER_MODEL) and not embedded_meanwhile:
            with HybridSQLiteMemory(path) as default:
                embedded_meanwhile.append(default.embedded_at_open)
        return found

    monkeypatch.setattr(HybridSQLiteMemory, "_checked_model", looked_then_embedded_by_another)
    with pytest.raises(IncompatibleStoreError, match="not by 'other-model:0'"):
        HybridSQLiteMemory(path, HybridOptions(embedding_model=other_model))
    assert embedded_meanwhile == [len(SAID)]
    with HybridSQLiteMemory(path) as default:  # still the default's, and labelled so
        assert default.embedded_at_open == 0
        assert top(default, "what beverage do I prefer?") == "M1"


def test_a_store_whose_vectors_are_of_another_width_is_refused_naming_the_command(
    path: Path,
) -> None:
    # The model's id, another dimension: an endpoint's model name served at another size.
    with HybridSQLiteMemory(path) as written:
        written.store(said())
    with sqlite3.connect(path) as db:
        db.execute("UPDATE himga_vectors SET vector = zeroblob(32)")
    with pytest.raises(IncompatibleStoreError) as refused:
        HybridSQLiteMemory(path)
    message = str(refused.value)
    assert "its vectors have 8 dimensions" in message
    assert f"himga reembed --file {path} --embedding-model" in message


def test_a_file_of_its_own_of_another_model_names_the_command_that_embeds_that_file(
    path: Path, other_model: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with HybridSQLiteMemory(path, HybridOptions(embedding_model=other_model)) as written:
        written.store(said())
    with pytest.raises(IncompatibleStoreError) as refused:
        HybridSQLiteMemory(path)
    default = HybridOptions().embedding_model
    command = f"himga reembed --file {path} --embedding-model {default}"
    assert command in str(refused.value)
    assert main(command.split()[1:]) == 0
    assert "4 vectors deleted, 4 messages embedded" in capsys.readouterr().out
    with HybridSQLiteMemory(path) as reembedded:
        assert reembedded.embedded_at_open == 0
        assert top(reembedded, "what beverage do I prefer?") == "M1"
    for argv in (["--file", str(path), "--namespace", "ns"], ["--data-dir", str(path.parent)]):
        assert main(["reembed", *argv, "--embedding-model", default]) == 2
        assert "--namespace is needed with --data-dir" in capsys.readouterr().err
    # a keyword store, a file that is no database, and no file are refused, and left as they were
    with SQLiteKeywordMemory(path.parent / "words.db") as words:
        words.store(said())
    (path.parent / "notes.txt").write_text("not a database", encoding="utf-8")
    for name, said_why in [
        ("words.db", "not a hybrid memory's store"),
        ("notes.txt", "not a database"),
        ("absent.db", "no such file"),
    ]:
        other = path.parent / name
        before = other.read_bytes() if other.exists() else None
        assert main(["reembed", "--file", str(other), "--embedding-model", default]) == 1
        assert said_why in capsys.readouterr().err
        assert (other.read_bytes() if other.exists() else None) == before


def test_reembed_refuses_a_namespace_without_a_hybrid_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["reembed", "--data-dir", str(tmp_path), "--namespace", "none"]
    assert main([*argv, "--embedding-model", HybridOptions().embedding_model]) == 1
    assert "holds nothing, not a hybrid memory" in capsys.readouterr().err
    assert main([*argv, "--embedding-model", str(tmp_path / "no-such-model")]) == 2


def test_a_keyword_store_and_an_old_format_one_open_with_every_turn_embedded(
    tmp_path: Path,
) -> None:
    keyword = tmp_path / "keyword.sqlite3"
    with SQLiteKeywordMemory(keyword) as written:
        written.store(said())
    with HybridSQLiteMemory(keyword) as opened:
        assert opened.embedded_at_open == len(SAID)
        assert top(opened, "what beverage do I prefer?") == "M1"
    old = tmp_path / "old.sqlite3"
    shutil.copy(FIXTURE / "before-format-version.sqlite3", old)
    with sqlite3.connect(old) as db:
        (count,) = db.execute("SELECT count(*) FROM messages WHERE content <> ''").fetchone()
    with HybridSQLiteMemory(old) as migrated:
        assert migrated.embedded_at_open == count > 0
        assert len(migrated.list(page_size=1000).messages) == count
    with HybridSQLiteMemory(old) as again:
        assert again.embedded_at_open == 0


def test_the_data_directory_keeps_a_hybrid_namespace_in_its_own_file(tmp_path: Path) -> None:
    with open_memory("hybrid", "ns", tmp_path) as memory:
        memory.store(said())
    assert namespace_path(tmp_path, "ns").is_file()
    assert namespace_path(tmp_path, "ns").stat().st_mode & 0o077 == 0


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_acknowledged_ingests_survive_sigkill_with_their_vectors(path: Path) -> None:
    """A child ingests batches without end and prints each once it is acknowledged; killed
    mid-stream, every acknowledged message is there with its vector, and no partial batch."""
    child = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    acknowledged = acknowledged_until_killed(child, 4)
    with sqlite3.connect(path) as db:
        messages = {key for (key,) in db.execute("SELECT id FROM messages")}
    vectors = vector_rows(path)
    assert set(vectors) == messages and len(messages) % 3 == 0
    assert len(messages) >= 3 * len(acknowledged)
    with HybridSQLiteMemory(path) as memory:
        assert memory.embedded_at_open == 0
        for batch in acknowledged:
            assert f"T{batch}-1" in [hit.turn_id for hit in memory.search(f"beverage {batch}")]


_WRITER = """
import sys
from himga.data import Message, Session
from himga.memory.hybrid_sqlite import HybridSQLiteMemory

memory = HybridSQLiteMemory(sys.argv[1])
session = Session(session_id="s1")
b = 0
while True:
    memory.store([
        (Message(role="Ada", content=f"batch {b}: the weather", turn_id=f"T{b}-0"), session),
        (Message(role="Ada", content=f"batch {b}: I drink tea", turn_id=f"T{b}-1"), session),
        (Message(role="Ada", content=f"batch {b}: my dog", turn_id=f"T{b}-2"), session),
    ])
    print(b, flush=True)
    b += 1
"""


def test_serve_refuses_at_start_up_a_model_it_cannot_load(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing = tmp_path / "no-model"
    missing.mkdir()
    serve = ["serve", "--port", "0", "--data-dir", str(tmp_path / "data")]
    assert main([*serve, "--memory", "hybrid", "--embedding-model", str(missing)]) == 2
    assert "no-model" in caplog.text
    caplog.clear()
    assert main([*serve, "--memory", "sqlite", "--embedding-model", "e5-small-v2"]) == 2
    assert "options.embedding_model: not an option of 'sqlite'" in caplog.text


def test_serve_takes_the_memorys_options_and_refuses_a_bad_one_naming_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from himga.cli.serve import _memory_options

    chosen = _memory_options("hybrid", None, ["graph_threshold=50000", "dense_weight=0.25"])
    assert (chosen.graph_threshold, chosen.dense_weight) == (50000, 0.25)
    serve = ["serve", "--port", "0", "--data-dir", str(tmp_path / "data"), "--memory"]
    for argv, said in [
        (["hybrid", "--memory-option", "graph_threshold=-1"], "options.graph_threshold"),
        (["hybrid", "--memory-option", "graph_threshold"], "NAME=VALUE"),
        (["sqlite", "--memory-option", "graph_threshold=10"], "not an option of 'sqlite'"),
        (
            ["hybrid", "--embedding-model", "e5-small-v2", "--memory-option", "embedding_model=x"],
            "given twice",
        ),
        # every option named, however long the list (an answer on the wire cuts a rule at 200)
        (["hybrid", "--memory-option", "bogus=1"], f"{', '.join(sorted(OPTION_NAMES))})"),
    ]:
        caplog.clear()
        assert main([*serve, *argv]) == 2, argv
        assert said in caplog.text, (argv, caplog.text)
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").iterdir())


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--embedding-model", "e5-small-v3"], "embedding model 'e5-small-v3': not a catalog name"),
        (["--memory-option", "embedding_model=no-such-dir"], "'no-such-dir': not a catalog name"),
        (["--memory-option", "bogus=1"], f"{', '.join(sorted(OPTION_NAMES))})"),
    ],
)
def test_eval_retrieval_loads_the_model_it_is_given_or_says_why_not(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = str(Path(__file__).parents[1] / "fixtures" / "locomo" / "locomo-mini.json")
    command = ["eval-retrieval", "--memory", "hybrid", "--dataset", dataset, "--no-progress"]
    assert main([*command, *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("himga eval-retrieval: error: ") and said in err
    assert "Traceback" not in err


def test_the_readme_names_every_option_of_the_kind() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    listed = readme.split("Any other option of the kind", 1)[1].split("--memory-option NAME", 1)[0]
    named = set(re.findall(r"`(\w+)`", listed))
    assert named == set(OPTION_NAMES) - {"embedding_model"}  # that one is --embedding-model


def test_the_options_are_the_fusions_and_the_model_each_checked() -> None:
    options = memory_options("hybrid", {"dense_weight": "0.5", "kind": "ranks"})
    assert (options.dense_weight, options.kind) == (0.5, "ranks")
    assert options.embedding_model == HybridOptions().embedding_model
    with pytest.raises(InvalidArgument, match=r"options\.kind"):
        memory_options("hybrid", {"kind": "votes"})
    with pytest.raises(InvalidArgument, match=r"options\.dense_weight"):
        memory_options("hybrid", {"dense_weight": "-1"})
    assert memory_options("hybrid", {"date_boost": "0"}).date_boost == 0.0
    with pytest.raises(InvalidArgument, match=r"options\.date_boost"):
        memory_options("hybrid", {"date_boost": "-0.5"})
    with pytest.raises(InvalidArgument, match=r"options\.embedding_model"):
        memory_options("hybrid", {"embedding_model": " "})


def test_a_server_whose_model_cannot_load_refuses_hybrid_calls_saying_so_and_serves_the_rest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The server's default memory is sqlite; a call naming `hybrid` opens a model directory that
    # is not there. Asking again cannot help, so it is not "call again later": the caller reads
    # that the server cannot use its model, the log which file is missing; other calls go on.
    from himga.errors import Unsupported
    from himga.service import RemoteMemory, create_server

    missing = tmp_path / "no-model"
    server, port = create_server(
        "127.0.0.1:0",
        memory="sqlite",
        data_dir=tmp_path / "data",
        memory_options={"hybrid": HybridOptions(embedding_model=str(missing))},
    )
    try:
        target = f"127.0.0.1:{port}"
        with RemoteMemory(target, "meaning", memory="hybrid") as hybrid_memory:
            with pytest.raises(Unsupported, match="cannot use its embedding model") as refused:
                hybrid_memory.ingest(SAID[1], SESSION)
            assert str(missing) not in str(refused.value)
        assert str(missing) in caplog.text
        # nothing was stored, so nothing binds the namespace to the memory it could not open
        assert not layout.memory_record(tmp_path / "data", "meaning").exists()
        for namespace in ("words", "meaning"):
            with RemoteMemory(target, namespace) as words:
                words.ingest(SAID[1], SESSION)
                assert "green tea" in words.retrieve("green tea")
    finally:
        server.stop(None)


def test_a_server_refuses_a_namespace_of_another_model_without_sending_its_paths(
    tmp_path: Path, other_model: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The caller reads what is wrong and that `himga reembed` fixes it; the command itself
    # names the server's data directory (and a model directory's path): the log's.
    from himga.service import RemoteMemory, create_server

    data = tmp_path / "data"
    options = memory_options("hybrid", {"embedding_model": other_model})
    with open_memory("hybrid", "ns", data, options) as written:
        written.store(said())
    layout.memory_record(data, "ns").parent.mkdir(parents=True, exist_ok=True)
    layout.memory_record(data, "ns").write_text("hybrid", encoding="utf-8")  # as a server's
    server, port = create_server("127.0.0.1:0", memory="hybrid", data_dir=data)
    try:
        remote = RemoteMemory(f"127.0.0.1:{port}", "ns", memory="hybrid")
        with remote, pytest.raises(IncompatibleStoreError) as refused:
            remote.retrieve("what beverage do I prefer?")
        told = str(refused.value)
        assert "its vectors were made by embedding model 'other-model:0'" in told
        assert "embed it again with `himga reembed` (the server's log has the command)" in told
        assert str(tmp_path) not in told
        assert f"himga reembed --data-dir {data} --namespace ns" in caplog.text
    finally:
        server.stop(None)
