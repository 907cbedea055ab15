"""The services himga serves beside its own (health, reflection) through grpcio's handlers:
a request of theirs that does not decode is INVALID_ARGUMENT saying so, as one of himga's is
(the core refuses those), not grpcio's INTERNAL "Exception deserializing request!"."""

from collections.abc import Callable
from typing import Any

import grpc

_UNDECODABLE = object()


class RefuseUndecodable(grpc.ServerInterceptor):
    """Wraps every unary request's deserializer: bytes it cannot read end the call
    INVALID_ARGUMENT. himga's own services take their bytes undecoded, so this changes
    nothing for them."""

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = continuation(handler_call_details)
        if handler is None or handler.request_streaming or handler.request_deserializer is None:
            return handler
        read = handler.request_deserializer

        def deserializer(data: bytes) -> Any:
            try:
                return read(data)
            except Exception:
                return _UNDECODABLE

        def guarded(behaviour: Callable[..., Any]) -> Callable[..., Any]:
            def run(request: Any, context: grpc.ServicerContext) -> Any:
                if request is _UNDECODABLE:
                    context.abort(
                        grpc.StatusCode.INVALID_ARGUMENT,
                        f"the request to {handler_call_details.method} does not decode",
                    )
                return behaviour(request, context)

            return run

        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                guarded(handler.unary_unary), deserializer, handler.response_serializer
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                guarded(handler.unary_stream), deserializer, handler.response_serializer
            )
        return handler
