"""himga.episodes: the episode stores (in-process, SQLite, PostgreSQL) behind one interface,
and the ranking that finds the episodes that matter for a task.

`base` is the interface (EpisodeStore) and what it returns; `indexed` what the local stores
share; `inprocess`, `sqlite` and `postgres` the stores; `features`, `index` and `ranking` how
episodes are ranked; `context` the context string; `paging` ListEpisodes' order and tokens;
`registry` the stores by name. The gRPC client (himga.service.RemoteEpisodes) is the same
interface over the wire. The stores are loaded on first use, so naming one (`himga serve
--help`) loads no store.
"""

from typing import TYPE_CHECKING

from himga.episodes.base import (
    EpisodeFilter,
    EpisodeHit,
    EpisodePage,
    EpisodeSearch,
    EpisodeStore,
)
from himga.episodes.registry import BUILTIN
from himga.lazy import lazy_classes

if TYPE_CHECKING:
    from himga.episodes.inprocess import InProcessEpisodes
    from himga.episodes.postgres import PostgresEpisodes
    from himga.episodes.sqlite import SQLiteEpisodes

__all__ = [
    "EpisodeFilter",
    "EpisodeHit",
    "EpisodePage",
    "EpisodeSearch",
    "EpisodeStore",
    "InProcessEpisodes",
    "PostgresEpisodes",
    "SQLiteEpisodes",
]

# Each built-in store class, from the module the registry loads it from.
__getattr__ = lazy_classes(__name__, {n: (k.module, k.factory) for n, k in BUILTIN.items()})
