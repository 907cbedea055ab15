"""The hybrid memory over PostgreSQL (himga.memory.hybrid_postgres), with the real default
model: vectors stored with their messages in the write's transaction, every server holding the
same index (two memories over one database stand for two servers: one reads in what the other
appended, corrected and deleted, by the change log, and then answers as one that read the
namespace anew), another model's namespace refused and `himga reembed --database` embedding it
again, and a namespace without vectors (a keyword one's rows) embedded when it opens."""

import signal
import subprocess
import sys
import uuid
from collections.abc import Sequence

import numpy as np
import pytest

from himga.cli import main
from himga.data import Message, Session
from himga.errors import IncompatibleStoreError
from himga.memory.fusion import passage
from himga.memory.hybrid_options import HybridOptions
from himga.memory.hybrid_postgres import HybridPostgresMemory
from himga.memory.registry import open_memory
from himga.storage.postgres import Database, recorded_memory
from tests.killed import acknowledged_until_killed
from tests.other_model import use_other_model

SESSION = Session(session_id="s1", date_str="1:56 pm on 8 May, 2023")
SAID = [
    Message(role="Caroline", content="I went to an LGBTQ support group.", turn_id="C1"),
    Message(role="Melanie", content="I like green tea in the morning.", turn_id="M1"),
    Message(role="Caroline", content="The sunset over the lake was gorgeous.", turn_id="C2"),
    Message(role="Melanie", content="My kids start school next week.", turn_id="M2"),
    Message(role="Melanie", content="", turn_id="E1"),
]
QUERIES = ["what beverage do I prefer?", "Where did Caroline go?", "Does Melanie have a pet?"]


def namespace() -> str:
    return f"hybrid-{uuid.uuid4().hex}"


def opened(
    database: Database, name: str, options: HybridOptions | None = None
) -> HybridPostgresMemory:
    recorded_memory(database, name, "hybrid")
    return HybridPostgresMemory(database, name, options)


def vectors(database: Database, name: str) -> dict[int, np.ndarray]:
    with database.transaction() as connection:
        rows = connection.execute(
            "SELECT v.number, v.vector FROM himga_vectors v "
            "JOIN himga_namespaces n ON n.id = v.namespace WHERE n.name = %s",
            (name,),
        ).fetchall()
    return {number: np.frombuffer(bytes(blob), dtype="<f4") for number, blob in rows}


def answers(
    memory: HybridPostgresMemory, queries: Sequence[str] = QUERIES
) -> list[list[tuple[str, float]]]:
    return [[(hit.turn_id, hit.score) for hit in memory.search(query, 10)] for query in queries]


def test_vectors_are_stored_with_their_messages_and_go_with_them(database: Database) -> None:
    name = namespace()
    memory = opened(database, name)
    memory.store([(message, SESSION) for message in SAID])
    stored = vectors(database, name)
    assert sorted(stored) == [0, 1, 2, 3]  # the empty text has none
    expected = memory.embedder.embed_passages([passage(SAID[1].role, SAID[1].content)])[0]
    assert np.allclose(stored[1], expected, atol=1e-6)
    assert memory.search("what beverage do I prefer?", 3)[0].turn_id == "M1"
    memory.store([(Message(role="Melanie", content="I adopted a cat.", turn_id="M1"), SESSION)])
    again = memory.embedder.embed_passages(["Melanie: I adopted a cat."])[0]
    assert np.allclose(vectors(database, name)[1], again, atol=1e-6)
    assert memory.delete(["C1"]) == 1
    assert 0 not in vectors(database, name)
    memory.reset()
    assert vectors(database, name) == {}
    memory.close()


def test_every_server_holds_the_vectors_the_others_wrote(database: Database) -> None:
    name = namespace()
    writer, reader = opened(database, name), opened(database, name)
    assert reader.search("what beverage do I prefer?") == []
    writer.store([(message, SESSION) for message in SAID])
    assert reader.search("what beverage do I prefer?", 3)[0].turn_id == "M1"
    writer.store([(Message(role="Melanie", content="I adopted a cat.", turn_id="M1"), SESSION)])
    writer.store([(Message(role="Caroline", content="", turn_id="C2"), SESSION)])
    writer.delete(["C1"])
    assert reader.search("Does Melanie have a pet?", 3)[0].turn_id == "M1"
    fresh = opened(database, name)  # reads the namespace anew
    assert answers(reader) == answers(fresh) == answers(writer)
    held = [[key in memory._vectors.vectors for key in range(6)] for memory in (reader, fresh)]
    assert held[0] == held[1] == [False, True, False, True, False, False]
    for memory in (writer, reader, fresh):
        memory.close()


