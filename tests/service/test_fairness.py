"""The collector pauses while a large batch is in flight, and runs again after the last one."""

import gc
import threading

from himga.service.fairness import LARGE_BATCH, large_batch


def test_the_collector_pauses_during_large_batches_only() -> None:
    assert gc.isenabled()
    with large_batch(LARGE_BATCH - 1):
        assert gc.isenabled()
    with large_batch(LARGE_BATCH):
        assert not gc.isenabled()
    assert gc.isenabled()


def test_overlapping_batches_restore_the_collector_once_all_have_ended() -> None:
    first_in, second_out, seen = threading.Event(), threading.Event(), []

    def other() -> None:
        with large_batch(LARGE_BATCH):
            first_in.set()
            second_out.wait()
        seen.append(gc.isenabled())

    thread = threading.Thread(target=other)
    thread.start()
    first_in.wait()
    with large_batch(LARGE_BATCH):
        pass
    seen.append(gc.isenabled())  # the other batch is still in flight
    second_out.set()
    thread.join()
    assert seen == [False, True]


def test_a_collector_switched_off_before_stays_off() -> None:
    gc.disable()
    try:
        with large_batch(LARGE_BATCH):
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
