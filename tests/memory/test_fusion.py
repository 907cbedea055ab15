"""himga.memory.fusion: the ranking the hybrid memory answers with, from the keyword method's
hits and the dense side's cosines."""

import math

import pytest

from himga.errors import InvalidArgument
from himga.memory.fusion import Fusion, fuse, passage


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
    fused = fuse(keyword, dense, (0.5, 0.1), no_neighbours, Fusion(), limit=10)
    assert fused[0][0] == 2
    assert {key for key, _ in fused} == {1, 2, 3, 4, 5}


def test_scores_are_weighted_reciprocal_ranks() -> None:
    method = Fusion(dense_weight=0.3, rank_constant=10)
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
    fused = fuse(keyword, dense, (0.0, 1.0), no_neighbours, Fusion(dense_weight=weight))
    assert [key for key, _ in fused] == expected


def test_turns_without_a_vector_count_by_words_alone() -> None:
    fused = fuse([(1, 2.0)], [(1, math.nan), (2, 0.5)], (0.0, 1.0), no_neighbours, Fusion())
    assert dict(fused)[1] == pytest.approx(0.7 / 11)
    assert [key for key, _ in fused] == [1, 2]


def test_a_key_given_twice_counts_once() -> None:
    once = fuse([(1, 2.0)], [(2, 0.5)], (0.0, 1.0), no_neighbours, Fusion())
    twice = fuse([(1, 2.0), (1, 2.0)], [(2, 0.5), (2, 0.1)], (0.0, 1.0), no_neighbours, Fusion())
    assert once == twice


def test_limit_and_ties() -> None:
    # Equal scores go to the smaller key, the earlier turn.
    fused = fuse([], [(5, 0.5), (3, 0.5), (4, 0.5)], (0.0, 1.0), no_neighbours, Fusion(), limit=2)
    assert [key for key, _ in fused] == [3, 4]
    assert fuse([(1, 1.0)], [], (0.0, 1.0), no_neighbours, Fusion(), limit=0) == []
    assert fuse([], [], (0.0, 1.0), no_neighbours, Fusion()) == []


@pytest.mark.parametrize(
    ("field", "value"),
    [("keyword_depth", 0), ("dense_depth", 0), ("dense_weight", 1.5), ("rank_constant", -1)],
)
def test_out_of_range_parameters_are_refused_by_name(field: str, value: float) -> None:
    with pytest.raises(InvalidArgument, match=field):
        Fusion(**{field: value})
