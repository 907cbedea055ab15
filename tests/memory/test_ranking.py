"""The shared keyword method against its definition (himga.memory.ranking's text), on random
conversations, and the two keyword memories against each other."""

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from himga.data import Message, Session
from himga.memory import KeywordMemory, SQLiteKeywordMemory
from himga.memory.filters import MessageFilter
from himga.memory.ranking import DEFAULT_METHOD, Method, idf, named_months, speaker_key
from himga.memory.text import query_terms, terms
from himga.memory.times import parse_date_str

WORDS = ["kayak", "lake", "paddles", "sunset", "boat", "pottery", "mug", "dog", "frisbee"]
SPEAKERS = ["Ada", "Bruno", "Cleo Park"]
# Each session's date_str, by session number: two months of 2023 and one of 2022 (the same
# month as one of 2023's), and a session without a time.
DATES = ["1:56 pm on 8 May, 2023", "10:00 am on 31 July, 2023", "", "11:59 pm on 31 July, 2022"]
# Words a question names months with: a year alone names none, "may" names one only beside one.
WHEN = ["May", "July", "December", "2023", "2022", "may"]
# (session, speaker, words): a turn of a conversation whose sessions may interleave
TURN = st.tuples(
    st.integers(0, 3),
    st.sampled_from(SPEAKERS),
    st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join),
)
QUERY = st.lists(st.sampled_from(WORDS + SPEAKERS + WHEN), min_size=1, max_size=4).map(" ".join)


def dated_session(number: int) -> Session:
    """Session `number` of the random conversations, with its date (DATES)."""
    if DATES[number]:
        return Session(session_id=f"s{number}", date_str=DATES[number])
    return Session(session_id=f"s{number}")


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
    months = named_months(set(asked))
    for n in scores:
        key = speaker_key(turns[n][1])
        if all(part in asked for part in key.split(" ")):
            scores[n] *= 1 + method.speaker_boost
        said = parse_date_str(DATES[turns[n][0]])
        if said is not None and {said.year * 100 + said.month, said.month} & set(months):
            scores[n] *= 1 + method.date_boost
    return scores


@settings(max_examples=60, deadline=None)
@given(st.lists(TURN, min_size=1, max_size=25), st.lists(QUERY, min_size=1, max_size=3), st.data())
def test_both_memories_score_every_turn_as_the_definition_does(
    turns: list[tuple[int, str, str]], queries: list[str], data: st.DataObject
) -> None:
    items = [
        (Message(role=speaker, content=text, turn_id=f"T{n}"), dated_session(number))
        for n, (number, speaker, text) in enumerate(turns)
    ]
    cuts = sorted(data.draw(st.lists(st.integers(0, len(items)), max_size=3)))
    keyword, sqlite = KeywordMemory(), SQLiteKeywordMemory()
    try:
        for start, end in zip([0, *cuts], [*cuts, len(items)], strict=True):
            keyword.ingest_many(items[start:end])  # batches of any size, sessions interleaved
            sqlite.ingest_many(items[start:end])
        for query in queries:
            expected = reference(turns, query)
            found = keyword.search(query, limit=len(turns))
            assert found == sqlite.search(query, limit=len(turns))
            assert {hit.turn_id: hit.score for hit in found} == pytest.approx(
                {f"T{n}": score for n, score in expected.items()}, rel=1e-12
            )
    finally:
        sqlite.close()


# After deletes and corrections, each memory scores the turns it holds as the definition scores
# that same conversation stored afresh: windows and statistics follow every change.

