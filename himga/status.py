"""What a failed call's google.rpc.Status says, read and written the same way by every part of
himga that speaks gRPC (the server, the clients, the conformance kit): the ErrorInfo domain and
reason that tell the kinds of error apart, and the BadRequest field violations of a bad request.
"""

from dataclasses import dataclass
from typing import TypeVar

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import Message as ProtoMessage
from google.rpc import error_details_pb2
from grpc_status import rpc_status

ERROR_DOMAIN = "himga.dev"
"""The ErrorInfo domain of every error a himga server sends."""

D = TypeVar("D", bound=ProtoMessage)


@dataclass(frozen=True, slots=True)
class FieldViolation:
    """One broken rule of a request: the field's path (`items[3].message.role`; empty: the
    whole request) and the rule."""

    field: str
    description: str

    def __str__(self) -> str:
        return f"{self.field}: {self.description}" if self.field else self.description


class Undecodable:
    """A request whose bytes did not decode into its method's message, with why (one line) and
    their size; `violations` names the offending fields when the decoder could tell (ProtoJSON
    can: `limit` is not a number; a broken protobuf cannot). Handed to the core in place of the
    request, which answers INVALID_ARGUMENT (himga.service.core.core); `more` counts
    violations found past those named, `unchecked` says the decoder stopped looking before the
    end (himga.service.core.bounds)."""

    __slots__ = ("more", "size", "unchecked", "violations", "why")

    def __init__(
        self,
        why: str,
        size: int,
        violations: tuple[FieldViolation, ...] = (),
        more: int = 0,
        unchecked: bool = False,
    ) -> None:
        self.why = why
        self.size = size
        self.violations = violations
        self.more = more
        self.unchecked = unchecked


def is_call(error: grpc.RpcError) -> bool:
    """Whether `error` is a failed call with a status to read: a blocking call's (grpc.Call) or
    an asyncio call's (grpc.aio.AioRpcError, whose trailing metadata reads the same)."""
    return isinstance(error, grpc.Call | grpc.aio.AioRpcError)


def reason_of(error: grpc.RpcError) -> str | None:
    """The ErrorInfo reason of a failed call, when a himga server sent one."""
    for info in _details(error, error_details_pb2.ErrorInfo):
        if info.domain == ERROR_DOMAIN:
            reason: str = info.reason
            return reason
    return None


def field_violations(error: grpc.RpcError) -> list[FieldViolation]:
    """The field violations of the google.rpc.BadRequest details of a failed call."""
    return [
        FieldViolation(v.field, v.description)
        for bad_request in _details(error, error_details_pb2.BadRequest)
        for v in bad_request.field_violations
    ]


def _details(error: grpc.RpcError, kind: type[D]) -> list[D]:
    """The details of type `kind` in the google.rpc.Status of a failed call."""
    status = rpc_status.from_call(error) if is_call(error) else None  # type: ignore[arg-type]
    found: list[D] = []
    details: list[any_pb2.Any] = list(status.details) if status is not None else []
    for detail in details:
        unpacked = kind()
        if detail.Unpack(unpacked):
            found.append(unpacked)
    return found
