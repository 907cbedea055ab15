"""The C core of the ranking (himga.memory._ranking) refuses what it cannot rank, rather than
reading outside its arrays; what it ranks is checked against the definition in test_ranking."""

from __future__ import annotations

from array import array
from collections.abc import Callable
from functools import partial

import pytest

from himga.memory import _ranking
from himga.memory.ranking import DEFAULT_METHOD, Selection, rank

# Each test runs with both ways the C core makes a reach (tests/memory/conftest.py).
pytestmark = pytest.mark.usefixtures("both_ways")


def _turns(count: int) -> dict[str, array[int]]:
    """`count` turns of one session, each of length 1, said by speaker 0."""
    return {
        "before": array("i", range(-1, count - 1)),
        "after": array("i", [*range(1, count), -1]),
        "lengths": array("i", [1] * count),
        "speakers": array("i", [0] * count),
    }


def _rank(
    postings: list[array[int]], turns: dict[str, array[int]], limit: int = 10
) -> list[tuple[int, float]]:
    count = len(turns["before"])
    return rank(
        postings,
        turns["before"],
        turns["after"],
        turns["lengths"],
        turns["speakers"],
        b"\x00",
        count,
        count,
        limit,
    )


def test_it_ranks_a_turn_and_its_neighbours() -> None:
    best = _rank([array("i", [2])], _turns(5))
    # equal window lengths: the turn itself first, then its four neighbours, tied, in order
    assert [turn for turn, _ in best] == [2, 0, 1, 3, 4]
    assert best[0][1] > best[1][1] == best[4][1] > 0


def test_a_named_speaker_doubles_a_score() -> None:
    turns = _turns(3)
    plain = _rank([array("i", [1])], turns)
    count = len(turns["lengths"])
    args = (turns["before"], turns["after"], turns["lengths"], turns["speakers"])
    named = rank([array("i", [1])], *args, b"\x01", count, count, 10)
    assert [score for _, score in named] == [2 * score for _, score in plain]


def test_a_selection_keeps_the_scores_of_the_turns_it_allows() -> None:
    # A filter drops turns after scoring: the others keep their scores, and fill the limit.
    turns = _turns(5)
    plain = dict(_rank([array("i", [2])], turns))
    args = (turns["before"], turns["after"], turns["lengths"], turns["speakers"], b"\x00")
    parity = array("i", [n % 2 for n in range(5)])
    times = array("q", [10, 20, 30, 40, 50])
    odd = Selection(((parity, b"\x00\x01"),))
    found = rank([array("i", [2])], *args, 5, 5, 1, DEFAULT_METHOD, odd)
    assert found == [(1, plain[1])]
    late = Selection((), (times, 30, 50))  # 30 <= time < 50: turns 2 and 3
    found = rank([array("i", [2])], *args, 5, 5, 10, DEFAULT_METHOD, late)
    assert found == [(2, plain[2]), (3, plain[3])]
    nothing = Selection(((parity, b""),))  # a value outside the mask is not selected
    assert rank([array("i", [2])], *args, 5, 5, 10, DEFAULT_METHOD, nothing) == []


def test_holes_count_as_numbers_not_as_turns() -> None:
    # Turn 1 is deleted: arrays cover three numbers, two turns are stored.
    before, after = array("i", [-1, -1, 0]), array("i", [2, -1, -1])
    lengths, speakers = array("i", [2, 0, 2]), array("i", [0, -1, 0])
    found = rank([array("i", [2])], before, after, lengths, speakers, b"\x00", 2, 4, 10)
    assert [turn for turn, _ in found] == [2, 0]


@pytest.mark.parametrize("turn", [-1, 5, 2**31 - 1])
def test_a_posting_outside_the_turns_is_refused(turn: int) -> None:
    with pytest.raises(ValueError, match="posting"):
        _rank([array("i", [0, turn])], _turns(5))


def _resumed() -> dict[str, array[int]]:
    """Five turns: a session of 0, 1, 3 and 4 (resumed after turn 2, a session of its own)."""
    turns = _turns(5)
    turns["before"] = array("i", [-1, 0, -1, 1, 3])
    turns["after"] = array("i", [1, 3, -1, 4, -1])
    return turns


