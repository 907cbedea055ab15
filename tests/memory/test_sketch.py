"""The vector index's sketches (himga.memory.sketch and its C scan, himga.memory._sketch): the
scan's answer is the exact integer ranking (each of its loops the processor runs, any rank,
each half of a byte with its own weight, ties to the lower row, no overflow at the extremes);
an index past its threshold finds nearly all of the exact answer with exact cosines, keeps each
sketch with its row through deletes and corrections, fits its axes again as it grows, and bad
options are refused naming the option."""

import os
import threading

import numpy as np
import pytest

from himga.errors import InvalidArgument
from himga.memory._sketch import SharedScan, best_rows, loops
from himga.memory.registry import memory_options
from himga.memory.sketch import REFIT, SketchOptions
from himga.memory.vectors import VectorIndex
from tests.memory.clustered import DIMENSION, beside_exact, clustered_data, recall

SIZE = 6_000
THRESHOLD = 2_000
K = 10


def levels(sketches: np.ndarray) -> np.ndarray:
    """The 4-bit coordinates of packed sketches, in order (each block of 64: the low halves of
    its 32 bytes, then their high halves)."""
    blocks = sketches.reshape(len(sketches), -1, 1, 32)
    return np.concatenate([blocks & 15, blocks >> 4], axis=2).reshape(len(sketches), -1)


def reference(sketches: np.ndarray, query: np.ndarray, count: int) -> np.ndarray:
    scores = levels(sketches).astype(np.int64) @ query.astype(np.int64)
    return np.argsort(-scores, kind="stable")[:count]


def scanned(
    sketches: np.ndarray, query: np.ndarray, count: int, threads: int = 1, loop: str | None = None
) -> np.ndarray:
    return np.frombuffer(best_rows(sketches, query, count, threads, loop), dtype=np.int32)


LOOPS = loops()  # the loops this processor runs: each is held to the definition


