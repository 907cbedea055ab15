"""Every episode store under one fixture: in-process, SQLite, PostgreSQL, and remote (over a
real server)."""

import uuid
from collections.abc import Callable, Iterator

import pytest

from himga.episodes.base import EpisodeStore
from himga.episodes.registry import open_store, store_names
from himga.service import RemoteEpisodes
from himga.storage.place import Place

STORES = [*store_names(), "remote"]

NewStore = Callable[[], EpisodeStore]


@pytest.fixture(params=STORES)
def new_store(
    request: pytest.FixtureRequest, place_of: Callable[[str], Place], memory_server: str
) -> Iterator[NewStore]:
    """Makes stores of one kind, each in a namespace of its own (as a server's are)."""
    made: list[EpisodeStore] = []

    def new() -> EpisodeStore:
        namespace = f"episodes-{uuid.uuid4().hex}"
        if request.param == "remote":
            store: EpisodeStore = RemoteEpisodes(memory_server, namespace)
        else:
            store = open_store(request.param, namespace, place_of(request.param))
        made.append(store)
        return store

    yield new
    for store in made:
        store.close()


@pytest.fixture
def store(new_store: NewStore) -> EpisodeStore:
    return new_store()
