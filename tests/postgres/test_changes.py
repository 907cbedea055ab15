"""A server over PostgreSQL applies another server's deletes and corrections in place, from the
change log, and then holds exactly what reading the namespace anew gives: the same hits with the
same scores, the same listings. Two memories over one database stand for two servers."""

import random
import uuid
from collections.abc import Iterator

import pytest

from himga.data import Message, Session
from himga.memory import PostgresKeywordMemory
from himga.memory import postgres as postgres_memory
from himga.memory.base import Hit, StoredMessage
from himga.memory.filters import MessageFilter
from himga.storage.postgres import Database

WORDS = ["kayak", "lake", "paddles", "sunset", "boat", "pottery", "mug", "dog", "frisbee"]
SPEAKERS = ["Ada", "Bruno", "Cleo Park"]
SESSIONS = ["s0", "s1", "s2", "s3"]
IDS = [f"t{n}" for n in range(40)]
QUERIES = ["kayak lake", "sunset boat dog", "pottery mug", "Ada frisbee", "Cleo paddles"]


@pytest.fixture
def read_anew(monkeypatch: pytest.MonkeyPatch) -> list[PostgresKeywordMemory]:
    """The memories that read their namespace anew, once a time they did."""
    calls: list[PostgresKeywordMemory] = []
    read = PostgresKeywordMemory._read_anew

    def counted(self: PostgresKeywordMemory) -> None:
        calls.append(self)
        read(self)

    monkeypatch.setattr(PostgresKeywordMemory, "_read_anew", counted)
    return calls


def said(rng: random.Random, turn_id: str) -> tuple[Message, Session]:
    text = " ".join(rng.choices(WORDS, k=rng.randint(0, 6)))
    message = Message(
        role=rng.choice(SPEAKERS),
        content=text,
        turn_id=turn_id,
        metadata={"mood": rng.choice(["calm", "glad"])} if rng.random() < 0.3 else {},
    )
    return message, Session(session_id=rng.choice(SESSIONS))


def listed(memory: PostgresKeywordMemory, chosen: MessageFilter | None) -> list[StoredMessage]:
    messages: list[StoredMessage] = []
    token = ""
    while True:
        page = memory.list(filter=chosen, page_size=7, page_token=token)
        messages.extend(page.messages)
        token = page.next_page_token
        if not token:
            return messages


def seen(memory: PostgresKeywordMemory) -> tuple[list[list[Hit]], list[list[StoredMessage]]]:
    """What a user reads of a memory: hits (with scores) and listings, filtered or not."""
    chosen = MessageFilter(session_ids=["s1", "s2"])
    hits = [memory.search(query, limit=20) for query in QUERIES]
    hits += [memory.search(query, limit=5, filter=chosen) for query in QUERIES]
    return hits, [listed(memory, None), listed(memory, chosen)]


@pytest.fixture
def pair(database: Database) -> Iterator[tuple[PostgresKeywordMemory, PostgresKeywordMemory]]:
    """A writer and a follower over one new namespace."""
    namespace = f"changes-{uuid.uuid4().hex}"
    writer = PostgresKeywordMemory(database, namespace)
    follower = PostgresKeywordMemory(database, namespace)
    yield writer, follower
    writer.close()
    follower.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_follower_applies_changes_as_a_fresh_read_does(
    database: Database,
    pair: tuple[PostgresKeywordMemory, PostgresKeywordMemory],
    read_anew: list[PostgresKeywordMemory],
    seed: int,
) -> None:
    rng = random.Random(seed)
    writer, follower = pair
    looks, expected_reads, reset_since = 0, 1, False
    follower.search("kayak")  # its first look reads the (empty) namespace
    for _ in range(250):
        step = rng.random()
        if step < 0.45:  # new ids and stored ones (corrections) in one batch
            writer.store([said(rng, turn_id) for turn_id in rng.sample(IDS, rng.randint(1, 5))])
        elif step < 0.7:
            writer.delete(rng.sample(IDS, rng.randint(1, 3)))
        elif step < 0.8:
            writer.delete(filter=MessageFilter(session_ids=[rng.choice(SESSIONS)]))
        elif step < 0.82:
            writer.reset()
            reset_since = True
        else:  # searches on the writer interleave with its writes
            writer.search(rng.choice(QUERIES))
        if rng.random() < 0.4:  # the follower looks after one or several writes
            fresh = PostgresKeywordMemory(database, writer.namespace)
            assert seen(follower) == seen(fresh) == seen(writer)
            fresh.close()
            looks += 1
            expected_reads += reset_since
            reset_since = False
    assert looks > 50
    # Its first look and once after a reset: every delete and correction came from the log.
    assert read_anew.count(follower) == expected_reads


def test_rows_appended_then_changed_are_read_as_they_are_now(
    database: Database,
    pair: tuple[PostgresKeywordMemory, PostgresKeywordMemory],
    read_anew: list[PostgresKeywordMemory],
) -> None:
    writer, follower = pair
    writer.store([(Message(role="Ada", content="boat", turn_id="a"), Session(session_id="s"))])
    assert [hit.turn_id for hit in follower.search("boat")] == ["a"]
    # Appended past what the follower holds, then corrected and partly deleted.
    writer.store([(Message(role="Ada", content="kayak", turn_id="b"), Session(session_id="u"))])
    writer.store([(Message(role="Ada", content="frisbee", turn_id="c"), Session(session_id="u"))])
    writer.store([(Message(role="Ada", content="lake dog", turn_id="b"), Session(session_id="u"))])
    writer.delete(["c"])
    fresh = PostgresKeywordMemory(database, writer.namespace)
    assert seen(follower) == seen(fresh)
    assert [hit.turn_id for hit in follower.search("lake")] == ["b"]
    assert follower.search("frisbee") == []
    assert read_anew.count(follower) == 1


def test_a_follower_behind_the_log_reads_anew(
    database: Database,
    pair: tuple[PostgresKeywordMemory, PostgresKeywordMemory],
    read_anew: list[PostgresKeywordMemory],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(postgres_memory, "CHANGES_KEPT", 2)
    writer, follower = pair
    rng = random.Random(7)
    writer.store([said(rng, turn_id) for turn_id in IDS[:10]])
    follower.list()
    writer.delete(IDS[:1])
    writer.delete(IDS[1:2])
    follower.list()  # two changes back: the log still holds them
    assert read_anew.count(follower) == 1
    for turn_id in IDS[2:5]:
        writer.delete([turn_id])
    fresh = PostgresKeywordMemory(database, writer.namespace)
    assert seen(follower) == seen(fresh)  # three back: the oldest is gone, so it read anew
    assert read_anew.count(follower) == 2
