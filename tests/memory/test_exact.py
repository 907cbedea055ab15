"""The exact cosines of chosen rows (himga.memory._exact): each row's dot product with the query
as the definition gives it, the same bits from `dots` and `best_of` and for a row wherever it
lies, the best k ranked by it with ties to the lower key, and what it cannot read refused,
naming the argument; and vectors scaled to length 1 and a query's moments (`units`, `moments`)
as their definitions give them."""

import numpy as np
import pytest

from himga.memory._exact import best_of, dots, moments, units

ROWS, DIMENSION = 500, 384


@pytest.fixture(scope="module")
def matrix() -> np.ndarray:
    rows = np.random.default_rng(7).standard_normal((ROWS, DIMENSION)).astype(np.float32)
    unit: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return unit


def cosines(found: bytearray) -> np.ndarray:
    return np.frombuffer(found, dtype=np.float32)


@pytest.mark.parametrize("dimension", [384, 16, 7, 1, 45])
def test_a_dot_product_is_the_definitions_to_float32_rounding(dimension: int) -> None:
    rng = np.random.default_rng(dimension)
    rows = rng.standard_normal((40, dimension)).astype(np.float32)
    query = rng.standard_normal(dimension).astype(np.float32)
    chosen = rng.integers(0, 40, 100).astype(np.int32)  # more than are asked for ahead
    exact = rows[chosen].astype(np.float64) @ query.astype(np.float64)
    np.testing.assert_allclose(cosines(dots(rows, chosen, query)), exact, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(cosines(dots(rows, None, query)), rows @ query, rtol=1e-5, atol=1e-5)


def test_a_rows_cosine_has_the_same_bits_from_each_function_and_wherever_it_lies(
    matrix: np.ndarray,
) -> None:
    query = matrix[11]
    chosen = np.array([400, 2, 11, 250], dtype=np.int32)
    chosen_cosines = cosines(dots(matrix, chosen, query))
    copied_cosines = cosines(dots(np.ascontiguousarray(matrix[chosen]), None, query))
    assert chosen_cosines.tobytes() == copied_cosines.tobytes()
    keys = np.arange(ROWS, dtype=np.int64) * 10
    best_keys, best_cosines = best_of(matrix, keys, chosen, query, 4)
    by_key = dict(zip((keys[chosen]).tolist(), chosen_cosines.tolist(), strict=True))
    found_keys = np.frombuffer(best_keys, np.int64).tolist()
    got = dict(zip(found_keys, cosines(best_cosines).tolist(), strict=True))
    assert got == by_key
    assert got[110] == pytest.approx(1.0, abs=1e-6)  # the query's own row


def test_the_best_k_lead_best_first_with_ties_to_the_lower_key() -> None:
    rows = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.6, 0.8], [1.0, 0.0]], np.float32)
    keys = np.array([50, 40, 30, 20, 10], dtype=np.int64)
    query = np.array([1.0, 0.0], dtype=np.float32)
    everyone = np.arange(5, dtype=np.int32)
    best_keys, best_cosines = best_of(rows, keys, everyone, query, 3)
    assert np.frombuffer(best_keys, np.int64).tolist() == [10, 30, 50]
    assert cosines(best_cosines).tolist() == [1.0, 1.0, 1.0]
    all_keys, _ = best_of(rows, keys, everyone, query, 99)  # more wanted than given: all of them
    assert np.frombuffer(all_keys, np.int64).tolist() == [10, 30, 50, 20, 40]
    twice, _ = best_of(rows, keys, np.array([3, 3, 1], np.int32), query, 3)
    assert np.frombuffer(twice, np.int64).tolist() == [20, 40]  # a row given twice counts once
    none, none_cosines = best_of(rows, keys, everyone[:0], query, 3)
    assert len(none) == len(none_cosines) == 0
    assert best_of(rows, keys, everyone, query, 0) == (bytearray(), bytearray())


