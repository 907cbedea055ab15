"""Where the tools' calls go: the calls of MemoryService and EpisodeService, as request
messages, answered either by the core over embedded stores (himga.core, over the namespaces of
a data directory opened as `himga serve` opens them, so the namespace record its reads check
is written and either door finds what the other wrote) or by a running server (its gRPC port).
Either way each call is checked, refused and answered as every other door's is: the MCP door
decodes the tool's arguments, makes the request, and reads the answer; nothing else.

A call's liveness is asked live: a write whose MCP call was cancelled is rolled back by the
check the stores make just before COMMIT (embedded: the core's CallContext; remote: the gRPC
call is cancelled, and the server's check sees it). Nothing of the stores, the core or gRPC is
imported until the first tool call (`Opening`)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from himga.errors import HimgaError

_log = logging.getLogger("himga.mcp")

if TYPE_CHECKING:
    from google.protobuf.message import Message

    from himga.client import ClientTls
    from himga.core import Core
    from himga.service.episode_stores import EpisodeStores
    from himga.service.namespaces import Namespaces
    from himga.service.resources import StoreHealth

PACKAGE = "himga.memory.v1"

Alive = Callable[[], bool]
"""Asked live during a call: whether its MCP caller still waits."""


class Stores(Protocol):
    kept: bool
    """Whether what they hold outlives the process (a data directory, or a server)."""

    def call(self, method: str, request: Message, alive: Alive) -> Any:
        """The answer to `request` of `method` ("MemoryService/Retrieve"), or the himga error
        the call ends with."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Door:
    """One tool call's way to the stores: the namespace and memory its requests name, and
    whether its caller still waits."""

    stores: Stores
    namespace: str
    memory: str
    alive: Alive

    def __call__(self, method: str, request: Message) -> Any:
        return self.stores.call(method, request, self.alive)


class Embedded:
    """The core over the stores of a data directory (None: kept in memory, gone at exit)."""

    def __init__(
        self,
        core: Core,
        namespaces: Namespaces,
        episodes: EpisodeStores,
        health: StoreHealth | None = None,
    ) -> None:
        self.core = core
        self.namespaces = namespaces
        self.episode_stores = episodes
        self.health = health
        self.kept = namespaces.place is not None

    def call(self, method: str, request: Message, alive: Alive) -> Any:
        from himga.core import CallContext

        context = CallContext(f"/{PACKAGE}.{method}", peer="mcp", active=alive)
        return self.core.call(request, context)

    def close(self) -> None:
        if self.health is not None:
            self.health.stop()
        self.namespaces.close()
        self.episode_stores.close()


class NoAnswer(HimgaError, ConnectionError):
    """A call the server behind `himga mcp --target` failed with a status no himga server gave:
    it was not reached or ran out of time (UNAVAILABLE, DEADLINE_EXCEEDED), or the channel
    refused it (another code). The tool's error says which code; gRPC's own text, which names
    addresses, goes to the log only."""

    def __init__(self, error: Any) -> None:
        code = error.code()
        if code.name in ("UNAVAILABLE", "DEADLINE_EXCEEDED"):
            said = f"the himga server behind this MCP server did not answer ({code.name})"
        else:
            said = f"the call to the himga server behind this MCP server failed ({code.name})"
        super().__init__(f"{said}; the MCP server's log says more")


class Remote:
    """A running server's gRPC port, with a token when it asks who calls, over TLS when `tls`
    is given."""

    POLL_SECONDS = 0.05
    """How often a call in flight asks whether its MCP caller still waits."""

    def __init__(self, target: str, token: str | None, tls: ClientTls | None = None) -> None:
        from himga.client.channels import bearer, channel, channel_options
        from himga.limits import MAX_MESSAGE_BYTES  # as RemoteMemory's channel

        self._target = target
        self._channel = channel(target, tls, options=channel_options(MAX_MESSAGE_BYTES))
        found = bearer(token)
        self._metadata = tuple(found) if found is not None else None
        self.kept = True

    def call(self, method: str, request: Message, alive: Alive) -> Any:
        import grpc

        from himga.service.errors import from_rpc_error

        service, name = method.split("/")
        found = _descriptor(service).methods_by_name[name]
        stub = self._channel.unary_unary(
            f"/{PACKAGE}.{method}",
            request_serializer=type(request).SerializeToString,
            response_deserializer=_message_class(found.output_type).FromString,
        )
        future = stub.future(request, metadata=self._metadata)
        try:
            while True:
                try:
                    return future.result(timeout=self.POLL_SECONDS)
                except grpc.FutureTimeoutError:
                    if not alive():
                        future.cancel()  # the server's check before COMMIT sees it
                        from himga.memory.commit import CallerGone

                        raise CallerGone("the MCP call was cancelled") from None
        except grpc.RpcError as error:
            translated = from_rpc_error(error)
            if translated is error:  # no answer of himga's: not reached, or out of time
                _log.warning("the call %s to %s failed: %s", method, self._target, error)
                raise NoAnswer(error) from error
            raise translated from error

    def close(self) -> None:
        self._channel.close()


def _descriptor(service: str) -> Any:
    from himga_proto.memory.v1 import memory_pb2

    return memory_pb2.DESCRIPTOR.services_by_name[service]


def _message_class(descriptor: Any) -> Any:
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(descriptor)


class Opening:
    """Stores opened by `make` on first use (once, whoever asks first), so that a server
    answers `initialize` before it imports or opens any of them. `kept` is known before."""

    def __init__(self, make: Callable[[], Stores], kept: bool) -> None:
        self._make = make
        self._opened: Stores | None = None
        self._lock = threading.Lock()
        self.kept = kept

    def opened(self) -> Stores:
        with self._lock:
            if self._opened is None:
                self._opened = self._make()
            return self._opened

    def call(self, method: str, request: Message, alive: Alive) -> Any:
        return self.opened().call(method, request, alive)

    def close(self) -> None:
        with self._lock:
            if self._opened is not None:
                self._opened.close()


def embedded(
    data_dir: Path | None,
    memory: str | None = None,
    episodes: str | None = None,
    memory_options: Mapping[str, Any] | None = None,
) -> Embedded:
    """The core over the stores of `data_dir` (None: kept in memory, gone at exit), with the
    memory and episode store kinds named (None: the defaults `himga serve` uses) and the
    options of memory kinds (by kind; the others' defaults), opened and
    built as `himga serve --data-dir` builds its own (himga.service.server.start_server: the
    same answers cut to the same size, a store that cannot write heard of); ValueError naming
    what is wrong with the kinds."""
    from himga.core import build_core
    from himga.episodes.registry import DEFAULT_STORE
    from himga.limits import MAX_MESSAGE_BYTES
    from himga.memory.registry import DEFAULT_MEMORY
    from himga.service.episode_stores import EpisodeStores
    from himga.service.namespaces import Namespaces
    from himga.service.resources import StoreHealth

    namespaces = Namespaces(
        memory or DEFAULT_MEMORY,
        data_dir,
        episodes=episodes or DEFAULT_STORE,
        memory_options=memory_options,
    )
    episode_stores = EpisodeStores(namespaces)
    health = StoreHealth(data_dir)
    core = build_core(
        namespaces, episode_stores, max_response_bytes=MAX_MESSAGE_BYTES, store=health
    )
    return Embedded(core, namespaces, episode_stores, health)


def remote(target: str, token: str | None, tls: ClientTls | None = None) -> Remote:
    """The server at `target` ("host:port"), over TLS when `tls` is given."""
    return Remote(target, token, tls)
