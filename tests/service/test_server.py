"""create_server: what a started server offers beside its two services, and what it refuses."""

from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from himga.data.conversation import Message, Session
from himga.memory.registry import DEFAULT_MEMORY
from himga.records import EpisodeTrace
from himga.service import RemoteEpisodes, RemoteMemory, create_server
from himga.service.server import EPISODE_SERVICE_NAME, SERVICE_NAME


@pytest.mark.parametrize("service", ["", SERVICE_NAME, EPISODE_SERVICE_NAME])
def test_health_check_is_serving(listing_server: str, service: str) -> None:
    with grpc.insecure_channel(listing_server) as channel:
        response = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service)
        )
    assert response.status == health_pb2.HealthCheckResponse.SERVING


def test_reflection_lists_and_describes_both_services(listing_server: str) -> None:
    with grpc.insecure_channel(listing_server) as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        services = set(database.get_services())
        assert {SERVICE_NAME, EPISODE_SERVICE_NAME, "grpc.health.v1.Health"} <= services
        file = database.FindFileContainingSymbol(SERVICE_NAME)
    methods = {s.name: {m.name for m in s.method} for s in file.service}
    assert methods == {
        "MemoryService": {
            "Ingest",
            "IngestBatch",
            "Retrieve",
            "Reset",
            "Delete",
            "ListMessages",
            "ListNamespaces",
            "DeleteNamespace",
        },
        "EpisodeService": {
            "RecordEpisode",
            "RecordEpisodes",
            "GetEpisode",
            "DeleteEpisode",
            "ListEpisodes",
            "SearchEpisodes",
        },
    }


def test_reflection_serves_the_proto_comments(listing_server: str) -> None:
    """The reflected file carries its source info: each call's and field's comment, where the
    proto has it (grpcurl describe prints them)."""
    with grpc.insecure_channel(listing_server) as channel:
        file = ProtoReflectionDescriptorDatabase(channel).FindFileContainingSymbol(SERVICE_NAME)
    comments = {tuple(at.path): at.leading_comments for at in file.source_code_info.location}
    service = [s.name for s in file.service].index("MemoryService")
    methods = [m.name for m in file.service[service].method]
    retrieve = comments[(6, service, 2, methods.index("Retrieve"))]
    assert retrieve.startswith(" Recalls what a namespace holds about a query"), retrieve
    request = [m.name for m in file.message_type].index("RetrieveRequest")
    fields = [f.name for f in file.message_type[request].field]
    assert "At most this many hits" in comments[(4, request, 2, fields.index("limit"))]
    assert file.source_code_info.location[0].span  # spans too, as protoc writes them


def test_unknown_episode_store_is_refused_at_start() -> None:
    with pytest.raises(ValueError, match="unknown episode store 'no-such-store'"):
        create_server("127.0.0.1:0", episodes="no-such-store")


def test_reflection_v1_lists_itself_and_resolves_every_method(listing_server: str) -> None:
    """v1 speaks v1alpha's messages under another name (himga.service.reflection)."""
    method = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
    with grpc.insecure_channel(listing_server) as channel:
        call = channel.stream_stream(
            method,
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )
        names = [f"{SERVICE_NAME}.{m}" for m in ("Ingest", "IngestBatch", "Retrieve", "Reset")]
        names += ["grpc.reflection.v1.ServerReflection", "grpc.health.v1.Health.Check"]
        requests = [reflection_pb2.ServerReflectionRequest(list_services="")]
        requests += [
            reflection_pb2.ServerReflectionRequest(file_containing_symbol=n) for n in names
        ]
        answers = list(call(iter(requests), timeout=30))
    listed = {service.name for service in answers[0].list_services_response.service}
    assert {SERVICE_NAME, "grpc.reflection.v1.ServerReflection"} <= listed
    for name, answer in zip(names, answers[1:], strict=True):
        assert answer.WhichOneof("message_response") == "file_descriptor_response", name


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
        with RemoteEpisodes(f"127.0.0.1:{port}", "agent-8") as episodes:
            episodes.record(EpisodeTrace.create(task_id="t", agent="a", goal="say hello"))
        assert len(list(tmp_path.rglob("*.sqlite3-wal"))) == 2, "open WAL databases while serving"
    finally:
        server.stop(None).wait()
    assert len(list(tmp_path.rglob("*.sqlite3"))) == 2
    assert not list(tmp_path.rglob("*.sqlite3-wal"))
