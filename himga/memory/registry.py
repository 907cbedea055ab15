"""The memories a server or a command can be asked for by name.

Each entry is a `Kind` (himga.kinds): where the memory keeps a namespace, whether servers over
one place share it, the options it takes, and its factory, `factory(namespace, place,
options)`: `place` (himga.storage.place) is where the server keeps its namespaces (its data
directory, its PostgreSQL database, or None: keep nothing), `options` an instance of the
kind's options class. Factories are imported on first use, so naming one memory does not load
the others.

A server over a database is one of several over it, so it offers only the memories whose kind
says they are shared (`shared_memories`); `place_problem` says why another is refused.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from himga import kinds
from himga.errors import InvalidArgument
from himga.kinds import Keeps, Kind
from himga.memory.base import BaseMemory
from himga.memory.hybrid_options import HybridOptions
from himga.memory.method import Method
from himga.storage.layout import namespace_file as namespace_file  # its earlier path
from himga.storage.place import Place

MemoryFactory = Callable[[str, Place, Any], BaseMemory]

BUILTIN: dict[str, Kind] = {
    "null": Kind("himga.memory.null", "NullMemory.for_namespace", Keeps.NOTHING, shared=True),
    "naive": Kind(
        "himga.memory.naive", "SimpleKeywordMemory.for_namespace", Keeps.PROCESS, shared=False
    ),
    "keyword": Kind(
        "himga.memory.keyword",
        "KeywordMemory.for_namespace",
        Keeps.PROCESS,
        shared=False,
        options=Method,
    ),
    "sqlite": Kind(
        "himga.memory.sqlite",
        "SQLiteKeywordMemory.for_namespace",
        Keeps.DATA_DIRECTORY,
        shared=False,
    ),
    "postgres": Kind(
        "himga.memory.postgres",
        "PostgresKeywordMemory.for_namespace",
        Keeps.DATABASE,
        shared=True,
    ),
    "hybrid": Kind(
        "himga.memory.hybrid",
        "open_hybrid",
        Keeps.DATA_DIRECTORY_OR_DATABASE,
        shared=True,
        options=HybridOptions,
    ),
}
_ENTRIES = dict(BUILTIN)

DEFAULT_MEMORY = "sqlite"
DATABASE_MEMORY = "postgres"
"""The default memory of a server over a database."""


def memory_kind(name: str) -> Kind:
    """The declaration of the memory called `name`; ValueError naming the known ones otherwise."""
    try:
        return _ENTRIES[name]
    except KeyError:
        raise ValueError(
            f"unknown memory {name!r}; known memories: {', '.join(memory_names())}"
        ) from None


def shared_memories() -> list[str]:
    """The memories a server over a database offers, sorted: those every server over it sees
    alike (their kinds say `shared`)."""
    return sorted(name for name, kind in _ENTRIES.items() if kind.shared)


def place_problem(name: str, place: Place) -> str | None:
    """Why memory `name` cannot keep namespaces in `place`, or None when it can."""
    problem = kinds.place_problem("memory", name, memory_kind(name), place)
    if problem is not None and place is not None and not isinstance(place, Path):
        problem += f"; memory must be {' or '.join(shared_memories())}"
    return problem


def here_problem(name: str) -> str | None:
    """Why memory `name` cannot be opened in this process without a server (an evaluation's
    fresh namespaces), or None when it can: a kind kept in a database is a server's."""
    if memory_kind(name).keeps is not Keeps.DATABASE:
        return None
    return (
        f"memory {name!r} keeps its namespaces in a database, which only a server started with "
        "--database opens: evaluate it through one (`himga eval --target HOST:PORT`), or name a "
        "memory kept here"
    )


def memory_names() -> list[str]:
    """The names `memory_factory` knows, sorted."""
    return sorted(_ENTRIES)


def register(name: str, kind: Kind) -> None:
    """Make a memory known by `name` without editing this file (a plugin's, or a test's).
    A name already known is a ValueError: one name, one memory."""
    if name in _ENTRIES:
        raise ValueError(f"memory {name!r} is already registered")
    _ENTRIES[name] = kind


def unregister(name: str) -> None:
    """Forget the memory called `name` (KeyError if unknown)."""
    del _ENTRIES[name]


def memory_factory(name: str) -> MemoryFactory:
    """The factory of the memory called `name`; ValueError naming the known ones otherwise."""
    factory: MemoryFactory = memory_kind(name).load()
    return factory


def memory_options(name: str, given: dict[str, object] | None = None) -> Any:
    """The options of memory `name`: its defaults, with `given` (option name -> value, as text
    or typed) in their place; InvalidArgument naming the option for a bad one."""
    return kinds.parse_options(name, memory_kind(name), given or {})


def command_options(name: str, texts: list[str], embedding_model: str | None = None) -> Any:
    """The options of memory `name` a command line gives: `--memory-option` NAME=VALUE `texts`,
    and `--embedding-model` (`embedding_model=`, which must not be given both ways);
    InvalidArgument naming the option for a bad one."""
    given: dict[str, object] = dict(kinds.option_pairs(texts))
    if embedding_model is not None:
        if "embedding_model" in given:
            raise InvalidArgument(
                "options.embedding_model",
                "given twice: by --embedding-model and by --memory-option",
            )
        given["embedding_model"] = embedding_model
    return memory_options(name, given)


def open_memory(name: str, namespace: str, place: Place, options: Any = None) -> BaseMemory:
    """The memory `name` of `namespace` in `place`, with `options` (its defaults if None)."""
    kind = memory_kind(name)
    return memory_factory(name)(
        namespace, place, kind.default_options() if options is None else options
    )
