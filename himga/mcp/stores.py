"""What the tools call: the memory and the episode store of one namespace, either embedded (in a
data directory, opened as `himga serve` opens a namespace, through the server's own opener, so
the namespace record its reads check is written and either door finds what the other wrote)
or kept by a running server (RemoteMemory and RemoteEpisodes). Both give the interfaces every
himga memory and store implement, so the tools never know which they hold.

A tool asks for the memory with `create`: a write makes the namespace, a read or a forget of a
namespace that does not exist opens nothing and finds nothing (as the server's Retrieve and
Delete do). Embedded calls to one namespace run one at a time (memories need not be
thread-safe; the server takes the same lock). Nothing of the stores is imported until they are
opened (`Opening`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from himga.episodes.base import EpisodeStore
    from himga.memory.base import BaseMemory
    from himga.service.episode_stores import EpisodeStores
    from himga.service.namespaces import Namespaces


class Stores(Protocol):
    kept: bool
    """Whether what they hold outlives the process (a data directory, or a server)."""

    def memory(self, *, create: bool) -> AbstractContextManager[BaseMemory | None]:
        """The namespace's memory while the block runs; None when `create` is False and the
        namespace does not exist."""
        ...

    def episodes(self) -> EpisodeStore: ...

    def close(self) -> None: ...


class Embedded:
    """A namespace of a data directory (None: kept in memory, gone at exit), opened by the
    server's opener (himga.service.namespaces, himga.service.episode_stores)."""

    def __init__(self, namespaces: Namespaces, episodes: EpisodeStores, namespace: str):
        self.namespaces = namespaces
        self.episode_stores = episodes
        self.namespace = namespace
        self.kept = namespaces.place is not None

    @contextmanager
    def memory(self, *, create: bool) -> Iterator[BaseMemory | None]:
        with self.namespaces.using(self.namespace, "", create=create) as opened:
            if opened is None:
                yield None
                return
            with opened.lock:
                yield opened.memory

    def episodes(self) -> EpisodeStore:
        return self.episode_stores.open(self.namespace)

    def close(self) -> None:
        self.namespaces.close()
        self.episode_stores.close()


class Remote:
    """A namespace of a running server."""

    def __init__(self, memory: BaseMemory, episodes: EpisodeStore) -> None:
        self._memory = memory
        self._episodes = episodes
        self.kept = True

    @contextmanager
    def memory(self, *, create: bool) -> Iterator[BaseMemory | None]:
        yield self._memory  # the server opens, or not, as its calls do

    def episodes(self) -> EpisodeStore:
        return self._episodes

    def close(self) -> None:
        self._memory.close()
        self._episodes.close()


class Opening:
    """Stores opened by `make` on first use (once, whoever asks first), so that a server
    answers `initialize` before it imports or opens any of them. `kept` is known before."""

    def __init__(self, make: Callable[[], Stores], kept: bool) -> None:
        self._make = make
        self._opened: Stores | None = None
        self._lock = threading.Lock()
        self.kept = kept

    def opened(self) -> Stores:
        with self._lock:
            if self._opened is None:
                self._opened = self._make()
            return self._opened

    def memory(self, *, create: bool) -> AbstractContextManager[BaseMemory | None]:
        return self.opened().memory(create=create)

    def episodes(self) -> EpisodeStore:
        return self.opened().episodes()

    def close(self) -> None:
        with self._lock:
            if self._opened is not None:
                self._opened.close()


def embedded(
    namespace: str, data_dir: Path | None, memory: str | None = None, episodes: str | None = None
) -> Embedded:
    """The stores of `namespace` in `data_dir` (None: kept in memory, gone at exit), with the
    memory and episode store kinds named (None: the defaults `himga serve` uses); ValueError
    naming what is wrong with the namespace or the kinds."""
    from himga.episodes.registry import DEFAULT_STORE
    from himga.memory.registry import DEFAULT_MEMORY
    from himga.service.episode_stores import EpisodeStores
    from himga.service.namespaces import Namespaces, namespace_violations

    wrong = namespace_violations(namespace)
    if wrong:
        raise ValueError(f"--namespace {namespace!r}: {wrong[0].description}")
    return Embedded(
        Namespaces(memory or DEFAULT_MEMORY, data_dir),
        EpisodeStores(episodes or DEFAULT_STORE, data_dir),
        namespace,
    )


def remote(target: str, namespace: str, memory: str, token: str | None) -> Remote:
    """The stores of `namespace` in the server at `target` ("host:port")."""
    from himga.service import RemoteEpisodes, RemoteMemory

    return Remote(
        RemoteMemory(target, namespace, memory=memory, token=token),
        RemoteEpisodes(target, namespace, token=token),
    )
