"""The error-kind table holds over HTTP as over gRPC (tests/service/test_error_kinds.py): each
kind raised inside a real server reaches a Connect client with the same code, ErrorInfo reason,
message and field violations a gRPC client gets from the same server."""

import json
import uuid
from collections.abc import Iterator

import grpc
import pytest
from himga_proto.memory.v1 import memory_pb2 as pb

from himga.http.handlers import CODES
from himga.kinds import Keeps, Kind
from himga.memory import registry
from himga.service import create_server
from himga.service.errors import ERROR_KINDS, INTERNAL, error_kind
from himga.status import field_violations, reason_of
from tests.http.conftest import MEMORY, Served, error_reason_and_violations
from tests.service.test_error_kinds import EXAMPLES, RAISING, SENT_AS

NAMES = [cls.__name__ for cls in EXAMPLES] + [cls.__name__ for cls in SENT_AS] + ["unexpected"]


@pytest.fixture(scope="module")
def raising() -> Iterator[Served]:
    registry.register(
        RAISING,
        Kind("tests.service.test_error_kinds", "RaisingMemory.for_namespace", Keeps.PROCESS, False),
    )
    server, port = create_server("127.0.0.1:0", memory=RAISING, http_address=("127.0.0.1", 0))
    served = Served(server, port)
    try:
        yield served
    finally:
        served.channel.close()
        server.stop(None).wait()
        registry.unregister(RAISING)


def ingest(content: str) -> pb.IngestRequest:
    return pb.IngestRequest(
        namespace=f"kinds-{uuid.uuid4().hex}",
        message=pb.Message(role="agent", content=content),
        session=pb.Session(session_id="s"),
    )


@pytest.mark.parametrize("name", NAMES)
def test_each_kind_reaches_http_as_it_reaches_grpc(raising: Served, name: str) -> None:
    request = ingest(name)
    with pytest.raises(grpc.RpcError) as caught:
        raising.stub.Ingest(request)
    over_grpc = caught.value
    status, _, raw = raising.post(
        MEMORY + "Ingest", request.SerializeToString(), {"Content-Type": "application/proto"}
    )
    assert status != 200
    error = json.loads(raw)
    reason, violations = error_reason_and_violations(error)
    assert error["code"] == CODES[over_grpc.code()].value
    assert reason == reason_of(over_grpc)
    assert error.get("message", "") == over_grpc.details()
    assert violations == [(v.field, v.description) for v in field_violations(over_grpc)]
    example = next((e for c, e in EXAMPLES.items() if c.__name__ == name), None)
    if example is not None:
        kind = error_kind(example)
        assert (error["code"], reason) == (CODES[kind.code].value, kind.reason)
    if name == "unexpected":
        assert (error["code"], reason) == ("internal", INTERNAL.reason)
        assert "a bug" not in error["message"]


def test_every_kind_is_tried() -> None:
    assert {cls.__name__ for cls in ERROR_KINDS} <= set(NAMES)
