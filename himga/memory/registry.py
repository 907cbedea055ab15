"""The memories a server or a command can be asked for by name.

Each entry makes the memory of one namespace: `factory(namespace, place)`, where `place`
(himga.storage.place) is where the server keeps its namespaces: its data directory, its
PostgreSQL database, or None (keep nothing). Classes are imported on first use, so naming one
memory does not load the others.

A server over a database is one of several over it, so it offers only the memories that keep a
namespace there for all of them (`SHARED`); `place_problem` says why another is refused.
"""

import importlib
from collections.abc import Callable
from pathlib import Path

from himga.memory.base import BaseMemory
from himga.storage.layout import namespace_file as namespace_file  # its earlier path
from himga.storage.place import Place

MemoryFactory = Callable[[str, Place], BaseMemory]

# name -> (module, attribute): the attribute is called as factory(namespace, place).
BUILTIN: dict[str, tuple[str, str]] = {
    "null": ("himga.memory.null", "NullMemory.for_namespace"),
    "naive": ("himga.memory.naive", "SimpleKeywordMemory.for_namespace"),
    "keyword": ("himga.memory.keyword", "KeywordMemory.for_namespace"),
    "sqlite": ("himga.memory.sqlite", "SQLiteKeywordMemory.for_namespace"),
    "postgres": ("himga.memory.postgres", "PostgresKeywordMemory.for_namespace"),
}
_ENTRIES = dict(BUILTIN)

DEFAULT_MEMORY = "sqlite"
DATABASE_MEMORY = "postgres"
"""The default of a server over a database, and the one memory that needs a database."""
SHARED = frozenset({DATABASE_MEMORY, "null"})
"""The memories a server over a database offers: every server over it sees the same namespace
(`null` keeps nothing, so nothing to share). `keyword` and `naive` would keep a namespace in one
server's process, `sqlite` on one server's disk."""


def place_problem(name: str, place: Place) -> str | None:
    """Why memory `name` cannot keep namespaces in `place`, or None when it can."""
    if place is not None and not isinstance(place, Path):
        if name in SHARED:
            return None
        return (
            f"this server keeps its namespaces in PostgreSQL, shared by every server over it: "
            f"memory must be {' or '.join(sorted(SHARED))} ({name!r} would keep a namespace in "
            "one server alone)"
        )
    if name == DATABASE_MEMORY:
        return "memory postgres keeps namespaces in PostgreSQL: start the server with --database"
    return None


def memory_names() -> list[str]:
    """The names `memory_factory` knows, sorted."""
    return sorted(_ENTRIES)


def register(name: str, module: str, attribute: str) -> None:
    """Make a memory known by `name` without editing this file (a plugin's, or a test's).

    `attribute` is a dotted path in `module` to `factory(namespace, place)`. A name already
    known is a ValueError: one name, one memory."""
    if name in _ENTRIES:
        raise ValueError(f"memory {name!r} is already registered")
    _ENTRIES[name] = (module, attribute)


def unregister(name: str) -> None:
    """Forget the memory called `name` (KeyError if unknown)."""
    del _ENTRIES[name]


def memory_factory(name: str) -> MemoryFactory:
    """The factory of the memory called `name`; ValueError naming the known ones otherwise."""
    try:
        module_name, attribute = _ENTRIES[name]
    except KeyError:
        raise ValueError(
            f"unknown memory {name!r}; known memories: {', '.join(memory_names())}"
        ) from None
    target: object = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    factory: MemoryFactory = target  # type: ignore[assignment]
    return factory
