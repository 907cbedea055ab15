"""The episode stores of a server's namespaces, as EpisodeService uses them: the episode side of
the server's one opener (himga.service.namespaces, over himga.storage.namespaces), so they are
made, bounded and closed with the namespaces' messages, under one `--max-open-namespaces`.
Stores are thread-safe, so calls to one namespace need no lock of the server's."""

from collections.abc import Iterator
from contextlib import contextmanager

from himga.episodes.base import EpisodeStore
from himga.service.namespaces import Namespaces


class EpisodeStores:
    """The episode side of `namespaces`."""

    def __init__(self, namespaces: Namespaces) -> None:
        self.namespaces = namespaces

    @property
    def kind(self) -> str:
        """The kind of store the namespaces keep their episodes in."""
        return self.namespaces.episodes_kind

    @contextmanager
    def using(self, namespace: str, *, create: bool = True) -> Iterator[EpisodeStore]:
        """The store of a (checked) namespace, held open while the block runs; for a read
        (`create=False`) of a namespace with no episodes, an empty store, and nothing made."""
        with self.namespaces.episode_store(namespace, create=create) as store:
            yield store

    def close(self) -> None:
        """Close every open store (and the namespaces' memories, which share the bound)."""
        self.namespaces.close()
