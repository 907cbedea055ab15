"""`Http1`: the HTTP port's cleartext connections, HTTP/1.1 parsed by h11 in an asyncio protocol,
each request answered whole on a thread of the pool (himga.http.threads) and written back in
one piece; a connection that opens with HTTP/2's preface (prior knowledge) is handed, bytes and
all, to hypercorn, which serves HTTP/2 (and TLS, on a port that has it).

hypercorn's own HTTP/1.1 serving costs more than a whole gRPC Retrieve for a request the
application answers at once (measured with `make bench-http`'s floor): for each request it makes
a stream object, a task for the application, a task group, ASGI events through queues, and
writes through asyncio's streams. Here a request is h11's events, one call to the pool, one
callback back and one write; measured in one process beside hypercorn on LoCoMo Retrieves, it
nearly doubled HTTP's calls per second.
"""

import asyncio
import logging
import threading
import time
from typing import Any
from urllib.parse import unquote

import h11
from hypercorn.asyncio.tcp_server import TCPServer
from hypercorn.asyncio.worker_context import WorkerContext
from hypercorn.config import Config
from hypercorn.utils import wrap_app

from himga.http.handlers import ARRIVED, GONE
from himga.http.threads import Headers, InThreads, environ

_log = logging.getLogger(__name__)

_PREFACE = b"PRI "
"""How HTTP/2 with prior knowledge opens a connection (no HTTP/1.1 method is PRI)."""
_HELD_BYTES = 1 << 20
"""Bytes of the next requests held while one is answered, before reading pauses (reading goes
on meanwhile otherwise, so that a client hanging up is seen at once)."""
ANSWERS_FLUSH_SECONDS = 5.0
"""How long a stopping port lets the answers it is writing reach their callers (a write the
store committed is answered, not cut off) before it drops the connections left."""
LINGER_SECONDS = (2.0, 30.0)
"""After refusing a request whose body is still arriving: how long a pause in it, and how long in
all, before the connection is closed. Closed at once, the bytes still arriving would reset it,
and the client, still sending, would never read the refusal."""
_TWO_LENGTHS = (
    b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: 65\r\n"
    b"connection: close\r\n\r\nbad request: Transfer-Encoding and Content-Length both: send one\n"
)
_BAD_REQUEST = (
    b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: 12\r\n"
    b"connection: close\r\n\r\nbad request\n"
)


class Connections:
    """The connections of one HTTP port's cleartext listener: HTTP/1.1 ones served here, the
    HTTP/2 ones handed to hypercorn (its TCPServer, as its own listener would run it)."""

    def __init__(self, app: InThreads, config: Config, loop: asyncio.AbstractEventLoop) -> None:
        self.app = app
        self.config = config
        self.loop = loop
        self.open: set[Http1] = set()
        self.handed: set[asyncio.Task[None]] = set()
        self.stopping = False
        self._all_closed = asyncio.Event()
        self._asgi = wrap_app(app, config.wsgi_max_body_size, "asgi")
        self._context = WorkerContext(None)

    def protocol(self) -> "Http1":
        return Http1(self)

    def hand_over(self, transport: asyncio.Transport, data: bytes) -> None:
        """Let hypercorn serve the connection `transport` from its first bytes, `data`, on."""
        reader = asyncio.StreamReader(loop=self.loop)
        protocol = asyncio.StreamReaderProtocol(reader, loop=self.loop)
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        reader.feed_data(data)
        writer = asyncio.StreamWriter(transport, protocol, reader, self.loop)
        server = TCPServer(self._asgi, self.loop, self.config, self._context, {}, reader, writer)
        task = self.loop.create_task(server.run())
        self.handed.add(task)
        task.add_done_callback(self.handed.discard)

    def lost(self, connection: "Http1") -> None:
        self.open.discard(connection)
        if self.stopping and not self.open:
            self._all_closed.set()

    async def close(self) -> None:
        """Close every connection: the idle ones now, those answering a request once their
        answer is written and sent (for up to ANSWERS_FLUSH_SECONDS; then they are dropped)."""
        self.stopping = True
        for connection in list(self.open):
            if not connection.answering:
                connection.transport.close()  # what it was sending is sent first
        if self.open:
            try:
                await asyncio.wait_for(self._all_closed.wait(), ANSWERS_FLUSH_SECONDS)
            except TimeoutError:
                _log.warning("%d HTTP answers not sent in time at stop", len(self.open))
                for connection in list(self.open):
                    connection.transport.abort()
        await self._context.terminated.set()
        if self.handed:
            _, pending = await asyncio.wait(self.handed, timeout=self.config.graceful_timeout)
            for task in pending:
                task.cancel()


