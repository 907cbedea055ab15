"""The shared keyword method against its definition (himga.memory.ranking's text), on random
conversations, and the in-process keyword memory against each durable one (SQLite, PostgreSQL):
the same hits with the same scores."""

import uuid
from collections import Counter
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from himga.data import Message, Session
from himga.memory import KeywordMemory, PostgresKeywordMemory, SQLiteKeywordMemory
from himga.memory.base import BaseMemory
from himga.memory.filters import MessageFilter
from himga.memory.ranking import DEFAULT_METHOD, Method, idf, speaker_key
from himga.memory.text import query_terms, terms

# Each test runs with both ways the C core makes a reach (tests/memory/conftest.py).
pytestmark = pytest.mark.usefixtures("both_ways")

WORDS = ["kayak", "lake", "paddles", "sunset", "boat", "pottery", "mug", "dog", "frisbee"]
SPEAKERS = ["Ada", "Bruno", "Cleo Park"]
# (session, speaker, words): a turn of a conversation whose sessions may interleave
TURN = st.tuples(
    st.integers(0, 3),
    st.sampled_from(SPEAKERS),
    st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join),
)
QUERY = st.lists(st.sampled_from(WORDS + SPEAKERS), min_size=1, max_size=4).map(" ".join)


def reference(
    turns: list[tuple[int, str, str]], query: str, method: Method = DEFAULT_METHOD
) -> dict[int, float]:
    """Every matching turn's score, computed the slow way from the definition."""
    near_turns, near_weight, k1, b = method.near_turns, method.near_weight, method.k1, method.b
    own = [Counter(terms(text)) for _, _, text in turns]
    by_session: dict[int, list[int]] = {}
    for number, (session, _, _) in enumerate(turns):
        by_session.setdefault(session, []).append(number)
    window: dict[int, list[int]] = {}
    for numbers in by_session.values():
        for place, number in enumerate(numbers):
            window[number] = numbers[max(0, place - near_turns) : place + near_turns + 1]
    length = {n: sum(sum(own[m].values()) for m in window[n]) for n in window}
    average = sum(length.values()) / len(turns) or 1.0
    asked = query_terms(query)
    scores: dict[int, float] = {}
    for term in asked:
        f = {
            n: sum(own[m][term] * (1.0 if m == n else near_weight) for m in window[n])
            for n in window
        }
        holding = {n: value for n, value in f.items() if value > 0}
        weight = idf(len(turns), len(holding))
        for n, value in holding.items():
            norm = k1 * (1 - b + b * length[n] / average)
            scores[n] = scores.get(n, 0.0) + weight * value * (k1 + 1) / (value + norm)
    for n in scores:
        key = speaker_key(turns[n][1])
        if all(part in asked for part in key.split(" ")):
            scores[n] *= 1 + method.speaker_boost
    return scores


Durable = Callable[[], BaseMemory]


@pytest.fixture(params=["sqlite", "postgres"])
def durable(request: pytest.FixtureRequest) -> Durable:
    """Makes an empty durable keyword memory of one kind (each example gets its own)."""
    if request.param == "sqlite":
        return SQLiteKeywordMemory
    database = request.getfixturevalue("database")
    return lambda: PostgresKeywordMemory(database, f"ranking-{uuid.uuid4().hex}")


# Each example makes its own memories with the fixture's factory.
_EXAMPLES = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_EXAMPLES
@given(st.lists(TURN, min_size=1, max_size=25), st.lists(QUERY, min_size=1, max_size=3), st.data())
def test_both_memories_score_every_turn_as_the_definition_does(
    durable: Durable, turns: list[tuple[int, str, str]], queries: list[str], data: st.DataObject
) -> None:
    items = [
        (Message(role=speaker, content=text, turn_id=f"T{n}"), Session(session_id=f"s{session}"))
        for n, (session, speaker, text) in enumerate(turns)
    ]
    cuts = sorted(data.draw(st.lists(st.integers(0, len(items)), max_size=3)))
    keyword, stored = KeywordMemory(), durable()
    try:
        for start, end in zip([0, *cuts], [*cuts, len(items)], strict=True):
            keyword.ingest_many(items[start:end])  # batches of any size, sessions interleaved
            stored.ingest_many(items[start:end])
        for query in queries:
            expected = reference(turns, query)
            found = keyword.search(query, limit=len(turns))
            assert found == stored.search(query, limit=len(turns))
            assert {hit.turn_id: hit.score for hit in found} == pytest.approx(
                {f"T{n}": score for n, score in expected.items()}, rel=1e-12
            )
    finally:
        stored.close()


# After deletes and corrections, each memory scores the turns it holds as the definition scores
# that same conversation stored afresh: windows and statistics follow every change.

CHANGE = st.one_of(
    st.tuples(st.just("delete"), st.integers(0, 30)),
    st.tuples(st.just("delete session"), st.integers(0, 3)),
    st.tuples(st.just("correct"), st.integers(0, 30), TURN),
)


