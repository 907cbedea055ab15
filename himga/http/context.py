"""`HttpContext`: what himga's servicers and interceptors use of a grpc.ServicerContext, for a
call that came over HTTP. Ending the call with a status raises the Connect error of that status:
the same code, message and details (ErrorInfo, BadRequest) the gRPC port sends."""

from collections.abc import Mapping
from typing import Any, NoReturn

import grpc
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from google.rpc import status_pb2

_STATUS_DETAILS = "grpc-status-details-bin"
CODES: dict[grpc.StatusCode, Code] = {
    status: Code[status.name.replace("CANCELLED", "CANCELED")]
    for status in grpc.StatusCode
    if status is not grpc.StatusCode.OK
}
"""gRPC's status codes and Connect's are the same list under the same names (Connect spells
CANCELLED with one L)."""


class HttpContext:
    """One HTTP call's context: its headers as invocation metadata, its peer, its deadline."""

    def __init__(self, headers: Mapping[str, str], peer: str, timeout_ms: float | None) -> None:
        self._metadata = tuple((name.lower(), value) for name, value in headers.items())
        self._peer = peer
        self._timeout = None if timeout_ms is None else timeout_ms / 1000.0
        self._code: grpc.StatusCode | None = None

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def peer(self) -> str:
        return self._peer

    def is_active(self) -> bool:
        return True

    def time_remaining(self) -> float | None:
        return self._timeout

    def code(self) -> grpc.StatusCode | None:
        return self._code

    def set_code(self, code: grpc.StatusCode) -> None:
        self._code = code

    def abort(self, code: grpc.StatusCode, details: str) -> NoReturn:
        self._code = code
        raise ConnectError(CODES[code], details)

    def abort_with_status(self, status: Any) -> NoReturn:
        """End the call with `status` (a grpc.Status, as grpc_status.rpc_status.to_status
        makes): its code, its message and the details packed in its trailing metadata."""
        self._code = status.code
        details: list[Any] = []
        for name, value in status.trailing_metadata or ():
            if name == _STATUS_DETAILS:
                details.extend(status_pb2.Status.FromString(value).details)
        raise ConnectError(CODES[status.code], status.details or "", details)