def test_every_processor_has_the_portable_loop_and_the_best_is_last() -> None:
    assert LOOPS[0] == "portable" and set(LOOPS) <= {"portable", "avx2", "avx512"}
    sketches = np.arange(64, dtype=np.uint8).reshape(2, 32)
    query = np.ones(64, np.int8)
    assert best_rows(sketches, query, 2) == best_rows(sketches, query, 2, 1, LOOPS[-1])
    with pytest.raises(ValueError, match="no loop sse"):
        best_rows(sketches, query, 2, 1, "sse")


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("threads", [1, 3, 16])
@pytest.mark.parametrize(
    ("rows", "rank", "count"),
    [
        (1, 64, 1),
        (500, 128, 40),
        (3_000, 192, 700),
        (50, 1_024, 80),
        (200, 64, 0),
        (7, 64, 7),
        (1_001, 384, 100),
        (13, 320, 13),
    ],
)
def test_the_scan_is_the_exact_integer_ranking(
    loop: str, threads: int, rows: int, rank: int, count: int
) -> None:
    rng = np.random.default_rng(rows + rank)
    # few distinct values: many equal scores, which go to the lower row (in any thread's share);
    # rows not a multiple of four and ranks of an odd number of blocks meet each loop's ends
    sketches = rng.choice(np.array([0x00, 0x0F, 0xF0, 0x11, 0x87], np.uint8), (rows, rank // 2))
    query = rng.integers(-2, 3, size=rank).astype(np.int8)
    found = scanned(sketches, query, count, threads, loop)
    assert found.tolist() == reference(sketches, query, count).tolist()


@pytest.mark.parametrize("loop", LOOPS)
def test_the_scan_ranks_random_sketches_as_the_definition(loop: str) -> None:
    rng = np.random.default_rng(7)
    sketches = rng.integers(0, 256, size=(2_003, 192), dtype=np.uint8)
    query = rng.integers(-128, 128, size=384).astype(np.int8)
    assert scanned(sketches, query, 50, 2, loop).tolist() == reference(sketches, query, 50).tolist()


@pytest.mark.parametrize("loop", LOOPS)
def test_the_scan_does_not_overflow_at_the_extremes(loop: str) -> None:
    rank = 65_536  # the most the scan takes: 15 x 128 x 65,536 is far inside int32
    sketches = np.full((5, rank // 2), 0xFF, dtype=np.uint8)
    sketches[1] = sketches[3] = 0
    sketches[2, : rank // 4] = 0
    sketches[4, rank // 4 :] = 0
    assert scanned(sketches, np.full(rank, 127, np.int8), 5, loop=loop).tolist() == [0, 2, 4, 1, 3]
    assert scanned(sketches, np.full(rank, -128, np.int8), 5, loop=loop).tolist() == [1, 3, 2, 4, 0]


@pytest.mark.parametrize("loop", LOOPS)
def test_the_halves_of_a_byte_meet_their_own_weights(loop: str) -> None:
    sketches = np.zeros((5, 64), np.uint8)  # two blocks a row
    sketches[0, 5] = 0x01  # coordinate 5
    sketches[1, 5] = 0x10  # coordinate 37
    sketches[2, 6] = 0x01  # coordinate 6
    sketches[3, 32 + 5] = 0x01  # coordinate 69: the second block's
    sketches[4, 32 + 5] = 0x10  # coordinate 101
    query = np.zeros(128, np.int8)
    query[[5, 37, 69, 101]] = [2, 3, 4, 5]
    assert scanned(sketches, query, 5, loop=loop).tolist() == [4, 3, 1, 0, 2]


@pytest.mark.parametrize(
    ("sketches", "query", "count", "message"),
    [
        (np.zeros((4, 20), np.uint8), np.zeros(40, np.int8), 2, "multiple of 64"),
        (np.zeros((4, 32), np.uint8), np.zeros(0, np.int8), 2, "multiple of 64"),
        (np.zeros((3, 32), np.uint8), np.zeros(128, np.int8), 2, "not whole rows"),
        (np.zeros((4, 32), np.float32), np.zeros(64, np.int8), 2, "sketches must be"),
        (np.zeros((4, 32), np.int8), np.zeros(64, np.int8), 2, "sketches must be"),
        (np.zeros((4, 32), np.uint8), np.zeros(64, np.int16), 2, "query must be"),
        (np.zeros((4, 32), np.uint8), np.zeros(64, np.int8), -1, "negative"),
        (np.zeros((4, 32), np.uint8), np.zeros(64, np.int8), 2, "threads must be"),
    ],
)
def test_the_scan_refuses_what_it_cannot_read(
    sketches: np.ndarray, query: np.ndarray, count: int, message: str
) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        best_rows(sketches, query, count, 0 if message.startswith("threads") else 1)
    if not message.startswith("threads"):  # a shared scan reads its arguments alike
        with pytest.raises((TypeError, ValueError), match=message):
            SharedScan(sketches, query, count)


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("sharing", [0, 1, 3, 20])  # 20: more threads than heaps
def test_a_shared_scan_answers_as_one_scan_however_many_threads_take_part(
    loop: str, sharing: int
) -> None:
    """Threads that call share() and the one that asks best() take the rows between them
    (16,384 at a time); the answer is the scan's, and asked again it is the same."""
    rng = np.random.default_rng(11)
    sketches = rng.integers(0, 256, size=(70_000, 96), dtype=np.uint8)
    query = rng.integers(-128, 128, size=192, dtype=np.int8)
    scan = SharedScan(sketches, query, 300, loop)
    helpers = [threading.Thread(target=scan.share) for _ in range(sharing)]
    for helper in helpers:
        helper.start()
    found = scan.best()
    for helper in helpers:
        helper.join()
    assert np.frombuffer(found, np.int32).tolist() == reference(sketches, query, 300).tolist()
    assert scan.best() == found
    scan.share()  # a thread joining once every row is taken scans nothing, and says so quietly
    assert scan.best() == found


def test_more_wanted_than_held_is_every_row() -> None:
    sketches = np.arange(96, dtype=np.uint8).reshape(3, 32)
    assert scanned(sketches, np.ones(64, np.int8), 10, threads=2).tolist() == [2, 1, 0]


def test_two_threads_asking_a_shared_scan_for_its_answer_get_the_same_one() -> None:
    rng = np.random.default_rng(12)
    sketches = rng.integers(0, 256, size=(50_000, 32), dtype=np.uint8)
    query = rng.integers(-128, 128, size=64, dtype=np.int8)
    scan = SharedScan(sketches, query, 100)
    answers: list[bytes] = []
    other = threading.Thread(target=lambda: answers.append(scan.best()))
    other.start()
    answers.append(scan.best())
    other.join()
    expected = reference(sketches, query, 100).tolist()
    assert [np.frombuffer(found, np.int32).tolist() for found in answers] == [expected, expected]


def test_waiting_for_a_shared_scan_ends_every_part_and_leaves_its_answer_whole() -> None:
    """wait(), a caller giving up on the answer: it scans what no thread took, returns once
    every part has ended (after it no part is scanning), and the answer asked later is whole."""
    rng = np.random.default_rng(13)
    sketches = rng.integers(0, 256, size=(70_000, 96), dtype=np.uint8)
    query = rng.integers(-128, 128, size=192, dtype=np.int8)
    scan = SharedScan(sketches, query, 300)
    helper = threading.Thread(target=scan.share)
    helper.start()
    scan.wait()
    scan.wait()  # again: nothing left, nothing to wait for
    helper.join()
    assert np.frombuffer(scan.best(), np.int32).tolist() == reference(sketches, query, 300).tolist()
    alone = SharedScan(sketches, query, 300)
    alone.wait()  # no other thread took part: it scanned every row itself
    assert alone.best() == scan.best()


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
def test_a_scan_on_a_thread_held_to_one_core_still_shares_its_rows() -> None:
    """The scan's helper threads start on the caller's other cores; a caller allowed only one
    (a container given one CPU, `taskset`) has none to give them, and its scan still answers
    exactly (where its helpers run is not seen here: benchmarks/README.md measured that)."""
    rng = np.random.default_rng(7)
    sketches = rng.integers(0, 256, size=(4_000, 96), dtype=np.uint8)
    query = rng.integers(-128, 128, size=192, dtype=np.int8)
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(allowed)})  # this thread only
    try:
        found = scanned(sketches, query, 50, threads=4)
    finally:
        os.sched_setaffinity(0, allowed)
    assert found.tolist() == reference(sketches, query, 50).tolist()


# --- the index ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    return clustered_data(20261203, SIZE)


def pair(vectors: np.ndarray, **options: int) -> tuple[VectorIndex, VectorIndex]:
    """The same vectors in an exact index and in one with sketches past THRESHOLD."""
    return beside_exact(
        vectors, VectorIndex(DIMENSION, sketch=SketchOptions(threshold=THRESHOLD, **options))
    )


def consistent(index: VectorIndex) -> bool:
    """Whether every stored row's sketch is the sketch of its vector by the current fit."""
    n = len(index)
    assert index._sketch is not None and index._sketches is not None
    return bool(np.array_equal(index._sketches[:n], index._sketch.of(index._matrix[:n])))


def test_below_the_threshold_the_search_is_exact(data: tuple[np.ndarray, np.ndarray]) -> None:
    vectors, queries = data
    exact, sketched = pair(vectors[: THRESHOLD - 1])
    assert not sketched.sketched
    for q in queries:
        assert np.array_equal(exact.nearest(q, K)[0], sketched.nearest(q, K)[0])


def test_a_shared_search_answers_as_the_index_does_and_only_where_it_scans_sketches(
    data: tuple[np.ndarray, np.ndarray],
) -> None:
    vectors, queries = data
    _, sketched = pair(vectors)
    for q in queries[:20]:
        shared = sketched.shared_nearest(q, K)
        assert shared is not None
        helper = threading.Thread(target=shared.share)
        helper.start()
        found = shared.nearest()
        helper.join()
        assert [part.tolist() for part in found] == [
            part.tolist() for part in sketched.nearest(q, K)
        ]
    below = pair(vectors[: THRESHOLD - 1])[1]
    assert below.shared_nearest(queries[0], K) is None  # below the threshold: exact
    assert sketched.shared_nearest(queries[0], len(vectors)) is None  # every row a candidate
    assert sketched.shared_nearest(queries[0], 0) is None


def test_the_sketches_find_nearly_all_of_the_exact_answer(
    data: tuple[np.ndarray, np.ndarray],
) -> None:
    vectors, queries = data
    exact, sketched = pair(vectors)
    assert sketched.sketched
    assert recall(exact, sketched, queries) >= 0.99
    assert recall(exact, sketched, queries, 100) >= 0.99  # the hybrid memory's dense depth
    narrow = pair(vectors, fetch=10, per_hit=1)[1]  # no candidates beyond the hits: less
    assert 0.5 <= recall(exact, narrow, queries) < recall(exact, sketched, queries)
    for q in queries[:20]:  # its cosines are the exact ones of the keys it returns
        keys, scores = sketched.nearest(q, K)
        assert np.allclose(scores, sketched.similarities(q, keys.tolist()), atol=1e-6)
        assert (np.diff(scores) <= 0).all()


def test_a_filtered_search_stays_exact(data: tuple[np.ndarray, np.ndarray]) -> None:
    vectors, queries = data
    exact, sketched = pair(vectors, fetch=16, per_hit=1)  # a poor sketch search
    allowed = np.arange(0, SIZE, 3)
    for q in queries[:20]:
        assert np.array_equal(exact.nearest(q, K, allowed)[0], sketched.nearest(q, K, allowed)[0])


def test_sketches_follow_their_rows_through_deletes_and_corrections(
    data: tuple[np.ndarray, np.ndarray],
) -> None:
    vectors, queries = data
    sketched = pair(vectors)[1]
    rng = np.random.default_rng(7)
    gone = rng.choice(SIZE, 1_500, replace=False)
    sketched.remove(gone.tolist())  # each removal moves the last row into the freed one
    corrected = [k for k in rng.choice(SIZE, 300, replace=False).tolist() if k not in set(gone)]
    sketched.add(corrected, queries[np.arange(len(corrected)) % len(queries)])
    assert sketched.sketched and consistent(sketched)
    for q in queries[:30]:
        assert not set(sketched.nearest(q, 50)[0].tolist()) & set(gone.tolist())
    # a stored vector asked for finds itself first
    kept = [k for k in range(0, SIZE, 97) if k not in set(gone) and k not in set(corrected)]
    for key in kept:
        assert int(sketched.nearest(vectors[key], 1)[0][0]) == key


def test_the_axes_are_fitted_again_as_the_index_grows_and_shrinks(
    data: tuple[np.ndarray, np.ndarray],
) -> None:
    vectors, _ = data
    index = VectorIndex(DIMENSION, sketch=SketchOptions(threshold=500))
    index.add(list(range(600)), vectors[:600])
    first = index._sketch
    assert index.sketched and first is not None
    index.add(list(range(600, 3_600)), vectors[600:3_600])
    assert index._sketch is first  # fewer changes since the fit than REFIT times its size
    index.add(list(range(3_600, 4_800)), vectors[3_600:4_800])
    assert REFIT * 600 == 4_800 - 600
    assert index._sketch is not first and consistent(index)
    index.remove(list(range(4_551)))  # 249 left: below half the threshold, exact again
    assert not index.sketched and index._sketches is None


def test_vectors_of_any_length_are_sketched(data: tuple[np.ndarray, np.ndarray]) -> None:
    vectors, queries = data
    rng = np.random.default_rng(3)
    long_rows = np.hstack([vectors[:2_000]] * 4)  # 1,536 coordinates, as OpenAI's models give
    long_queries = np.hstack([queries] * 4) + 0.05 * rng.standard_normal((len(queries), 1_536))
    for rows, asked in (
        (vectors[:2_000, :3], queries[:, :3]),  # padded to a multiple of 64 coordinates
        (vectors[:2_000, :100], queries[:, :100]),
        (long_rows, long_queries),
    ):
        exact = VectorIndex(rows.shape[1])
        sketched = VectorIndex(rows.shape[1], sketch=SketchOptions(threshold=500))
        for index in (exact, sketched):
            index.add(list(range(len(rows))), rows)
        assert sketched.sketched
        assert recall(exact, sketched, asked) >= 0.99


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("sketch_threshold", "-1"),
        ("sketch_threshold", "many"),
        ("sketch_fetch", "0"),
        ("sketch_per_hit", "0"),
    ],
)
def test_bad_sketch_options_are_refused(option: str, value: str) -> None:
    with pytest.raises(InvalidArgument, match=rf"options\.{option}"):
        memory_options("hybrid", {option: value})


def test_sketch_options_pass_through() -> None:
    assert memory_options("hybrid").sketch() == SketchOptions()
    options = memory_options("hybrid", {"sketch_threshold": "0", "sketch_fetch": "96"})
    assert options.sketch() == SketchOptions(threshold=0, fetch=96)
    index = VectorIndex(DIMENSION, sketch=options.sketch())  # threshold 0: never sketched
    index.add(list(range(100)), np.eye(100, DIMENSION, dtype=np.float32))
    assert not index.sketched
