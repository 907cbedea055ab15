"""The signals a long-running command acts on, read by its main thread as ordinary events.

A Python signal handler runs in the main thread between two bytecodes of whatever that thread
was doing, so a handler that takes a lock deadlocks whenever the main thread holds that lock at
that moment. `himga serve` did: its SIGTERM handler called `threading.Event.set()` while the
main thread could be inside `Event.wait` on the same event, which holds the event's lock
between bytecodes (a server that got SIGTERM right as it started never exited); its SIGHUP
handler took the reload's lock, which a second SIGHUP during the reload would wait for under
itself.

Here the handlers do nothing in Python: the interpreter's own C-level handler writes each
signal's number to a pipe (`signal.set_wakeup_fd`), and `Signals.next` reads it in the main
thread, which then acts holding nothing. A signal that arrives before the command waits is
kept in the pipe, not lost."""

import os
import selectors
import signal
import time
from collections.abc import Iterable
from types import FrameType, TracebackType


def _noted(signum: int, frame: FrameType | None) -> None:
    """The Python-level handler: nothing (the wakeup pipe has the signal's number already)."""


class Signals:
    """While open, `wanted` signals no longer act by themselves: each is a number `next`
    returns, in the order they came. Open and close it in the main thread."""

    def __init__(self, wanted: Iterable[signal.Signals]) -> None:
        self._wanted = frozenset(wanted)
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        # A selector, not select.select: a server with a thousand connections open has fds past
        # FD_SETSIZE (1024), which select.select refuses ("filedescriptor out of range").
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._read, selectors.EVENT_READ)
        self._previous_fd = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._previous = {number: signal.signal(number, _noted) for number in self._wanted}

    def next(self, timeout: float | None = None) -> signal.Signals | None:
        """The next of the wanted signals to arrive; None when none came in `timeout` seconds
        (None: wait as long as it takes)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not self._selector.select(left):
                return None
            try:
                byte = os.read(self._read, 1)
            except BlockingIOError:
                continue
            number = byte[0] if byte else 0
            if number in self._wanted:
                return signal.Signals(number)

    def close(self) -> None:
        """Give the signals back their handlers of before, and the wakeup pipe its earlier fd."""
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        signal.set_wakeup_fd(self._previous_fd)
        self._selector.close()
        os.close(self._read)
        os.close(self._write)

    def __enter__(self) -> "Signals":
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
