"""himga.memory.fusion: the ranking the hybrid memory answers with, from the keyword method's
hits and the dense side's cosines."""

import math

import numpy as np
import pytest

from himga.data.conversation import Message, Session
from himga.errors import InvalidArgument
from himga.memory.fusion import BASELINE, Fusion, dense_query, fuse, passage
from himga.memory.keyword import KeywordMemory
from himga.memory.ranking import idf, speaker_key


def no_neighbours(key: int) -> list[int]:
    return []


def test_a_passage_is_the_speaker_and_what_was_said() -> None:
    assert passage("Caroline", "I went to a support group.") == (
        "Caroline: I went to a support group."
    )
    assert passage("", "hello") == "hello"
    assert passage("  ", "hello") == "hello"


def test_a_turn_both_sides_rank_high_beats_one_only_one_side_ranks_first() -> None:
    keyword = [(1, 9.0), (2, 8.0), (3, 7.0)]
    dense = [(4, 0.9), (2, 0.8), (5, 0.7)]
    for method in (Fusion(), BASELINE):
        fused = fuse(keyword, dense, (0.5, 0.1), no_neighbours, method, limit=10)
        assert fused[0][0] == 2
        assert {key for key, _ in fused} == {1, 2, 3, 4, 5}


def test_scores_are_weighted_reciprocal_ranks() -> None:
    method = Fusion(dense_weight=0.3, rank_constant=10, kind="ranks")
    keyword, dense = [(7, 3.0), (8, 1.0)], [(8, 0.9), (9, 0.1)]
    fused = dict(fuse(keyword, dense, (0.0, 1.0), no_neighbours, method))
    assert math.isclose(fused[7], 0.7 / 11)
    assert math.isclose(fused[8], 0.7 / 12 + 0.3 / 11)
    assert math.isclose(fused[9], 0.3 / 12)


@pytest.mark.parametrize(
    ("weight", "expected"), [(0.0, [1, 2, 3]), (1.0, [3, 2, 1])], ids=["words", "meaning"]
)
def test_a_weight_at_either_end_is_that_sides_order(weight: float, expected: list[int]) -> None:
    keyword = [(1, 3.0), (2, 2.0), (3, 1.0)]
    dense = [(1, 0.1), (2, 0.5), (3, 0.9)]
    method = Fusion(dense_weight=weight, kind="ranks")
    assert [key for key, _ in fuse(keyword, dense, (0.0, 1.0), no_neighbours, method)] == expected


def test_turns_without_a_vector_count_by_words_alone() -> None:
    fused = fuse([(1, 2.0)], [(1, math.nan), (2, 0.5)], (0.0, 1.0), no_neighbours, BASELINE)
    assert dict(fused)[1] == pytest.approx(0.7 / 11)
    assert [key for key, _ in fused] == [1, 2]
    fused = fuse([(1, 2.0)], [(1, math.nan), (2, 0.5)], (0.0, 0.1), no_neighbours, Fusion())
    assert dict(fused) == pytest.approx({1: 1.0, 2: 0.2 * 5.0})


def test_a_key_given_twice_counts_once() -> None:
    once = fuse([(1, 2.0)], [(2, 0.5)], (0.0, 1.0), no_neighbours, Fusion())
    twice = fuse([(1, 2.0), (1, 2.0)], [(2, 0.5), (2, 0.1)], (0.0, 1.0), no_neighbours, Fusion())
    assert once == twice


@pytest.mark.parametrize("method", [Fusion(), BASELINE], ids=["scores", "ranks"])
def test_limit_and_ties(method: Fusion) -> None:
    # Equal scores go to the smaller key, the earlier turn.
    fused = fuse([], [(5, 0.5), (3, 0.5), (4, 0.5)], (0.0, 1.0), no_neighbours, method, limit=2)
    assert [key for key, _ in fused] == [3, 4]
    assert fuse([(1, 1.0)], [], (0.0, 1.0), no_neighbours, Fusion(), limit=0) == []
    assert fuse([], [], (0.0, 1.0), no_neighbours, Fusion()) == []


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("keyword_depth", 0),
        ("dense_depth", 0),
        ("dense_weight", -0.1),
        ("neighbour_weight", -1),
        ("rank_constant", -1),
        ("coverage", -0.5),
        ("date_boost", -1),
        ("date_boost", float("nan")),
        ("date_boost", float("inf")),
        ("kind", "words"),
    ],
)
def test_out_of_range_parameters_are_refused_by_name(field: str, value: object) -> None:
    with pytest.raises(InvalidArgument, match=field):
        Fusion(**{field: value})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="dense_weight"):
        Fusion(dense_weight=1.5, kind="ranks")


def test_scores_are_keyword_over_the_best_plus_weighted_z_and_the_better_neighbour() -> None:
    method = Fusion(dense_weight=0.2, neighbour_weight=0.25)
    keyword = [(10, 4.0), (11, 2.0)]
    dense = [(10, 0.5), (11, 0.3), (12, 0.9), (13, 0.7)]
    beside = {10: [11], 11: [10, 12], 12: [11, 13], 13: [12, 14]}  # 14 has no cosine given
    fused = dict(fuse(keyword, dense, (0.3, 0.2), lambda key: beside[key], method))
    z = {10: 1.0, 11: 0.0, 12: 3.0, 13: 2.0}
    assert fused == pytest.approx(
        {
            10: 1.0 + 0.2 * z[10] + 0.05 * z[11],
            11: 0.5 + 0.2 * z[11] + 0.05 * z[12],
            12: 0.2 * z[12] + 0.05 * z[13],
            13: 0.2 * z[13] + 0.05 * z[12],
        }
    )


