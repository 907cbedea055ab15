"""What the PostgreSQL pool does with what the database refuses or holds back: text it cannot
store is the caller's INVALID_ARGUMENT, a namespace's row held by a peer that stopped answering
ends the wait with UNAVAILABLE instead of a hang, and no secret of the connection string reaches
a message or the log."""

import uuid

import psycopg
import pytest

from himga.data import Message, Session
from himga.errors import DatabaseUnavailable
from himga.memory.postgres import PostgresKeywordMemory
from himga.service import RemoteMemory
from himga.service.errors import InvalidRequest
from himga.storage import postgres as pool_module
from himga.storage.postgres import Database, redacted
from tests.postgres_cluster import Postgres


@pytest.mark.parametrize(
    "message",
    [
        Message(role="user", content="a NUL \x00 inside"),
        Message(role="user", content="fine", turn_id="id-\x00"),
    ],
    ids=["content", "turn_id"],
)
def test_text_postgresql_cannot_hold_is_invalid_argument_and_nothing_is_stored(
    postgres_memory_server: str, message: Message
) -> None:
    with RemoteMemory(postgres_memory_server, f"nul-{uuid.uuid4().hex}") as memory:
        with pytest.raises(InvalidRequest) as refused:
            memory.store([(message, Session(session_id="s1"))])
        assert "NUL character (U+0000)" in str(refused.value)
        assert memory.list().messages == []
        memory.store([(Message(role="user", content="still serving"), Session(session_id="s1"))])
        assert [m.content for m in memory.list().messages] == ["still serving"]


def test_a_row_held_by_a_stalled_peer_ends_the_wait_unavailable(
    postgres: Postgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool_module, "LOCK_SECONDS", 1)
    with Database(postgres.url, min_size=1, max_size=2) as database:
        memory = PostgresKeywordMemory(database, "held-row")
        with psycopg.connect(postgres.url) as peer:  # a writer that stopped mid-transaction
            peer.execute("SELECT 1 FROM himga_namespaces WHERE name = 'held-row' FOR UPDATE")
            with pytest.raises(DatabaseUnavailable, match="lock timeout"):
                memory.store([(Message(role="user", content="x"), Session(session_id="s"))])
        memory.store([(Message(role="user", content="kayak"), Session(session_id="s"))])
        assert [hit.content for hit in memory.search("kayak")] == ["kayak"]  # the row let go


def test_no_secret_of_the_connection_string_is_shown() -> None:
    url = (
        "postgresql://himga:hunter2@db1:5433,db2/himga?sslpassword=keypass"
        "&target_session_attrs=read-write&sslmode=require"
    )
    shown = redacted(url)
    assert "hunter2" not in shown and "keypass" not in shown
    for part in ("db1,db2", "5433", "dbname=himga", "user=himga", "read-write", "require"):
        assert part in shown
