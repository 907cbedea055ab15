"""One log policy for every refusal, whatever the door: a call refused for its token (auth), for
a request that does not decode (decoding), or for what it asks beyond the server's limits
(limits) is counted in the metrics by kind, and logged as one line, at most `LOG_BURST` lines a
`LOG_PERIOD_SECONDS` per kind; the first line after that says how many of the kind it left
out."""

import logging
import threading
import time
from collections.abc import Callable

_log = logging.getLogger("himga.refusals")

LOG_BURST = 10
LOG_PERIOD_SECONDS = 60.0
KINDS = ("auth", "decoding", "limits")
"""The kinds of refusal, as the metrics label them."""


class RateLimitedLog:
    """At most `burst` lines a `period` seconds of one kind; the next line after a quiet spell
    says how many were left out."""

    def __init__(
        self,
        kind: str,
        burst: int = LOG_BURST,
        period: float = LOG_PERIOD_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kind = kind
        self._burst, self._period, self._clock = burst, period, clock
        self._lock = threading.Lock()
        self._start: float | None = None
        self._sent = self._dropped = 0

    def warning(self, message: str, *args: object) -> None:
        with self._lock:
            now = self._clock()
            if self._start is None or now - self._start >= self._period:
                if self._dropped:
                    _log.warning(
                        "%d more %s refusals were not logged (at most %d lines a %g s)",
                        self._dropped,
                        self.kind,
                        self._burst,
                        self._period,
                    )
                self._start, self._sent, self._dropped = now, 0, 0
            if self._sent >= self._burst:
                self._dropped += 1
                return
            self._sent += 1
        _log.warning(message, *args)


class Refusals:
    """Counts each refusal with `count(kind)` (the metrics', when the server has them) and logs
    it under the rate limit of its kind."""

    def __init__(
        self,
        count: Callable[[str], None] | None = None,
        burst: int = LOG_BURST,
        period: float = LOG_PERIOD_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._count = count
        self._logs = {kind: RateLimitedLog(kind, burst, period, clock) for kind in KINDS}

    def refused(self, kind: str, method: str, peer: str, why: str) -> None:
        """A call of `method` from `peer` was refused for `why` (one line, no secrets)."""
        if self._count is not None:
            self._count(kind)
        self._logs[kind].warning("refused %s from %s (%s): %s", method, peer or "?", kind, why)
