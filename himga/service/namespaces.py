"""The namespaces a server holds: the naming rule, and their stores, opened by the one opener
of himga.storage.namespaces (create, record, open, bound, close), which this adapts to the
servicers: a memory named in a call is checked into field violations, and the episodes of a
namespace never written read as an empty store.

A read, a search or a forgetting call (`create=False`) of a namespace never written opens
nothing and creates nothing (no file, no row); `--max-open-namespaces` bounds the open stores,
messages and episodes alike.
"""

import re
from collections.abc import Iterator
from contextlib import contextmanager

from himga.episodes.base import EpisodeStore
from himga.episodes.inprocess import InProcessEpisodes
from himga.errors import MemoryMismatch
from himga.service.errors import FieldViolation
from himga.storage.namespaces import NamespaceStores, OpenNamespace
from himga.storage.place import Place

__all__ = [
    "NAMESPACE_RULE",
    "MemoryMismatch",
    "Namespaces",
    "OpenNamespace",
    "namespace_violations",
]

NAMESPACE_RULE = "1 to 128 characters of letters, digits, '.', '_', '-' and ':'"
_NAMESPACE = re.compile(r"[A-Za-z0-9._:-]{1,128}", re.ASCII)


def namespace_violations(namespace: str, path: str = "namespace") -> list[FieldViolation]:
    """What is wrong with `namespace` as a namespace name (nothing: an empty list)."""
    if not namespace:
        return [FieldViolation(path, f"required: {NAMESPACE_RULE}")]
    if _NAMESPACE.fullmatch(namespace) is None:
        return [FieldViolation(path, f"must be {NAMESPACE_RULE}")]
    return []


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
    ) -> None:
        super().__init__(place, memory=default_memory, episodes=episodes, max_open=max_open)

    def memory_violations(self, memory: str) -> list[FieldViolation]:
        """What is wrong with `memory` as a memory name ("" is the default)."""
        problem = self.memory_problem(memory) if memory else None
        return [] if problem is None else [FieldViolation("memory", problem)]

    def open(self, namespace: str, memory: str) -> OpenNamespace:
        """The namespace's messages, opened now with `memory` ("" for the default) if they were
        not open. With `max_open` they may be closed as soon as this returns: a call uses
        `using`."""
        with self.using(namespace, memory) as opened:
            assert opened is not None
            return opened

    using = NamespaceStores.messages
    """`messages`, under the name the servicer calls it by."""

    @contextmanager
    def episode_store(self, namespace: str, *, create: bool = True) -> Iterator[EpisodeStore]:
        """The namespace's episode store, held while the block runs; an empty one, kept
        nowhere, when the namespace has none and `create` is False (a read: nothing is made)."""
        with self.episodes(namespace, create=create) as store:
            yield store if store is not None else InProcessEpisodes()
