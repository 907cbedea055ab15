"""The episode stores of a server's namespaces: one store per namespace, opened on its first
call, with the namespace rule MemoryService uses (himga.service.namespaces). Stores are
thread-safe, so calls to one namespace need no lock of the server's."""

import threading
from pathlib import Path

from himga.episodes.base import EpisodeStore
from himga.episodes.registry import place_problem, store_factory
from himga.service import catalog
from himga.storage.place import Place


class EpisodeStores:
    """Opens each namespace's store once, with the server's store kind, and keeps it open."""

    def __init__(self, kind: str, place: Place) -> None:
        self.kind = kind
        self._factory = store_factory(kind)  # fail now, at start-up, on an unknown kind
        problem = place_problem(kind, place)
        if problem is not None:
            raise ValueError(problem)
        self.place = place
        self._open: dict[str, EpisodeStore] = {}
        self._opening = threading.Lock()

    def open(self, namespace: str) -> EpisodeStore:
        """The store of a (checked) namespace, opened now if it was not."""
        store = self._open.get(namespace)
        if store is None:
            with self._opening:
                store = self._open.get(namespace)
                if store is None:
                    if isinstance(self.place, Path):
                        catalog.remember_name(self.place, namespace)
                    store = self._open[namespace] = self._factory(namespace, self.place)
        return store

    def open_names(self) -> list[str]:
        """The namespaces whose stores are open now."""
        with self._opening:
            return list(self._open)

    def discard(self, namespace: str) -> None:
        """Close the store of `namespace` if it is open (its next call opens it anew)."""
        with self._opening:
            store = self._open.pop(namespace, None)
        if store is not None:
            store.close()

    def close(self) -> None:
        """Close every open store, once no call uses them any more."""
        with self._opening:
            opened, self._open = list(self._open.values()), {}
        for store in opened:
            store.close()
