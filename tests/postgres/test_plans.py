"""Search uses indexes, not scans: the one query a search makes of the messages' table (its hits,
by number) is answered from the primary key, on a namespace of 20k messages. (The other, its
namespace's counters, reads one row of a table that holds one per namespace.)"""

import uuid

from himga.data import Message, Session
from himga.memory import PostgresKeywordMemory
from himga.memory import postgres as memory_module
from himga.storage.postgres import Database


def plan(database: Database, query: str, values: tuple[object, ...]) -> str:
    with database.transaction() as connection:
        rows = connection.execute(f"EXPLAIN {query}", values).fetchall()
    return "\n".join(row[0] for row in rows)


def test_a_search_reads_its_hits_by_primary_key(database: Database) -> None:
    memory = PostgresKeywordMemory(database, f"plans-{uuid.uuid4().hex}")
    words = ["kayak", "lake", "pottery", "sunset", "mug", "dog", "frisbee", "paddle"]
    memory.store(
        [
            (
                Message(role="Ada", content=f"{words[n % 8]} {words[n * 7 % 8]} {n}"),
                Session(session_id=f"s{n // 20}"),
            )
            for n in range(20_000)
        ]
    )
    with database.transaction() as connection:
        connection.execute("ANALYZE himga_messages")
        connection.execute("ANALYZE himga_namespaces")
    hits = memory.search("kayak sunset", limit=10)
    assert len(hits) == 10
    numbers = list(range(100, 110))
    fetch = plan(
        database,
        memory_module.HITS,
        (memory.namespace_id, numbers),
    )
    assert "Index Scan using himga_messages_pkey" in fetch and "Seq Scan" not in fetch, fetch
