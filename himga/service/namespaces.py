"""The namespaces a server holds: their stores, opened by the one opener
of himga.storage.namespaces (create, record, open, bound, close; the naming rule is
himga.service.names), which this adapts to the
servicers: a memory named in a call is checked into field violations, and the episodes of a
namespace never written read as an empty store.

A read, a search or a forgetting call (`create=False`) of a namespace never written opens
nothing and creates nothing (no file, no row); `--max-open-namespaces` bounds the open stores,
messages and episodes alike.
"""

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from himga.episodes.base import EpisodeStore
from himga.episodes.inprocess import InProcessEpisodes
from himga.errors import MemoryMismatch
from himga.service.errors import FieldViolation
from himga.service.names import NAMESPACE_RULE, namespace_violations
from himga.storage.namespaces import EPISODES, MESSAGES, NamespaceStores, OpenNamespace
from himga.storage.place import Place

__all__ = [
    "NAMESPACE_RULE",
    "MemoryMismatch",
    "Namespaces",
    "OpenNamespace",
    "namespace_violations",
]

T = TypeVar("T")
_WAIT_SECONDS = 0.01
"""How often `closing` looks whether the calls using a namespace have ended."""


class Namespaces(NamespaceStores):
    """The server's namespaces in `place` (himga.storage.place): new ones get memory
    `default_memory` unless a call names another, and episode stores of kind `episodes`; at
    most `max_open` stores stay open (None: all)."""

    def __init__(
        self,
        default_memory: str,
        place: Place,
        max_open: int | None = None,
        episodes: str | None = None,
        memory_options: Mapping[str, Any] | None = None,
        episode_options: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(
            place,
            memory=default_memory,
            episodes=episodes,
            max_open=max_open,
            memory_options=memory_options,
            episode_options=episode_options,
        )

    def memory_violations(self, memory: str) -> list[FieldViolation]:
        """What is wrong with `memory` as a memory name ("" is the default)."""
        problem = self.memory_problem(memory) if memory else None
        return [] if problem is None else [FieldViolation("memory", problem)]

    using = NamespaceStores.messages
    """`messages`, under the name the servicer calls it by."""

    def open_names(self) -> dict[str, str]:
        """The namespaces with a store open now, each with the name of its memory ("" when only
        its episodes are open)."""
        with self._opening:
            found = {name: "" for side, name in self._open if side == EPISODES}
            for (side, name), opened in self._open.items():
                if side == MESSAGES and isinstance(opened, OpenNamespace):
                    found[name] = opened.memory_name
        return found

    @contextmanager
    def closing(self, namespace: str) -> Iterator[None]:
        """Close the namespace's stores once no call uses them, and keep every call from
        opening them while the block runs (which removes what they hold:
        himga.service.catalog.forget)."""
        keys = [(MESSAGES, namespace), (EPISODES, namespace)]
        while True:
            with self._opening:
                held = [self._open[key] for key in keys if key in self._open]
                if all(opened.users == 0 for opened in held):
                    for key in keys:
                        if key in self._open:
                            self._open.pop(key).close()
                    yield
                    return
            time.sleep(_WAIT_SECONDS)

    def _make(self, factory: Callable[[str, Place, Any], T], namespace: str, options: Any) -> T:
        from himga.service.catalog import remember_name  # catalog reads the naming rule here

        remember_name(self.data_dir, namespace)
        return super()._make(factory, namespace, options)

    @contextmanager
    def episode_store(self, namespace: str, *, create: bool = True) -> Iterator[EpisodeStore]:
        """The namespace's episode store, held while the block runs; an empty one, kept
        nowhere, when the namespace has none and `create` is False (a read: nothing is made)."""
        with self.episodes(namespace, create=create) as store:
            yield store if store is not None else InProcessEpisodes()
