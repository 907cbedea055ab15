"""himga.service: the MemoryService and EpisodeService over gRPC: their server
(`create_server`) and their clients (`RemoteMemory`, a BaseMemory; `AsyncRemoteMemory`, the
same methods for asyncio; `RemoteEpisodes`, an EpisodeStore). The only part of himga that
imports grpc."""

from himga.service.async_client import AsyncRemoteMemory
from himga.service.client import RemoteMemory
from himga.service.credentials import ClientTls, ServerTls
from himga.service.errors import FieldViolation, InvalidRequest, MemoryMismatch
from himga.service.remote_episodes import RemoteEpisodes
from himga.service.server import MemoryServer, create_server

__all__ = [
    "AsyncRemoteMemory",
    "ClientTls",
    "FieldViolation",
    "InvalidRequest",
    "MemoryMismatch",
    "MemoryServer",
    "RemoteEpisodes",
    "RemoteMemory",
    "ServerTls",
    "create_server",
]
