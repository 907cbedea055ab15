"""himga.service: the MemoryService over gRPC: its server (`create_server`) and its client
(`RemoteMemory`, a BaseMemory). The only part of himga that imports grpc."""

from himga.service.client import RemoteMemory
from himga.service.credentials import ClientTls, ServerTls
from himga.service.errors import FieldViolation, InvalidRequest, MemoryMismatch
from himga.service.server import MemoryServer, create_server

__all__ = [
    "ClientTls",
    "FieldViolation",
    "InvalidRequest",
    "MemoryMismatch",
    "MemoryServer",
    "RemoteMemory",
    "ServerTls",
    "create_server",
]
