"""The episode stores a server or a command can be asked for by name.

Each entry is a `Kind` (himga.kinds): where the store keeps a namespace's episodes, whether
servers over one place share them, the options it takes, and its factory,
`factory(namespace, place, options)`: `place` (himga.storage.place) is the server's data
directory, its PostgreSQL database, or None (keep nothing), `options` an instance of the kind's
options class. A server over a database keeps episodes only in a store its kind says is shared,
where every server over it sees them.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from himga import kinds
from himga.episodes.base import EpisodeStore
from himga.episodes.meaning import EpisodeOptions
from himga.kinds import Keeps, Kind
from himga.storage.place import Place

StoreFactory = Callable[[str, Place, Any], EpisodeStore]

BUILTIN: dict[str, Kind] = {
    "inprocess": Kind(
        "himga.episodes.inprocess",
        "InProcessEpisodes.for_namespace",
        Keeps.PROCESS,
        shared=False,
        options=EpisodeOptions,
    ),
    "sqlite": Kind(
        "himga.episodes.sqlite",
        "SQLiteEpisodes.for_namespace",
        Keeps.DATA_DIRECTORY,
        shared=False,
        options=EpisodeOptions,
    ),
    "postgres": Kind(
        "himga.episodes.postgres",
        "PostgresEpisodes.for_namespace",
        Keeps.DATABASE,
        shared=True,
        options=EpisodeOptions,
    ),
}
DEFAULT_STORE = "sqlite"
DATABASE_STORE = "postgres"
"""The default episode store of a server over a database."""


def store_kind(name: str) -> Kind:
    """The declaration of the store called `name`; ValueError naming the known ones otherwise."""
    try:
        return BUILTIN[name]
    except KeyError:
        known = ", ".join(store_names())
        raise ValueError(f"unknown episode store {name!r}; known stores: {known}") from None


def shared_stores() -> list[str]:
    """The stores a server over a database offers, sorted (their kinds say `shared`)."""
    return sorted(name for name, kind in BUILTIN.items() if kind.shared)


def place_problem(name: str, place: Place) -> str | None:
    """Why episode store `name` cannot keep namespaces in `place`, or None when it can."""
    problem = kinds.place_problem("episode store", name, store_kind(name), place)
    if problem is not None and place is not None and not isinstance(place, Path):
        problem += f"; episodes must be {' or '.join(shared_stores())}"
    return problem


def store_names() -> list[str]:
    """The names `store_factory` knows, sorted."""
    return sorted(BUILTIN)


def store_factory(name: str) -> StoreFactory:
    """The factory of the store called `name`; ValueError naming the known ones otherwise."""
    factory: StoreFactory = store_kind(name).load()
    return factory


def store_options(name: str, given: dict[str, object] | None = None) -> Any:
    """The options of store `name`: its defaults, with `given` in their place; InvalidArgument
    naming the option for a bad one."""
    return kinds.parse_options(name, store_kind(name), given or {})


def open_store(name: str, namespace: str, place: Place, options: Any = None) -> EpisodeStore:
    """The store `name` of `namespace` in `place`, with `options` (its defaults if None)."""
    kind = store_kind(name)
    return store_factory(name)(
        namespace, place, kind.default_options() if options is None else options
    )
