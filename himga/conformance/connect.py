"""The kit's HTTP transport: stubs that make each unary call of MemoryService and EpisodeService
as the Connect protocol's JSON (POST /SERVICE/METHOD, `Connect-Timeout-Ms` for the deadline, a
bearer token in `Authorization`), for a server's HTTP port. A failed call raises
`ConnectCallError`, a grpc.RpcError and grpc.Call with the Connect error's code, message and
details as a gRPC status would carry them, so every check reads a failure over HTTP as it reads
one over gRPC (its code, its ErrorInfo reason, its field violations).

Written from the Connect protocol (connectrpc.com/docs/protocol), not from himga's server: its
error codes are gRPC's names in lower case, but for `canceled`."""

import base64
import binascii
import contextlib
import http.client
import json
import ssl
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

import grpc
from google.protobuf import any_pb2, json_format, message_factory
from google.rpc import status_pb2
from himga_proto.memory.v1 import memory_pb2


def connect_code(code: grpc.StatusCode) -> str:
    """The Connect protocol's name of a status code ("invalid_argument")."""
    return "canceled" if code is grpc.StatusCode.CANCELLED else code.name.lower()


BY_CONNECT_CODE = {connect_code(code): code for code in grpc.StatusCode}
"""Each status code by its Connect name."""


class ConnectCallError(grpc.RpcError, grpc.Call):
    """A failed Connect call, read as a failed gRPC call."""

    def __init__(self, code: grpc.StatusCode, message: str, details: Sequence[Any]) -> None:
        self._code, self._message = code, message
        status = status_pb2.Status(code=code.value[0], message=message, details=list(details))
        self._trailing = (("grpc-status-details-bin", status.SerializeToString()),)

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._message

    def trailing_metadata(self) -> Any:
        return self._trailing

    def initial_metadata(self) -> Any:
        return ()

    def is_active(self) -> bool:
        return False

    def time_remaining(self) -> float:
        return 0.0

    def cancel(self) -> bool:
        return False

    def add_callback(self, callback: Any) -> bool:
        return False


class ConnectStub:
    """The methods of `service` ("MemoryService") at the HTTP port `base` ("http://h:p", or
    "https://h:p" over TLS as `context` says: what it trusts, what it presents), each called as
    a generated gRPC stub's is: `stub.Retrieve(request, timeout=..., metadata=...)`. `token`,
    when given, goes with every call as a bearer token."""

    def __init__(
        self,
        base: str,
        service: str,
        token: str | None = None,
        context: ssl.SSLContext | None = None,
    ) -> None:
        self._base = base.rstrip("/")
        self._service = memory_pb2.DESCRIPTOR.services_by_name[service]
        self._token = token
        self._context = context

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = self._service.methods_by_name.get(name)
        if method is None:
            raise AttributeError(name)
        answer = message_factory.GetMessageClass(method.output_type)
        url = f"{self._base}/{self._service.full_name}/{name}"

        def call(request: Any, timeout: float | None = None, metadata: Any = None) -> Any:
            headers = {"Content-Type": "application/json"}
            if self._token is not None:
                headers["Authorization"] = f"Bearer {self._token}"
            for key, value in metadata or ():
                headers[key] = value
            if timeout is not None:
                headers["Connect-Timeout-Ms"] = str(max(1, int(timeout * 1000)))
            body = json_format.MessageToJson(request, preserving_proto_field_name=True).encode()
            wait = None if timeout is None else timeout + 5  # the server answers at its deadline
            try:
                status, said = _post(url, body, headers, wait, self._context)
            except (OSError, http.client.HTTPException) as error:
                raise ConnectCallError(grpc.StatusCode.UNAVAILABLE, str(error), ()) from None
            if status != 200:
                raise failed(status, said)
            return json_format.Parse(said, answer(), ignore_unknown_fields=True)

        return call


def _post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    timeout: float | None,
    context: ssl.SSLContext | None = None,
) -> tuple[int, bytes]:
    """POST `body` to `url` (over TLS as `context` says, for https); the answer's status and
    body. A server may answer (a body over its limit) and close before the whole body is sent:
    its answer is read all the same."""
    parts = urllib.parse.urlsplit(url)
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        connection = http.client.HTTPSConnection(parts.netloc, timeout=timeout, context=context)
    else:
        connection = http.client.HTTPConnection(parts.netloc, timeout=timeout)
    try:
        connection.putrequest("POST", parts.path)
        for key, value in {**headers, "Content-Length": str(len(body))}.items():
            connection.putheader(key, value)
        connection.endheaders()
        # A server that answers first (and closes: over TLS, the send then meets its
        # close_notify, an SSLEOFError): its answer, read next, says why.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, ssl.SSLEOFError):
            connection.send(body)
        reply = connection.getresponse()
        return reply.status, reply.read()
    finally:
        connection.close()


def failed(status: int, body: bytes) -> ConnectCallError:
    """The Connect error an HTTP answer of `status` carries in `body` (one that is not a
    Connect error is UNKNOWN, saying what came)."""
    try:
        error = json.loads(body)
        code = BY_CONNECT_CODE.get(error.get("code", ""), grpc.StatusCode.UNKNOWN)
        details = [
            any_pb2.Any(
                type_url=f"type.googleapis.com/{detail['type']}",
                value=base64.b64decode(detail["value"] + "=="),
            )
            for detail in error.get("details", [])
        ]
        return ConnectCallError(code, str(error.get("message", "")), details)
    except (ValueError, AttributeError, KeyError, TypeError, binascii.Error):
        said = body[:200].decode("utf-8", errors="replace")
        return ConnectCallError(
            grpc.StatusCode.UNKNOWN, f"HTTP {status}, not a Connect error: {said!r}", ()
        )
