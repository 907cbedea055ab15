"""A disk that fills mid-run: on a small tmpfs (mounted here; root is needed), a client writes
messages and episodes until the store refuses (UNAVAILABLE, STORE_UNAVAILABLE) while reads of
both services go on answering and health says NOT_SERVING; space returns, health says SERVING,
the refused writes are sent again with their request ids, and the store holds exactly what was
acknowledged, messages and episodes."""

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from himga.status import reason_of
from tests.soak.kill_rounds import Client, Stubs, Tally, check, serve

HANG_SECONDS = 60.0
ROOM_BYTES = 512 * 1024
"""The free space left when the disk is filled, for the client's writes to use up."""


@dataclass
class DiskReport:
    tally: Tally
    refused: int = 0
    not_serving_seen: bool = False
    serving_again: bool = False
    reads_while_full: int = 0


def fill(disk: Path, leave: int) -> Path:
    """A file taking all but about `leave` bytes of `disk`."""
    filler = disk / "filler"
    with filler.open("wb") as file:
        try:
            while True:
                file.write(bytes(64 * 1024))
                file.flush()
        except OSError:
            pass
    size = filler.stat().st_size
    with filler.open("r+b") as file:
        file.truncate(max(0, size - leave))
    return filler


def health(channel: grpc.Channel) -> int:
    status: int = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest()).status
    return status


def run(directory: Path, seed: int = 0, size: str = "16m") -> DiskReport:
    disk = directory / "disk"
    disk.mkdir(parents=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        raise RuntimeError(f"cannot mount a tmpfs (root is needed): {mounted.stderr.strip()}")
    try:
        return _run(disk, seed, directory / "server.log")
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _run(disk: Path, seed: int, log: Path) -> DiskReport:
    report = DiskReport(Tally())
    client = Client(0, 6, seed, report.tally)
    data = disk / "data"
    process, target = serve(data, log=log)
    try:
        with grpc.insecure_channel(target) as channel:
            stub = Stubs(channel)
            for _ in range(30):
                client.step(stub, resets=0.0, deletes=0.0)
            filler = fill(disk, ROOM_BYTES)
            for _ in range(5000):
                if report.refused >= 3 or all(n.pending for n in client.namespaces):
                    break
                try:
                    client.step(stub, resets=0.0, deletes=0.0)
                except grpc.RpcError as error:
                    if reason_of(error) != "STORE_UNAVAILABLE":
                        raise
                    report.refused += 1
                    report.not_serving_seen |= (
                        health(channel) == health_pb2.HealthCheckResponse.NOT_SERVING
                    )
                    for namespace in client.namespaces:
                        client.read(stub, namespace)  # reads go on
                        report.reads_while_full += 1
            filler.unlink()
            deadline = time.monotonic() + HANG_SECONDS
            while health(channel) != health_pb2.HealthCheckResponse.SERVING:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            else:
                report.serving_again = True
            client.resolve(stub)
            for _ in range(30):
                client.step(stub, resets=0.0, deletes=0.0)
    finally:
        process.terminate()
        process.wait()
    for namespace in client.namespaces:
        check(data, namespace, report.tally)
    return report
