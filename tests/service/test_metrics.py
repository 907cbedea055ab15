"""Prometheus metrics, on a port of their own: calls, latencies and statuses by method, open
namespaces, store bytes, auth failures. Off unless asked for."""

import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import grpc
import pytest
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.service import create_server, tokens
from himga.service.auth import AuthFile
from himga.service.metrics import Metrics
from tests.service.conftest import ingest_request

HANG_SECONDS = 60


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=HANG_SECONDS) as page:
        text: str = page.read().decode("utf-8")
    return text


def value(text: str, name: str, **labels: str) -> float:
    wanted = ",".join(f'{key}="{val}"' for key, val in labels.items())
    pattern = rf"^{name}{{{wanted}}} (\S+)$" if labels else rf"^{name} (\S+)$"
    found = re.search(pattern, text, re.MULTILINE)
    assert found is not None, f"{name}{labels} not in:\n{text}"
    return float(found.group(1))


def test_metrics_count_calls_statuses_namespaces_bytes_and_auth_failures(tmp_path: Path) -> None:
    held = tokens.Tokens()
    token, _ = held.new(["m-*"], ["read", "write"])
    tokens.save(tmp_path / "auth.json", held)
    metrics = Metrics()
    server, port = create_server(
        "127.0.0.1:0",
        memory="sqlite",
        data_dir=tmp_path / "data",
        auth=AuthFile(tmp_path / "auth.json"),
        metrics=metrics,
    )
    metrics_port = metrics.serve("127.0.0.1", 0)
    try:
        metadata = [("authorization", f"Bearer {token}")]
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            for number in range(3):
                stub.Ingest(ingest_request(f"m-{number}", "plum"), metadata=metadata)
            stub.Retrieve(pb.RetrieveRequest(namespace="m-0", query="plum"), metadata=metadata)
            with pytest.raises(grpc.RpcError):
                stub.Ingest(ingest_request("m-0", "x", session=pb.Session()), metadata=metadata)
            with pytest.raises(grpc.RpcError):
                stub.Retrieve(pb.RetrieveRequest(namespace="m-0"))
            with pytest.raises(grpc.RpcError):
                stub.Reset(pb.ResetRequest(namespace="m-0"), metadata=metadata)
        text = scrape(metrics_port)
    finally:
        server.stop(None).wait()
        metrics.stop()
    ingest = "/himga.memory.v1.MemoryService/Ingest"
    retrieve = "/himga.memory.v1.MemoryService/Retrieve"
    assert value(text, "himga_calls_total", code="OK", method=ingest) == 3
    assert value(text, "himga_calls_total", code="INVALID_ARGUMENT", method=ingest) == 1
    assert value(text, "himga_calls_total", code="UNAUTHENTICATED", method=retrieve) == 1
    assert value(text, "himga_call_seconds_count", method=ingest) == 4
    assert value(text, "himga_auth_failures_total", reason="Unauthenticated") == 1
    assert value(text, "himga_auth_failures_total", reason="PermissionDenied") == 1
    assert value(text, "himga_open_namespaces") == 3
    assert value(text, "himga_store_bytes") > 0


def test_serve_serves_metrics_only_when_asked(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "himga", "serve", "--port", "0", "--memory", "null"]
    process = subprocess.Popen([*command, "--metrics-port", "0"], stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    said = []
    try:
        for line in process.stderr:
            said.append(line)
            if "listening on" in line:
                break
        found = re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics", "".join(said))
        assert found is not None, said
        assert "# TYPE himga_calls_total counter" in scrape(int(found.group(1)))
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(HANG_SECONDS) == 0
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    said = []
    for line in process.stderr:
        said.append(line)
        if "listening on" in line:
            break
    process.send_signal(signal.SIGTERM)
    assert process.wait(HANG_SECONDS) == 0
    assert not any("metrics on" in line for line in said)
