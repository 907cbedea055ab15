"""Every episode store under one fixture: in-process, SQLite, PostgreSQL, and remote (over a
real server, by its gRPC port and by its HTTP port)."""

import uuid
from collections.abc import Callable, Iterator

import pytest

from himga.episodes.base import EpisodeStore
from himga.episodes.registry import open_store, store_names
from himga.service import RemoteEpisodes
from himga.storage.place import Place
from tests.conftest import HTTP_PORTS
from tests.http.connect_stub import ConnectStub

STORES = [*store_names(), "remote", "http"]

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
        elif request.param == "http":  # RemoteEpisodes' calls over the server's HTTP port
            remote = RemoteEpisodes(memory_server, namespace)
            remote._stub = ConnectStub(HTTP_PORTS[memory_server], "EpisodeService")  # type: ignore[assignment]
            store = remote
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


@pytest.fixture(params=store_names())
def local_store(
    request: pytest.FixtureRequest, place_of: Callable[[str], Place]
) -> Iterator[EpisodeStore]:
    """A store of each kind kept in this process (not through a server): for what the process
    that holds a store decides, such as a write whose caller has gone."""
    store = open_store(request.param, f"episodes-{uuid.uuid4().hex}", place_of(request.param))
    try:
        yield store
    finally:
        store.close()