@pytest.mark.parametrize(
    ("made", "postings", "broken"),
    [
        (partial(_turns, 5), [2], ("after", 2, 7)),  # met while the windows are in turn order
        (_resumed, [0, 4], ("after", 4, 9)),  # met after a window out of order (turn 0's)
    ],
)
def test_a_broken_window_link_is_refused(
    made: Callable[[], dict[str, array[int]]], postings: list[int], broken: tuple[str, int, int]
) -> None:
    turns = made()
    links, turn, to = broken
    turns[links][turn] = to
    with pytest.raises(ValueError, match="link"):
        _rank([array("i", postings)], turns)
    # and the next call, on sound arrays, is not disturbed by the refused one
    assert _rank([array("i", [2])], _turns(5))[0][0] == 2


def test_arrays_shorter_than_the_turns_are_refused() -> None:
    turns = _turns(5)
    turns["lengths"] = array("i", [1, 1])
    with pytest.raises(ValueError, match="window_lengths"):
        _rank([array("i", [0])], turns)


def test_only_32_bit_int_buffers_are_read() -> None:
    turns = _turns(3)
    with pytest.raises(TypeError, match="32-bit"):
        _rank([array("q", [0])], turns)


def test_bad_parameters_are_refused() -> None:
    t = _turns(2)
    args = ([array("i", [0])], t["before"], t["after"], t["lengths"], t["speakers"], b"", 2, 2, 5)
    with pytest.raises(ValueError, match="near_turns"):
        _ranking.rank(*args, 65, 1.0, 0.5, 1.2, 0.75, 1.0)
    with pytest.raises(ValueError, match="own_weight"):
        _ranking.rank(*args, 2, 0.0, 0.5, 1.2, 0.75, 1.0)


def test_a_store_whose_scores_fill_huge_pages_ranks_only_the_turns_reached() -> None:
    # From 2 MB of scores on (a quarter more than a store's turn numbers, for growth: from about
    # 210,000 turn numbers) they are aligned to huge pages and zeroed by the core itself. Every
    # hit must be a turn a posting's window reaches, each window of the same shape scoring the
    # same, call after call on the reused scratch.
    turns = _turns(300_000)
    for posting in ([1000, 150_000, 299_000], [2000, 200_000]):
        found = _rank([array("i", posting)], turns, limit=100)
        reached = {turn + step for turn in posting for step in range(-2, 3)}
        assert {turn for turn, _ in found} == reached
        scores = dict(found)
        assert len({scores[turn] for turn in posting}) == 1
        assert len({scores[turn + step] for turn in posting for step in (-2, -1, 1, 2)}) == 1


def test_nothing_to_rank_gives_no_hits() -> None:
    assert _rank([], _turns(3)) == []
    assert _rank([array("i", [1])], _turns(3), limit=0) == []


def test_threads_ranking_at_once_get_what_one_thread_gets() -> None:
    # The core runs without the GIL on scratch arrays of its own: memories of different sizes,
    # searched from several threads at once, must answer as each does alone.
    from concurrent.futures import ThreadPoolExecutor

    from himga.data import Message, Session
    from himga.memory import KeywordMemory

    words = ["kayak", "lake", "sunset", "pottery", "mug", "dog", "frisbee", "paddle"]
    memories = []
    for size in (50, 400, 3000):
        memory = KeywordMemory()
        memory.ingest_many(
            (
                Message(role="Ada", content=f"{words[i % 8]} {words[i * 7 % 8]}", turn_id=str(i)),
                Session(session_id=f"s{i // 20}"),
            )
            for i in range(size)
        )
        memories.append(memory)
    asks = [(memory, f"{a} {b}") for memory in memories for a in words for b in words[:3]]
    alone = [memory.search(query, 20) for memory, query in asks]
    with ThreadPoolExecutor(max_workers=6) as pool:
        together = list(pool.map(lambda ask: ask[0].search(ask[1], 20), asks * 4))
    assert together == alone * 4


def test_numbers_reads_what_group_concat_writes_and_nothing_else() -> None:
    read = array("i")
    read.frombytes(_ranking.numbers("0 7 7 42 2147483647"))
    assert read.tolist() == [0, 7, 7, 42, 2**31 - 1]
    assert _ranking.numbers("") == b""
    for bad in ("1 x", "2147483648", "-1", "1,2", "\uff13"):
        with pytest.raises(ValueError):
            _ranking.numbers(bad)