@_EXAMPLES
@given(
    st.lists(TURN, min_size=1, max_size=25),
    st.lists(CHANGE, max_size=6),
    st.lists(QUERY, min_size=1, max_size=3),
)
def test_both_memories_follow_deletes_and_corrections(
    durable: Durable,
    turns: list[tuple[int, str, str]],
    changes: list[tuple[object, ...]],
    queries: list[str],
) -> None:
    held = dict(enumerate(turns))  # turn number -> (session, speaker, text), in number order

    def item(number: int, turn: tuple[int, str, str]) -> tuple[Message, Session]:
        session, speaker, text = turn
        return Message(role=speaker, content=text, turn_id=f"T{number}"), Session(
            session_id=f"s{session}"
        )

    keyword, stored = KeywordMemory(), durable()
    try:
        for memory in (keyword, stored):
            memory.ingest_many(item(n, t) for n, t in held.items())
        for change in changes:
            if change[0] == "delete":
                number = int(str(change[1]))
                for memory in (keyword, stored):
                    memory.delete([f"T{number}"])
                held.pop(number, None)
            elif change[0] == "delete session":
                session = int(str(change[1]))
                for memory in (keyword, stored):
                    memory.delete(filter=MessageFilter(session_ids=[f"s{session}"]))
                held = {n: t for n, t in held.items() if t[0] != session}
            elif int(str(change[1])) in held:  # a correction of a turn held
                number, turn = int(str(change[1])), change[2]
                assert isinstance(turn, tuple)
                for memory in (keyword, stored):
                    memory.ingest(*item(number, turn))
                held[number] = turn
        numbers = sorted(held)
        for query in queries:
            expected = reference([held[n] for n in numbers], query) if numbers else {}
            found = keyword.search(query, limit=len(turns))
            assert found == stored.search(query, limit=len(turns))
            assert {hit.turn_id: hit.score for hit in found} == pytest.approx(
                {f"T{numbers[i]}": score for i, score in expected.items()}, rel=1e-12
            )
    finally:
        stored.close()


@settings(max_examples=40, deadline=None)
@given(
    st.lists(TURN, min_size=1, max_size=20),
    QUERY,
    st.builds(
        Method,
        near_turns=st.integers(0, 4),
        near_weight=st.sampled_from([0.0, 0.25, 0.3, 0.5, 0.75]),
        speaker_boost=st.sampled_from([0.0, 0.5, 1.0]),
        k1=st.sampled_from([0.9, 1.2, 2.0]),
        b=st.sampled_from([0.0, 0.5, 0.75, 1.0]),
    ),
)
def test_other_methods_score_as_their_definition_does(
    turns: list[tuple[int, str, str]], query: str, method: Method
) -> None:
    # The parameters himga.eval.folds compares the default with: the same C core, other values.
    items = [
        (Message(role=speaker, content=text, turn_id=f"T{n}"), Session(session_id=f"s{session}"))
        for n, (session, speaker, text) in enumerate(turns)
    ]
    memory = KeywordMemory(method)
    memory.ingest_many(items)
    expected = reference(turns, query, method)
    found = memory.search(query, limit=len(turns))
    assert {hit.turn_id: hit.score for hit in found} == pytest.approx(
        {f"T{n}": score for n, score in expected.items()}, rel=1e-12
    )


def test_a_session_resumed_after_another_scores_as_its_definition_does() -> None:
    # The C core walks a term's windows in turn order while their turns are numbered one after
    # another, and the rest of its postings in general. Here session 0 is stored in one go, then
    # resumed after a turn of session 1: the window of turn 4 holds turns 2 to 5 and 7, so
    # "kayak" reaches turns 2, 3 and 4 both ways, and each must still be scored once.
    said = ["kayak lake", "boat", "kayak", "sunset", "kayak mug", "dog", "kayak", "kayak paddles"]
    turns = [(0, SPEAKERS[n % 2], text) for n, text in enumerate(said[:6])]
    turns += [(1, "Cleo Park", said[6]), (0, "Ada", said[7]), (1, "Cleo Park", "frisbee")]
    turns += [(0, "Bruno", "kayak")]
    memory = KeywordMemory()
    memory.ingest_many(
        (Message(role=speaker, content=text, turn_id=f"T{n}"), Session(session_id=f"s{session}"))
        for n, (session, speaker, text) in enumerate(turns)
    )
    for query in ("kayak", "kayak boat", "Ada kayak sunset"):
        found = memory.search(query, limit=len(turns))
        assert {hit.turn_id: hit.score for hit in found} == pytest.approx(
            {f"T{n}": score for n, score in reference(turns, query).items()}, rel=1e-12
        )


def test_a_long_session_scores_every_turn_as_its_definition_does() -> None:
    # Walking a term's windows in turn order, the C core keeps the counts of the turns still open
    # in a ring of 256; a session of 700 turns, a term in every third and some runs of it, goes
    # round it several times.
    said = [
        ("kayak lake" if n % 3 == 0 else "boat") + (" kayak" if n % 7 == 0 else "")
        for n in range(700)
    ]
    turns = [(0, SPEAKERS[n % 2], text) for n, text in enumerate(said)]
    memory = KeywordMemory()
    memory.ingest_many(
        (Message(role=speaker, content=text, turn_id=f"T{n}"), Session(session_id=f"s{session}"))
        for n, (session, speaker, text) in enumerate(turns)
    )
    for query in ("kayak", "Ada kayak boat"):
        found = memory.search(query, limit=len(turns))
        assert {hit.turn_id: hit.score for hit in found} == pytest.approx(
            {f"T{n}": score for n, score in reference(turns, query).items()}, rel=1e-12
        )
