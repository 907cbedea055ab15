"""AsyncRemoteMemory's earlier home: it is himga.client's (himga.client.async_memory); this name
stays for code that imports it from here."""

from himga.client.async_memory import AsyncRemoteMemory

__all__ = ["AsyncRemoteMemory"]
