"""Bounded resources: idle namespaces are closed beyond the bound and reopen transparently; a
read or reset of a namespace that does not exist creates nothing; few descriptors close idle
stores to make room; a Retrieve answer over the message limit is cut to fit."""

import os
import resource
import subprocess
import sys
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.service import create_server
from himga.storage.namespaces import MAX_OPEN
from tests.service.conftest import ingest_request

HANG_SECONDS = 60


def descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_idle_namespaces_beyond_the_bound_are_closed_and_reopen(tmp_path: Path) -> None:
    server, port = create_server(
        "127.0.0.1:0", memory="sqlite", data_dir=tmp_path, max_open_namespaces=3
    )
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            stub.Ingest(ingest_request("warm-up", "x"))
            before = descriptors()
            for number in range(20):
                stub.Ingest(ingest_request(f"ns-{number}", f"word{number} said"))
                assert len(server.namespaces) <= 3
            # Three namespaces of about 3 descriptors each, not twenty.
            assert descriptors() - before <= 3 * 3
            for number in range(20):
                response = stub.Retrieve(
                    pb.RetrieveRequest(namespace=f"ns-{number}", query=f"word{number}")
                )
                assert [hit.content for hit in response.hits] == [f"word{number} said"]
    finally:
        server.stop(None).wait()


def test_a_server_started_with_no_bound_named_has_the_served_one(tmp_path: Path) -> None:
    """A server started from code, as one from `himga serve`, keeps at most MAX_OPEN
    namespaces open, not every one it ever served."""
    server, port = create_server("127.0.0.1:0", memory="sqlite", data_dir=tmp_path)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            for number in range(MAX_OPEN + 5):
                stub.Ingest(ingest_request(f"many-{number}", "x"))
            assert len(server.namespaces) == MAX_OPEN
    finally:
        server.stop(None).wait()


def test_in_process_memories_are_never_closed_for_the_bound(tmp_path: Path) -> None:
    server, port = create_server("127.0.0.1:0", memory="keyword", max_open_namespaces=2)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            for number in range(5):
                stub.Ingest(ingest_request(f"kept-{number}", f"fig{number}"))
            for number in range(5):
                response = stub.Retrieve(
                    pb.RetrieveRequest(namespace=f"kept-{number}", query=f"fig{number}")
                )
                assert len(response.hits) == 1
    finally:
        server.stop(None).wait()


def test_reading_or_resetting_a_namespace_that_does_not_exist_creates_nothing(
    tmp_path: Path,
) -> None:
    server, port = create_server("127.0.0.1:0", memory="sqlite", data_dir=tmp_path)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            for number in range(5):
                answer = stub.Retrieve(pb.RetrieveRequest(namespace=f"never-{number}", query="x"))
                assert answer.context == "" and not answer.hits
                stub.Reset(pb.ResetRequest(namespace=f"never-{number}"))
            assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
            assert len(server.namespaces) == 0
    finally:
        server.stop(None).wait()


DESCRIPTOR_LIMIT = 96
"""RLIMIT_NOFILE of the servers below: room for gRPC and a handful of namespaces."""


def serve_with_few_descriptors(data_dir: Path, max_open: int) -> tuple[subprocess.Popen[str], str]:
    def few_descriptors() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (DESCRIPTOR_LIMIT, DESCRIPTOR_LIMIT))

    command = [
        sys.executable, "-m", "himga", "serve", "--port", "0", "--memory", "sqlite",
        "--data-dir", str(data_dir), "--max-open-namespaces", str(max_open),
    ]  # fmt: skip
    process = subprocess.Popen(
        command, stderr=subprocess.PIPE, text=True, preexec_fn=few_descriptors
    )
    assert process.stderr is not None
    for line in process.stderr:
        if "listening on" in line:
            return process, line.rsplit("listening on ", 1)[1].split()[0]
    process.wait()
    raise AssertionError("the server did not start")


def test_few_descriptors_close_idle_stores_to_make_room(tmp_path: Path) -> None:
    """No bound worth the name, and fewer descriptors than the namespaces need: the least
    recently used stores are closed to make room, so every write lands, health stays SERVING,
    and every namespace answers (opened again)."""
    process, target = serve_with_few_descriptors(tmp_path, max_open=100_000)
    try:
        with grpc.insecure_channel(target) as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            for number in range(DESCRIPTOR_LIMIT):
                stub.Ingest(ingest_request(f"many-{number}", "plum"), timeout=HANG_SECONDS)
            health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
            assert health.status == health_pb2.HealthCheckResponse.SERVING
            for number in range(DESCRIPTOR_LIMIT):
                request = pb.RetrieveRequest(namespace=f"many-{number}", query="plum")
                hits = stub.Retrieve(request, timeout=HANG_SECONDS).hits
                assert [hit.content for hit in hits] == ["plum"]
        with grpc.insecure_channel(target) as fresh:  # a new connection is accepted
            answer = health_pb2_grpc.HealthStub(fresh).Check(
                health_pb2.HealthCheckRequest(), timeout=HANG_SECONDS
            )
            assert answer.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        process.kill()
        process.wait()


def test_a_bounded_server_does_not_run_out_of_descriptors(tmp_path: Path) -> None:
    process, target = serve_with_few_descriptors(tmp_path, max_open=8)
    try:
        with grpc.insecure_channel(target) as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            for number in range(DESCRIPTOR_LIMIT):
                stub.Ingest(ingest_request(f"many-{number}", "x"), timeout=HANG_SECONDS)
    finally:
        process.kill()
        process.wait()


def test_a_retrieve_over_the_message_limit_is_cut_to_fit() -> None:
    limit = 64 * 1024
    server, port = create_server("127.0.0.1:0", memory="keyword", max_message_bytes=limit)
    try:
        options = [("grpc.max_receive_message_length", limit)]
        with grpc.insecure_channel(f"127.0.0.1:{port}", options=options) as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            for number in range(30):
                stub.Ingest(ingest_request("big", f"plum {number} " + "x" * 8000))
            answer = stub.Retrieve(pb.RetrieveRequest(namespace="big", query="plum", limit=30))
        assert 0 < len(answer.hits) < 30
        assert answer.ByteSize() <= limit
        assert answer.context
    finally:
        server.stop(None).wait()
