"""`start_server(ServerConfig(...))` (or `create_server(address, **options)`): a started gRPC
server with MemoryService, EpisodeService, health checking and reflection, the doors its
configuration opens beside it (himga.service.doors), and, when asked, token auth, TLS, a bound
on open namespaces and Prometheus metrics."""

import logging
import threading
from collections.abc import Mapping, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from himga_proto.memory.v1 import memory_pb2

from himga.episodes.registry import DATABASE_STORE, DEFAULT_STORE
from himga.limits import MAX_MESSAGE_BYTES
from himga.memory.registry import DATABASE_MEMORY, DEFAULT_MEMORY
from himga.service import doors, reflection, servicer
from himga.service.auth import TokenSource
from himga.service.core.build import build_core
from himga.service.credentials import ServerTls
from himga.service.doors import DoorConfig
from himga.service.episode_stores import EpisodeStores
from himga.service.lifecycle import Calls
from himga.service.metrics import Metrics
from himga.service.namespaces import Namespaces
from himga.service.resources import StoreHealth
from himga.service.undecodable import RefuseUndecodable
from himga.storage.namespaces import MAX_OPEN
from himga.storage.place import Place

SERVICE_NAME: str = memory_pb2.DESCRIPTOR.services_by_name["MemoryService"].full_name
EPISODE_SERVICE_NAME: str = memory_pb2.DESCRIPTOR.services_by_name["EpisodeService"].full_name
ABANDON_SECONDS = 5.0
"""After the grace period, how long a stopping server waits for abandoned calls to roll back
(or to finish committing) before gRPC ends whatever is left."""
FLUSH_SECONDS = 1.0
"""How long gRPC is given to send the answers of calls that have finished."""

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from himga.storage.postgres import Database


