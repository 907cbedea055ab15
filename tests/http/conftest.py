"""A memory server with its HTTP port, for the HTTP tests: calls over both ports, and what a
Connect error's details say."""

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.service.server import MemoryServer, create_server
from himga.status import ERROR_DOMAIN

MEMORY = "/himga.memory.v1.MemoryService/"
EPISODES = "/himga.memory.v1.EpisodeService/"


class Served:
    def __init__(self, server: MemoryServer, port: int) -> None:
        self.server = server
        assert server.http_port is not None
        self.base = f"http://127.0.0.1:{server.http_port}"
        self.target = f"127.0.0.1:{port}"
        self.channel = grpc.insecure_channel(self.target)
        self.stub = memory_pb2_grpc.MemoryServiceStub(self.channel)

    def post(
        self, path: str, body: Any, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        sent = {"Content-Type": "application/json", **(headers or {})}
        request = urllib.request.Request(self.base + path, data=data, headers=sent)
        return answer_of(request)

    def call(self, method: str, body: Any, **headers: str) -> tuple[int, Any]:
        status, _, raw = self.post(MEMORY + method, body, headers)
        return status, json.loads(raw)


def answer_of(request: urllib.request.Request) -> tuple[int, dict[str, str], bytes]:
    """The status, headers (lower-case names) and body of `request`, whatever its status."""
    try:
        with urllib.request.urlopen(request) as answer:
            status, headers, body = answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        status, headers, body = error.code, error.headers, error.read()
    return status, {name.lower(): value for name, value in headers.items()}, body


@pytest.fixture
def served() -> Iterator[Served]:
    server, port = create_server("127.0.0.1:0", memory="keyword", http_address=("127.0.0.1", 0))
    running = Served(server, port)
    yield running
    running.channel.close()
    server.stop(0).wait()


def error_reason_and_violations(error: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """The himga ErrorInfo reason and the BadRequest violations (field, description) of a
    Connect error's JSON."""
    reasons, violations = [], []
    for detail in error.get("details", []):
        value = base64.b64decode(detail["value"] + "==")
        if detail["type"] == "google.rpc.ErrorInfo":
            info = error_details_pb2.ErrorInfo.FromString(value)
            if info.domain == ERROR_DOMAIN:
                reasons.append(info.reason)
        elif detail["type"] == "google.rpc.BadRequest":
            bad = error_details_pb2.BadRequest.FromString(value)
            violations.extend((v.field, v.description) for v in bad.field_violations)
    assert len(reasons) == 1, error
    return reasons[0], violations
