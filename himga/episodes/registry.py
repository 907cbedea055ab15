"""The episode stores a server or a command can be asked for by name.

Each entry makes the store of one namespace: `factory(namespace, place)`, where `place`
(himga.storage.place) is the server's data directory, its PostgreSQL database, or None (keep
nothing). A server over a database keeps episodes there alone (`DATABASE_STORE`), where every
server over it sees them.
"""

import importlib
from collections.abc import Callable
from pathlib import Path

from himga.episodes.base import EpisodeStore
from himga.storage.place import Place

StoreFactory = Callable[[str, Place], EpisodeStore]

# name -> (module, attribute): the attribute is called as factory(namespace, place).
BUILTIN: dict[str, tuple[str, str]] = {
    "inprocess": ("himga.episodes.inprocess", "InProcessEpisodes.for_namespace"),
    "sqlite": ("himga.episodes.sqlite", "SQLiteEpisodes.for_namespace"),
    "postgres": ("himga.episodes.postgres", "PostgresEpisodes.for_namespace"),
}
DEFAULT_STORE = "sqlite"
DATABASE_STORE = "postgres"


def place_problem(name: str, place: Place) -> str | None:
    """Why episode store `name` cannot keep namespaces in `place`, or None when it can."""
    database = place is not None and not isinstance(place, Path)
    if database and name != DATABASE_STORE:
        return (
            f"this server keeps its namespaces in PostgreSQL, shared by every server over it: "
            f"episodes must be {DATABASE_STORE} ({name!r} would keep them in one server alone)"
        )
    if not database and name == DATABASE_STORE:
        return "episode store postgres keeps episodes in PostgreSQL: start with --database URL"
    return None


def store_names() -> list[str]:
    """The names `store_factory` knows, sorted."""
    return sorted(BUILTIN)


def store_factory(name: str) -> StoreFactory:
    """The factory of the store called `name`; ValueError naming the known ones otherwise."""
    try:
        module_name, attribute = BUILTIN[name]
    except KeyError:
        known = ", ".join(store_names())
        raise ValueError(f"unknown episode store {name!r}; known stores: {known}") from None
    target: object = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    factory: StoreFactory = target  # type: ignore[assignment]
    return factory
