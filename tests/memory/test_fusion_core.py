"""The fusion's scores in C (himga.memory._fusion, given Links) are those of its Python
definition (fusion._scores, given the neighbours one turn at a time), to the bit; its best
candidates are those numpy's lexsort puts first."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from himga.memory import _fusion
from himga.memory.fusion import Around, Fusion, Links, fuse_arrays
from himga.memory.windows import Windows


def one_at_a_time(windows: Windows) -> Around:
    """The Around of `windows` from `holds` and `beside`, a turn at a time."""

    def around(candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        owners: list[int] = []
        others: list[int] = []
        for index, turn in enumerate(candidates.tolist()):
            if windows.holds(turn):
                for other in windows.beside(turn):
                    if other >= 0:
                        owners.append(index)
                        others.append(other)
        return np.asarray(owners, dtype=np.intp), np.asarray(others, dtype=np.int64)

    return around


def stored(sessions: list[int], gap: int, removed: set[int]) -> Windows:
    """Turns of a few sessions, numbers that hold no turn, and some turns deleted."""
    windows = Windows()
    first = len(sessions) // 2
    windows.add(sessions[:first], [3] * first, ["a"] * first)
    windows.skip_to(windows.end + gap)
    rest = sessions[first:]
    windows.add(rest, [2] * len(rest), ["b"] * len(rest))
    windows.remove([n for n in removed if windows.holds(n)])
    return windows


keys = st.integers(-3, 45)
# BM25 scores, never negative (a negative one far below a tiny positive best would overflow the
# definition's division, which no keyword side can ask of it)
scores = st.one_of(st.floats(0, 50, allow_nan=False), st.just(math.nan))
cosines = st.one_of(st.floats(-1, 1), st.just(math.nan))
weights = st.sampled_from([0.0, 0.15, 0.2, 0.3, 1.7])


@settings(max_examples=300, deadline=None)
@given(
    sessions=st.lists(st.integers(0, 3), min_size=1, max_size=30),
    gap=st.integers(0, 5),
    removed=st.sets(st.integers(0, 40)),
    keyword=st.lists(st.tuples(keys, scores), max_size=20),
    dense=st.lists(st.tuples(keys, cosines), max_size=20),
    mean=st.floats(-0.5, 0.9),
    deviation=st.sampled_from([0.0, 1e-3, 0.05, 0.3]),
    dense_weight=weights,
    neighbour_weight=weights,
    coverage=st.sampled_from([0.0, 0.5, 1.0]),
    full_match=st.sampled_from([0.0, 3.0, 40.0]),
    dated=st.sets(keys),
)
def test_the_scores_in_c_are_the_definitions(
    sessions: list[int],
    gap: int,
    removed: set[int],
    keyword: list[tuple[int, float]],
    dense: list[tuple[int, float]],
    mean: float,
    deviation: float,
    dense_weight: float,
    neighbour_weight: float,
    coverage: float,
    full_match: float,
    dated: set[int],
) -> None:
    windows = stored(sessions, gap, removed)
    fusion = Fusion(dense_weight=dense_weight, neighbour_weight=neighbour_weight, coverage=coverage)
    sides = (
        np.array([k for k, _ in keyword], dtype=np.int64),
        np.array([s for _, s in keyword], dtype=np.float64),
        np.array([k for k, _ in dense], dtype=np.int64),
        np.array([c for _, c in dense], dtype=np.float64),
    )

    def in_month(candidates: np.ndarray) -> np.ndarray:
        return np.isin(candidates, sorted(dated))

    for month in (None, in_month):
        expected = fuse_arrays(
            *sides, (mean, deviation), one_at_a_time(windows), fusion, 100, full_match, month
        )
        found = fuse_arrays(
            *sides, (mean, deviation), Links(*windows.links()), fusion, 100, full_match, month
        )
        assert found == expected  # keys, order and every score's bits


def test_the_baseline_given_links_ranks_as_without() -> None:
    windows = stored([0, 0, 1, 1], 0, set())
    sides = (np.array([1, 2]), np.array([3.0, 1.0]), np.array([2, 3]), np.array([0.9, 0.1]))
    ranks = Fusion(kind="ranks")
    assert fuse_arrays(*sides, (0.0, 1.0), Links(*windows.links()), ranks) == fuse_arrays(
        *sides, (0.0, 1.0), one_at_a_time(windows), ranks
    )


def test_the_core_refuses_arrays_it_would_misread_naming_them() -> None:
    sessions, before, after = stored([0, 0], 0, set()).links()
    keys, scores = np.array([1], dtype=np.int64), np.array([1.0])
    weights = (0.2, 0.25, 0.5, 0.0)
    with pytest.raises(TypeError, match="keyword_keys must be a contiguous buffer of int64"):
        _fusion.scores(
            keys.astype(np.int32), scores, keys, scores, 0.0, 1.0, sessions, before, after, *weights
        )
    with pytest.raises(TypeError, match="cosines must be a contiguous buffer of float64"):
        _fusion.scores(
            keys,
            scores,
            keys,
            scores[::-1].astype(np.float32),
            0.0,
            1.0,
            sessions,
            before,
            after,
            *weights,
        )
    with pytest.raises(ValueError, match="each key must have one score"):
        _fusion.scores(
            keys, np.array([1.0, 2.0]), keys, scores, 0.0, 1.0, sessions, before, after, *weights
        )
    with pytest.raises(ValueError, match="sessions, before and after must cover the same turns"):
        _fusion.scores(keys, scores, keys, scores, 0.0, 1.0, sessions, before, after[:1], *weights)


@settings(max_examples=300, deadline=None)
@given(
    ranked=st.lists(
        st.tuples(keys, st.one_of(st.sampled_from([0.0, -0.0, 1.0, 2.5]), scores, cosines)),
        max_size=150,
    ),
    limit=st.one_of(st.integers(0, 12), st.integers(60, 160)),
)
def test_the_best_candidates_in_c_are_those_lexsort_puts_first(
    ranked: list[tuple[int, float]], limit: int
) -> None:
    """Greater scores first, nan after every number, ties (0.0 and -0.0 too) to the smaller
    key; few asked (kept as they come) or many (sorted), fewer candidates than asked."""
    candidates = np.array([key for key, _ in ranked], dtype=np.int64)
    found = np.array([score for _, score in ranked], dtype=np.float64)
    order = np.lexsort((candidates, -found))[:limit]
    best = _fusion.best(candidates, found, limit)
    assert [key for key, _ in best] == candidates[order].tolist()
    np.testing.assert_array_equal([score for _, score in best], found[order])  # nan as nan


def test_the_best_candidates_refuse_what_they_would_misread() -> None:
    keys, scores = np.array([1, 2], dtype=np.int64), np.array([1.0, 2.0])
    with pytest.raises(TypeError, match="keys must be a contiguous buffer of int64"):
        _fusion.best(keys.astype(np.int32), scores, 1)
    with pytest.raises(TypeError, match="scores must be a contiguous buffer of float64"):
        _fusion.best(keys, scores.astype(np.float32), 1)
    with pytest.raises(ValueError, match="scores has 1 values for 2 keys"):
        _fusion.best(keys, scores[:1], 1)
    with pytest.raises(ValueError, match="limit must not be negative"):
        _fusion.best(keys, scores, -1)