class Http1(asyncio.Protocol):
    """One cleartext connection: its HTTP/1.1 requests answered one at a time, in order."""

    def __init__(self, connections: Connections) -> None:
        self._connections = connections
        self._loop = connections.loop
        self._app = connections.app
        self._h11 = h11.Connection(
            h11.SERVER, max_incomplete_event_size=connections.config.h11_max_incomplete_size
        )
        self._first = True
        self._request: h11.Request | None = None
        self._body = bytearray()
        self._arrived = 0.0
        self._gone: threading.Event | None = None  # set once the client hangs up
        self._idle: asyncio.TimerHandle | None = None
        self._discard_until: float | None = None  # refused: what arrives is read and dropped
        self.transport: asyncio.Transport

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self._connections.open.add(self)
        self._wait_idle()

    @property
    def answering(self) -> bool:
        """Whether a request of this connection is with the application, its answer unwritten."""
        return self._gone is not None

    def connection_lost(self, exc: Exception | None) -> None:
        self._connections.lost(self)
        if self._idle is not None:
            self._idle.cancel()
        if self._gone is not None:
            self._gone.set()

    def data_received(self, data: bytes) -> None:
        if self._discard_until is not None:
            self._linger()
            return
        if self._first:
            self._first = False
            if data.startswith(_PREFACE):
                self._connections.lost(self)
                if self._idle is not None:
                    self._idle.cancel()
                self._connections.hand_over(self.transport, data)
                return
        if self._gone is None:
            self._wait_idle()  # bytes came: the keep-alive clock starts again
        self._h11.receive_data(data)
        if self._gone is not None and len(self._h11.trailing_data[0]) > _HELD_BYTES:
            self.transport.pause_reading()  # a pipelining client far ahead: wait for it here
        self._next()

    def eof_received(self) -> bool | None:
        if self._discard_until is not None:  # the client has sent all it will: close now
            self.transport.close()
            return None
        self._h11.receive_data(b"")
        self._next()
        return None

    def _wait_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        self._idle = self._loop.call_later(
            self._connections.config.keep_alive_timeout, self.transport.close
        )

    def _next(self) -> None:
        """Take the events h11 has read, up to the end of one request (then answer it)."""
        while self._gone is None and not self.transport.is_closing():
            try:
                event = self._h11.next_event()
            except h11.RemoteProtocolError:
                self.transport.write(_BAD_REQUEST)
                self._refused()
                return
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return
            if isinstance(event, h11.Request):
                self._request, self._body, self._arrived = event, bytearray(), time.monotonic()
                framed = dict(event.headers)
                if b"transfer-encoding" in framed and b"content-length" in framed:
                    self.transport.write(_TWO_LENGTHS)  # RFC 9112 6.3: a smuggling signal
                    self._refused()
                    return
                if int(framed.get(b"content-length", b"0")) > self._app.max_body_bytes:
                    self._too_large()  # refused unread (h11 has checked it is digits)
                    return
                if self._h11.they_are_waiting_for_100_continue:
                    self.transport.write(
                        self._h11.send(h11.InformationalResponse(status_code=100, headers=[]))
                    )
            elif isinstance(event, h11.Data):
                self._body += event.data
                if len(self._body) > self._app.max_body_bytes:
                    self._too_large()
                    return
            elif isinstance(event, h11.EndOfMessage):
                self._answer()
                return
            elif isinstance(event, h11.ConnectionClosed):
                self.transport.close()
                return

    def _scope(self) -> dict[str, Any]:
        """The request as ASGI has it (what himga.http.threads.environ reads)."""
        request = self._request
        assert request is not None
        target = request.target.decode("latin-1")
        path, _, query = target.partition("?")
        return {
            "type": "http",
            "method": request.method.decode("ascii"),
            "path": unquote(path),
            "query_string": query.encode("latin-1"),
            "http_version": request.http_version.decode("ascii"),
            "headers": list(request.headers),
            "client": self.transport.get_extra_info("peername"),
            "server": self.transport.get_extra_info("sockname"),
            "scheme": "http",
        }

    def _too_large(self) -> None:
        scope = self._scope()
        self._app.too_large(scope)
        status, headers, body = self._app.too_large_answer
        self._write(status, [*headers, (b"connection", b"close")], body)
        self._refused()

    def _refused(self) -> None:
        """The answer to a request refused before its end is written: close once the client
        has stopped sending it."""
        self._discard_until = self._loop.time() + LINGER_SECONDS[1]
        self._linger()

    def _linger(self) -> None:
        """Drop what arrives of a refused request's body; close after a pause in it, or once
        the time to linger is up."""
        assert self._discard_until is not None
        if self._idle is not None:
            self._idle.cancel()
        if self._loop.time() >= self._discard_until:
            self.transport.close()
            return
        self._idle = self._loop.call_later(LINGER_SECONDS[0], self.transport.close)

    def _answer(self) -> None:
        """Hand the request to the pool; its answer comes back to `_respond`."""
        if self._idle is not None:
            self._idle.cancel()
        scope, body, gone = self._scope(), bytes(self._body), threading.Event()
        self._gone, self._body = gone, bytearray()
        self._app.pool.submit(self._on_thread, scope, body, self._arrived, gone)

    def _on_thread(self, scope: dict[str, Any], body: bytes, arrived: float, gone: Any) -> None:
        answer: tuple[int, Headers, bytes] | None = None
        try:
            found = environ(scope, body)  # type: ignore[arg-type]
            found[ARRIVED], found[GONE] = arrived, gone
            answer = self._app.answer(found)
        except Exception:  # a 500, as hypercorn writes it; what happened goes to the log
            _log.exception("answering %s %s", scope.get("method"), scope.get("path"))
            answer = (500, [(b"content-length", b"0")], b"")
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._respond, answer)

    def _respond(self, answer: tuple[int, Headers, bytes]) -> None:
        self._gone = None
        if self.transport.is_closing():
            return
        status, headers, body = answer
        if self._connections.stopping:  # the last answer here: sent whole, then the port closes
            headers = [*headers, (b"connection", b"close")]
        self._write(status, headers, body)
        if self._h11.our_state is h11.MUST_CLOSE:
            self.transport.close()
            return
        try:
            self._h11.start_next_cycle()
        except h11.LocalProtocolError:  # the client's side is not done: nothing more to read
            self.transport.close()
            return
        self.transport.resume_reading()
        self._wait_idle()
        self._next()  # a request already read behind this one (pipelined)

    def _write(self, status: int, headers: Headers, body: bytes) -> None:
        if not any(name == b"content-length" for name, _ in headers):
            headers = [*headers, (b"content-length", str(len(body)).encode())]
        data = self._h11.send(h11.Response(status_code=status, headers=headers))
        assert self._request is not None
        if body and self._request.method != b"HEAD":
            data += self._h11.send(h11.Data(data=body))
        data += self._h11.send(h11.EndOfMessage())
        self.transport.write(data)
