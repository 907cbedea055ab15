"""`Core`: every call of himga's services, whatever door it came through, runs here through one
chain, built once per server: counted in flight (refused once the server stops), its token
checked, its request decoded, its right on the namespace checked, its handler run, its outcome
counted in the metrics, and every refusal logged under one policy (.refusals). A door only
fills a CallContext, hands over the request (decoded, or its bytes) and writes the answer
or the error (`himga.service.errors.describe`)."""

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from google.protobuf import message_factory
from google.protobuf.message import Message
from himga_proto.memory.v1 import memory_pb2

from himga.errors import InvalidArgument
from himga.service import resources
from himga.service.auth import Auth
from himga.service.core.context import CallContext
from himga.service.core.episodes import EpisodeHandlers
from himga.service.core.memory import MemoryHandlers
from himga.service.core.refusals import Refusals
from himga.service.errors import (
    INTERNAL,
    FieldViolation,
    InvalidRequest,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
    error_kind,
)
from himga.service.lifecycle import Calls
from himga.status import Undecodable

_log = logging.getLogger(__name__)

SERVICES: tuple[str, ...] = tuple(
    memory_pb2.DESCRIPTOR.services_by_name[name].full_name
    for name in ("MemoryService", "EpisodeService")
)
"""The full names of the services the core answers."""

Decoder = Callable[[bytes, type[Message]], "Message | Undecodable"]


@dataclass(frozen=True, slots=True)
class Encoded:
    """A request not decoded yet: its bytes and how its door decodes them (into the message
    class given, or an Undecodable saying why not). The core decodes it only once the caller's
    token is known good, so a refused caller's bytes are never parsed."""

    data: bytes
    decode: Decoder


@dataclass(frozen=True, slots=True)
class Method:
    """One RPC as the core serves it: its full name, request and answer classes, handler."""

    name: str
    input: type[Message]
    output: type[Message]
    handler: Callable[[Any, CallContext], Message]


def protobuf(data: bytes, kind: type[Message]) -> "Message | Undecodable":
    """`data` decoded as protobuf binary into a `kind`, or why not."""
    try:
        return kind.FromString(data)
    except Exception as error:  # DecodeError, and whatever a decoder raises
        return Undecodable(_why(error), len(data))


def _why(error: Exception) -> str:
    return str(error).splitlines()[0][:200] if str(error) else type(error).__name__


class Core:
    """The handlers of MemoryService and EpisodeService behind the one chain. `call` answers
    one call; `methods` lists what it serves, by full name."""

    def __init__(
        self,
        memory: MemoryHandlers,
        episodes: EpisodeHandlers,
        *,
        calls: Calls,
        auth: Auth | None = None,
        refusals: Refusals | None = None,
        ended: Callable[[str, str, float], None] | None = None,
        auth_failed: Callable[[str], None] | None = None,
        store: resources.StoreHealth | None = None,
    ) -> None:
        self.memory_handlers = memory
        self.episode_handlers = episodes
        self.calls = calls
        self.auth = auth
        self.refusals = refusals or Refusals()
        self._ended = ended
        self._auth_failed = auth_failed
        self._store = store
        handlers: Mapping[str, object] = {SERVICES[0]: memory, SERVICES[1]: episodes}
        self.methods: dict[str, Method] = {}
        for service_name, handler_object in handlers.items():
            service = memory_pb2.DESCRIPTOR.pool.FindServiceByName(service_name)
            for found in service.methods:
                name = f"/{service_name}/{found.name}"
                self.methods[name] = Method(
                    name,
                    message_factory.GetMessageClass(found.input_type),
                    message_factory.GetMessageClass(found.output_type),
                    getattr(handler_object, found.name),
                )

    def call(self, request: "Message | Encoded | Undecodable", context: CallContext) -> Message:
        """The answer to `request` (a message, its bytes, or what a door could not decode) for
        the call `context` describes; raises the himga error the call ends with (its door
        writes it with himga.service.errors.describe)."""
        method = context.method
        start = time.perf_counter()
        code = "OK"
        try:
            with self.calls.tracked():
                return self._run(request, context)
        except Exception as error:
            failure = self._classified(error, context)
            kind = error_kind(failure)
            code = kind.code.name
            if kind is INTERNAL:
                _log.error("internal error in %s", method, exc_info=error)
            raise failure from error
        finally:
            if self._ended is not None:
                self._ended(method, code, time.perf_counter() - start)

    def _run(self, request: "Message | Encoded | Undecodable", context: CallContext) -> Message:
        method = context.method
        found = self.methods.get(method)
        if self.auth is not None:
            try:
                context.grant = self.auth.caller(method, context.token)
            except (Unauthenticated, PermissionDenied) as refused:
                self._refused_auth(refused, context)
                raise
        if found is None:
            raise PermissionDenied(f"the server allows no one to call {method}")
        if isinstance(request, Encoded):
            request = request.decode(request.data, found.input)
        if isinstance(request, Undecodable):
            self.refusals.refused(
                "decoding", method, context.peer, f"{request.why} ({request.size} bytes)"
            )
            whole = FieldViolation("", f"the request does not decode: {request.why}")
            raise InvalidRequest(
                list(request.violations) or [whole], request.more, request.unchecked
            )
        if self.auth is not None:
            try:
                self.auth.allow(context.grant, method, request)
            except PermissionDenied as refused:
                self._refused_auth(refused, context)
                raise
        return found.handler(request, context)

    def _refused_auth(self, refused: Exception, context: CallContext) -> None:
        reason = type(refused).__name__
        if self._auth_failed is not None:
            self._auth_failed(reason)
        self.refusals.refused("auth", context.method, context.peer, reason)

    def _classified(self, error: Exception, context: CallContext) -> Exception:
        found = resources.classify(error, self._store)
        if isinstance(found, InvalidArgument):
            found = InvalidRequest([FieldViolation(found.field, found.rule)])
        if isinstance(found, ResourceExhausted):
            self.refusals.refused("limits", context.method, context.peer, str(found))
        return found
