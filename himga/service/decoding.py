"""Requests that are not what their method takes: INVALID_ARGUMENT, logged as one line.

gRPC's own decoding answers an undecodable request with INTERNAL and logs a traceback each
time. This interceptor decodes every request itself (with the method's own decoder): bytes that
do not decode become an `Undecodable`, which the call answers with INVALID_ARGUMENT, reason
INVALID_REQUEST, naming what was wrong; the log gets one line, and at most `LOG_BURST` lines a
`LOG_PERIOD_SECONDS`, then one saying how many it left out.
"""

import logging
import threading
import time
from typing import Any

import grpc

from himga.service.errors import FieldViolation, InvalidRequest
from himga.service.interceptors import Deserializer, wrap
from himga.status import Undecodable

_log = logging.getLogger(__name__)

LOG_BURST = 10
LOG_PERIOD_SECONDS = 60.0


class RateLimitedLog:
    """At most `burst` lines a `period` seconds; the next line after a quiet spell says how
    many were left out."""

    def __init__(self, burst: int = LOG_BURST, period: float = LOG_PERIOD_SECONDS) -> None:
        self._burst, self._period = burst, period
        self._lock = threading.Lock()
        self._start = -period
        self._sent = self._dropped = 0

    def warning(self, message: str, *args: object) -> None:
        with self._lock:
            now = time.monotonic()
            if now - self._start >= self._period:
                if self._dropped:
                    _log.warning("%d more bad requests were not logged", self._dropped)
                self._start, self._sent, self._dropped = now, 0, 0
            if self._sent >= self._burst:
                self._dropped += 1
                return
            self._sent += 1
        _log.warning(message, *args)


class DecodingInterceptor(grpc.ServerInterceptor):
    """Answers undecodable requests with INVALID_ARGUMENT instead of INTERNAL."""

    def __init__(self) -> None:
        self.log = RateLimitedLog()

    def intercept_service(
        self, continuation: Any, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        handler: grpc.RpcMethodHandler | None = continuation(handler_call_details)
        if handler is None or handler.request_deserializer is None:
            return handler
        method: str = handler_call_details.method
        decode = _tolerant(handler.request_deserializer)

        def check(request: Any, context: grpc.ServicerContext) -> None:
            if isinstance(request, Undecodable):
                self.log.warning(
                    "bad request to %s from %s: %s (%d bytes)",
                    method,
                    context.peer(),
                    request.why,
                    request.size,
                )
                whole = FieldViolation("", f"the request does not decode: {request.why}")
                raise InvalidRequest(list(request.violations) or [whole])

        return wrap(handler, method, check=check, deserializer=decode)


def _tolerant(decode: Deserializer) -> Deserializer:
    def tolerant(data: bytes) -> Any:
        try:
            return decode(data)
        except Exception as error:  # protobuf's DecodeError, and whatever a decoder raises
            why = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
            return Undecodable(why, len(data))

    return tolerant
