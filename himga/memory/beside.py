"""What a hybrid search (himga.memory.hybrid) runs on a second core while its caller ranks the
keyword side: the query's embedding and, when the caller is still ranking by then, the scan of
the vectors' sketches.

Both the model (onnxruntime) and the scan (himga.memory._sketch) let the interpreter's lock go,
as the keyword ranking does (himga.memory._ranking), so they take two cores at once.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TypeVar

import numpy as np

from himga.pools import started

T = TypeVar("T")

Nearest = tuple[np.ndarray, np.ndarray]
"""The vectors' nearest turns to a query: their keys and cosines, best first."""

BESIDE = ThreadPoolExecutor(len(os.sched_getaffinity(0)), thread_name_prefix="himga-beside")
"""Where a scan runs beside a keyword side ranked again, deeper or on an index that changed
while the query was embedded (HybridIndex.ranked): one thread a core, shared by every memory
of the process; with many searches in flight the cores are busy either way."""

QUERIES = ThreadPoolExecutor(32, thread_name_prefix="himga-query")
"""Where queries are embedded (QueryVector): as many threads as the searches a server's doors
run at once (8 a door by default), so that an embeddings server (the `openai` kind) is asked
for all of them at once, as it was when each caller embedded its own query."""


class QueryVector:
    """A query's vector being made on a thread of QUERIES, and then, should its caller still be
    ranking the keyword side, the vectors' nearest turns to it found there too.

    The scan reads the index the caller's lock guards, so it may only run while the caller holds
    that lock: the caller says when its keyword side is ranked (`ranked`), and learns whether
    the scan runs beside; if it does, the caller waits for it before it lets the lock go; if it
    does not, none will start (the caller searches the vectors itself, or later)."""

    def __init__(
        self, embed: Callable[[], np.ndarray], scan: Callable[[np.ndarray], Nearest] | None
    ) -> None:
        """`embed`: makes the query's vector; `scan`: its nearest turns (None: never beside)."""
        self._claim = threading.Lock()
        self._caller_ranked = False
        self._scanning = False
        self._done: Future[tuple[np.ndarray, Nearest | None]] = started(
            QUERIES, self._run, embed, scan
        )

    def _run(
        self, embed: Callable[[], np.ndarray], scan: Callable[[np.ndarray], Nearest] | None
    ) -> tuple[np.ndarray, Nearest | None]:
        vector = embed()
        with self._claim:
            self._scanning = scan is not None and not self._caller_ranked
        return vector, (scan(vector) if scan is not None and self._scanning else None)

    def ranked(self) -> bool:
        """Say the caller's keyword side is ranked (or given up): whether the scan runs beside,
        to be waited for (`result`) before the caller's lock is let go."""
        with self._claim:
            self._caller_ranked = True
            return self._scanning

    @property
    def done(self) -> bool:
        """Whether the vector (and the scan, if it ran beside) is done, whatever came of it."""
        return self._done.done()

    def result(self) -> tuple[np.ndarray, Nearest | None]:
        """The query's vector, and its nearest turns when the scan ran beside (else None); when
        it runs beside, waited for to its end whatever interrupts the caller (`outlast`)."""
        return outlast(self._done) if self._scanning else self._done.result()

    def wait(self) -> None:
        """Wait until the vector (and the scan, if it runs beside) is done, whatever came of it
        or interrupts the caller meanwhile (`ended`)."""
        ended(self._done)


def ended(job: Future[T]) -> None:
    """Wait until `job` is done, even should the waiting thread be interrupted meanwhile (a
    KeyboardInterrupt, raised once the job has ended): a scan beside reads the index its
    caller's lock guards, so the caller may let that lock go only once the scan has ended."""
    interrupted: BaseException | None = None
    while True:
        try:
            wait([job])
            break
        except BaseException as error:  # raised once the job has ended
            interrupted = interrupted or error
    if interrupted is not None:
        raise interrupted


def outlast(job: Future[T]) -> T:
    """`job`'s result, waited for to its end (`ended`)."""
    ended(job)
    return job.result()
