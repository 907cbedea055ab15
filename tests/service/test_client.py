"""RemoteMemory: the memory of a namespace in a server, used like an in-process BaseMemory."""

import re
import uuid

import grpc
import pytest

from himga.data.conversation import Message, Session
from himga.memory.base import BaseMemory, Hit
from himga.service import InvalidRequest, MemoryMismatch, RemoteMemory
from tests.ports import free_port
from tests.service.conftest import LISTING

SESSION = Session(session_id="s7", date_str="2023/05/20 (Sat) 02:21")


def remote(target: str, **options: object) -> RemoteMemory:
    return RemoteMemory(target, f"client-{uuid.uuid4().hex}", **options)  # type: ignore[arg-type]


def test_is_a_base_memory_that_answers_with_hits(listing_server: str) -> None:
    with remote(listing_server) as memory:
        assert isinstance(memory, BaseMemory)
        memory.ingest(Message(role="Melanie", content="I painted a lake", turn_id="D3:4"), SESSION)
        (made,) = memory.store([(Message(role="Caroline", content="no turn id here"), SESSION)])
        assert memory.retrieve("lake") == "Melanie: I painted a lake"
        expected = Hit("D3:4", "s7", "Melanie", "I painted a lake", "2023/05/20 (Sat) 02:21", 1.0)
        assert memory.search("lake") == [expected]
        assert memory.recall("lake", limit=5) == ("Melanie: I painted a lake", [expected])
        # A message without a turn_id is stored under an id the server made, and answered with.
        assert re.fullmatch("[0-9a-f]{32}", made)
        assert memory.search("turn id") == [
            Hit(made, "s7", "Caroline", "no turn id here", "2023/05/20 (Sat) 02:21", 1.0)
        ]


def test_search_keeps_the_limit(listing_server: str) -> None:
    with remote(listing_server) as memory:
        memory.ingest_many((Message(role="u", content=f"apple {i}"), SESSION) for i in range(30))
        assert len(memory.search("apple", limit=3)) == 3
        assert len(memory.search("apple")) == 10  # the default limit
        assert len(memory.search("apple", limit=1000)) == 30


def test_ingest_many_is_one_call_all_or_nothing(listing_server: str) -> None:
    with remote(listing_server) as memory:
        good = (Message(role="u", content="pear"), SESSION)
        bad = (Message.model_construct(role="", content="pear"), SESSION)  # skips local checks
        with pytest.raises(InvalidRequest) as caught:
            memory.ingest_many([good, bad])
        assert [v.field for v in caught.value.violations] == ["items[1].message.role"]
        assert memory.search("pear") == []
        assert memory.ingest_many([good, good]) == 2
        assert len(memory.search("pear")) == 2


def test_the_same_namespace_from_two_clients_is_one_memory(listing_server: str) -> None:
    namespace = f"shared-{uuid.uuid4().hex}"
    with RemoteMemory(listing_server, namespace) as a, RemoteMemory(listing_server, namespace) as b:
        a.ingest(Message(role="u", content="plum"), SESSION)
        assert b.retrieve("plum") == "u: plum"
        b.reset()
        assert a.retrieve("plum") == ""


def test_invalid_namespace_fails_before_any_call() -> None:
    with pytest.raises(InvalidRequest) as caught:
        RemoteMemory("127.0.0.1:1", "no spaces allowed")
    assert caught.value.violations[0].field == "namespace"
    assert isinstance(caught.value, ValueError)


def test_server_errors_become_himga_exceptions(listing_server: str) -> None:
    with (
        remote(listing_server, memory="no-such-memory") as memory,
        pytest.raises(InvalidRequest) as caught,
    ):
        memory.retrieve("x")
    assert [v.field for v in caught.value.violations] == ["memory"]
    assert "no-such-memory" in str(caught.value)

    namespace = f"mismatch-{uuid.uuid4().hex}"
    with (
        RemoteMemory(listing_server, namespace) as default,
        RemoteMemory(listing_server, namespace, memory="null") as other,
    ):
        default.ingest(Message(role="u", content="plum"), Session(session_id="s"))
        with pytest.raises(MemoryMismatch, match=LISTING):
            other.retrieve("x")


def test_unreachable_server_raises_unavailable() -> None:
    port = free_port()
    with (
        RemoteMemory(f"127.0.0.1:{port}", "nobody") as memory,
        pytest.raises(grpc.RpcError) as caught,
    ):
        memory.retrieve("x")
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE


def test_closed_memory_refuses_calls(listing_server: str) -> None:
    memory = remote(listing_server)
    memory.close()
    with pytest.raises(ValueError, match="closed channel"):
        memory.retrieve("x")
