"""The HTTP door keeps the deadline and the caller it is given, as the gRPC port does
(tests/service/test_honest_statuses.py): a write whose `Connect-Timeout-Ms` (or gRPC-Web's
`grpc-timeout`) passes before COMMIT, or whose client hangs up, is rolled back and answered as
such (deadline_exceeded for the deadline, canceled for a client gone: both CALLER_GONE), and
nothing of it is stored."""

import json
import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from himga_proto.memory.v1 import memory_pb2 as pb

from himga.kinds import Keeps, Kind
from himga.memory import commit, registry
from himga.service import create_server
from himga.service.errors import DeadlinePassed
from himga.service.server import MemoryServer
from tests.http.conftest import MEMORY, Served, error_reason_and_violations
from tests.service.conftest import ingest_request
from tests.service.test_honest_statuses import GATED, GATES, HANG_SECONDS, new_gate


@pytest.fixture
def gated(tmp_path: Path) -> Iterator[Served]:
    registry.register(
        GATED,
        Kind(
            "tests.service.test_honest_statuses",
            "GatedSQLite.for_namespace",
            Keeps.DATA_DIRECTORY,
            shared=False,
        ),
    )
    server, port = create_server(
        "127.0.0.1:0", memory=GATED, data_dir=tmp_path, http_address=("127.0.0.1", 0)
    )
    running = Served(server, port)
    try:
        yield running
    finally:
        running.channel.close()
        server.stop(None).wait()
        registry.unregister(GATED)


def as_json(message: Any) -> dict[str, Any]:
    found: dict[str, Any] = json_format.MessageToDict(message, preserving_proto_field_name=True)
    return found


def stored(served: Served, namespace: str, word: str) -> list[str]:
    response = served.stub.Retrieve(pb.RetrieveRequest(namespace=namespace, query=word), timeout=30)
    return [hit.content for hit in response.hits]


def test_a_connect_write_past_its_timeout_is_rolled_back(gated: Served) -> None:
    name, gate = new_gate()
    status, answer = gated.call(
        "Ingest", as_json(ingest_request("late", name)), **{"Connect-Timeout-Ms": "1000"}
    )
    assert (status, answer["code"]) == (504, "deadline_exceeded"), answer
    assert error_reason_and_violations(answer)[0] == "CALLER_GONE"
    if gate.started.wait(5):  # on a loaded machine the deadline may pass before the write
        assert gate.ended.wait(HANG_SECONDS)
        assert isinstance(gate.outcome, DeadlinePassed)
    assert stored(gated, "late", name) == []


def test_a_connect_delete_past_its_timeout_is_rolled_back(gated: Served) -> None:
    name, gate = new_gate()
    kept = gated.stub.Ingest(ingest_request("late-delete", "still here")).id
    status, answer = gated.call(
        "Delete",
        {"namespace": "late-delete", "ids": [kept, name]},
        **{"Connect-Timeout-Ms": "1000"},
    )
    assert (status, answer["code"]) == (504, "deadline_exceeded"), answer
    if gate.started.wait(5):
        assert gate.ended.wait(HANG_SECONDS)
        assert isinstance(gate.outcome, DeadlinePassed)
    assert stored(gated, "late-delete", "still") == ["still here"]


def test_a_grpc_web_write_past_its_grpc_timeout_is_rolled_back(gated: Served) -> None:
    name, gate = new_gate()
    request = ingest_request("late-web", name).SerializeToString()
    framed = struct.pack(">BI", 0, len(request)) + request
    status, headers, raw = gated.post(
        MEMORY + "Ingest",
        framed,
        {"Content-Type": "application/grpc-web+proto", "grpc-timeout": "1000m"},
    )
    # DEADLINE_EXCEEDED (4), in the trailers or the headers
    assert (
        "grpc-status:4" in raw.decode("latin-1").replace(" ", "")
        or headers.get("grpc-status") == "4"
    ), (status, headers, raw)
    if gate.started.wait(5):
        assert gate.ended.wait(HANG_SECONDS)
        assert isinstance(gate.outcome, DeadlinePassed)
    assert stored(gated, "late-web", name) == []


def test_a_client_that_hangs_up_has_its_write_rolled_back(gated: Served) -> None:
    name, gate = new_gate()
    gated.stub.Ingest(ingest_request("hung-up", "already here"))
    body = json.dumps(as_json(ingest_request("hung-up", name))).encode()
    server: MemoryServer = gated.server
    with socket.create_connection(("127.0.0.1", server.http_port or 0)) as connection:
        connection.sendall(
            f"POST {MEMORY}Ingest HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        assert gate.started.wait(HANG_SECONDS)
    # The connection is closed: the write is no longer wanted.
    assert gate.ended.wait(HANG_SECONDS)
    assert isinstance(gate.outcome, commit.CallerGone)
    assert not isinstance(gate.outcome, DeadlinePassed)  # canceled, not deadline_exceeded
    assert stored(gated, "hung-up", name) == []
    assert stored(gated, "hung-up", "already") == ["already here"]
    del GATES[name]