CHANGE = st.one_of(
    st.tuples(st.just("delete"), st.integers(0, 30)),
    st.tuples(st.just("delete session"), st.integers(0, 3)),
    st.tuples(st.just("correct"), st.integers(0, 30), TURN),
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(TURN, min_size=1, max_size=25),
    st.lists(CHANGE, max_size=6),
    st.lists(QUERY, min_size=1, max_size=3),
)
def test_both_memories_follow_deletes_and_corrections(
    turns: list[tuple[int, str, str]],
    changes: list[tuple[object, ...]],
    queries: list[str],
) -> None:
    held = dict(enumerate(turns))  # turn number -> (session, speaker, text), in number order

    def item(number: int, turn: tuple[int, str, str]) -> tuple[Message, Session]:
        in_session, speaker, text = turn
        return Message(role=speaker, content=text, turn_id=f"T{number}"), dated_session(in_session)

    keyword, sqlite = KeywordMemory(), SQLiteKeywordMemory()
    try:
        for memory in (keyword, sqlite):
            memory.ingest_many(item(n, t) for n, t in held.items())
        for change in changes:
            if change[0] == "delete":
                number = int(str(change[1]))
                for memory in (keyword, sqlite):
                    memory.delete([f"T{number}"])
                held.pop(number, None)
            elif change[0] == "delete session":
                session = int(str(change[1]))
                for memory in (keyword, sqlite):
                    memory.delete(filter=MessageFilter(session_ids=[f"s{session}"]))
                held = {n: t for n, t in held.items() if t[0] != session}
            elif int(str(change[1])) in held:  # a correction of a turn held
                number, turn = int(str(change[1])), change[2]
                assert isinstance(turn, tuple)
                for memory in (keyword, sqlite):
                    memory.ingest(*item(number, turn))
                held[number] = turn
        numbers = sorted(held)
        for query in queries:
            expected = reference([held[n] for n in numbers], query) if numbers else {}
            found = keyword.search(query, limit=len(turns))
            assert found == sqlite.search(query, limit=len(turns))
            assert {hit.turn_id: hit.score for hit in found} == pytest.approx(
                {f"T{numbers[i]}": score for i, score in expected.items()}, rel=1e-12
            )
    finally:
        sqlite.close()


@settings(max_examples=40, deadline=None)
@given(
    st.lists(TURN, min_size=1, max_size=20),
    QUERY,
    st.builds(
        Method,
        near_turns=st.integers(0, 4),
        near_weight=st.sampled_from([0.0, 0.25, 0.3, 0.5, 0.75]),
        speaker_boost=st.sampled_from([0.0, 0.5, 1.0]),
        date_boost=st.sampled_from([0.0, 1.0, 2.5]),
        k1=st.sampled_from([0.9, 1.2, 2.0]),
        b=st.sampled_from([0.0, 0.5, 0.75, 1.0]),
    ),
)
def test_other_methods_score_as_their_definition_does(
    turns: list[tuple[int, str, str]], query: str, method: Method
) -> None:
    # The parameters himga.eval.folds compares the default with: the same C core, other values.
    items = [
        (Message(role=speaker, content=text, turn_id=f"T{n}"), dated_session(number))
        for n, (number, speaker, text) in enumerate(turns)
    ]
    memory = KeywordMemory(method)
    memory.ingest_many(items)
    expected = reference(turns, query, method)
    found = memory.search(query, limit=len(turns))
    assert {hit.turn_id: hit.score for hit in found} == pytest.approx(
        {f"T{n}": score for n, score in expected.items()}, rel=1e-12
    )


@pytest.mark.parametrize(
    ("question", "months"),
    [
        ("What did Maria donate in December 2023?", (202312,)),
        ("What did she say on 7 July, 2023, and on August 3, 2023?", (202307, 202308)),
        ("Who did Maria have dinner with on May 3, 2023?", (202305,)),
        ("What did they paint in March?", (3,)),  # no year: that month in any year
        ("Where did they go in July 2022 or 2023?", (202207, 202307)),
        ("What may Caroline do next?", ()),  # "may" beside no year is the verb
        ("What happened in 2023?", ()),  # a year alone names no month
        ("DÉCEMBRE? no: December", (12,)),
    ],
)
def test_a_question_names_the_months_its_words_name(question: str, months: tuple[int]) -> None:
    assert named_months(set(query_terms(question))) == months


@pytest.mark.parametrize("memory_kind", [KeywordMemory, SQLiteKeywordMemory])
def test_a_turn_said_in_the_month_a_question_names_counts_double(memory_kind: type) -> None:
    # The same words said in two sessions: the question's month picks the turn said in it, and
    # a turn whose session has no time is never boosted.
    memory = memory_kind()
    try:
        for number, date in enumerate(["8 May, 2023", "31 July, 2023", ""]):
            memory.ingest(
                Message(role="Ada", content="we went kayaking on the lake", turn_id=f"T{number}"),
                Session(session_id=f"s{number}", date_str=f"1:56 pm on {date}" if date else ""),
            )
        plain = {hit.turn_id: hit.score for hit in memory.search("kayaking lake", limit=3)}
        assert plain["T0"] == plain["T1"] == plain["T2"]
        dated = memory.search("kayaking on the lake in July 2023", limit=3)
        assert [hit.turn_id for hit in dated] == ["T1", "T0", "T2"]
        scores = {hit.turn_id: hit.score for hit in dated}
        assert scores["T1"] == 2 * scores["T0"] and scores["T0"] == scores["T2"]
        assert memory.search("kayaking on the lake in July 2022", limit=1)[0].score == plain["T0"]
    finally:
        close = getattr(memory, "close", None)
        if close is not None:
            close()
