"""A query's vector made beside its caller (himga.memory.beside.QueryVector): the scan begins
after the embedding only while the caller is still ranking or waits for the vector, never after
it said it is done; a caller told the scan runs beside takes part in it and has its answer once
every part ended, and what the scan's thread read besides."""

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


def test_a_caller_that_waits_for_the_vector_has_the_scan_begun_the_moment_it_is_made(
    index: VectorIndex,
) -> None:
    go = threading.Event()
    scans = Recorded(index)
    threads: list[str] = []

    def embed() -> np.ndarray:
        assert go.wait(30)
        return VECTOR

    def then(vector: np.ndarray) -> tuple[float, float]:
        threads.append(threading.current_thread().name)
        return index.stats(vector)

    job = QueryVector(embed, scans, then)
    assert job.ranked(wait=True)  # ranked before the vector was made, but it waits for it
    assert not job.made and job.also is None
    go.set()
    found = job.nearest()
    assert found is not None
    assert [part.tolist() for part in found] == [part.tolist() for part in index.nearest(VECTOR, 5)]
    assert job.result() is VECTOR and len(scans.vectors) == 1
    assert job.also == index.stats(VECTOR)  # read by the scan's thread, not the caller's
    assert threads and threads[0].startswith("himga-query")


def test_a_waiting_caller_whose_embedding_fails_gets_no_scan_and_the_error(
    index: VectorIndex,
) -> None:
    go = threading.Event()
    scans = Recorded(index)

    def embed() -> np.ndarray:
        assert go.wait(30)
        raise RuntimeError("the model failed")

    job = QueryVector(embed, scans)
    assert job.ranked(wait=True)
    go.set()
    assert job.nearest() is None and scans.vectors == []
    with pytest.raises(RuntimeError, match="the model failed"):
        job.result()


def test_a_waiting_caller_is_told_of_no_scan_where_none_would_run(index: VectorIndex) -> None:
    go = threading.Event()

    def embed() -> np.ndarray:
        assert go.wait(30)
        return VECTOR

    unscanned = QueryVector(embed, None)
    assert not unscanned.ranked(wait=True)  # no scan to begin: the caller searches itself
    go.set()
    assert unscanned.result() is VECTOR
    declined = QueryVector(lambda: VECTOR, lambda vector: None)  # the index wanted no scan
    declined.wait()
    assert not declined.ranked(wait=True)  # made already, and no scan begun
    later = threading.Event()

    def embedded_later() -> np.ndarray:
        assert later.wait(30)
        return VECTOR

    waited = QueryVector(embedded_later, lambda vector: None)
    assert waited.ranked(wait=True)  # a scan may begin: the index says when the vector is made
    later.set()
    assert waited.nearest() is None and waited.result() is VECTOR
