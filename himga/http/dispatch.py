"""`Dispatcher`: runs a decoded request through the gRPC server's own interceptor chain and
servicer method, as the gRPC port would, and returns the servicer's answer. The one path both
ports take; the HTTP side only decodes and encodes."""

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import grpc
from connectrpc.request import RequestContext
from google.protobuf import descriptor_pool, message_factory

from himga.http.codec import undecodable
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
        """The servicer's method as the gRPC server registers it: with its request decoder,
        which the HTTP side never calls but the interceptors read (the decoding interceptor
        checks the requests of a handler that has one)."""
        service, _, name = method.strip("/").partition("/")
        servicer = self._servicers.get(service)
        function = getattr(servicer, name, None) if servicer is not None else None
        if function is None:
            return None
        found = descriptor_pool.Default().FindServiceByName(service).methods_by_name[name]
        decode = message_factory.GetMessageClass(found.input_type).FromString
        return grpc.unary_unary_rpc_method_handler(function, decode)

    def resolve(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        """The handler the gRPC server would run for `details`, interceptors applied."""

        def step(index: int) -> Callable[[grpc.HandlerCallDetails], Any]:
            if index == len(self._chain):
                return lambda found: self._handler(found.method)
            return lambda found: self._chain[index].intercept_service(step(index + 1), found)

        handler: grpc.RpcMethodHandler | None = step(0)(details)
        return handler

    def call(self, method: str, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        """Answer `request` to `method` ("/package.Service/Method") for an HTTP call. A request
        that did not decode (himga.http.codec) goes to the chain as its `Undecodable`, as the
        gRPC port's decoder hands it on."""
        peer = ctx.client_address() or ""
        context = HttpContext(ctx.request_headers(), f"http:{peer}", ctx.timeout_ms())
        handler = self.resolve(_Details(method, context.invocation_metadata()))
        if handler is None or handler.unary_unary is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, f"no method {method}")
        failure = undecodable(request)
        given = request if failure is None else failure
        return handler.unary_unary(given, cast(grpc.ServicerContext, context))

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
