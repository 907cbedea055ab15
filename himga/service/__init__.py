"""himga.service: the MemoryService and EpisodeService over gRPC: their server
(`create_server`), and what the server shares with its clients (`convert`, `errors`, `names`).
The clients are himga.client's (`RemoteMemory`, `AsyncRemoteMemory`, `RemoteEpisodes`); they
are named here too, as before. Every name below is loaded on first use, so importing one of
the shared modules (as himga.client does) loads nothing of the server."""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from himga.client.async_memory import AsyncRemoteMemory as AsyncRemoteMemory
    from himga.client.channels import ClientTls as ClientTls
    from himga.client.episodes import RemoteEpisodes as RemoteEpisodes
    from himga.client.memory import RemoteMemory as RemoteMemory
    from himga.service.credentials import ServerTls as ServerTls
    from himga.service.errors import FieldViolation as FieldViolation
    from himga.service.errors import InvalidRequest as InvalidRequest
    from himga.service.errors import MemoryMismatch as MemoryMismatch
    from himga.service.server import MemoryServer as MemoryServer
    from himga.service.server import create_server as create_server

_HOMES = {
    "AsyncRemoteMemory": "himga.client.async_memory",
    "ClientTls": "himga.client.channels",
    "FieldViolation": "himga.service.errors",
    "InvalidRequest": "himga.service.errors",
    "MemoryMismatch": "himga.service.errors",
    "MemoryServer": "himga.service.server",
    "RemoteEpisodes": "himga.client.episodes",
    "RemoteMemory": "himga.client.memory",
    "ServerTls": "himga.service.credentials",
    "create_server": "himga.service.server",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
