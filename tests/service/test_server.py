"""create_server: what a started server offers beside MemoryService, and what it refuses."""

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from himga.service import create_server
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
    assert methods == {"Ingest", "IngestBatch", "Retrieve", "Reset"}


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
