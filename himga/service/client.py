"""RemoteMemory's earlier home: it is himga.client's (himga.client.memory); this name stays for
code that imports it from here."""

from himga.client.memory import RemoteMemory

__all__ = ["RemoteMemory"]