class MemoryServer:
    """A running memory server: `stop(grace)` stops it as grpc.Server.stop does, after first
    telling health checkers it is going away (NOT_SERVING), so balancers drain it, and closes
    the namespaces' memories once the last call has ended (himga.service.lifecycle says how a
    call in flight is ended truthfully)."""

    def __init__(
        self,
        server: grpc.Server,
        health_servicer: health.HealthServicer,
        namespaces: Namespaces,
        calls: Calls | None = None,
        store: StoreHealth | None = None,
        auth: TokenSource | None = None,
        episodes: EpisodeStores | None = None,
        http: "doors.Door | None" = None,
        opened: "dict[str, doors.Door] | None" = None,
    ) -> None:
        self.grpc_server = server
        self._health = health_servicer
        self._namespaces = namespaces
        self._episodes = episodes
        self.calls = calls or Calls()
        self._store = store
        self.auth = auth
        self.http = http
        self.doors: dict[str, doors.Door] = opened if opened is not None else {}
        """Every door opened beside the gRPC port, by name (himga.service.doors)."""
        if http is not None:
            self.doors.setdefault("http", http)

    @property
    def http_port(self) -> int | None:
        """The port of the HTTP side (Connect, gRPC-Web, the page), or None without one."""
        return self.http.port if self.http is not None else None

    @property
    def namespaces(self) -> Namespaces:
        return self._namespaces

    @property
    def episodes_kind(self) -> str:
        """The kind of store the namespaces keep their episodes in."""
        return self._episodes.kind if self._episodes is not None else ""

    def stop(self, grace: float | None) -> threading.Event:
        """Refuse new calls, let in-flight calls finish for up to `grace` seconds (None: none),
        abandon the writes of any left (they roll back), then stop and close the memories. The
        event returned is set when all of that is done."""
        self._health.enter_graceful_shutdown()
        self.calls.close()
        if self._store is not None:
            self._store.stop()
        done = threading.Event()

        def drain_and_stop() -> None:
            if not self.calls.drain(grace or 0.0):
                self.calls.abandon()
                if not self.calls.drain(ABANDON_SECONDS):
                    _log.warning("%d calls still running at stop", self.calls.in_flight)
            self.grpc_server.stop(FLUSH_SECONDS).wait()
            for door in self.doors.values():
                door.stop()
            self._namespaces.close()
            if self._episodes is not None:
                self._episodes.close()
            done.set()

        threading.Thread(target=drain_and_stop, name="himga-stop").start()
        return done

    def wait_for_termination(self, timeout: float | None = None) -> bool:
        stopped: bool = self.grpc_server.wait_for_termination(timeout)
        return stopped


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Everything one memory server is started with (`start_server`).

    It listens on `address` ("127.0.0.1:0" picks a free port) and serves MemoryService and
    EpisodeService. New namespaces get `memory` unless a call names another, and keep their
    episodes in stores of kind `episodes`; durable ones keep their files under `data_dir`
    (None: nothing on disk), or every namespace in `database` (himga.storage.postgres: shared
    with every other server over it; `memory` and `episodes` then default to the PostgreSQL
    ones, and only memories shared so are offered). With `auth`, every call but health and
    reflection needs a token of its file; with `tls`, the port (and every other door) speaks
    TLS only. At most `max_open_namespaces` durable namespaces stay open (the least recently
    used idle ones close; None: no bound). `metrics` sees every call (serving them over HTTP is
    the caller's choice: `Metrics.serve`). With `http_address`
    (host, port), the same services are also served over HTTP (himga.http: Connect and
    gRPC-Web, the OpenAPI document, the memory browser), through the same core, on a pool of
    `max_workers` threads of its own, with CORS for `cors_origins`; any other door opens at
    its address in `door_addresses`. `episode_options` are the episode store kind's options
    (`embedding_model`: SearchEpisodes ranks by meaning too)."""

    address: str
    memory: str | None = None
    episodes: str | None = None
    data_dir: Path | str | None = None
    database: "Database | None" = None
    max_message_bytes: int = MAX_MESSAGE_BYTES
    max_workers: int = 8
    auth: TokenSource | None = None
    tls: ServerTls | None = None
    max_open_namespaces: int | None = MAX_OPEN
    metrics: Metrics | None = None
    http_address: tuple[str, int] | None = None
    cors_origins: Sequence[str] = ()
    door_addresses: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    """The address of each door to open beside the gRPC port, by name (himga.service.doors);
    `http_address` is the HTTP door's, the same as `door_addresses={"http": ...}`."""
    memory_options: Mapping[str, Any] = field(default_factory=dict)
    """The options of memory kinds (by name: an instance of each one's options class) that
    are not to have their defaults, e.g. the hybrid memory's embedding model."""
    episode_options: Mapping[str, object] | None = None
    allowed_hosts: Sequence[str] = ()
    """Host headers the HTTP door answers besides the loopback names and its bound host's
    (himga.http.hosts: `name`, `name:port`, `*`)."""

    def doors(self) -> DoorConfig:
        """What the doors beside the gRPC port are opened with."""
        addresses = dict(self.door_addresses)
        if self.http_address is not None:
            addresses["http"] = self.http_address
        return DoorConfig(
            self.tls,
            self.max_message_bytes,
            self.max_workers,
            addresses,
            self.cors_origins,
            self.allowed_hosts,
        )


def create_server(address: str, **options: Any) -> tuple[MemoryServer, int]:
    """`start_server(ServerConfig(address, **options))`: a started server and its port."""
    return start_server(ServerConfig(address, **options))


def start_server(config: ServerConfig) -> tuple[MemoryServer, int]:
    """Start the memory server `config` describes and return it with its port: the core over
    its stores, the gRPC port, and each door the configuration opens
    (himga.service.doors); `MemoryServer.http_port` is the HTTP door's port. ValueError on an
    unknown memory or episode store, or an unreadable TLS file."""
    wanted = config.doors()  # ValueError on a door of no name in DOORS, before anything opens
    database, metrics, max_message_bytes = config.database, config.metrics, config.max_message_bytes
    directory = Path(config.data_dir) if config.data_dir is not None else None
    place: Place = database if database is not None else directory
    memory = config.memory or (DATABASE_MEMORY if database is not None else DEFAULT_MEMORY)
    episodes = config.episodes or (DATABASE_STORE if database is not None else DEFAULT_STORE)
    namespaces = Namespaces(
        memory,
        place,
        config.max_open_namespaces,
        episodes,
        memory_options=config.memory_options,
        episode_options=config.episode_options,
    )
    episode_stores = EpisodeStores(namespaces)
    credentials = config.tls.credentials() if config.tls is not None else None
    calls = Calls()
    if metrics is not None:
        metrics.watch(lambda: len(namespaces), directory)
    store = StoreHealth(directory, database.reachable if database is not None else None)
    core = build_core(
        namespaces,
        episode_stores,
        auth=config.auth,
        metrics=metrics,
        max_response_bytes=max_message_bytes,
        store=store,
        calls=calls,
    )
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=config.max_workers, thread_name_prefix="himga-rpc"),
        interceptors=[RefuseUndecodable()],
        options=[
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
            # A port in use is an error, not a port silently shared with another server.
            ("grpc.so_reuseport", 0),
        ],
    )
    servicer.add_to(server, core)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable((SERVICE_NAME, EPISODE_SERVICE_NAME, health.SERVICE_NAME), server)
    if credentials is not None:
        port = server.add_secure_port(config.address, credentials)
    else:
        port = server.add_insecure_port(config.address)
    opened = {name: doors.build(name, core, wanted) for name in wanted.wanted}
    http = opened.get("http")
    server.start()
    for door in opened.values():
        door.start()

    def serving(writable: bool) -> None:
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if writable
            else (health_pb2.HealthCheckResponse.NOT_SERVING)
        )
        for name in ("", SERVICE_NAME, EPISODE_SERVICE_NAME):
            health_servicer.set(name, status)

    store.listener = serving
    serving(True)
    store.check()  # a server started on a full disk is NOT_SERVING until a write can land
    _log.debug("memory server on port %d with memory %r", port, memory)
    running = MemoryServer(
        server, health_servicer, namespaces, calls, store, config.auth, episode_stores, http, opened
    )
    return running, port
