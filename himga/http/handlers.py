"""The HTTP door's handlers: for each Connect route (and gRPC-Web's), fill the call's CallContext
from the HTTP request (its `authorization` header's token, its peer, the deadline its
`Connect-Timeout-Ms` or `grpc-timeout` header gives (himga.http.timeouts), counted from when
the request arrived, and whether the client is still connected), hand the request's bytes to
the core (himga.core), and write what the core raises as the Connect error of the one error
table: the same code, reason and field violations the gRPC port sends."""

import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import grpc
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.request import RequestContext
from google.protobuf.message import Message

from himga.http import codec
from himga.http.timeouts import timeout_seconds
from himga.service.auth import bearer_token
from himga.service.core.context import CallContext
from himga.service.core.core import Core, Encoded
from himga.service.errors import describe

CODES: dict[grpc.StatusCode, Code] = {
    status: Code[status.name.replace("CANCELLED", "CANCELED")]
    for status in grpc.StatusCode
    if status is not grpc.StatusCode.OK
}
"""gRPC's status codes and Connect's are the same list under the same names (Connect spells
CANCELLED with one L)."""

ARRIVED = "himga.arrived"
"""The environ key of the `time.monotonic()` at which the request's first bytes came."""
GONE = "himga.gone"
"""The environ key of a threading.Event set once the client has hung up."""

_local = threading.local()


def snake_case(name: str) -> str:
    """A method's Python name in connect-python's generated services: IngestBatch ->
    ingest_batch."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def environ_for_this_thread(environ: Mapping[str, Any] | None) -> None:
    """Keep the WSGI environ of the request this thread answers now (None: done)."""
    _local.environ = environ


def call_context(method: str, ctx: RequestContext[Any, Any]) -> CallContext:
    """The CallContext of an HTTP call of `method`."""
    headers = ctx.request_headers()
    environ: Mapping[str, Any] = getattr(_local, "environ", None) or {}
    arrived = environ.get(ARRIVED, time.monotonic())
    timeout = timeout_seconds(headers)
    gone: threading.Event | None = environ.get(GONE)
    active: Callable[[], bool] = (lambda: not gone.is_set()) if gone is not None else _always
    return CallContext(
        method,
        bearer_token(headers.get("authorization")),
        f"http:{ctx.client_address() or ''}",
        None if timeout is None else arrived + timeout,
        active,
    )


def _always() -> bool:
    return True


def connect_error(error: Exception) -> ConnectError:
    """The Connect error of what the core raised, from the one error table."""
    described = describe(error)
    return ConnectError(CODES[described.kind.code], described.message, described.details())


class Handlers:
    """connect-python's snake_case method for each method of `service` the core serves, each
    handing its call to the core."""

    def __init__(self, core: Core, service: str, methods: Sequence[str]) -> None:
        for name in methods:
            setattr(self, snake_case(name), self._handler(core, f"/{service}/{name}"))

    @staticmethod
    def _handler(core: Core, method: str) -> Callable[[Message, RequestContext[Any, Any]], Any]:
        def serve(request: Message, ctx: RequestContext[Any, Any]) -> Message:
            body = codec.taken(request)
            given: Message | Encoded = request if body is None else Encoded(body[0], body[1].parse)
            try:
                return core.call(given, call_context(method, ctx))
            except Exception as error:
                raise connect_error(error) from None

        return serve