def test_with_coverage_a_best_hit_below_the_full_match_is_a_partial_one() -> None:
    keyword = [(10, 4.0), (11, 2.0)]
    dense = [(10, 0.3), (11, 0.3)]  # no spread: words alone
    scale = dict(fuse(keyword, dense, (0.3, 0.0), no_neighbours, Fusion(coverage=0.5), 10, 16.0))
    assert scale == pytest.approx({10: 4.0 / 8.0, 11: 2.0 / 8.0})
    # a best hit above c times the full match is still the scale, as without coverage
    above = dict(fuse(keyword, dense, (0.3, 0.0), no_neighbours, Fusion(coverage=0.2), 10, 16.0))
    assert above == pytest.approx({10: 1.0, 11: 0.5})
    no_coverage = Fusion(coverage=0.0)
    assert dict(fuse(keyword, dense, (0.3, 0.0), no_neighbours, no_coverage, 10, 16.0)) == above


def test_the_full_match_is_the_idf_of_each_term_by_its_occurrences() -> None:
    memory = KeywordMemory()
    memory.ingest_many(
        (Message(role="a", content=text, turn_id=f"t{i}"), Session(session_id="s"))
        for i, text in enumerate(["green tea", "tea and tea", "coffee"])
    )
    # "tea" is said 3 times in 3 turns; "juice" by none
    assert memory.full_match(["tea", "juic"]) == pytest.approx(idf(3, 3) + idf(3, 0))
    assert memory.full_match(["coffe"]) == pytest.approx(idf(3, 1))


def test_a_turn_whose_neighbour_matches_by_meaning_rises_above_an_equal_one() -> None:
    # 1 and 2 score the same alone; 2 sits beside 3, the dense side's best.
    keyword = [(1, 2.0), (2, 2.0)]
    dense = [(1, 0.5), (2, 0.5), (3, 0.9)]
    beside = {1: [], 2: [3], 3: [2]}
    method = Fusion(dense_weight=0.2)
    alone = fuse(keyword, dense, (0.4, 0.1), no_neighbours, method, limit=3)
    together = fuse(keyword, dense, (0.4, 0.1), lambda key: beside[key], method, limit=3)
    assert [key for key, _ in alone][:2] == [1, 2]
    assert [key for key, _ in together] == [2, 1, 3]


def test_a_turn_said_in_a_named_month_counts_one_plus_the_date_boost_times() -> None:
    # 1 and 2 match the words alike; 2 was said in the month named, and so was 3, whose score
    # below zero rises by its magnitude too (never down).
    keyword = [(1, 2.0), (2, 2.0)]
    dense = [(1, 0.5), (2, 0.5), (3, 0.1)]
    stats = (0.4, 0.1)
    in_month = {2, 3}

    def dated(keys: np.ndarray) -> np.ndarray:
        return np.isin(keys, list(in_month))

    plain = dict(fuse(keyword, dense, stats, no_neighbours, Fusion()))
    assert plain[1] == plain[2] and plain[3] < 0
    boosted = fuse(keyword, dense, stats, no_neighbours, Fusion(), dated=dated)
    assert [key for key, _ in boosted] == [2, 1, 3]
    assert dict(boosted) == pytest.approx({1: plain[1], 2: 2 * plain[2], 3: 0.0})
    half = dict(fuse(keyword, dense, stats, no_neighbours, Fusion(date_boost=0.5), dated=dated))
    assert half == pytest.approx({1: plain[1], 2: 1.5 * plain[2], 3: 0.5 * plain[3]})
    assert dict(fuse(keyword, dense, stats, no_neighbours, Fusion(date_boost=0), dated=dated)) == (
        plain
    )
    # the baseline is reciprocal ranks as it was measured: no month in it
    ranks = fuse(keyword, dense, stats, no_neighbours, BASELINE)
    assert fuse(keyword, dense, stats, no_neighbours, BASELINE, dated=dated) == ranks


def test_no_spread_of_cosines_leaves_the_words_alone() -> None:
    fused = fuse([(1, 3.0), (2, 1.0)], [(2, 0.9)], (0.9, 0.0), no_neighbours, Fusion())
    assert fused == [(1, 1.0), (2, pytest.approx(1 / 3))]


SPEAKERS = [
    speaker_key("Caroline"),
    speaker_key("Melanie"),
    speaker_key("Jon Snow"),
    speaker_key("प्रिया"),
]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            "When did Caroline go to the LGBTQ support group?",
            "When did go to the LGBTQ support group?",
        ),
        ("What is Caroline's identity?", "What is identity?"),
        ("How do Caroline and Melanie relax?", "How do and relax?"),
        # Jon alone does not name "Jon Snow": kept, as the keyword method does not boost him.
        ("Where did Jon go?", "Where did Jon go?"),
        ("Where did Jon Snow go?", "Where did go?"),
        ("What does प्रिया like?", "What does like?"),  # her name is one word, marks and all
        # Nobody named, or nothing left but the name: the query as it is.
        ("What beverage do I prefer?", "What beverage do I prefer?"),
        ("Caroline?", "Caroline?"),
    ],
)
def test_the_dense_query_leaves_out_the_speakers_it_names(query: str, expected: str) -> None:
    assert dense_query(query, SPEAKERS) == expected
    assert dense_query(query, []) == query
