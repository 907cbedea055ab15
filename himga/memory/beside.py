"""What a hybrid search (himga.memory.hybrid) runs on a second core while its caller ranks the
keyword side: the query's embedding and, when the caller is still ranking by then or waits for
the vector (a model in process), the scan of the vectors' sketches, which the caller joins
(himga.memory.vectors.SharedNearest), and what else of the vector that thread reads once its
part of the scan is done (QueryVector's `then`).

Both the model (onnxruntime) and the scan (himga.memory._sketch) let the interpreter's lock go,
as the keyword ranking does (himga.memory._ranking), so they take two cores at once.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from functools import partial
from typing import Any, TypeVar

import numpy as np

from himga.memory.vectors import SharedNearest
from himga.pools import started

T = TypeVar("T")

Nearest = tuple[np.ndarray, np.ndarray]
"""The vectors' nearest turns to a query: their keys and cosines, best first."""

Scan = Callable[[np.ndarray], SharedNearest | None]
"""Begins the search of a query vector's nearest turns, to be shared (None: it is not)."""

BESIDE = ThreadPoolExecutor(len(os.sched_getaffinity(0)), thread_name_prefix="himga-beside")
"""Where a scan runs beside a keyword side ranked again, deeper or on an index that changed
while the query was embedded (HybridIndex.ranked), and where a shared scan's helpers run on a
machine of more than two cores (`helped`): one thread a core, shared by every memory of the
process; with many searches in flight the cores are busy either way."""

QUERIES = ThreadPoolExecutor(32, thread_name_prefix="himga-query")
"""Where queries are embedded (QueryVector): as many threads as the searches a server's doors
run at once (8 a door by default), so that an embeddings server (the `openai` kind) is asked
for all of them at once, as it was when each caller embedded its own query."""


class QueryVector:
    """A query's vector being made on a thread of QUERIES, and then, should its caller still be
    ranking the keyword side or waiting for the vector, the vectors' nearest turns to it searched
    there too: a scan the caller joins (`nearest`).

    The scan reads the index the caller's lock guards, so it may only run while the caller holds
    that lock: the caller says when its keyword side is ranked (`ranked`), and whether it will
    wait for the vector holding the lock, and learns whether the scan runs beside; if it does,
    the caller takes part and waits for it before it lets the lock go; if it does not, none will
    start (the caller searches the vectors itself, or later)."""

    def __init__(
        self,
        embed: Callable[[], np.ndarray],
        scan: Scan | None,
        then: Callable[[np.ndarray], Any] | None = None,
    ) -> None:
        """`embed`: makes the query's vector; `scan`: its nearest turns' search, to be shared
        (None: never beside); `then`: what else of the vector the thread that began the scan
        reads of the index once its part is done (`also`), while the caller ends its own."""
        self._claim = threading.Lock()
        self._caller_ranked = False
        self._caller_waits = False
        self._scannable = scan is not None
        self._scan: SharedNearest | None = None
        self._also: Any = None
        self._made = threading.Event()  # the vector made (or failed) and the scan begun, if any
        self._done: Future[np.ndarray] = started(QUERIES, self._run, embed, scan, then)
        # should the job never run (its pool's queue cancelled), no caller waits on it forever
        self._done.add_done_callback(lambda _: self._made.set())

    def _run(
        self,
        embed: Callable[[], np.ndarray],
        scan: Scan | None,
        then: Callable[[np.ndarray], Any] | None,
    ) -> np.ndarray:
        try:
            vector = embed()
            with self._claim:
                if scan is not None and (not self._caller_ranked or self._caller_waits):
                    self._scan = scan(vector)
        finally:
            self._made.set()
        if self._scan is not None:
            helped(self._scan)
            self._also = self._scan.share(None if then is None else partial(then, vector))
        return vector

    def ranked(self, wait: bool = False) -> bool:
        """Say the caller's keyword side is ranked (or given up): whether the scan runs beside,
        to be joined and waited for (`nearest`) before the caller's lock is let go. `wait`: the
        caller will wait for the vector holding its lock, so a scan not begun yet will begin
        beside the moment the vector is made (then this says it runs beside, though `nearest`
        may find that the index wanted none: None)."""
        with self._claim:
            self._caller_ranked = True
            if wait and self._scannable and not self._made.is_set():
                self._caller_waits = True
            return self._scan is not None or self._caller_waits

    @property
    def made(self) -> bool:
        """Whether the vector is made (or failed), and its scan begun if it was to be."""
        return self._made.is_set()

    @property
    def done(self) -> bool:
        """Whether the vector (and the scan, if it ran beside: every part of it, which the
        thread that made the vector waits for) is done, whatever came of it."""
        return self._done.done()

    def result(self) -> np.ndarray:
        """The query's vector; when the scan runs beside, waited for to its end whatever
        interrupts the caller (`outlast`)."""
        return outlast(self._done) if self._scan is not None else self._done.result()

    def nearest(self) -> Nearest | None:
        """The vectors' nearest turns when the scan runs beside (`ranked` said so), once the
        vector is made: the caller takes part in the scan, then waits for its every part,
        whatever interrupts it (`ended`: the thread that began the scan returns once every part
        has); None when none runs beside (the vector failed, or the index wanted no scan)."""
        try:
            self._made.wait()
            if self._scan is None:
                return None
            return self._scan.nearest()
        finally:
            ended(self._done)

    @property
    def also(self) -> Any:
        """What `then` found, once `nearest` has returned (None: the scan did not run beside)."""
        return self._also

    def wait(self) -> None:
        """Wait until the vector (and the scan, if it runs beside, every part of it) is done,
        whatever came of it or interrupts the caller meanwhile (`ended`)."""
        ended(self._done)


def helped(scan: SharedNearest) -> None:
    """Start the helpers `scan` asks for (SharedNearest.helpers) on BESIDE. They are not waited
    for as such: whoever waits for the scan waits for every part that took rows."""
    for _ in range(scan.helpers):
        started(BESIDE, scan.help)


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
