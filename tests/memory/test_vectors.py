"""The vector index (himga.memory.vectors) against a brute-force reference: a dictionary of
unit vectors scanned in float64. Every answer is checked after additions, replacements and
removals in any order, with and without a filter, past the matrix's growth."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from himga.memory import vectors as vectors_module
from himga.memory.vectors import VectorIndex

DIM = 8


class Reference:
    """What the index must answer, computed the slow, obvious way."""

    def __init__(self) -> None:
        self.vectors: dict[int, np.ndarray] = {}

    def add(self, keys: list[int], vectors: np.ndarray) -> None:
        for key, vector in zip(keys, vectors, strict=True):
            v = np.asarray(vector, dtype=np.float64)
            self.vectors[key] = v / np.linalg.norm(v)

    def remove(self, keys: list[int]) -> None:
        for key in keys:
            self.vectors.pop(key, None)

    def cosines(self, query: np.ndarray, keys: list[int] | None = None) -> dict[int, float]:
        q = np.asarray(query, dtype=np.float64)
        q = q / np.linalg.norm(q)
        chosen = self.vectors if keys is None else {k: self.vectors[k] for k in keys}
        return {k: float(v @ q) for k, v in chosen.items()}


def _random(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray:
    return rng.normal(size=(n, dim)).astype(np.float32)


def _check_nearest(
    index: VectorIndex,
    reference: Reference,
    query: np.ndarray,
    k: int,
    allowed: list[int] | None = None,
) -> None:
    admitted = None if allowed is None else [a for a in allowed if a in reference.vectors]
    truth = reference.cosines(query, admitted)
    expected = sorted(truth.values(), reverse=True)[:k]
    keys, cosines = index.nearest(
        query, k, None if allowed is None else np.array(sorted(allowed), dtype=np.int64)
    )
    assert keys.dtype == np.int64
    assert cosines.dtype == np.float32
    assert len(keys) == len(expected) == len(set(keys.tolist()))
    np.testing.assert_allclose(cosines, expected, atol=1e-5)
    for key, cosine in zip(keys.tolist(), cosines.tolist(), strict=True):
        assert key in truth, f"key {key} is not admitted or not stored"
        assert cosine == pytest.approx(truth[key], abs=1e-5)


def test_nearest_is_the_brute_force_answer() -> None:
    rng = np.random.default_rng(1)
    index, reference = VectorIndex(DIM), Reference()
    keys = list(range(0, 3000, 3))  # sparse keys: they are row numbers, not positions
    vectors = _random(rng, len(keys))
    index.add(keys, vectors)
    reference.add(keys, vectors)
    assert len(index) == len(keys)
    for _ in range(20):
        query = _random(rng, 1)[0]
        for k in (1, 10, 999, 1000, 5000):
            _check_nearest(index, reference, query, k)


def test_a_large_index_answers_as_the_reference_too() -> None:
    """Past _BLAS_ROWS a scan is BLAS's product, below it numpy's own loop: both agree."""
    rng = np.random.default_rng(8)
    index, reference = VectorIndex(DIM), Reference()
    count = vectors_module._BLAS_ROWS + 5000
    vectors = _random(rng, count)
    index.add(list(range(count)), vectors)
    reference.add(list(range(count)), vectors)
    for _ in range(3):
        query = _random(rng, 1)[0]
        _check_nearest(index, reference, query, 10)
        _check_nearest(index, reference, query, 10, list(range(0, count, 2)))  # a wide filter
        _check_nearest(index, reference, query, 10, list(range(0, count, 50)))  # a narrow one


def test_nearest_ranks_the_query_itself_first() -> None:
    rng = np.random.default_rng(2)
    index = VectorIndex(DIM)
    vectors = _random(rng, 500)
    index.add(list(range(500)), vectors)
    keys, cosines = index.nearest(vectors[123] * 7.5, 3)  # any length: cosine, not dot product
    assert keys[0] == 123
    assert cosines[0] == pytest.approx(1.0, abs=1e-6)
    assert cosines[0] > cosines[1] >= cosines[2]


def test_ties_are_broken_by_the_lower_key() -> None:
    index = VectorIndex(2)
    index.add([9, 4, 7, 1], np.array([[1, 0], [1, 0], [0, 1], [1, 0]], dtype=np.float32))
    keys, cosines = index.nearest(np.array([1.0, 0.0]), 2)
    assert keys.tolist() == [1, 4]
    assert cosines.tolist() == [1.0, 1.0]


def test_a_removed_key_is_never_found_again() -> None:
    rng = np.random.default_rng(3)
    index, reference = VectorIndex(DIM), Reference()
    vectors = _random(rng, 200)
    index.add(list(range(200)), vectors)
    reference.add(list(range(200)), vectors)
    gone = [*range(0, 200, 2), 199, 5000]  # 5000 was never stored: ignored
    index.remove(gone)
    reference.remove(gone)
    assert len(index) == 99
    for key in gone:
        assert key not in index
    for key in (1, 3, 197):
        assert key in index
    for query in vectors[:20]:  # the removed vectors themselves, as queries
        _check_nearest(index, reference, query, 200)
        keys, _ = index.nearest(query, 200)
        assert not set(keys.tolist()) & set(gone)
    assert np.isnan(index.similarities(vectors[0], [0])).all()


def test_adding_a_stored_key_replaces_its_vector() -> None:
    index = VectorIndex(2)
    index.add([1, 2], np.array([[1, 0], [0, 1]], dtype=np.float32))
    index.add([1], np.array([[0, 1]], dtype=np.float32))
    assert len(index) == 2
    assert index.similarities(np.array([1.0, 0.0]), [1, 2]).tolist() == [0.0, 0.0]
    keys, _ = index.nearest(np.array([0.0, 1.0]), 5)
    assert sorted(keys.tolist()) == [1, 2]  # once each: the old vector of 1 is gone
    # a key given twice in one call keeps its last vector
    index.add([3, 3], np.array([[1, 0], [0, 1]], dtype=np.float32))
    assert len(index) == 3
    assert index.similarities(np.array([0.0, 1.0]), [3]).tolist() == [1.0]


def test_similarities_are_cosines_in_the_order_asked_with_nan_for_missing() -> None:
    index = VectorIndex(2)
    index.add([10, 20], np.array([[3, 4], [0, -2]], dtype=np.float32))
    got = index.similarities(np.array([0.0, 5.0]), [20, 99, 10, 20])
    assert got.dtype == np.float32
    np.testing.assert_allclose(got[[0, 2, 3]], [-1.0, 0.8, -1.0], atol=1e-6)
    assert np.isnan(got[1])
    assert index.similarities(np.array([1.0, 0.0]), []).shape == (0,)


def test_rows_gathered_earlier_are_scored_as_they_were_when_gathered() -> None:
    """A search copies its keyword hits' rows while its query is embedded (hybrid's First):
    scored later they give the keys' cosines as the index held them then, whatever it holds
    by the time the vector comes."""
    index = VectorIndex(2)
    index.add([10, 20], np.array([[3, 4], [0, -2]], dtype=np.float32))
    query = np.array([0.0, 5.0])
    gathered = index.gathered([20, 99, 10])
    then = index.similarities(query, [20, 99, 10])
    np.testing.assert_array_equal(index.similarities(query, gathered), then)  # nan alike
    index.remove([10])  # the last row moves into the freed one
    index.add([20, 99], np.array([[1, 0], [0, 1]], dtype=np.float32))
    np.testing.assert_array_equal(index.similarities(query, gathered), then)
    assert index.similarities(query, index.gathered([])).shape == (0,)


@pytest.mark.parametrize("share", [0.01, 0.05, 0.2, 0.5, 0.97])
def test_allowed_limits_the_search_to_the_keys_it_holds(share: float) -> None:
    """Narrow filters are searched over their own rows, wide ones by the full scan checked
    against them: both are the brute-force answer over the admitted keys."""
    rng = np.random.default_rng(4)
    index, reference = VectorIndex(DIM), Reference()
    keys = list(range(2000))
    vectors = _random(rng, len(keys))
    index.add(keys, vectors)
    reference.add(keys, vectors)
    admitted = sorted(rng.choice(4000, size=int(4000 * share), replace=False).tolist())
    for _ in range(10):
        query = _random(rng, 1)[0]
        for k in (1, 10, 100, 3000):
            _check_nearest(index, reference, query, k, admitted)


def test_allowed_without_a_stored_key_finds_nothing() -> None:
    index = VectorIndex(2)
    index.add([1, 2], np.array([[1, 0], [0, 1]], dtype=np.float32))
    for allowed in (np.array([], dtype=np.int64), np.array([5, 6])):
        keys, cosines = index.nearest(np.array([1.0, 0.0]), 3, allowed)
        assert keys.tolist() == [] and cosines.tolist() == []


def test_allowed_out_of_order_is_still_honoured() -> None:
    rng = np.random.default_rng(5)
    index, reference = VectorIndex(DIM), Reference()
    vectors = _random(rng, 100)
    index.add(list(range(100)), vectors)
    reference.add(list(range(100)), vectors)
    admitted = list(range(99, 9, -1))  # 90 of 100: the full-scan path, given in reverse
    query = _random(rng, 1)[0]
    keys, _ = index.nearest(query, 100, np.array(admitted))
    assert sorted(keys.tolist()) == list(range(10, 100))


def test_stats_are_the_mean_and_deviation_over_the_stored_vectors() -> None:
    rng = np.random.default_rng(6)
    index, reference = VectorIndex(DIM), Reference()
    # vectors that share a direction, as a text model's do: cosines far from 0, spread small
    base = rng.normal(size=DIM)
    vectors = (base + 0.3 * _random(rng, 1500)).astype(np.float32)
    index.add(list(range(1500)), vectors)
    reference.add(list(range(1500)), vectors)
    index.add(list(range(100)), vectors[-100:][::-1])  # replaced
    reference.add(list(range(100)), vectors[-100:][::-1])
    index.remove(list(range(700, 1200)))
    reference.remove(list(range(700, 1200)))
    for query in (base, _random(rng, 1)[0], vectors[3]):
        cosines = np.array(list(reference.cosines(query).values()))
        mean, std = index.stats(query)
        assert mean == pytest.approx(cosines.mean(), abs=1e-6)
        assert std == pytest.approx(cosines.std(), rel=1e-4)


def test_stats_of_an_empty_or_emptied_index() -> None:
    index = VectorIndex(2)
    assert index.stats(np.array([1.0, 0.0])) == (0.0, 0.0)
    index.add([1, 2], np.array([[1, 0], [0, 1]], dtype=np.float32))
    assert index.stats(np.array([1.0, 0.0])) == pytest.approx((0.5, 0.5))
    index.remove([1, 2])
    assert index.stats(np.array([1.0, 0.0])) == (0.0, 0.0)
    index.add([3], np.array([[1, 1]], dtype=np.float32))
    mean, std = index.stats(np.array([1.0, 0.0]))
    assert mean == pytest.approx(np.sqrt(0.5)) and std == pytest.approx(0.0, abs=1e-6)


def test_growth_keeps_every_vector_and_nbytes_follows_the_count() -> None:
    rng = np.random.default_rng(7)
    index = VectorIndex(DIM)
    empty = index.nbytes
    vectors = _random(rng, 10_000)
    for start in range(0, 10_000, 999):  # batches that straddle each doubling
        index.add(list(range(start, min(start + 999, 10_000))), vectors[start : start + 999])
    assert len(index) == 10_000
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    np.testing.assert_allclose(
        [index.similarities(unit[i], [i])[0] for i in (0, 998, 999, 5000, 9999)], 1.0, atol=1e-6
    )
    per_vector = DIM * 4 + 8  # float32 values and an int64 key
    assert 10_000 * per_vector <= index.nbytes - empty <= 2 * 10_000 * per_vector + empty


@pytest.mark.parametrize(
    ("vectors", "rule"),
    [
        (np.ones((2, 3)), "must be 2 x 2"),
        (np.ones((3, 2)), "must be 2 x 2"),
        (np.ones(4), "must be 2 x 2"),
        (np.array([[1.0, 0.0], [np.nan, 1.0]]), "finite"),
        (np.array([[1.0, 0.0], [np.inf, 1.0]]), "finite"),
        (np.array([[1.0, 0.0], [0.0, 0.0]]), "length 0"),
    ],
)
def test_bad_vectors_are_refused_whole(vectors: np.ndarray, rule: str) -> None:
    index = VectorIndex(2)
    index.add([1], np.array([[1, 0]], dtype=np.float32))
    with pytest.raises(ValueError, match=rule) as raised:
        index.add([1, 2], vectors)
    assert str(raised.value).startswith("vectors:")
    assert len(index) == 1 and 2 not in index
    assert index.similarities(np.array([1.0, 0.0]), [1]).tolist() == [1.0]  # not replaced
    assert index.stats(np.array([1.0, 0.0])) == pytest.approx((1.0, 0.0))


def test_bad_keys_queries_and_sizes_are_refused_naming_the_field() -> None:
    index = VectorIndex(2)
    with pytest.raises(ValueError, match=r"^keys:"):
        index.add(["a"], np.ones((1, 2)))  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"^keys:"):
        index.add([1.5], np.ones((1, 2)))  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"^vectors: must be 1 x 2"):
        index.nearest(np.ones(3), 1)
    index.add([1], np.ones((1, 2)))
    for query, rule in (([0.0, 0.0], "length 0"), ([np.nan, 1.0], "finite"), ([1, np.inf], "fin")):
        for read in (
            lambda q: index.nearest(q, 1),
            lambda q: index.stats(q),
            lambda q: index.similarities(q, [1]),
            lambda q: index.shared_nearest(q, 1),
        ):
            with pytest.raises(ValueError, match=rf"^vectors: .*{rule}"):
                read(np.array(query))
    index.remove([1])
    with pytest.raises(ValueError, match=r"^k:"):
        index.nearest(np.ones(2), -1)
    for dimension in (0, -3, True, 2.0):
        with pytest.raises(ValueError, match=r"^dimension:"):
            VectorIndex(dimension)  # type: ignore[arg-type]
    assert len(index) == 0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["add", "remove"]),
            st.lists(st.integers(min_value=0, max_value=150), max_size=40),
        ),
        max_size=25,
    ),
    st.integers(min_value=0, max_value=2**32 - 1),
)
def test_any_sequence_of_writes_answers_as_the_reference(
    operations: list[tuple[str, list[int]]], seed: int
) -> None:
    rng = np.random.default_rng(seed)
    index, reference = VectorIndex(DIM), Reference()
    for operation, keys in operations:
        if operation == "add":
            vectors = _random(rng, len(keys))
            index.add(keys, vectors)
            reference.add(keys, vectors)
        else:
            index.remove(keys)
            reference.remove(keys)
        assert len(index) == len(reference.vectors)
    query = _random(rng, 1)[0]
    _check_nearest(index, reference, query, 10)
    _check_nearest(index, reference, query, 10, list(range(0, 151, 5)))
    _check_nearest(index, reference, query, 10, list(range(0, 151)))
    stored = sorted(reference.vectors)
    truth = reference.cosines(query)
    np.testing.assert_allclose(
        index.similarities(query, stored), [truth[k] for k in stored], atol=1e-5
    )
    if stored:
        mean, std = index.stats(query)
        cosines = np.array([truth[k] for k in stored])
        assert mean == pytest.approx(cosines.mean(), abs=1e-5)
        assert std == pytest.approx(cosines.std(), abs=1e-5)
