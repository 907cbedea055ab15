"""The memory service's errors and their one mapping to gRPC status codes, both ways.

The servicer raises these exceptions; `abort` turns any exception into a status (with
`google.rpc.BadRequest` field violations for a bad request) through `STATUS_CODES`, the one
table. The client turns a status back into the same exception with `from_rpc_error`.
"""

import logging
from dataclasses import dataclass
from typing import NoReturn

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from himga.errors import HimgaError, IncompatibleStoreError

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FieldViolation:
    """One broken rule of a request: the field's path (`items[3].message.role`) and the rule."""

    field: str
    description: str

    def __str__(self) -> str:
        return f"{self.field}: {self.description}"


class InvalidRequest(HimgaError, ValueError):
    """A request breaks one or more rules; `violations` names every offending field."""

    def __init__(self, violations: list[FieldViolation]) -> None:
        super().__init__("; ".join(str(v) for v in violations))
        self.violations = violations


class MemoryMismatch(HimgaError, RuntimeError):
    """A call names another memory than the one its namespace was opened with."""


# The one table: exception class -> status code. Lookup follows the class's MRO, so a subclass
# gets its base's code; anything else is INTERNAL (its message is logged, not sent).
STATUS_CODES: dict[type[Exception], grpc.StatusCode] = {
    InvalidRequest: grpc.StatusCode.INVALID_ARGUMENT,
    MemoryMismatch: grpc.StatusCode.FAILED_PRECONDITION,
    IncompatibleStoreError: grpc.StatusCode.FAILED_PRECONDITION,
}


def status_code(exc: Exception) -> grpc.StatusCode:
    """The status code of `exc` by `STATUS_CODES`; INTERNAL for an unexpected exception."""
    for cls in type(exc).__mro__:
        code = STATUS_CODES.get(cls)
        if code is not None:
            return code
    return grpc.StatusCode.INTERNAL


def abort(context: grpc.ServicerContext, exc: Exception) -> NoReturn:
    """End the call with the status of `exc` (and its field violations as BadRequest)."""
    code = status_code(exc)
    if code is grpc.StatusCode.INTERNAL:
        _log.exception("internal error", exc_info=exc)
        message = "internal error (logged by the server)"
    else:
        message = str(exc)
    status = status_pb2.Status(code=code.value[0], message=message)
    if isinstance(exc, InvalidRequest):
        detail = any_pb2.Any()
        detail.Pack(
            error_details_pb2.BadRequest(
                field_violations=[
                    error_details_pb2.BadRequest.FieldViolation(
                        field=v.field, description=v.description
                    )
                    for v in exc.violations
                ]
            )
        )
        status.details.append(detail)
    context.abort_with_status(rpc_status.to_status(status))
    raise AssertionError("abort_with_status returned")  # it raises; this keeps mypy honest


def from_rpc_error(error: grpc.RpcError) -> Exception:
    """The exception a failed call stands for: the table's class for a known status code (with
    the BadRequest violations for INVALID_ARGUMENT), else the RpcError itself."""
    code = error.code() if isinstance(error, grpc.Call) else None
    cls = next((c for c, status in STATUS_CODES.items() if status == code), None)
    if cls is None or not isinstance(error, grpc.Call):
        unchanged: Exception = error
        return unchanged
    if cls is InvalidRequest:
        violations: list[FieldViolation] = []
        status = rpc_status.from_call(error)
        for detail in status.details if status is not None else ():
            bad_request = error_details_pb2.BadRequest()
            if detail.Unpack(bad_request):
                violations.extend(
                    FieldViolation(v.field, v.description) for v in bad_request.field_violations
                )
        return InvalidRequest(violations or [FieldViolation("", error.details() or "")])
    translated: Exception = cls(error.details() or "")
    return translated
