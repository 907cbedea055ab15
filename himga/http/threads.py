"""`InThreads`: the HTTP port's WSGI application served to hypercorn as an ASGI application,
each request answered whole on a thread of a pool sized like the gRPC server's.

hypercorn's own WSGI mode runs the application on asyncio's default executor (cores + 4
threads) and hands each part of the answer back to the event loop one at a time, the thread
blocked until the loop has taken it: three trips between threads a call, each waiting on the
loop that also parses HTTP for every connection. Measured with `make bench-http` at concurrency
8, that loop was the bottleneck. Every answer of this application is one body of known length
(unary Connect and gRPC-Web calls, a page, the OpenAPI document), so a thread builds it whole and
the loop sends it once: one trip there, one back (each a plain call, not run_in_executor's
pair of chained futures; the WSGI environ is made on the thread, not the loop).
"""

import asyncio
import io
import json
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from hypercorn.typing import ASGIReceiveCallable, ASGISendCallable, HTTPScope, Scope

from himga.http.app import Environ, WsgiApp
from himga.http.handlers import ARRIVED, GONE

Headers = list[tuple[bytes, bytes]]


def _size(count: int) -> str:
    """`count` bytes as a person reads them: "16 MiB (16777216 bytes)", or "1000 bytes"."""
    mebibytes, rest = divmod(count, 1 << 20)
    return f"{mebibytes} MiB ({count} bytes)" if mebibytes and not rest else f"{count} bytes"


class InThreads:
    """An ASGI application calling the WSGI `app` on `pool` for each HTTP request. A body over
    `max_body_bytes` is refused as soon as that many bytes have come: 413, with Connect's error
    JSON (resource_exhausted) naming `max_message_bytes`, the limit a caller knows (the body may
    hold a few bytes more: gRPC-Web's frame), which Connect clients read as they read any error.
    A call to one of the paths of `writes` is watched meanwhile for the client hanging up (the
    core asks before a write commits whether its caller is still there); no other call asks, and
    watching costs the loop more than the thread's handoff (a task awaiting hypercorn's
    `receive`, then cancelled: a fifth of the server's CPU for a small Retrieve)."""

    def __init__(
        self,
        app: WsgiApp,
        pool: Executor,
        max_body_bytes: int,
        refused: Callable[[str, str, str, str], None] | None = None,
        writes: frozenset[str] = frozenset(),
        max_message_bytes: int | None = None,
    ) -> None:
        self._app = app
        self._writes = writes
        self._refused = refused  # the core's log policy (himga.service.core.refusals)
        self.pool = pool
        self.max_body_bytes = max_body_bytes
        limit = _size(max_message_bytes or max_body_bytes)
        message = f"the request is over {limit}, the most this server takes in one message"
        too_large = json.dumps({"code": "resource_exhausted", "message": message}).encode()
        self.too_large_answer: tuple[int, Headers, bytes] = (
            413,
            [(b"content-type", b"application/json")],
            too_large,
        )

    def too_large(self, scope: HTTPScope | dict[str, Any]) -> None:
        """Count and log the refusal of a body over `max_body_bytes`."""
        if self._refused is not None:
            peer = scope.get("client") or ("", 0)
            why = f"a body over {self.max_body_bytes} bytes"
            self._refused("limits", scope["path"], f"http:{peer[0]}:{peer[1]}", why)

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        body = bytearray()
        arrived = time.monotonic()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            body += message["body"]
            if len(body) > self.max_body_bytes:
                self.too_large(scope)
                await _send(send, *self.too_large_answer)
                return
            if not message["more_body"]:
                break
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[tuple[int, Headers, bytes]] = loop.create_future()
        gone = threading.Event()
        self.pool.submit(self._answer_for, loop, answered, scope, bytes(body), arrived, gone)
        if scope["path"] not in self._writes:
            answer = await answered
        else:
            watching = loop.create_task(_hang_up(receive, gone))
            try:
                answer = await answered
            finally:
                watching.cancel()
        if not gone.is_set():
            await _send(send, *answer)

    def _answer_for(
        self,
        loop: asyncio.AbstractEventLoop,
        answered: "asyncio.Future[tuple[int, Headers, bytes]]",
        scope: HTTPScope,
        body: bytes,
        arrived: float,
        gone: threading.Event,
    ) -> None:
        """On a thread of the pool: the answer to one request, handed back to the loop (the
        environ is made here too, off the loop that parses HTTP for every connection)."""
        answer: tuple[int, Headers, bytes] | None = None
        failure: BaseException | None = None
        try:
            found = environ(scope, body)
            found[ARRIVED], found[GONE] = arrived, gone
            answer = self.answer(found)
        except BaseException as error:  # a 500, as hypercorn writes it
            failure = error
        if not loop.is_closed():  # else the server stopped meanwhile: no one to answer
            loop.call_soon_threadsafe(_settle, answered, answer, failure)

    def answer(self, environ: Environ) -> tuple[int, Headers, bytes]:
        """The status, headers and whole body of the WSGI application's answer."""
        started: list[Any] = []

        def start_response(status: str, headers: list[tuple[str, str]], *_: Any) -> None:
            started[:] = [status, headers]

        chunks = self._app(environ, start_response)
        try:
            body = b"".join(chunks)
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
        status, headers = started
        encoded = [
            (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers
        ]
        return int(status.split(" ", 1)[0]), encoded, body


def _settle(answered: "asyncio.Future[Any]", answer: Any, error: BaseException | None) -> None:
    if answered.done():  # cancelled: the connection went away meanwhile
        return
    if error is not None:
        answered.set_exception(error)
    else:
        answered.set_result(answer)


async def _hang_up(receive: ASGIReceiveCallable, gone: threading.Event) -> None:
    """Set `gone` once the client disconnects (a write still in flight then rolls back)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            gone.set()
            return


async def _send(send: ASGISendCallable, status: int, headers: Headers, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _lifespan(receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
    """Nothing to start or stop: say so to the server."""
    while True:
        event = (await receive())["type"]
        if event == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif event == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


_SPECIAL = {"content-length": "CONTENT_LENGTH", "content-type": "CONTENT_TYPE"}


def environ(scope: HTTPScope, body: bytes) -> Environ:
    """The WSGI environ (PEP 3333) of an ASGI HTTP request and its body."""
    server = scope.get("server") or ("localhost", 80)
    found: Environ = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": "",
        "PATH_INFO": scope["path"].encode("utf-8").decode("latin-1"),
        "QUERY_STRING": scope["query_string"].decode("latin-1"),
        "SERVER_NAME": server[0],
        "SERVER_PORT": str(server[1]),
        "SERVER_PROTOCOL": f"HTTP/{scope['http_version']}",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    client = scope.get("client")
    if client is not None:
        found["REMOTE_ADDR"], found["REMOTE_PORT"] = client[0], str(client[1])
    for raw_name, raw_value in scope["headers"]:
        name = raw_name.decode("latin-1")
        key = _SPECIAL.get(name) or "HTTP_" + name.upper().replace("-", "_")
        value = raw_value.decode("latin-1")
        found[key] = f"{found[key]},{value}" if key in found else value
    return found
