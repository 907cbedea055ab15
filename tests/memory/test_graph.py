"""The vector index's approximate graph (himga.memory.graph) with its threshold lowered by
option: beside the exact search it finds most of the same keys (recall measured, with its
cosines exact), a deleted key never comes back, a corrected vector is searched by its new
value, searches run together, and bad options are refused naming the option."""

import threading

import numpy as np
import pytest

from himga.errors import InvalidArgument
from himga.memory.graph import GraphOptions
from himga.memory.registry import memory_options
from himga.memory.vectors import VectorIndex
from tests.memory.clustered import DIMENSION, beside_exact, clustered_data, recall

SIZE = 4_000
THRESHOLD = 1_000
K = 10


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    return clustered_data(20261202, SIZE)


def pair(vectors: np.ndarray, **options: int) -> tuple[VectorIndex, VectorIndex]:
    """The same vectors in an exact index and in one with a graph past THRESHOLD."""
    return beside_exact(
        vectors, VectorIndex(DIMENSION, GraphOptions(threshold=THRESHOLD, **options))
    )


def test_below_the_threshold_the_search_is_exact(data: tuple[np.ndarray, np.ndarray]) -> None:
    vectors, queries = data
    exact, graphed = pair(vectors[: THRESHOLD - 1])
    assert not graphed.graphed
    for q in queries:
        assert np.array_equal(exact.nearest(q, K)[0], graphed.nearest(q, K)[0])


def test_the_graph_finds_most_of_the_exact_answer(data: tuple[np.ndarray, np.ndarray]) -> None:
    vectors, queries = data
    # a narrow search (0.96 here): most of the answer, not all of it
    exact, graphed = pair(vectors, expansion_search=128, fetch=32)
    assert graphed.graphed
    found = recall(exact, graphed, queries)
    assert 0.9 <= found <= 1.0, found
    wider = pair(vectors, expansion_search=512, fetch=64)[1]
    assert recall(exact, wider, queries) >= found
    # a deep search (the hybrid memory asks the dense side for 100) takes more candidates
    assert recall(exact, wider, queries, 100) >= 0.9
    for q in queries[:20]:  # its cosines are the exact ones of the keys it returns
        keys, scores = graphed.nearest(q, K)
        assert np.allclose(scores, graphed.similarities(q, keys.tolist()), atol=1e-6)
        assert list(scores) == sorted(scores, reverse=True)
    # a filter keeps the exact search
    allowed = np.arange(100, 2_100, dtype=np.int64)
    for q in queries[:10]:
        assert np.array_equal(exact.nearest(q, K, allowed)[0], graphed.nearest(q, K, allowed)[0])


def test_a_deleted_key_never_comes_back(data: tuple[np.ndarray, np.ndarray]) -> None:
    vectors, _ = data
    _, graphed = pair(vectors)
    gone = list(range(0, SIZE, 2))
    graphed.remove(gone)
    assert graphed.graphed
    for key in gone[:300]:
        keys, _ = graphed.nearest(vectors[key], K)
        assert not set(keys.tolist()) & set(gone)
        assert len(keys) == K


def test_a_corrected_vector_is_searched_by_its_new_value(
    data: tuple[np.ndarray, np.ndarray],
) -> None:
    vectors, _ = data
    _, graphed = pair(vectors)
    moved = list(range(50))
    graphed.add(moved, vectors[SIZE - 50 :][::-1] * -1)  # far from where they were
    for key in moved:
        new = -vectors[SIZE - 1 - key]
        keys, scores = graphed.nearest(new, 1)
        assert keys.tolist() == [key] and scores[0] == pytest.approx(1.0, abs=1e-5)
        keys, _ = graphed.nearest(vectors[key], K)
        assert key not in keys.tolist()


def test_searches_run_together(data: tuple[np.ndarray, np.ndarray]) -> None:
    vectors, queries = data
    _, graphed = pair(vectors)
    expected = [graphed.nearest(q, K)[0].tolist() for q in queries]
    wrong: list[int] = []

    def search() -> None:
        for _ in range(5):
            for i, q in enumerate(queries):
                if graphed.nearest(q, K)[0].tolist() != expected[i]:
                    wrong.append(i)

    threads = [threading.Thread(target=search) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("graph_threshold", "-1"),
        ("graph_connectivity", "1"),
        ("graph_expansion_add", "0"),
        ("graph_expansion_search", "1"),
        ("graph_fetch", "0"),
    ],
)
def test_bad_graph_options_are_refused(option: str, value: str) -> None:
    with pytest.raises(InvalidArgument, match=rf"options\.{option}"):
        memory_options("hybrid", {option: value})


def test_graph_options_pass_through() -> None:
    assert memory_options("hybrid").graph().threshold == 0  # off unless asked for
    options = memory_options("hybrid", {"graph_threshold": "5000", "graph_fetch": "32"})
    assert options.graph() == GraphOptions(threshold=5_000, fetch=32)
    with pytest.raises(InvalidArgument, match=r"options\.graph_expansion_search"):
        memory_options("hybrid", {"graph_expansion_search": "16", "graph_fetch": "32"})
