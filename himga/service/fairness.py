"""Keeping one namespace's large batch from stalling small calls to the others.

The server's calls share one interpreter lock. Two things held it for long stretches while a
100,000-message batch was read and stored (measured by `make bench-isolation`): the cyclic
garbage collector, walking every object the batch had made, and single C calls over the whole
batch (README, Figures). `large_batch` switches the cyclic collector off while a large batch is
in flight: what a batch makes is freed by reference counting when the call ends, so nothing
piles up, and the collector runs again as soon as no large batch is in flight.

A small call hands the interpreter lock back and forth a dozen times (gRPC's poller, the worker,
SQLite, the answer); each time it waits for the thread holding the lock to let go, by default
after up to 5 ms. `himga serve` shortens that to SWITCH_INTERVAL_SECONDS (`share_interpreter`),
which lowers the 99th-percentile latency of small calls beside large batches (README, Figures).
"""

import gc
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

LARGE_BATCH = 1000
"""A batch of at least this many items is large."""
SWITCH_INTERVAL_SECONDS = 0.001


def share_interpreter() -> None:
    """Make threads waiting for the interpreter lock get it sooner (process-wide)."""
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)


class _Pause:
    """How many large batches are in flight, and whether the collector was on before them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_flight = 0
        self.was_enabled = False


_PAUSE = _Pause()


@contextmanager
def large_batch(size: int) -> Iterator[None]:
    """Run the block with the cyclic collector off if `size` makes it a large batch."""
    if size < LARGE_BATCH:
        yield
        return
    with _PAUSE.lock:
        if _PAUSE.in_flight == 0:
            _PAUSE.was_enabled = gc.isenabled()
            gc.disable()
        _PAUSE.in_flight += 1
    try:
        yield
    finally:
        with _PAUSE.lock:
            _PAUSE.in_flight -= 1
            if _PAUSE.in_flight == 0 and _PAUSE.was_enabled:
                gc.enable()
