"""The memory service's errors and their one mapping to the wire, both ways.

`ERROR_KINDS` is the one table: each exception class the server sends has a status code and a
`google.rpc.ErrorInfo` reason in the domain `ERROR_DOMAIN`; the proto's comments list the same
reasons for clients in other languages. `abort` turns any exception into a status carrying its
ErrorInfo (and, for a bad request, `google.rpc.BadRequest` field violations); `from_rpc_error`
turns such a status back into the same class, by its reason, not by its status code (two kinds
share FAILED_PRECONDITION). `OWN_CODES` gives a subclass a status code of its own under its
base's reason: a write whose deadline passed is CALLER_GONE sent as DEADLINE_EXCEEDED.
"""

import logging
from dataclasses import dataclass
from typing import NoReturn

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import Message as ProtoMessage
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from himga.errors import (
    HimgaError,
    IncompatibleStoreError,
    InvalidArgument,
    MemoryMismatch,
    NotFoundError,
    Unsupported,
)
from himga.memory.commit import CallerGone
from himga.status import ERROR_DOMAIN, FieldViolation, field_violations, is_call, reason_of

_log = logging.getLogger(__name__)


InvalidRequest = InvalidArgument
"""A request breaks one or more rules; `violations` names every offending field. The one
bad-argument class (himga.errors.InvalidArgument) under the name the service has used."""


class Unauthenticated(HimgaError, PermissionError):
    """A call to a server that needs a token carries none, or one it does not know."""


class PermissionDenied(HimgaError, PermissionError):
    """A call's token does not grant the right the call needs on its namespace."""


class ServerStopping(HimgaError, RuntimeError):
    """The server is stopping: the call was refused, or rolled back, and stored nothing."""


class DeadlinePassed(CallerGone):
    """The call's deadline passed before its write committed: nothing of it was stored. Sent
    as CALLER_GONE with the code DEADLINE_EXCEEDED (`OWN_CODES`), what the caller's own library
    reports for a deadline; a caller that hung up or cancelled gets CANCELLED."""


class ResourceExhausted(HimgaError, RuntimeError):
    """The server ran out of something a call needs (file descriptors, memory); the call
    changed nothing and may succeed later."""


class StoreUnavailable(HimgaError, RuntimeError):
    """The store cannot write (a full disk, a read-only or failing file system): the write
    stored nothing; health says NOT_SERVING until the store can write again."""


@dataclass(frozen=True, slots=True)
class ErrorKind:
    """How one kind of error travels: its status code and its ErrorInfo reason."""

    code: grpc.StatusCode
    reason: str


# The one table. Lookup follows the class's MRO, so a subclass travels as its base; anything
# else is INTERNAL (its message is logged, not sent).
ERROR_KINDS: dict[type[Exception], ErrorKind] = {
    InvalidRequest: ErrorKind(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_REQUEST"),
    MemoryMismatch: ErrorKind(grpc.StatusCode.FAILED_PRECONDITION, "MEMORY_MISMATCH"),
    IncompatibleStoreError: ErrorKind(grpc.StatusCode.FAILED_PRECONDITION, "INCOMPATIBLE_STORE"),
    NotFoundError: ErrorKind(grpc.StatusCode.NOT_FOUND, "NOT_FOUND"),
    Unauthenticated: ErrorKind(grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED"),
    PermissionDenied: ErrorKind(grpc.StatusCode.PERMISSION_DENIED, "PERMISSION_DENIED"),
    CallerGone: ErrorKind(grpc.StatusCode.CANCELLED, "CALLER_GONE"),
    ServerStopping: ErrorKind(grpc.StatusCode.UNAVAILABLE, "SERVER_STOPPING"),
    ResourceExhausted: ErrorKind(grpc.StatusCode.RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED"),
    StoreUnavailable: ErrorKind(grpc.StatusCode.UNAVAILABLE, "STORE_UNAVAILABLE"),
    Unsupported: ErrorKind(grpc.StatusCode.FAILED_PRECONDITION, "UNSUPPORTED"),
}
OWN_CODES: dict[type[Exception], grpc.StatusCode] = {
    DeadlinePassed: grpc.StatusCode.DEADLINE_EXCEEDED,
}
"""Subclasses sent under their base's reason (a client reads them back as the base) with a
status code of their own."""
INTERNAL = ErrorKind(grpc.StatusCode.INTERNAL, "INTERNAL")
"""An error the server did not expect: a bug, or a failure of what lies under it."""

_BY_REASON = {kind.reason: cls for cls, kind in ERROR_KINDS.items()}


def error_kind(exc: Exception) -> ErrorKind:
    """The kind of `exc` by `ERROR_KINDS` (its code by `OWN_CODES` first); INTERNAL for an
    unexpected exception."""
    code: grpc.StatusCode | None = None
    for cls in type(exc).__mro__:
        code = code or OWN_CODES.get(cls)
        kind = ERROR_KINDS.get(cls)
        if kind is not None:
            return kind if code is None else ErrorKind(code, kind.reason)
    return INTERNAL


@dataclass(frozen=True, slots=True)
class Described:
    """What every door sends for one failed call: its kind (code and reason), its message, and
    for a bad request the field violations, bounded (himga.bounds)."""

    kind: ErrorKind
    message: str
    violations: tuple[FieldViolation, ...] = ()

    def details(self) -> list[ProtoMessage]:
        """The google.rpc details: an ErrorInfo, and a BadRequest for a bad request."""
        found: list[ProtoMessage] = [
            error_details_pb2.ErrorInfo(reason=self.kind.reason, domain=ERROR_DOMAIN)
        ]
        if self.violations:
            violations = [
                error_details_pb2.BadRequest.FieldViolation(
                    field=v.field, description=v.description
                )
                for v in self.violations
            ]
            found.append(error_details_pb2.BadRequest(field_violations=violations))
        return found


def describe(exc: Exception) -> Described:
    """How `exc` travels: by `ERROR_KINDS`; an unexpected exception as INTERNAL, its message
    kept from the caller (the core logs it)."""
    kind = error_kind(exc)
    if kind is INTERNAL:
        return Described(kind, "internal error (logged by the server)")
    if isinstance(exc, InvalidRequest):
        return Described(kind, str(exc), tuple(exc.shown()))
    return Described(kind, str(exc))


def abort(context: grpc.ServicerContext, exc: Exception) -> NoReturn:
    """End the gRPC call with the status of `exc` (`describe`): its code, its ErrorInfo, and
    its field violations as BadRequest."""
    described = describe(exc)
    status = status_pb2.Status(code=described.kind.code.value[0], message=described.message)
    status.details.extend(_packed(detail) for detail in described.details())
    context.abort_with_status(rpc_status.to_status(status))
    raise AssertionError("abort_with_status returned")  # it raises; this keeps mypy honest


def from_rpc_error(error: grpc.RpcError) -> Exception:
    """The exception a failed call stands for: the class its ErrorInfo reason names (with the
    BadRequest violations for a bad request), else the RpcError itself."""
    cls = _BY_REASON.get(reason_of(error) or "")
    if cls is None or not is_call(error):
        unchanged: Exception = error
        return unchanged
    message = error.details() or ""
    if cls is InvalidRequest:
        return InvalidRequest(field_violations(error) or [FieldViolation("", message)])
    translated: Exception = cls(message)
    return translated


def _packed(detail: ProtoMessage) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(detail)
    return packed