def test_the_results_are_writable_arrays(matrix: np.ndarray) -> None:
    keys = np.arange(ROWS, dtype=np.int64)
    found_keys, found_cosines = best_of(matrix, keys, np.arange(5, dtype=np.int32), matrix[0], 2)
    for found, dtype in ((found_keys, np.int64), (found_cosines, np.float32)):
        array = np.frombuffer(found, dtype=dtype)
        array[0] = 0  # the search's callers may write to what they are given
        assert array.flags.writeable


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"rows": np.array([0, ROWS], np.int32)}, ValueError, r"rows\[1\] is 500, not one of"),
        ({"rows": np.array([-1], np.int32)}, ValueError, r"rows\[0\] is -1, not one of"),
        (
            {"rows": np.array([0, 1], np.int64)},
            TypeError,
            "rows must be a contiguous buffer of int32",
        ),
        (
            {"keys": np.arange(10, dtype=np.int64)},
            ValueError,
            r"rows\[0\] is 20, not one of the 10",
        ),
        ({"keys": np.arange(ROWS, dtype=np.int32)}, TypeError, "keys must be a contiguous buffer"),
        ({"query": np.ones(DIMENSION, np.float64)}, TypeError, "query must be a contiguous buffer"),
        ({"query": np.ones(7, np.float32)}, ValueError, "not whole rows of 7 floats"),
        ({"query": np.ones(0, np.float32)}, ValueError, "not whole rows of 0 floats"),
        ({"matrix": np.ones((4, DIMENSION))}, TypeError, "matrix must be a contiguous buffer"),
        ({"k": -1}, ValueError, "k must not be negative"),
        ({"rows": None}, TypeError, "rows must be a contiguous buffer of int32"),
    ],
)
def test_what_cannot_be_read_is_refused_naming_the_argument(
    matrix: np.ndarray, change: dict[str, object], error: type[Exception], message: str
) -> None:
    given: dict[str, object] = {
        "matrix": matrix,
        "keys": np.arange(ROWS, dtype=np.int64),
        "rows": np.array([20, 3], np.int32),
        "query": matrix[0],
        "k": 2,
    } | change
    with pytest.raises(error, match=message):
        best_of(*given.values())  # type: ignore[arg-type]
    if "keys" not in change and "k" not in change and change.get("rows", 0) is not None:
        with pytest.raises(error, match=message):
            dots(given["matrix"], given["rows"], given["query"])  # type: ignore[arg-type]


def test_a_strided_matrix_is_refused(matrix: np.ndarray) -> None:
    with pytest.raises(TypeError, match="matrix must be a contiguous buffer of float32"):
        dots(matrix[:, :16], None, np.ones(16, np.float32))


@pytest.mark.parametrize("dimension", [384, 7, 1])
def test_each_row_is_scaled_to_length_one(dimension: int) -> None:
    rows = np.random.default_rng(dimension).standard_normal((5, dimension)).astype(np.float32) * 30
    made = units(rows, dimension)
    assert made is not None
    exact = rows.astype(np.float64) / np.linalg.norm(rows.astype(np.float64), axis=1)[:, None]
    found = cosines(made).reshape(rows.shape)
    np.testing.assert_allclose(found, exact, rtol=1.2e-7, atol=0)  # float32's rounding
    tiny = units(np.full((1, dimension), 1e-30, np.float32), dimension)  # float32 squares: 0
    assert tiny is not None
    np.testing.assert_allclose(cosines(tiny), 1 / np.sqrt(dimension), rtol=1.2e-7)
    assert units(rows[:0], dimension) == bytearray()


@pytest.mark.parametrize("bad", [0.0, np.nan, np.inf, -np.inf])
def test_a_row_with_no_direction_refuses_every_row(bad: float) -> None:
    row = np.zeros(8, np.float32) if bad == 0.0 else np.array([1.0] * 7 + [bad], np.float32)
    assert units(np.stack([np.ones(8, np.float32), row]), 8) is None


def test_moments_are_the_query_along_the_total_and_across_the_outer_products() -> None:
    rng = np.random.default_rng(3)
    rows = rng.standard_normal((50, 45))
    total, outer = rows.sum(axis=0), rows.T @ rows
    query = rng.standard_normal(45).astype(np.float32)
    along, across = moments(total, outer, query)
    q = query.astype(np.float64)
    assert along == pytest.approx(float(total @ q), rel=1e-12)
    assert across == pytest.approx(float(((rows @ q) ** 2).sum()), rel=1e-12)
    assert moments(total[:0], outer[:0, :0], query[:0]) == (0.0, 0.0)


@pytest.mark.parametrize(
    ("given", "error", "message"),
    [
        ((np.ones(3), np.ones((3, 3)), np.ones(2, np.float32)), ValueError, "hold 2 and 4 floats"),
        ((np.ones(2), np.ones(3), np.ones(2, np.float32)), ValueError, "not 2 and 3"),
        ((np.ones(2), np.ones((2, 2)), np.ones(2)), TypeError, "query must be a contiguous"),
        ((np.ones(2, np.float32), np.ones((2, 2)), np.ones(2)), TypeError, "total must be"),
        ((np.ones(2), np.ones((2, 4))[:, :2], np.ones(2, np.float32)), TypeError, "outer must"),
    ],
)
def test_what_moments_cannot_read_is_refused_naming_the_argument(
    given: tuple[np.ndarray, np.ndarray, np.ndarray], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        moments(*given)
    with pytest.raises(TypeError, match="rows must be a contiguous buffer of float32"):
        units(np.ones(4), 4)
    with pytest.raises(ValueError, match="rows holds 4 floats, not whole rows of 3"):
        units(np.ones(4, np.float32), 3)
    with pytest.raises(ValueError, match="dimension must be positive"):
        units(np.ones(4, np.float32), 0)
