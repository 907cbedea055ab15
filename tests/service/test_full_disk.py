"""A disk that fills: writes fail with UNAVAILABLE (reason STORE_UNAVAILABLE), storing nothing;
health turns NOT_SERVING; reads go on answering, after a restart on the full disk too; when
space returns, health turns SERVING again and writes succeed. Nothing acknowledged is lost.
The disk is a small tmpfs the test mounts (the tests run as root)."""

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.service import create_server
from himga.status import reason_of

HANG_SECONDS = 60  # protection against a hang only
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB file system of its own."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert mounted.returncode == 0, f"cannot mount a tmpfs (root needed): {mounted.stderr}"
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> Path:
    """Take every free byte of `disk` with one file; return it."""
    filler = disk / "filler"
    with filler.open("wb") as file:
        try:
            while True:
                file.write(bytes(64 * 1024))
                file.flush()
        except OSError:
            pass
    return filler


def batch(number: int) -> pb.IngestBatchRequest:
    return pb.IngestBatchRequest(
        namespace="kept",
        items=[
            pb.IngestItem(
                message=pb.Message(role="u", content=f"apple{number} {i} " + "words " * 100),
                session=pb.Session(session_id="s"),
            )
            for i in range(20)
        ],
    )


def health(channel: grpc.Channel) -> int:
    status: int = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest()).status
    return status


def count(stub: memory_pb2_grpc.MemoryServiceStub, number: int) -> int:
    hits = stub.Retrieve(pb.RetrieveRequest(namespace="kept", query=f"apple{number}", limit=100))
    return sum(hit.content.startswith(f"apple{number} ") for hit in hits.hits)


def test_a_full_disk_refuses_writes_honestly_and_recovers(small_disk: Path) -> None:
    data = small_disk / "data"
    server, port = create_server("127.0.0.1:0", memory="sqlite", data_dir=data)
    acknowledged = []
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            stub.IngestBatch(batch(0))
            acknowledged.append(0)
            filler = fill(small_disk)
            refused = None
            for number in range(1, 200):
                try:
                    stub.IngestBatch(batch(number))
                    acknowledged.append(number)
                except grpc.RpcError as error:
                    refused = (number, error)
                    break
            assert refused is not None, "the disk never filled"
            number, error = refused
            assert error.code() == grpc.StatusCode.UNAVAILABLE, error
            assert reason_of(error) == "STORE_UNAVAILABLE"
            assert health(channel) == NOT_SERVING
            assert count(stub, number) == 0  # the refused batch stored nothing
            assert all(count(stub, n) == 20 for n in acknowledged)  # reads go on
    finally:
        server.stop(None).wait()

    # Restarted on the full disk: the namespace opens and answers, by reading alone.
    server, port = create_server("127.0.0.1:0", memory="sqlite", data_dir=data)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            assert all(count(stub, n) == 20 for n in acknowledged)
            with pytest.raises(grpc.RpcError) as caught:
                stub.IngestBatch(batch(1000))
            assert reason_of(caught.value) == "STORE_UNAVAILABLE"
            assert health(channel) == NOT_SERVING
            filler.unlink()  # space returns
            deadline = time.monotonic() + HANG_SECONDS
            while health(channel) != SERVING:
                assert time.monotonic() < deadline, "health never turned SERVING again"
                time.sleep(0.1)
            stub.IngestBatch(batch(1001))
            assert count(stub, 1001) == 20
            assert all(count(stub, n) == 20 for n in acknowledged)
    finally:
        server.stop(None).wait()
