"""`create_server`: a started gRPC server with MemoryService, health checking and reflection."""

import logging
import threading
from concurrent import futures
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from himga_proto.memory.v1 import memory_pb2, memory_pb2_grpc

from himga.episodes.registry import DEFAULT_STORE
from himga.memory.registry import DEFAULT_MEMORY
from himga.service.episode_stores import EpisodeStores
from himga.service.episodes import EpisodeServicer
from himga.service.namespaces import Namespaces
from himga.service.servicer import MemoryServicer

SERVICE_NAME: str = memory_pb2.DESCRIPTOR.services_by_name["MemoryService"].full_name
EPISODE_SERVICE_NAME: str = memory_pb2.DESCRIPTOR.services_by_name["EpisodeService"].full_name
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The largest request or response, either way; a larger request gets RESOURCE_EXHAUSTED."""

_log = logging.getLogger(__name__)


class MemoryServer:
    """A running memory server: `stop(grace)` stops it as grpc.Server.stop does, after first
    telling health checkers it is going away (NOT_SERVING), so balancers drain it, and closes
    the namespaces' memories once the last call has ended."""

    def __init__(
        self,
        server: grpc.Server,
        health_servicer: health.HealthServicer,
        namespaces: Namespaces,
        episodes: EpisodeStores,
    ) -> None:
        self.grpc_server = server
        self._health = health_servicer
        self._namespaces = namespaces
        self._episodes = episodes

    def stop(self, grace: float | None) -> threading.Event:
        """Refuse new calls, let in-flight calls finish for up to `grace` seconds, then stop and
        close the memories. The event returned is set when all of that is done."""
        self._health.enter_graceful_shutdown()
        grpc_stopped: threading.Event = self.grpc_server.stop(grace)
        done = threading.Event()

        def close_when_stopped() -> None:
            grpc_stopped.wait()
            self._namespaces.close()
            self._episodes.close()
            done.set()

        threading.Thread(target=close_when_stopped, name="himga-close").start()
        return done

    def wait_for_termination(self, timeout: float | None = None) -> bool:
        stopped: bool = self.grpc_server.wait_for_termination(timeout)
        return stopped


def create_server(
    address: str,
    *,
    memory: str = DEFAULT_MEMORY,
    episodes: str = DEFAULT_STORE,
    data_dir: Path | str | None = None,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    max_workers: int = 8,
) -> tuple[MemoryServer, int]:
    """Start a memory server on `address` ("127.0.0.1:0" picks a free port) and return it with
    its port. It serves MemoryService and EpisodeService. New namespaces get `memory` unless a
    call names another, and keep their episodes in stores of kind `episodes`; durable ones keep
    their files under `data_dir` (None: nothing on disk). ValueError on an unknown memory or
    episode store."""
    folder = Path(data_dir) if data_dir is not None else None
    namespaces = Namespaces(memory, folder)
    episode_stores = EpisodeStores(episodes, folder)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="himga-rpc"),
        options=[
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
            # A port in use is an error, not a port silently shared with another server.
            ("grpc.so_reuseport", 0),
        ],
    )
    memory_pb2_grpc.add_MemoryServiceServicer_to_server(MemoryServicer(namespaces), server)
    memory_pb2_grpc.add_EpisodeServiceServicer_to_server(EpisodeServicer(episode_stores), server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, EPISODE_SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME),
        server,
    )
    port = server.add_insecure_port(address)
    server.start()
    for name in ("", SERVICE_NAME, EPISODE_SERVICE_NAME):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    _log.debug("memory server on port %d with memory %r", port, memory)
    return MemoryServer(server, health_servicer, namespaces, episode_stores), port
