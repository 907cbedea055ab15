"""A query's vector made beside its caller (himga.memory.beside.QueryVector): the scan follows
the embedding only while the caller is still ranking, never after it said it is done."""

import threading
from collections.abc import Callable

import numpy as np
import pytest

from himga.memory.beside import QueryVector

VECTOR = np.ones(4, dtype=np.float32)
NEAREST = (np.array([7]), np.array([0.5]))


def recorded(scans: list[np.ndarray]) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """A scan that notes each vector it is given in `scans`."""

    def scan(vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        scans.append(vector)
        return NEAREST

    return scan


def test_an_embedding_done_first_is_followed_by_the_scan_there() -> None:
    scans: list[np.ndarray] = []
    made = threading.Event()

    def embed() -> np.ndarray:
        made.set()
        return VECTOR

    job = QueryVector(embed, recorded(scans))
    assert made.wait(30)
    job.wait()  # embedded and, since the caller was still ranking, scanned
    assert job.ranked()  # the caller learns the scan ran beside
    vector, nearest = job.result()
    assert vector is VECTOR and nearest is NEAREST and len(scans) == 1


def test_a_caller_done_first_gets_the_vector_and_no_scan_starts() -> None:
    go = threading.Event()
    scans: list[np.ndarray] = []

    def embed() -> np.ndarray:
        assert go.wait(30)
        return VECTOR

    job = QueryVector(embed, recorded(scans))
    assert not job.ranked()  # ranked before the vector was made: the caller scans itself
    go.set()
    assert job.result() == (VECTOR, None)
    assert scans == []


def test_without_a_scan_only_the_vector_is_made() -> None:
    job = QueryVector(lambda: VECTOR, None)
    job.wait()
    assert not job.ranked()
    assert job.result() == (VECTOR, None)


def test_an_embedding_that_fails_fails_the_result_and_runs_no_scan() -> None:
    def embed() -> np.ndarray:
        raise RuntimeError("the model failed")

    scans: list[np.ndarray] = []
    job = QueryVector(embed, recorded(scans))
    job.wait()
    assert not job.ranked()
    with pytest.raises(RuntimeError, match="the model failed"):
        job.result()
    assert scans == []
