"""The BaseMemory contract, run against every memory the registry knows, in-process and remote.

Each registry memory runs twice: made by its factory in this process, and as a RemoteMemory
over a real server on 127.0.0.1 that opens the namespace with that memory. A memory added to the
registry joins this suite by itself. The seed's five contracts come first, then what users rely
on beyond them: what was ingested is found, namespaces are isolated, and concurrent ingests from
several threads lose nothing.
"""

import itertools
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from himga.data.conversation import Message, Session
from himga.memory.base import BaseMemory, Hit
from himga.memory.registry import memory_factory, memory_names
from himga.service import RemoteMemory

# Memories that keep nothing by design; every other memory must find what it stored. New
# memories are taken to store, so one that silently does not fails here until listed.
NON_STORING = {"null"}

MEMORIES = [
    pytest.param((name, remote), id=f"{'remote' if remote else 'local'}-{name}")
    for name in memory_names()
    for remote in (False, True)
]


@dataclass
class Kind:
    """One kind of memory under test: `new()` makes one in a fresh namespace."""

    new: Callable[[], BaseMemory]
    stores: bool


@pytest.fixture(params=MEMORIES)
def kind(request: pytest.FixtureRequest, tmp_path: Path, memory_server: str) -> Iterator[Kind]:
    """Memories of one kind; in-process ones share one data directory, as a server's do."""
    name, remote = request.param
    made: list[RemoteMemory] = []

    def new() -> BaseMemory:
        namespace = f"contract-{uuid.uuid4().hex}"
        if not remote:
            return memory_factory(name)(namespace, tmp_path)
        memory = RemoteMemory(memory_server, namespace, memory=name)
        made.append(memory)
        return memory

    yield Kind(new, stores=name not in NON_STORING)
    for memory in made:
        memory.close()


_words = ("".join(letters) for letters in itertools.product("bcdfghjklmnpqrstvwxz", repeat=4))


def unique_word() -> str:
    """A made-up word no other message of the run holds (letters only: tokenisers keep it)."""
    return "quo" + next(_words)


def said(word: str, turn_id: str = "D1:1", session_id: str = "s1") -> tuple[Message, Session]:
    """A message holding `word`, in a dated session."""
    return (
        Message(
            role="Caroline", content=f"I keep thinking about {word} these days.", turn_id=turn_id
        ),
        Session(session_id=session_id, date_str="1:56 pm on 8 May, 2023"),
    )


# The seed's five contracts.


def test_empty_query_returns_a_string(kind: Kind) -> None:
    memory = kind.new()
    assert memory.retrieve("") == ""
    memory.ingest(*said(unique_word()))
    assert isinstance(memory.retrieve(""), str)


def test_reset_forgets_everything_ingested(kind: Kind) -> None:
    memory = kind.new()
    words = [unique_word() for _ in range(5)]
    for i, word in enumerate(words):
        memory.ingest(*said(word, turn_id=f"D1:{i}"))
    memory.reset()
    for word in words:
        assert memory.retrieve(word) == ""
        assert memory.search(word) == []
    assert memory.retrieve(" ".join(words)) == ""


def test_memory_works_after_reset(kind: Kind) -> None:
    memory = kind.new()
    old, new = unique_word(), unique_word()
    memory.ingest(*said(old))
    memory.reset()
    memory.ingest(*said(new, turn_id="D2:1"))
    assert old not in memory.retrieve(old)
    if kind.stores:
        assert new in memory.retrieve(new)


def test_instances_are_independent(kind: Kind) -> None:
    first, second = kind.new(), kind.new()
    word = unique_word()
    first.ingest(*said(word))
    assert second.retrieve(word) == ""
    assert second.search(word) == []
    second.reset()
    if kind.stores:
        assert word in first.retrieve(word)


@pytest.mark.parametrize(
    "query",
    ["", "   ", "hiking", "What did Caroline say?", '"unbalanced (quote* AND OR NOT:', "王小明 🌤️"],
)
def test_retrieve_returns_a_str(kind: Kind, query: str) -> None:
    memory = kind.new()
    memory.ingest(*said(unique_word()))
    assert type(memory.retrieve(query)) is str


# Beyond the seed.


def test_retrieve_after_ingest_finds_the_content(kind: Kind) -> None:
    memory = kind.new()
    word = unique_word()
    memory.ingest(*said(unique_word(), turn_id="D1:1"))
    memory.ingest(*said(word, turn_id="D1:2", session_id="s2"))
    if kind.stores:
        assert word in memory.retrieve(word)
    else:
        assert memory.retrieve(word) == ""


def test_search_and_recall_keep_their_limit_and_agree(kind: Kind) -> None:
    memory = kind.new()
    word = unique_word()
    count = memory.ingest_many(said(word, turn_id=f"D1:{i}") for i in range(15))
    assert count == 15
    hits = memory.search(word, limit=4)
    # A memory that stores finds all 15 and gives exactly the 4 asked for; one that stores
    # nothing has none to give.
    assert len(hits) == (4 if kind.stores else 0)
    assert all(isinstance(hit, Hit) for hit in hits)
    context, recalled = memory.recall(word, limit=4)
    assert context == memory.retrieve(word)
    assert recalled == hits
    assert memory.search(word, limit=0) == []
    assert memory.recall(word, limit=0) == (context, [])
    for hit in hits:
        assert (hit.role, hit.session_id, hit.date_str) == (
            "Caroline",
            "s1",
            "1:56 pm on 8 May, 2023",
        )
        assert word in hit.content


def test_concurrent_ingest_loses_nothing(kind: Kind) -> None:
    memory = kind.new()
    threads, per_thread = 8, 25
    words = [[unique_word() for _ in range(per_thread)] for _ in range(threads)]

    def ingest_all(thread: int) -> None:
        for i, word in enumerate(words[thread]):
            memory.ingest(*said(word, turn_id=f"D{thread}:{i}", session_id=f"s{thread}"))

    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(ingest_all, range(threads)))  # re-raises any thread's error
    if kind.stores:
        missing = [w for row in words for w in row if w not in memory.retrieve(w)]
        assert missing == []
