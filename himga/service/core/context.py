"""`CallContext`: what the core knows of one call, filled the same way by every door."""

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from himga.service.tokens import Grant


def _always() -> bool:
    return True


@dataclass(slots=True)
class CallContext:
    """One call as a door hands it to the core.

    A door fills `method` (the full name, "/himga.memory.v1.MemoryService/Ingest"), `token`
    (the bearer token the caller sent; None: none), `peer` (who called, for the log:
    "ipv4:127.0.0.1:5000", "http:127.0.0.1:5000", "mcp:stdio"), `deadline` (the
    `time.monotonic()` at which the caller stops waiting; None: it waits as long as it takes)
    and `active` (asked live: whether the caller is still there, False once it hung up or
    cancelled). The core fills `grant` (the caller's identity and rights) once the token is
    checked; a server without auth leaves it None, and every right is had.
    """

    method: str
    token: str | None = None
    peer: str = ""
    deadline: float | None = None
    active: Callable[[], bool] = _always
    grant: Grant | None = field(default=None)

    def time_remaining(self) -> float | None:
        """Seconds left before the deadline, read now (None: no deadline; <= 0: passed)."""
        if self.deadline is None:
            return None
        return self.deadline - time.monotonic()

    def is_active(self) -> bool:
        """Whether the caller still waits: there, and its deadline not passed."""
        remaining = self.time_remaining()
        return (remaining is None or remaining > 0) and self.active()

    @property
    def identity(self) -> str:
        """Who calls, for the log: the token's id, or "anonymous"."""
        return self.grant.id if self.grant is not None else "anonymous"


def deadline_after(seconds: float | None, since: float | None = None) -> float | None:
    """The deadline `seconds` after `since` (a `time.monotonic()`; None: now); None for None."""
    if seconds is None:
        return None
    return (time.monotonic() if since is None else since) + seconds
