"""himga.client: the clients of a himga server over gRPC, apart from the server: `RemoteMemory`
(a BaseMemory), `AsyncRemoteMemory` (the same methods for asyncio) and `RemoteEpisodes` (an
EpisodeStore), with what they share (`ClientTls`, the requests they build). Importing it loads
nothing of the server: the conversions, the error table and the naming rule it shares with the
server are modules of their own (himga.service.convert, .errors, .names), and the limits both
ends hold to are himga.limits."""

from himga.client.async_memory import AsyncRemoteMemory
from himga.client.channels import ClientTls
from himga.client.episodes import RemoteEpisodes
from himga.client.memory import RemoteMemory
from himga.limits import MAX_MESSAGE_BYTES
from himga.service.errors import FieldViolation, InvalidRequest, MemoryMismatch

__all__ = [
    "MAX_MESSAGE_BYTES",
    "AsyncRemoteMemory",
    "ClientTls",
    "FieldViolation",
    "InvalidRequest",
    "MemoryMismatch",
    "RemoteEpisodes",
    "RemoteMemory",
]
