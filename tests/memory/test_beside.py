"""A query's vector made beside its caller (himga.memory.beside.QueryVector): the scan begins
after the embedding only while the caller is still ranking, never after it said it is done; a
caller told the scan runs beside takes part in it and has its answer once every part ended."""

import threading

import numpy as np
import pytest

from himga.memory.beside import QueryVector
from himga.memory.sketch import SketchOptions
from himga.memory.vectors import SharedNearest, VectorIndex

VECTOR = np.ones(8, dtype=np.float32)


@pytest.fixture(scope="module")
def index() -> VectorIndex:
    rng = np.random.default_rng(5)
    made = VectorIndex(8, sketch=SketchOptions(threshold=64, fetch=8, per_hit=2))
    made.add(np.arange(300, dtype=np.int64), rng.normal(size=(300, 8)).astype(np.float32))
    return made


class Recorded:
    """A scan to share (index.shared_nearest) that notes each vector it is begun for."""

    def __init__(self, index: VectorIndex) -> None:
        self.index = index
        self.vectors: list[np.ndarray] = []

    def __call__(self, vector: np.ndarray) -> SharedNearest | None:
        self.vectors.append(vector)
        return self.index.shared_nearest(vector, 5)


def test_an_embedding_done_first_begins_the_scan_there_and_the_caller_joins_it(
    index: VectorIndex,
) -> None:
    scans = Recorded(index)
    made = threading.Event()

    def embed() -> np.ndarray:
        made.set()
        return VECTOR

    job = QueryVector(embed, scans)
    assert made.wait(30)
    job.wait()  # embedded and, since the caller was still ranking, scanned
    assert job.ranked()  # the caller learns the scan runs beside
    found = job.nearest()
    assert found is not None
    assert [part.tolist() for part in found] == [part.tolist() for part in index.nearest(VECTOR, 5)]
    assert job.result() is VECTOR and len(scans.vectors) == 1


def test_a_caller_done_first_gets_the_vector_and_no_scan_starts(index: VectorIndex) -> None:
    go = threading.Event()
    scans = Recorded(index)

    def embed() -> np.ndarray:
        assert go.wait(30)
        return VECTOR

    job = QueryVector(embed, scans)
    assert not job.ranked()  # ranked before the vector was made: the caller scans itself
    go.set()
    assert job.result() is VECTOR
    assert job.nearest() is None and scans.vectors == []


def test_without_a_scan_only_the_vector_is_made() -> None:
    job = QueryVector(lambda: VECTOR, None)
    job.wait()
    assert not job.ranked()
    assert job.result() is VECTOR and job.nearest() is None


def test_an_embedding_that_fails_fails_the_result_and_runs_no_scan(index: VectorIndex) -> None:
    def embed() -> np.ndarray:
        raise RuntimeError("the model failed")

    scans = Recorded(index)
    job = QueryVector(embed, scans)
    job.wait()
    assert not job.ranked()
    with pytest.raises(RuntimeError, match="the model failed"):
        job.result()
    assert scans.vectors == []


def test_on_a_machine_of_more_cores_helpers_join_the_scan_and_the_answer_is_the_same(
    index: VectorIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the index would scan on more threads than the two that begin and join a shared
    scan (VectorIndex.nearest's own, up to four), as many more help it from the start."""
    from himga.memory import vectors

    monkeypatch.setattr(vectors, "_SCAN_THREADS", 4)
    monkeypatch.setattr(vectors, "_THREADED_ROWS", 64)  # the index's 300 rows scan threaded
    helpers: list[str] = []
    both_helped = threading.Event()
    helping = SharedNearest.help

    def noted(self: SharedNearest) -> None:
        helping(self)
        helpers.append(threading.current_thread().name)
        if len(helpers) == 2:
            both_helped.set()

    monkeypatch.setattr(SharedNearest, "help", noted)
    job = QueryVector(lambda: VECTOR, Recorded(index))
    job.wait()
    assert job.ranked()
    found = job.nearest()
    assert found is not None
    assert [part.tolist() for part in found] == [part.tolist() for part in index.nearest(VECTOR, 5)]
    assert both_helped.wait(30)
    assert all(name.startswith("himga-beside") for name in helpers)


def test_two_cores_have_no_helpers(index: VectorIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    from himga.memory import vectors

    monkeypatch.setattr(vectors, "_THREADED_ROWS", 64)
    monkeypatch.setattr(vectors, "_SCAN_THREADS", 2)
    shared = index.shared_nearest(VECTOR, 5)
    assert shared is not None and shared.helpers == 0
    monkeypatch.setattr(vectors, "_THREADED_ROWS", 1000)  # below it the scan is on one thread
    monkeypatch.setattr(vectors, "_SCAN_THREADS", 4)
    shared = index.shared_nearest(VECTOR, 5)
    assert shared is not None and shared.helpers == 0
