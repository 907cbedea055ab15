"""What the tools call: one memory and one episode store of a namespace, either embedded (made
by the registries' factories in a data directory, as `himga serve` makes them) or kept by a
running server (RemoteMemory and RemoteEpisodes). Both are the interfaces every himga memory and
store implement, so the tools never know which they hold."""

from dataclasses import dataclass
from pathlib import Path

from himga.episodes.base import EpisodeStore
from himga.memory.base import BaseMemory


@dataclass(frozen=True, slots=True)
class Stores:
    memory: BaseMemory
    episodes: EpisodeStore
    kept: bool
    """Whether what they hold outlives the process (a data directory, or a server)."""

    def close(self) -> None:
        self.memory.close()
        self.episodes.close()


def embedded(namespace: str, data_dir: Path | None, memory: str, episodes: str) -> Stores:
    """The stores of `namespace` in `data_dir` (None: kept in memory, gone at exit)."""
    from himga.episodes.registry import store_factory
    from himga.memory.registry import memory_factory

    return Stores(
        memory_factory(memory)(namespace, data_dir),
        store_factory(episodes)(namespace, data_dir),
        kept=data_dir is not None,
    )


def remote(target: str, namespace: str, memory: str, token: str | None) -> Stores:
    """The stores of `namespace` in the server at `target` ("host:port")."""
    from himga.service import RemoteEpisodes, RemoteMemory

    return Stores(
        RemoteMemory(target, namespace, memory=memory, token=token),
        RemoteEpisodes(target, namespace, token=token),
        kept=True,
    )
