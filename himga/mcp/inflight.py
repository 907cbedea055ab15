"""The calls in flight when stdin closes are answered before the server stops.

A host that pipes its requests (`printf ... | himga mcp`) closes stdin right after its last
line; the SDK's session ended then, and a `remember` still running was answered "Connection
closed" and rolled back. `Draining` stands between the transport's read stream and the server
and `Sent` between the server and the write stream: they keep the ids of the requests not yet
answered, and the end of stdin reaches the server only once every one of them is answered (or
cancelled by the client), or after DRAIN_SECONDS.
"""

import logging
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from himga.mcp.streams import ReadWrapper, Wrapper

_log = logging.getLogger("himga.mcp")

DRAIN_SECONDS = 60.0
"""How long the calls in flight when stdin closes may take to be answered."""


class InFlight:
    """The ids of the requests read and not yet answered."""

    def __init__(self) -> None:
        self._ids: set[int | str] = set()
        self._idle = anyio.Event()
        self._idle.set()

    def begun(self, request_id: int | str) -> None:
        self._ids.add(request_id)
        if self._idle.is_set():
            self._idle = anyio.Event()

    def ended(self, request_id: Any) -> None:
        self._ids.discard(request_id)
        if not self._ids:
            self._idle.set()

    async def drained(self, seconds: float = DRAIN_SECONDS) -> None:
        """Back once every request is answered, or after `seconds`, logging what was not."""
        with anyio.move_on_after(seconds):
            await self._idle.wait()
        if self._ids:
            _log.warning(
                "stdin closed; %d call(s) unanswered after %g s: %s",
                len(self._ids),
                seconds,
                ", ".join(map(repr, sorted(self._ids, key=str))),
            )


class Draining(ReadWrapper):
    """The read stream `inner`, noting each request in `flight`, and ending only once
    `flight` is drained."""

    def __init__(self, inner: Any, flight: InFlight) -> None:
        super().__init__(inner)
        self._flight = flight

    async def receive(self) -> Any:
        try:
            item = await self._inner.receive()
        except anyio.EndOfStream:
            await self._flight.drained()
            raise
        message = getattr(item, "message", None)
        if isinstance(message, types.JSONRPCRequest):
            self._flight.begun(message.id)
        elif isinstance(message, types.JSONRPCNotification) and (
            message.method == "notifications/cancelled"
        ):  # the client wants no answer to it
            self._flight.ended((message.params or {}).get("requestId"))
        return item


class Sent(Wrapper):
    """The write stream `inner`, noting in `flight` each request it answers."""

    def __init__(self, inner: Any, flight: InFlight) -> None:
        super().__init__(inner)
        self._flight = flight

    async def send(self, item: SessionMessage, /) -> None:
        await self._inner.send(item)
        if isinstance(item.message, types.JSONRPCResponse | types.JSONRPCError):
            self._flight.ended(item.message.id)
