"""The vector index's sketches (himga.memory.sketch and its C scan, himga.memory._sketch): the
scan's answer is the exact integer ranking (each of its loops the processor runs, any rank,
each half of a byte with its own weight, ties to the lower row, no overflow at the extremes),
and with the 2-bit first stage the exact ranking of the rows best by their codes; an index past
its threshold finds nearly all of the exact answer with exact cosines, with the first stage
too, keeps each sketch and code with its row through deletes and corrections, fits its axes
again as it grows, and bad options are refused naming the option."""

import os
import threading
from collections.abc import Callable

import numpy as np
import pytest

from himga.errors import InvalidArgument
from himga.memory import sketch
from himga.memory import vectors as vectors_module
from himga.memory._exact import best_of
from himga.memory._sketch import LANES, SharedScan, best_rows, coarse_block, loops, weights
from himga.memory.registry import memory_options
from himga.memory.sketch import COARSE_FROM, REFIT, SketchOptions, coarse_rows
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


def codes(coarse: np.ndarray, rows: int, rank: int) -> np.ndarray:
    """The 2-bit codes of the first `rows` rows of a first stage's blocks, in order (a block:
    rank / 16 groups of 64 bytes, four of each of its 16 rows; byte i of a row's four in group
    g holds coordinate 16g + 4k + i in bits 2k and 2k + 1)."""
    grouped = coarse.reshape(-1, rank // 16, LANES, 4)
    split = np.stack([(grouped >> (2 * k)) & 3 for k in range(4)], axis=3)  # block g row k i
    return split.transpose(0, 2, 1, 3, 4).reshape(-1, rank)[:rows]


def two_stage(
    sketches: np.ndarray, coarse: np.ndarray, query: np.ndarray, count: int, keep: int
) -> np.ndarray:
    """The definition of the first stage: the best `keep` rows by their codes (ties to the lower
    row), ranked by their sketches (ties likewise), the best `count` of them."""
    rows = len(sketches)
    weights = query.astype(np.int64)
    first = np.lexsort((np.arange(rows), -(codes(coarse, rows, len(query)) @ weights)))[:keep]
    scores = levels(sketches[first]).astype(np.int64) @ weights
    return first[np.lexsort((first, -scores))][:count]


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


def random_stage(
    rows: int, rank: int, seed: int, values: tuple[int, ...] = (0x00, 0x55, 0xAA, 0xFF, 0x1B, 0xE4)
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sketches, codes (of few distinct bytes: many equal scores) and a query of small weights."""
    rng = np.random.default_rng(seed)
    sketches = rng.integers(0, 256, size=(rows, rank // 2), dtype=np.uint8)
    blocks = -(-rows // LANES)
    coarse = rng.choice(np.array(values, np.uint8), blocks * coarse_block(rank))
    return sketches, coarse, rng.integers(-3, 4, size=rank).astype(np.int8)


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize(
    ("rows", "rank", "count", "keep"),
    [
        (5_000, 384, 100, 700),  # pools cut down many times
        (3_001, 64, 10, 50),  # a last block of one row
        (2_000, 192, 40, 40),
        (777, 320, 5, 100),
        (20_000, 128, 300, 1_000),
        (50, 64, 10, 49),
        (40, 64, 30, 20),  # keep below count: taken to count
    ],
)
def test_the_first_stage_ranks_its_best_rows_as_the_definition(
    loop: str, rows: int, rank: int, count: int, keep: int
) -> None:
    sketches, coarse, query = random_stage(rows, rank, rows + rank)
    expected = two_stage(sketches, coarse, query, count, max(keep, count)).tolist()
    for threads in (1, 2, 3, 16):  # shares of whole blocks, any number of them
        found = best_rows(sketches, query, count, threads, loop, coarse, keep)
        assert np.frombuffer(found, np.int32).tolist() == expected
    scan = SharedScan(sketches, query, count, loop, coarse, keep)
    helpers = [threading.Thread(target=scan.share) for _ in range(3)]
    for helper in helpers:
        helper.start()
    found = scan.best()
    for helper in helpers:
        helper.join()
    assert np.frombuffer(found, np.int32).tolist() == expected


@pytest.mark.parametrize("helpers", [0, 1, 3])
@pytest.mark.parametrize("late", [False, True])
def test_a_two_stage_scan_shared_by_threads_joining_at_any_time_answers_as_the_definition(
    helpers: int, late: bool
) -> None:
    """Threads that join a scan with the first stage before its caller (and may take every row
    of it) or once every row is taken, and one that only waits for it: the answer is the
    definition's each time, and the same when asked again."""
    sketches, coarse, query = random_stage(40_000, 192, 7 + helpers)
    count, keep = 200, 3_000
    expected = two_stage(sketches, coarse, query, count, keep).tolist()
    for trial in range(5):
        scan = SharedScan(sketches, query, count, None, coarse, keep)
        joined = [threading.Thread(target=scan.share) for _ in range(helpers)]
        if not late:  # before the caller: they may take every row before it joins
            for thread in joined:
                thread.start()
        waiter = threading.Thread(target=scan.wait)
        waiter.start()
        found = scan.best()
        if late:  # every row taken: they take none, and end
            for thread in joined:
                thread.start()
        for thread in [*joined, waiter]:
            thread.join()
        assert np.frombuffer(found, np.int32).tolist() == expected, trial
        assert scan.best() == found


def float_rows(rows: int, dimension: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unit float32 rows, their keys (not their row numbers) and a unit query."""
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(rows, dimension)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    unit = rng.normal(size=dimension).astype(np.float32)
    keys = rng.permutation(10 * rows)[:rows].astype(np.int64)
    return matrix, keys, unit / np.linalg.norm(unit)


@pytest.mark.parametrize("staged", [False, True])
@pytest.mark.parametrize("waiting", [0, 1, 2])
def test_a_shared_scans_nearest_is_its_best_rows_re_scored_exactly_whoever_helps(
    staged: bool, waiting: int
) -> None:
    """nearest(): best()'s rows re-scored from the float32 rows as _exact.best_of re-scores
    them (the same keys and the same cosines, to the bit), with threads in wait() taking rows
    of the second stage and of the re-scoring as they come, or none; with and without the
    first stage, each of many trials begun together."""
    sketches, coarse, query = random_stage(40_000, 192, 21)
    matrix, keys, unit = float_rows(40_000, 100, 22)
    count, keep, k = 400, 4_096, 100
    reference_scan = SharedScan(sketches, query, count, None, coarse if staged else None, keep)
    expected = best_of(matrix, keys, np.frombuffer(reference_scan.best(), np.int32), unit, k)
    for trial in range(30):
        scan = SharedScan(sketches, query, count, None, coarse if staged else None, keep)
        start = threading.Barrier(waiting + 1)

        def helper(scan: SharedScan = scan, start: threading.Barrier = start) -> None:
            start.wait()
            scan.share()
            scan.wait()  # a hybrid search's model thread: its part, then it helps

        threads = [threading.Thread(target=helper) for _ in range(waiting)]
        for thread in threads:
            thread.start()
        start.wait()
        found = scan.nearest(matrix, keys, unit, k)
        for thread in threads:
            thread.join()
        assert found == expected, trial
        assert scan.nearest(matrix, keys, unit, k) == expected  # asked again: alone, the same
        assert scan.best() == reference_scan.best()


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
def test_a_shared_scans_nearest_on_one_core_gives_way_to_its_helper() -> None:
    """On one core (a container given one CPU) the thread making the answer and a helper take
    turns: a spin gives the core up now and then, so the one waiting for the other's rows lets
    it run, and the answer is whole."""
    sketches, coarse, query = random_stage(40_000, 192, 27)
    matrix, keys, unit = float_rows(40_000, 100, 28)
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(allowed)})  # this thread, and the threads it starts
    try:
        for _ in range(10):
            scan = SharedScan(sketches, query, 400, None, coarse, 4_096)
            helper = threading.Thread(target=lambda scan=scan: (scan.share(), scan.wait()))
            helper.start()
            found = scan.nearest(matrix, keys, unit, 100)
            helper.join()
            assert found == best_of(matrix, keys, np.frombuffer(scan.best(), np.int32), unit, 100)
    finally:
        os.sched_setaffinity(0, allowed)


def test_a_helper_whose_answer_nobody_makes_still_returns() -> None:
    """wait() spins a while for the answer's loops and then leaves them to whoever makes it."""
    sketches, coarse, query = random_stage(20_000, 128, 23)
    scan = SharedScan(sketches, query, 100, None, coarse, 1_000)
    scan.wait()  # every row scanned, no answer asked: it returns
    matrix, keys, unit = float_rows(20_000, 64, 24)
    expected = best_of(matrix, keys, np.frombuffer(scan.best(), np.int32), unit, 10)
    assert scan.nearest(matrix, keys, unit, 10) == expected


def test_a_shared_scans_nearest_refuses_what_it_cannot_read() -> None:
    sketches, coarse, query = random_stage(2_000, 64, 25)
    matrix, keys, unit = float_rows(2_000, 32, 26)
    scan = SharedScan(sketches, query, 50, None, coarse, 200)
    with pytest.raises(TypeError, match="matrix must be a contiguous buffer of float32"):
        scan.nearest(matrix.astype(np.float64), keys, unit, 5)
    with pytest.raises(TypeError, match="keys must be a contiguous buffer of int64"):
        scan.nearest(matrix, keys.astype(np.int32), unit, 5)
    with pytest.raises(TypeError, match="unit must be a contiguous buffer of float32"):
        scan.nearest(matrix, keys, unit[::2], 5)
    with pytest.raises(ValueError, match="matrix holds 256000 bytes, not whole rows of 31"):
        scan.nearest(matrix, keys, unit[:31], 5)
    with pytest.raises(ValueError, match="matrix and keys hold 1999 rows, not the scan's 2000"):
        scan.nearest(matrix, keys[:-1], unit, 5)
    with pytest.raises(ValueError, match="k must not be negative"):
        scan.nearest(matrix, keys, unit, -1)
    assert scan.nearest(matrix, keys, unit, 0) == (bytearray(), bytearray())
    assert scan.nearest(matrix, keys, unit, 5) == best_of(
        matrix, keys, np.frombuffer(scan.best(), np.int32), unit, 5
    )


@pytest.mark.parametrize("loop", LOOPS)
def test_each_pair_of_bits_meets_its_own_weight(loop: str) -> None:
    """Coordinate 16g + 4k + i of row r is bits 2k of byte i of the row's four in group g."""
    rank, rows = 128, 40
    coarse = np.zeros((-(-rows // LANES), rank // 16, LANES, 4), np.uint8)
    query = np.zeros(rank, np.int8)
    placed = {0: (0, 0, 0), 5: (1, 2, 3), 17: (7, 3, 1), 33: (4, 1, 2), 39: (2, 3, 0)}
    for weight, (row, (g, k, i)) in enumerate(placed.items(), start=1):
        coarse[row // LANES, g, row % LANES, i] |= 1 << (2 * k)
        query[16 * g + 4 * k + i] = weight  # each row's one code meets a weight of its own
    sketches = np.zeros((rows, rank // 2), np.uint8)  # the second stage ties: lower row first
    found = best_rows(sketches, query, 5, 1, loop, coarse.reshape(-1), 5)
    assert np.frombuffer(found, np.int32).tolist() == [0, 5, 17, 33, 39]  # the five with a code
    for kept in range(1, 6):  # the first stage keeps the rows of the greatest weights
        found = best_rows(sketches, query, 1, 1, loop, coarse.reshape(-1), kept)
        assert np.frombuffer(found, np.int32).tolist() == [sorted(list(placed)[-kept:])[0]]


@pytest.mark.parametrize("loop", LOOPS)
def test_the_first_stage_does_not_overflow_at_the_extremes(loop: str) -> None:
    rank, rows = 65_536, 20
    coarse = np.full((-(-rows // LANES), rank // 16, LANES, 4), 0xFF, np.uint8)
    coarse[0, :, 3] = 0  # row 3 all zeros
    coarse[1, : rank // 32, 2] = 0  # row 18 half
    sketches = np.zeros((rows, rank // 2), np.uint8)  # the second stage ties: lower row first
    for weight, order in ((127, [0, 1, 2]), (-128, [3, 18, 0])):
        query = np.full(rank, weight, np.int8)
        for kept in (1, 2, 3):  # the first stage's best one, two and three, in its order
            found = best_rows(sketches, query, kept, 1, loop, coarse.reshape(-1), kept)
            assert np.frombuffer(found, np.int32).tolist() == sorted(order[:kept])


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("scores", ["wide", "few", "one"])
def test_the_best_rows_selected_by_their_scores_bits_are_the_definitions(
    loop: str, scores: str
) -> None:
    """Pools of thousands of rows (selected by their scores' bits, not by comparisons) whose
    scores are of both signs, so that each digit of their keys varies ("wide": any code, weights
    of -128 to 127), fall on a few values ("few"), or are one value ("one": the lowest rows
    win)."""
    rows, rank, count, keep = 12_000, 256, 300, 2_500
    rng = np.random.default_rng(len(scores))
    sketches = rng.integers(0, 256, size=(rows, rank // 2), dtype=np.uint8)
    blocks = -(-rows // LANES) * coarse_block(rank)
    if scores == "wide":
        coarse = rng.integers(0, 256, blocks, dtype=np.uint8)
        query = rng.integers(-128, 128, size=rank).astype(np.int8)
    else:
        coarse = rng.choice(np.array([0x00, 0xFF] if scores == "few" else [0x55], np.uint8), blocks)
        query = rng.integers(-1, 2, size=rank).astype(np.int8)
        if scores == "one":
            sketches[:] = 0x77
    expected = two_stage(sketches, coarse, query, count, keep).tolist()
    if scores == "one":
        assert expected == list(range(count))
    for threads in (1, 2):
        found = best_rows(sketches, query, count, threads, loop, coarse, keep)
        assert np.frombuffer(found, np.int32).tolist() == expected


@pytest.mark.parametrize("loop", LOOPS)
def test_a_sample_that_misleads_the_first_stage_costs_time_not_the_answer(loop: str) -> None:
    """The first stage's floor comes from a sample of one block in 64; rows laid out so that the
    sampled blocks hold the best codes make that floor too high (it would leave out most of the
    best rows), and the answer is still the definition's: the rows are scanned again."""
    rows, rank, keep = 20_000, 64, 1_000
    sketches, _, query = random_stage(rows, rank, 3)
    query = np.abs(query) + 1  # every weight positive: more codes, more score
    coarse = np.random.default_rng(4).choice(
        np.array([0x00, 0x01, 0x05, 0x15, 0x55], np.uint8), (-(-rows // LANES), 256)
    )
    coarse[::64] = 0xFF  # the sampled blocks: 320 rows of the greatest score, fewer than keep
    coarse = coarse.reshape(-1)
    expected = two_stage(sketches, coarse, query, 100, keep).tolist()
    for threads in (1, 2):
        found = best_rows(sketches, query, 100, threads, loop, coarse, keep)
        assert np.frombuffer(found, np.int32).tolist() == expected
    assert (
        np.frombuffer(
            SharedScan(sketches, query, 100, loop, coarse, keep).best(), np.int32
        ).tolist()
        == expected
    )


def test_the_first_stage_runs_only_where_it_keeps_fewer_rows_than_there_are() -> None:
    sketches, coarse, query = random_stage(300, 64, 5)
    alone = best_rows(sketches, query, 20)
    assert best_rows(sketches, query, 20, coarse=coarse, keep=0) == alone  # keep 0: none
    assert best_rows(sketches, query, 20, coarse=coarse, keep=300) == alone  # every row kept
    staged = best_rows(sketches, query, 20, coarse=coarse, keep=30)
    assert (
        np.frombuffer(staged, np.int32).tolist()
        == two_stage(sketches, coarse, query, 20, 30).tolist()
    )
    with pytest.raises(ValueError, match="coarse holds 10 bytes, not 19 blocks of 256"):
        best_rows(sketches, query, 20, coarse=coarse[:10], keep=30)
    with pytest.raises(ValueError, match="keep must not be negative"):
        SharedScan(sketches, query, 20, coarse=coarse, keep=-1)
    with pytest.raises(TypeError, match="coarse must be"):
        best_rows(sketches, query, 20, coarse=coarse.astype(np.int8), keep=30)


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


def test_a_querys_weights_are_its_scaled_coordinates_rounded_as_numpy_rounds_them() -> None:
    """The C weights against their definition in numpy: every product scaled so the greatest
    in magnitude is 127 and rounded half to even. A product's last bit may differ from BLAS's,
    so a weight may be one apart, and rarely is; all zero for a query with no coordinate."""
    rng = np.random.default_rng(11)
    apart = 0
    for rows, dimension in ((64, 16), (128, 384), (192, 100)):
        axes = rng.normal(size=(rows, dimension)).astype(np.float32)
        for _ in range(20):
            query = rng.normal(size=dimension).astype(np.float32)
            weighed = axes @ query
            expected = np.rint(weighed * (127 / float(np.abs(weighed).max()))).astype(np.int8)
            found = np.frombuffer(weights(axes, query), np.int8)
            assert np.abs(found.astype(np.int64) - expected).max() <= 1
            assert np.abs(found.astype(np.int64)).max() == 127
            apart += int((found != expected).sum())
    assert apart <= 3
    zero = np.frombuffer(weights(axes, np.zeros(100, np.float32)), np.int8)
    assert zero.tolist() == [0] * 192


def test_a_querys_weights_refuse_what_they_cannot_read() -> None:
    axes = np.ones((64, 16), np.float32)
    with pytest.raises(TypeError, match="query must be a contiguous buffer of float32"):
        weights(axes, np.ones(16, np.float64))
    with pytest.raises(TypeError, match="axes must be a contiguous buffer of float32"):
        weights(axes[:, ::2], np.ones(8, np.float32))
    with pytest.raises(ValueError, match="axes hold 4096 bytes, not whole rows of the query's 15"):
        weights(axes, np.ones(15, np.float32))
    with pytest.raises(ValueError, match="not whole rows of the query's 0"):
        weights(axes, np.ones(0, np.float32))


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
    """Whether every stored row's sketch and 2-bit codes are those of its vector by the current
    fit."""
    n = len(index)
    assert index._sketch is not None and index._sketches is not None
    sketches, coarse = index._sketch.of(index._matrix[:n])
    if index._coarse is None:  # the first stage does not run here (yet): no codes kept
        assert index._sketch_options is not None
        least = index._sketch_options.coarse_from()
        assert least is None or n < least
        return bool(np.array_equal(index._sketches[:n], sketches))
    rank = index._sketch.length
    held = codes(coarse_rows(index._coarse, n), n, rank)
    made = codes(np.repeat(coarse.reshape(n, -1, 1, 4), LANES, axis=2), LANES * n, rank)[::LANES]
    return bool(np.array_equal(index._sketches[:n], sketches) and np.array_equal(held, made))


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


def test_the_first_stage_runs_where_it_was_measured_faster() -> None:
    """From COARSE_FROM rows for the processor's best loop (never with the portable one), and
    keeping at most a sixteenth of the rows."""
    options = SketchOptions()
    least = COARSE_FROM.get(LOOPS[-1])
    if least is None:
        assert options.kept(10_000_000, 200) == 0
        return
    assert options.kept(least - 1, 200) == 0
    assert options.kept(least, 200) == max(4_096, least // 64)
    assert options.kept(1_000_000, 200) == 15_625
    assert SketchOptions(coarse=0).kept(1_000_000, 200) == 0
    assert SketchOptions(coarse=least).kept(least, 200) == 0  # more than a sixteenth


def test_codes_are_kept_only_where_the_first_stage_may_run(
    data: tuple[np.ndarray, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the rows it runs from on this processor (made then from every row), until the index
    falls below half of those; never with `coarse` 0 or on a processor it does not run on."""
    vectors, _ = data
    monkeypatch.setattr(sketch, "COARSE_FROM", dict.fromkeys(LOOPS, 4_000))
    index = VectorIndex(DIMENSION, sketch=SketchOptions(threshold=THRESHOLD))
    index.add(list(range(3_999)), vectors[:3_999])
    assert index.sketched and index._coarse is None and consistent(index)
    index.add([3_999], vectors[3_999:4_000])
    assert index._coarse is not None and consistent(index)
    index.remove(list(range(2_000)))  # 2,000 left: half of 4,000, kept
    assert index._coarse is not None and consistent(index)
    index.remove([2_000])
    assert index._coarse is None and index.sketched and consistent(index)
    staged, alone = pair(vectors)[1], pair(vectors, coarse=0)[1]
    assert staged._coarse is not None and alone._coarse is None
    assert staged.nbytes - alone.nbytes == staged._coarse.nbytes > 0
    monkeypatch.setattr(sketch, "COARSE_FROM", {})  # a processor with no loop for it
    assert pair(vectors)[1]._coarse is None


def test_with_the_first_stage_the_sketches_still_find_nearly_all_of_the_exact_answer(
    data: tuple[np.ndarray, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index small enough to test (the first stage let run from its size on every loop),
    keeping the first stage's rows in the most proportion it allows (a sixteenth): a search
    ranks what the definition's two stages propose, alone and shared, and finds nearly all of
    the exact answer."""
    monkeypatch.setattr(sketch, "COARSE_FROM", dict.fromkeys(LOOPS, SIZE))
    vectors, queries = data
    exact, staged = pair(vectors, coarse=SIZE // 16)
    options = SketchOptions(threshold=THRESHOLD, coarse=SIZE // 16)
    wanted = options.wanted(K)
    assert options.kept(SIZE, wanted) == SIZE // 16 and options.kept(SIZE - 1, wanted) == 0
    assert staged._sketch is not None and staged._sketches is not None
    assert staged._coarse is not None
    asked: list[dict[str, object]] = []  # what the scans were given, beside their answer

    def spied(scan: Callable[..., object]) -> Callable[..., object]:
        def given(*args: object, **kwargs: object) -> object:
            asked.append(kwargs)
            return scan(*args, **kwargs)

        return given

    monkeypatch.setattr(vectors_module, "best_rows", spied(best_rows))
    monkeypatch.setattr(vectors_module, "SharedScan", spied(SharedScan))
    for q in queries[:30]:
        unit = staged._query(q)
        weights = staged._sketch.weights(unit)
        planes = staged._sketches[:SIZE], coarse_rows(staged._coarse, SIZE).reshape(-1)
        rows = two_stage(*planes, weights, wanted, SIZE // 16).astype(np.int32)
        keys = staged._best_of(unit, rows, K)[0].tolist()
        assert staged.nearest(q, K)[0].tolist() == keys
        shared = staged.shared_nearest(q, K)
        assert shared is not None and shared.nearest()[0].tolist() == keys
        assert np.frombuffer(shared.scan.best(), np.int32).tolist() == rows.tolist()
    assert len(asked) == 60 and all(given["keep"] == SIZE // 16 for given in asked)
    assert recall(exact, staged, queries) >= 0.99
    assert recall(exact, staged, queries, 100) >= 0.98


def test_a_filtered_search_stays_exact(data: tuple[np.ndarray, np.ndarray]) -> None:
    vectors, queries = data
    exact, sketched = pair(vectors, fetch=16, per_hit=1)  # a poor sketch search
    allowed = np.arange(0, SIZE, 3)
    for q in queries[:20]:
        assert np.array_equal(exact.nearest(q, K, allowed)[0], sketched.nearest(q, K, allowed)[0])


def test_sketches_follow_their_rows_through_deletes_and_corrections(
    data: tuple[np.ndarray, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first stage runs here too (from 1,000 rows, keeping 250): its codes move with the
    rows."""
    monkeypatch.setattr(sketch, "COARSE_FROM", dict.fromkeys(LOOPS, 1_000))
    vectors, queries = data
    sketched = pair(vectors, coarse=250)[1]
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
        ("sketch_coarse", "-1"),
        ("sketch_coarse", "2.5"),
    ],
)
def test_bad_sketch_options_are_refused(option: str, value: str) -> None:
    with pytest.raises(InvalidArgument, match=rf"options\.{option}"):
        memory_options("hybrid", {option: value})


def test_sketch_options_pass_through() -> None:
    assert memory_options("hybrid").sketch() == SketchOptions()
    options = memory_options("hybrid", {"sketch_threshold": "0", "sketch_fetch": "96"})
    assert options.sketch() == SketchOptions(threshold=0, fetch=96)
    assert memory_options("hybrid", {"sketch_coarse": "0"}).sketch().coarse == 0
    index = VectorIndex(DIMENSION, sketch=options.sketch())  # threshold 0: never sketched
    index.add(list(range(100)), np.eye(100, DIMENSION, dtype=np.float32))
    assert not index.sketched
