"""What every server interceptor of himga needs: a method handler rewrapped with a check of each
request, a context around the whole call, or another request decoder, whatever its streaming
kind; and a handler that refuses a call before reading its request.

The interceptors themselves live with what they enforce: `auth` (tokens and rights), `decoding`
(undecodable requests), `lifecycle` (calls in flight, shutdown), `metrics`.
"""

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import grpc

from himga.service.errors import abort

Check = Callable[[Any, grpc.ServicerContext], None]
"""Called with each request message before the handler sees it; raises to refuse the call."""
Around = Callable[[str, grpc.ServicerContext], AbstractContextManager[None]]
"""A context around a whole call (the method's full name, the call's context)."""
Deserializer = Callable[[bytes], Any]


def wrap(
    handler: grpc.RpcMethodHandler,
    method: str,
    *,
    check: Check | None = None,
    around: Around | None = None,
    deserializer: Deserializer | None = None,
) -> grpc.RpcMethodHandler:
    """`handler` with `check` run on each request, `around` entered for the whole call (a
    streamed answer included), and `deserializer` instead of its own when given. An exception
    `check` raises ends the call with its status (`himga.service.errors.abort`)."""

    def scope(context: grpc.ServicerContext) -> AbstractContextManager[None]:
        return around(method, context) if around is not None else nullcontext()

    def checked(request: Any, context: grpc.ServicerContext) -> Any:
        if check is not None:
            try:
                check(request, context)
            except Exception as error:
                abort(context, error)
        return request

    def checked_stream(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        for request in requests:
            yield checked(request, context)

    decode = deserializer if deserializer is not None else handler.request_deserializer
    serialize = handler.response_serializer
    if handler.unary_unary is not None:
        unary_unary = handler.unary_unary

        def serve_unary_unary(request: Any, context: grpc.ServicerContext) -> Any:
            with scope(context):
                return unary_unary(checked(request, context), context)

        return grpc.unary_unary_rpc_method_handler(serve_unary_unary, decode, serialize)
    if handler.unary_stream is not None:
        unary_stream = handler.unary_stream

        def serve_unary_stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            with scope(context):
                yield from unary_stream(checked(request, context), context)

        return grpc.unary_stream_rpc_method_handler(serve_unary_stream, decode, serialize)
    if handler.stream_unary is not None:
        stream_unary = handler.stream_unary

        def serve_stream_unary(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
            with scope(context):
                return stream_unary(checked_stream(requests, context), context)

        return grpc.stream_unary_rpc_method_handler(serve_stream_unary, decode, serialize)
    stream_stream = handler.stream_stream
    assert stream_stream is not None

    def serve_stream_stream(
        requests: Iterator[Any], context: grpc.ServicerContext
    ) -> Iterator[Any]:
        with scope(context):
            yield from stream_stream(checked_stream(requests, context), context)

    return grpc.stream_stream_rpc_method_handler(serve_stream_stream, decode, serialize)


def refusing(handler: grpc.RpcMethodHandler | None, error: Exception) -> grpc.RpcMethodHandler:
    """A handler of the same streaming kind as `handler` that ends the call with the status of
    `error` without decoding its request (a refused call's bytes are never parsed)."""

    def refuse(request: Any, context: grpc.ServicerContext) -> Any:
        abort(context, error)

    def refuse_stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        abort(context, error)
        yield  # a generator, as a streamed answer's handler is

    if handler is None or handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(refuse)
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(refuse_stream)
    if handler.stream_unary is not None:
        return grpc.stream_unary_rpc_method_handler(refuse)
    return grpc.stream_stream_rpc_method_handler(refuse_stream)


def metadata_value(details: grpc.HandlerCallDetails, key: str) -> str | None:
    """The first value of the invocation metadata `key` (lower case) of a call, or None."""
    for name, value in details.invocation_metadata or ():
        if name == key:
            return value if isinstance(value, str) else None
    return None
