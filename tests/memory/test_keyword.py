"""The keyword method, run on both keyword memories: what users rely on when they search."""

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from himga.data import Message, Session, load_dataset
from himga.memory import KeywordMemory, SQLiteKeywordMemory
from himga.memory.base import BaseMemory
from himga.memory.context import CONTEXT_CHARS, CONTEXT_HITS

FIXTURE = Path(__file__).parents[1] / "fixtures" / "locomo" / "locomo-mini.json"

Factory = Callable[[], BaseMemory]


@pytest.fixture(params=["keyword", "sqlite-memory", "sqlite-file"])
def new(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    made: list[SQLiteKeywordMemory] = []

    def make() -> BaseMemory:
        if request.param == "keyword":
            return KeywordMemory()
        path = None if request.param == "sqlite-memory" else tmp_path / f"m{len(made)}.sqlite3"
        memory = SQLiteKeywordMemory(path)
        made.append(memory)
        return memory

    yield make
    for memory in made:
        memory.close()


def _session(session_id: str = "s1", date: str = "3 March, 2023") -> Session:
    return Session(session_id=session_id, date_str=date)


def _say(memory: BaseMemory, *turns: tuple[str, str], session: Session | None = None) -> None:
    """Store turns T1, T2, ... of `session` (s1 by default); turns of another session are
    `<session_id>:T1`, ..., so that each call stores new messages."""
    session = session or _session()
    prefix = "" if session.session_id == "s1" else f"{session.session_id}:"
    memory.ingest_many(
        (Message(role=role, content=text, turn_id=f"{prefix}T{i}"), session)
        for i, (role, text) in enumerate(turns, start=1)
    )


def test_hits_carry_their_message_and_session(new: Factory) -> None:
    memory = new()
    _say(memory, ("Ada", "I adopted a greyhound."), ("Bruno", "Lovely!"))
    hit, neighbour = memory.search("greyhound")  # the reply is found through its neighbour
    assert neighbour.turn_id == "T2" and 0 < neighbour.score < hit.score
    assert (hit.turn_id, hit.session_id, hit.role, hit.content, hit.date_str) == (
        "T1",
        "s1",
        "Ada",
        "I adopted a greyhound.",
        "3 March, 2023",
    )
    assert hit.score > 0


def test_other_forms_of_the_words_match(new: Factory) -> None:
    memory = new()
    _say(memory, ("Ada", "I have been painting sunsets."), ("Bruno", "Nothing here."))
    assert memory.search("Who paints a sunset?")[0].turn_id == "T1"


def test_a_reply_is_found_by_the_words_of_its_question(new: Factory) -> None:
    memory = new()
    _say(
        memory,
        ("Bruno", "What did you name the greyhound you adopted?"),
        ("Ada", "Pepper! He sleeps all day."),
        ("Bruno", "Sounds like my cat."),
        ("Ada", "Talk tomorrow."),
        ("Bruno", "Bye."),
    )
    ids = [h.turn_id for h in memory.search("What is the name of the greyhound?")]
    assert ids[:2] == ["T1", "T2"]  # the turn that says it, then the answer just after it
    assert "T5" not in ids  # neighbours reach two turns, no further


def test_neighbours_stay_within_their_session(new: Factory) -> None:
    memory = new()
    _say(memory, ("Ada", "My greyhound is called Pepper."), session=_session("s1"))
    _say(memory, ("Ada", "Completely unrelated."), session=_session("s2"))
    assert [h.session_id for h in memory.search("greyhound")] == ["s1"]


def test_turns_of_the_speaker_the_query_names_come_first(new: Factory) -> None:
    memory = new()
    _say(memory, ("Bruno", "The pottery class was fun."), ("Ada", "The pottery class was fun."))
    # without a name the earlier turn wins the tie; naming Ada lifts her turn above it
    assert [h.role for h in memory.search("pottery class")] == ["Bruno", "Ada"]
    hits = memory.search("What did Ada think of the pottery class?")
    assert [h.role for h in hits] == ["Ada", "Bruno"]
    assert hits[0].score == pytest.approx(2 * hits[1].score)


def test_best_hit_first_and_limit_kept(new: Factory) -> None:
    memory = new()
    _say(
        memory,
        *[("Ada", f"sailing note {i}") for i in range(30)],
        ("Bruno", "sailing sailboat sailing regatta"),
    )
    hits = memory.search("sailboat regatta", limit=5)
    assert hits[0].content == "sailing sailboat sailing regatta"
    assert len(memory.search("sailing", limit=7)) == 7
    assert memory.search("sailing", limit=0) == []
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_context_lists_dated_hits_within_its_budget(new: Factory) -> None:
    memory = new()
    _say(memory, ("Ada", "I adopted a greyhound."))
    assert memory.retrieve("greyhound") == "[3 March, 2023] Ada: I adopted a greyhound."
    assert memory.retrieve("nothing matches") == ""
    _say(memory, *[("Bruno", "greyhound " + "x" * 600) for _ in range(20)], session=_session("s9"))
    context = memory.retrieve("greyhound")
    assert len(context) <= CONTEXT_CHARS
    assert 1 <= len(context.splitlines()) <= CONTEXT_HITS


def test_one_long_hit_is_cut_to_the_budget(new: Factory) -> None:
    memory = new()
    _say(memory, ("Ada", "greyhound " + "word " * 2000))
    context = memory.retrieve("greyhound")
    assert len(context) == CONTEXT_CHARS and context.endswith("…")


def test_recall_builds_its_context_from_the_hits_it_answers(new: Factory) -> None:
    memory = new()
    _say(memory, *[("Ada", f"kayak trip number {i}") for i in range(15)])
    for limit in (1, 3, 12):
        context, hits = memory.recall("kayak", limit=limit)
        assert hits == memory.search("kayak", limit=limit)
        assert context.splitlines() == [f"[3 March, 2023] Ada: {hit.content}" for hit in hits]
    assert memory.recall("kayak")[0] == memory.retrieve("kayak")  # the default: as retrieve


def test_one_by_one_and_batch_ingest_rank_alike(new: Factory) -> None:
    batch, single = new(), new()
    items = [
        (message, session)
        for sample in load_dataset("locomo", FIXTURE)
        for session in sample.sessions
        for message in session.messages
    ]
    batch.ingest_many(items)
    for message, session in items:
        single.ingest(message, session)
    for question in ["Ada's dog and the frisbee", "Bruno boat varnish", "mug pottery class"]:
        assert batch.search(question, 20) == single.search(question, 20)


def test_searches_while_ingesting_from_threads(new: Factory) -> None:
    memory = new()
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            session = _session(f"w{worker}")
            for i in range(40):
                memory.ingest(Message(role="Ada", content=f"canoe {worker} {i}"), session)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    def read() -> None:
        try:
            for _ in range(40):
                assert isinstance(memory.search("canoe"), list)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    threads += [threading.Thread(target=read) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(memory.search("canoe", limit=1000)) == 160


def test_both_memories_rank_and_score_alike() -> None:
    """One method: both stores feed the same ranking, so hits and scores are identical."""
    samples = load_dataset("locomo", FIXTURE)
    keyword, sqlite = KeywordMemory(), SQLiteKeywordMemory()
    for sample in samples[:1]:
        items = [(m, s) for s in sample.sessions for m in s.messages]
        keyword.ingest_many(items[:5])
        keyword.ingest_many(items[5:])
        for message, session in items:
            sqlite.ingest(message, session)
        for qa in sample.qa_pairs:
            mine, theirs = keyword.search(qa.question, 20), sqlite.search(qa.question, 20)
            assert mine == theirs
    sqlite.close()


def test_ties_go_to_the_earlier_turn_whatever_the_limit(new: Factory) -> None:
    memory = new()
    for i in range(15):  # one turn per session: no neighbours, so every score is the same
        _say(memory, ("Ada", "a quiet lake"), session=_session(f"s{i}"))
    everything = memory.search("lake", limit=15)
    assert [h.session_id for h in everything] == [f"s{i}" for i in range(15)]
    for limit in (1, 3, 7):
        assert memory.search("lake", limit=limit) == everything[:limit]