@pytest.fixture
def other_model(monkeypatch: pytest.MonkeyPatch) -> str:
    return use_other_model(monkeypatch)


def test_another_models_namespace_is_refused_and_reembed_embeds_it_again(
    database: Database, postgres: object, other_model: str, capsys: pytest.CaptureFixture[str]
) -> None:
    name = namespace()
    written = opened(database, name, HybridOptions(embedding_model=other_model))
    written.store([(message, SESSION) for message in SAID])
    with pytest.raises(IncompatibleStoreError) as refused:
        opened(database, name)
    assert "other-model:0" in str(refused.value)
    assert f"himga reembed --database URL --namespace {name} --embedding-model" in str(
        refused.value
    )
    url = postgres.url  # type: ignore[attr-defined]
    argv = ["reembed", "--database", url, "--namespace", name, "--embedding-model"]
    assert main([*argv, HybridOptions().embedding_model]) == 0
    assert "4 vectors deleted, 4 messages embedded" in capsys.readouterr().out
    with pytest.raises(IncompatibleStoreError, match="embedded again"):
        written.search("what beverage do I prefer?")  # a server still on the old model
    memory = opened(database, name)
    assert memory.embedded_at_open == 0
    assert memory.search("what beverage do I prefer?", 3)[0].turn_id == "M1"
    memory.close()
    written.close()


def test_a_namespace_whose_vectors_are_of_another_width_is_refused_naming_the_command(
    database: Database,
) -> None:
    # The model's id, another dimension: an endpoint's model name served at another size.
    name = namespace()
    written = opened(database, name)
    written.store([(message, SESSION) for message in SAID])
    written.close()
    with database.transaction() as connection:
        connection.execute(
            "UPDATE himga_vectors SET vector = '\\x0000000000000000'::bytea WHERE namespace = "
            "(SELECT id FROM himga_namespaces WHERE name = %s)",
            (name,),
        )
    with pytest.raises(IncompatibleStoreError) as refused:
        opened(database, name)
    assert "its vectors have 2 dimensions" in str(refused.value)
    assert f"himga reembed --database URL --namespace {name}" in str(refused.value)


def test_a_namespace_of_the_keyword_kind_opens_with_every_turn_embedded(
    database: Database,
) -> None:
    name = namespace()
    with open_memory("postgres", name, database) as keyword:
        keyword.store([(message, SESSION) for message in SAID])
    memory = HybridPostgresMemory(database, name)
    assert memory.embedded_at_open == 4
    assert memory.search("what beverage do I prefer?", 3)[0].turn_id == "M1"
    assert HybridPostgresMemory(database, name).embedded_at_open == 0
    memory.close()


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_acknowledged_ingests_survive_sigkill_with_their_vectors(
    database: Database, postgres: object
) -> None:
    """A child server ingests batches without end and prints each once acknowledged; killed
    mid-stream, every acknowledged message is in the database with its vector."""
    name = namespace()
    url = postgres.url  # type: ignore[attr-defined]
    child = subprocess.Popen(
        [sys.executable, "-c", _WRITER, url, name], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    acknowledged = acknowledged_until_killed(child, 3)
    with database.transaction() as connection:
        numbers = {
            number
            for (number,) in connection.execute(
                "SELECT m.number FROM himga_messages m JOIN himga_namespaces n "
                "ON n.id = m.namespace WHERE n.name = %s",
                (name,),
            )
        }
    assert set(vectors(database, name)) == numbers and len(numbers) >= 3 * len(acknowledged)
    memory = HybridPostgresMemory(database, name)
    assert memory.embedded_at_open == 0
    for batch in acknowledged:
        assert f"T{batch}-1" in [hit.turn_id for hit in memory.search(f"beverage {batch}")]
    memory.close()


_WRITER = """
import sys
from himga.data import Message, Session
from himga.memory.hybrid_postgres import HybridPostgresMemory
from himga.storage.postgres import Database, recorded_memory

database = Database(sys.argv[1], min_size=1, max_size=2)
recorded_memory(database, sys.argv[2], "hybrid")
memory = HybridPostgresMemory(database, sys.argv[2])
session = Session(session_id="s1")
b = 0
while True:
    memory.store([
        (Message(role="Ada", content=f"batch {b}: the weather", turn_id=f"T{b}-0"), session),
        (Message(role="Ada", content=f"batch {b}: I drink tea", turn_id=f"T{b}-1"), session),
        (Message(role="Ada", content=f"batch {b}: my dog", turn_id=f"T{b}-2"), session),
    ])
    print(b, flush=True)
    b += 1
"""
