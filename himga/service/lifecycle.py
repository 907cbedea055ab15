"""The calls in flight, and how a stopping server ends them truthfully.

Stopping (`MemoryServer.stop`) first refuses new calls to himga's services (UNAVAILABLE, reason
SERVER_STOPPING: nothing was done, so a retry elsewhere or later is safe), then waits up to the
grace period for the calls in flight to finish. Any still running then are abandoned: a write
reaching its commit rolls back and answers UNAVAILABLE (SERVER_STOPPING), which is true: it
stored nothing. A write already committing finishes and answers as it would have. Only then is
gRPC stopped, so no call that committed is answered UNAVAILABLE.
"""

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from himga.memory.commit import CallerGone
from himga.service.errors import DeadlinePassed, ServerStopping


class Waiting(Protocol):
    """A call's context, as far as a write asks of it (himga.service.core.context.CallContext)."""

    def is_active(self) -> bool: ...

    def time_remaining(self) -> float | None: ...


class Calls:
    """Counts the calls in flight, refuses new ones once closing, and tells a write whether it
    is still wanted (its caller still waits, the server is not abandoning it)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._in_flight = 0
        self._closing = False
        self._abandoning = False

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @contextmanager
    def tracked(self) -> Iterator[None]:
        """Count the block as a call in flight; ServerStopping once closing (the core runs
        every call of himga's services in one; health and reflection answer throughout)."""
        with self._changed:
            closing = self._closing
            if not closing:
                self._in_flight += 1
        if closing:
            raise ServerStopping("the server is stopping: call another, or again soon")
        try:
            yield
        finally:
            with self._changed:
                self._in_flight -= 1
                self._changed.notify_all()

    def still_wanted(self, context: Waiting) -> None:
        """Raise unless a write of the call of `context` may commit: its caller still there,
        its deadline (read now) not passed, the server not abandoning it. A passed deadline is
        DeadlinePassed (DEADLINE_EXCEEDED), told apart from a caller that went (CANCELLED)."""
        if self._abandoning:
            raise ServerStopping("the server stopped before this write committed; nothing stored")
        remaining = context.time_remaining()
        if remaining is not None and remaining <= 0:
            raise DeadlinePassed("the call's deadline passed before its write committed")
        if not context.is_active():
            raise CallerGone("the call ended (its caller cancelled or hung up) before it committed")

    def close(self) -> None:
        """Refuse every new call from now on."""
        with self._changed:
            self._closing = True

    def abandon(self) -> None:
        """Let no write of a call in flight commit from now on."""
        self._abandoning = True

    def drain(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the calls in flight to end; whether they all did."""
        with self._changed:
            return self._changed.wait_for(lambda: self._in_flight == 0, timeout)
