"""himga.memory: the BaseMemory interface and its implementations."""

from himga.memory.base import BaseMemory, Hit
from himga.memory.null import NullMemory

__all__ = ["BaseMemory", "Hit", "NullMemory"]
