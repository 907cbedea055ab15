"""himga.memory: the BaseMemory interface and its implementations.

The memories are loaded on first use (`from himga.memory import SQLiteKeywordMemory` loads the
SQLite one alone), as himga.memory.registry loads a memory named by a server's call."""

from typing import TYPE_CHECKING

from himga.lazy import lazy_classes
from himga.memory.base import BaseMemory, Hit, Page, StoredMessage
from himga.memory.filters import MessageFilter
from himga.memory.registry import BUILTIN

if TYPE_CHECKING:
    from himga.memory.keyword import KeywordMemory
    from himga.memory.naive import SimpleKeywordMemory
    from himga.memory.null import NullMemory
    from himga.memory.postgres import PostgresKeywordMemory
    from himga.memory.sqlite import SQLiteKeywordMemory

__all__ = [
    "BaseMemory",
    "Hit",
    "KeywordMemory",
    "MessageFilter",
    "NullMemory",
    "Page",
    "PostgresKeywordMemory",
    "SQLiteKeywordMemory",
    "SimpleKeywordMemory",
    "StoredMessage",
]

# Each built-in memory class, from the module the registry loads it from.
__getattr__ = lazy_classes(__name__, {n: (k.module, k.factory) for n, k in BUILTIN.items()})
