"""`Dispatcher`: runs a decoded request through the gRPC server's own interceptor chain and
servicer method, as the gRPC port would, and returns the servicer's answer. The one path both
ports take; the HTTP side only decodes and encodes."""

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import grpc
from connectrpc.request import RequestContext

from himga.http.context import HttpContext


class _Details(grpc.HandlerCallDetails):
    def __init__(self, method: str, metadata: tuple[tuple[str, str], ...]) -> None:
        self.method = method
        self.invocation_metadata = metadata


def snake_case(name: str) -> str:
    """A method's Python name in connect-python's generated services: IngestBatch ->
    ingest_batch."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


class Dispatcher:
    """Calls `servicers[service].<Method>(request, context)` through `chain` (the gRPC server's
    interceptors, outermost first)."""

    def __init__(
        self, chain: Sequence[grpc.ServerInterceptor], servicers: Mapping[str, object]
    ) -> None:
        self._chain = list(chain)
        self._servicers = dict(servicers)

    def _handler(self, method: str) -> grpc.RpcMethodHandler | None:
        service, _, name = method.strip("/").partition("/")
        servicer = self._servicers.get(service)
        function = getattr(servicer, name, None) if servicer is not None else None
        if function is None:
            return None
        return grpc.unary_unary_rpc_method_handler(function)

    def resolve(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        """The handler the gRPC server would run for `details`, interceptors applied."""

        def step(index: int) -> Callable[[grpc.HandlerCallDetails], Any]:
            if index == len(self._chain):
                return lambda found: self._handler(found.method)
            return lambda found: self._chain[index].intercept_service(step(index + 1), found)

        handler: grpc.RpcMethodHandler | None = step(0)(details)
        return handler

    def call(self, method: str, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        """Answer `request` to `method` ("/package.Service/Method") for an HTTP call."""
        peer = ctx.client_address() or ""
        context = HttpContext(ctx.request_headers(), f"http:{peer}", ctx.timeout_ms())
        handler = self.resolve(_Details(method, context.invocation_metadata()))
        if handler is None or handler.unary_unary is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, f"no method {method}")
        return handler.unary_unary(request, cast(grpc.ServicerContext, context))

    def bridge(self, service: str, methods: Sequence[str]) -> object:
        """An object with connect-python's snake_case method for each of `methods` of
        `service`, each calling `call`."""
        bridge = type("Bridge", (), {})()
        for name in methods:
            path = f"/{service}/{name}"

            def serve(request: Any, ctx: RequestContext[Any, Any], path: str = path) -> Any:
                return self.call(path, request, ctx)

            setattr(bridge, snake_case(name), serve)
        return bridge
