"""create_server: what a started server offers beside MemoryService, and what it refuses."""

from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from himga.data.conversation import Message, Session
from himga.memory.registry import DEFAULT_MEMORY
from himga.service import RemoteMemory, create_server
from himga.service.server import SERVICE_NAME


@pytest.mark.parametrize("service", ["", SERVICE_NAME])
def test_health_check_is_serving(listing_server: str, service: str) -> None:
    with grpc.insecure_channel(listing_server) as channel:
        response = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service)
        )
    assert response.status == health_pb2.HealthCheckResponse.SERVING


def test_reflection_lists_and_describes_the_service(listing_server: str) -> None:
    with grpc.insecure_channel(listing_server) as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        services = set(database.get_services())
        assert {SERVICE_NAME, "grpc.health.v1.Health"} <= services
        file = database.FindFileContainingSymbol(SERVICE_NAME)
    methods = {m.name for s in file.service for m in s.method}
    assert methods == {"Ingest", "IngestBatch", "Retrieve", "Reset", "Delete", "ListMessages"}


def test_unknown_default_memory_is_refused_at_start() -> None:
    with pytest.raises(ValueError, match="unknown memory 'no-such-memory'"):
        create_server("127.0.0.1:0", memory="no-such-memory")


def test_stop_marks_health_not_serving_and_stops() -> None:
    server, port = create_server("127.0.0.1:0", memory="null")
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        health = health_pb2_grpc.HealthStub(channel)
        assert health.Check(health_pb2.HealthCheckRequest()).status == (
            health_pb2.HealthCheckResponse.SERVING
        )
        server.stop(None).wait()
        with pytest.raises(grpc.RpcError) as caught:
            health.Check(health_pb2.HealthCheckRequest())
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE


def test_the_default_memory_keeps_a_namespace_across_a_restart(tmp_path: Path) -> None:
    """The issue's default is the durable store: a Retrieve after a restart finds the data."""
    message = Message(role="Caroline", content="I adopted a greyhound", turn_id="D1:1")
    for restarted in (False, True):
        server, port = create_server("127.0.0.1:0", memory=DEFAULT_MEMORY, data_dir=tmp_path)
        try:
            with RemoteMemory(f"127.0.0.1:{port}", "agent-7") as memory:
                if not restarted:
                    memory.ingest(message, Session(session_id="s1"))
                hits = memory.search("greyhound")
        finally:
            server.stop(None).wait()
        assert [hit.turn_id for hit in hits] == ["D1:1"], f"restarted={restarted}"


def test_stop_closes_the_namespaces_databases(tmp_path: Path) -> None:
    """A stopped server leaves its data directory closed: SQLite folds the write-ahead log back
    into the database and removes it when the last connection closes."""
    server, port = create_server("127.0.0.1:0", memory="sqlite", data_dir=tmp_path)
    try:
        with RemoteMemory(f"127.0.0.1:{port}", "agent-8") as memory:
            memory.ingest(Message(role="user", content="hello"), Session(session_id="s1"))
        assert list(tmp_path.rglob("*.sqlite3-wal")), "an open WAL database while serving"
    finally:
        server.stop(None).wait()
    assert list(tmp_path.rglob("*.sqlite3"))
    assert not list(tmp_path.rglob("*.sqlite3-wal"))
