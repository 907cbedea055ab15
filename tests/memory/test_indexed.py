"""The keyword-memory skeleton (himga.memory.indexed) keeps its promises over every store engine
under it (in process, SQLite, PostgreSQL): a write no longer wanted when it would commit stores
nothing, and a write committed but not placed in the index is read in again on the next call."""

import uuid
from collections.abc import Callable, Iterator

import pytest

from himga.data import Message, Session
from himga.memory.commit import CallerGone, Terms, committing
from himga.memory.derived import DerivedIndex
from himga.memory.indexed import IndexedMemory
from himga.memory.registry import memory_factory, memory_names, open_memory
from himga.storage.place import Place

INDEXED = [
    name
    for name in memory_names()
    if issubclass(getattr(memory_factory(name), "__self__", object), IndexedMemory)
]


def said(turn_id: str, content: str) -> tuple[Message, Session]:
    return Message(role="Ada", content=content, turn_id=turn_id), Session(session_id="s")


def gone() -> None:
    raise CallerGone("the caller went away")


@pytest.fixture(params=INDEXED)
def new(
    request: pytest.FixtureRequest, place_of: Callable[[str], Place]
) -> Iterator[Callable[[], IndexedMemory]]:
    """Memories of one engine, each in a namespace of its own."""
    made: list[IndexedMemory] = []

    def make() -> IndexedMemory:
        namespace = f"indexed-{uuid.uuid4().hex}"
        memory = open_memory(request.param, namespace, place_of(request.param))
        assert isinstance(memory, IndexedMemory)
        made.append(memory)
        return memory

    yield make
    for memory in made:
        memory.close()


@pytest.fixture
def memory(new: Callable[[], IndexedMemory]) -> IndexedMemory:
    return new()


def listed(memory: IndexedMemory) -> list[str]:
    return [message.id for message in memory.list().messages]


def test_every_keyword_engine_is_the_one_skeleton() -> None:
    assert {"keyword", "sqlite", "postgres"} <= set(INDEXED)


def test_a_write_not_wanted_at_its_commit_stores_nothing(memory: IndexedMemory) -> None:
    memory.store([said("a", "kayak on the lake")])
    with committing(Terms(gone)):
        with pytest.raises(CallerGone):
            memory.store([said("b", "kayak at sunset"), said("a", "pottery")])
        with pytest.raises(CallerGone):
            memory.delete(["a"])
        memory.reset()  # a reset asks no one
    memory.store([said("a", "kayak on the lake")])
    with committing(Terms(gone)), pytest.raises(CallerGone):
        memory.store([said("b", "kayak at sunset"), said("a", "pottery")])
    assert [hit.turn_id for hit in memory.search("kayak")] == ["a"]
    assert memory.search("pottery") == []
    assert listed(memory) == ["a"]
    with committing(Terms(gone)), pytest.raises(CallerGone):
        memory.delete(["a"])
    assert listed(memory) == ["a"]


def test_a_write_committed_but_not_placed_is_read_in_again(
    new: Callable[[], IndexedMemory], monkeypatch: pytest.MonkeyPatch
) -> None:
    memory, unbroken = new(), new()
    for each in (memory, unbroken):
        each.store([said("a", "kayak on the lake"), said("b", "pottery class")])
    unbroken.store([said("c", "sunset"), said("a", "kayak at dawn")])
    unbroken.delete(["b"])
    for broken in ("place", "drop"):
        with monkeypatch.context() as patched:
            patched.setattr(DerivedIndex, broken, lambda *args: 1 / 0)
            with pytest.raises(ZeroDivisionError):
                if broken == "place":
                    memory.store([said("c", "sunset"), said("a", "kayak at dawn")])
                else:
                    memory.delete(["b"])
    # Both writes committed: the next call reads the store in again and sees them, as a
    # memory that made the same writes unbroken does, down to the scores.
    hits = memory.search("kayak pottery sunset dawn")
    assert {hit.content for hit in hits} == {"sunset", "kayak at dawn"}
    assert hits == unbroken.search("kayak pottery sunset dawn")
    assert listed(memory) == listed(unbroken) == ["a", "c"]
