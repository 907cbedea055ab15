"""himga.memory: the BaseMemory interface and its implementations."""

from himga.memory.base import BaseMemory, Hit
from himga.memory.keyword import KeywordMemory
from himga.memory.null import NullMemory
from himga.memory.sqlite import SQLiteKeywordMemory

__all__ = ["BaseMemory", "Hit", "KeywordMemory", "NullMemory", "SQLiteKeywordMemory"]
