"""The episode stores a server or a command can be asked for by name.

Each entry makes the store of one namespace: `factory(namespace, data_dir)`, where `data_dir`
is the server's data directory (None: keep nothing on disk).
"""

import importlib
from collections.abc import Callable
from pathlib import Path

from himga.episodes.base import EpisodeStore

StoreFactory = Callable[[str, Path | None], EpisodeStore]

# name -> (module, attribute): the attribute is called as factory(namespace, data_dir).
BUILTIN: dict[str, tuple[str, str]] = {
    "inprocess": ("himga.episodes.inprocess", "InProcessEpisodes.for_namespace"),
    "sqlite": ("himga.episodes.sqlite", "SQLiteEpisodes.for_namespace"),
}
DEFAULT_STORE = "sqlite"


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
