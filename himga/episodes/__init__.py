"""himga.episodes: the episode stores (in-process, SQLite) behind one interface, and the
ranking that finds the episodes that matter for a task.

`base` is the interface (EpisodeStore) and what it returns; `indexed` what the local stores
share; `inprocess` and `sqlite` the stores; `features`, `index` and `ranking` how episodes are
ranked; `context` the context string; `paging` ListEpisodes' order and tokens; `registry` the
stores by name. The gRPC client (himga.service.RemoteEpisodes) is the same interface over the
wire. The stores are loaded on first use, so naming one (`himga serve --help`) loads no store.
"""

import importlib
from typing import TYPE_CHECKING, Any

from himga.episodes.base import (
    EpisodeFilter,
    EpisodeHit,
    EpisodePage,
    EpisodeSearch,
    EpisodeStore,
)
from himga.episodes.registry import BUILTIN

if TYPE_CHECKING:
    from himga.episodes.inprocess import InProcessEpisodes
    from himga.episodes.sqlite import SQLiteEpisodes

__all__ = [
    "EpisodeFilter",
    "EpisodeHit",
    "EpisodePage",
    "EpisodeSearch",
    "EpisodeStore",
    "InProcessEpisodes",
    "SQLiteEpisodes",
]

# Each built-in store class, by the module the registry loads it from.
_LAZY = {attribute.split(".")[0]: module for module, attribute in BUILTIN.values()}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
