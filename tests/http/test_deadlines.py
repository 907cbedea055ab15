"""A deadline over HTTP: a write whose `Connect-Timeout-Ms` (or gRPC-Web's `grpc-timeout`) has
passed before it commits is answered deadline_exceeded (504), not canceled, which stays for a
client that hung up (tests/http/test_honest_statuses.py); a timeout header that breaks its rule
is refused invalid_argument naming the header and the rule, never read as no deadline."""

import struct

import pytest
from himga_proto.memory.v1 import memory_pb2 as pb

from himga.http.timeouts import broken_timeout, timeout_seconds
from tests.http.conftest import MEMORY, Served, error_reason_and_violations
from tests.service.conftest import ingest_request


def ingest(namespace: str, content: str) -> dict[str, object]:
    return {
        "namespace": namespace,
        "message": {"role": "u", "content": content},
        "session": {"session_id": "s"},
    }


def stored(served: Served, namespace: str) -> list[str]:
    found = served.stub.ListMessages(pb.ListMessagesRequest(namespace=namespace), timeout=30)
    return [each.message.content for each in found.messages]


# Deadlines passed on arrival (0 ms, 1 ns): a millisecond could let a fast write commit in time.
# A deadline that passes while the write waits is tests/http/test_honest_statuses.py's, gated.
@pytest.mark.parametrize("header", [{"Connect-Timeout-Ms": "0"}, {"grpc-timeout": "1n"}])
def test_a_write_past_its_deadline_is_deadline_exceeded(
    served: Served, header: dict[str, str]
) -> None:
    status, answer = served.call("Ingest", ingest("late", "never kept"), **header)
    assert (status, answer["code"]) == (504, "deadline_exceeded"), answer
    assert error_reason_and_violations(answer)[0] == "CALLER_GONE"
    assert "deadline" in answer["message"]
    assert stored(served, "late") == []


def test_a_grpc_web_write_past_its_deadline_is_deadline_exceeded(served: Served) -> None:
    request = ingest_request("late-web", "never kept").SerializeToString()
    status, headers, raw = served.post(
        MEMORY + "Ingest",
        struct.pack(">BI", 0, len(request)) + request,
        {"Content-Type": "application/grpc-web+proto", "grpc-timeout": "1n"},
    )
    assert status == 200
    assert b"grpc-status: 4" in raw or headers.get("grpc-status") == "4", (headers, raw)
    assert stored(served, "late-web") == []


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("Connect-Timeout-Ms", "abc"),
        ("Connect-Timeout-Ms", "-5"),
        ("Connect-Timeout-Ms", "12345678901"),  # 11 digits
        ("Connect-Timeout-Ms", "1.5"),
        ("Connect-Timeout-Ms", ""),
        ("grpc-timeout", "1x"),
        ("grpc-timeout", "123456789S"),  # 9 digits
        ("grpc-timeout", "S"),
        ("grpc-timeout", "-1S"),
        ("grpc-timeout", ""),
    ],
)
def test_a_timeout_header_that_breaks_its_rule_is_an_invalid_argument(
    served: Served, name: str, value: str
) -> None:
    status, answer = served.call("Ingest", ingest("rules", "never kept"), **{name: value})
    assert (status, answer["code"]) == (400, "invalid_argument"), answer
    reason, violations = error_reason_and_violations(answer)
    assert reason == "INVALID_REQUEST"
    assert answer["message"] == violations[0][1]
    assert f"the header {name} is {value!r}: it must be" in answer["message"]
    assert ("1 to 10 digits" if name.startswith("Connect") else "1 to 8 digits then a unit") in (
        answer["message"]
    )
    assert stored(served, "rules") == []  # refused, not run without a deadline


def test_a_grpc_web_call_with_a_broken_grpc_timeout_is_an_invalid_argument(
    served: Served,
) -> None:
    request = ingest_request("rules-web", "never kept").SerializeToString()
    status, headers, raw = served.post(
        MEMORY + "Ingest",
        struct.pack(">BI", 0, len(request)) + request,
        {"Content-Type": "application/grpc-web+proto", "grpc-timeout": "1x"},
    )
    assert (status, headers.get("grpc-status")) == (200, "3"), (headers, raw)
    assert "grpc-timeout" in headers["grpc-message"]
    assert stored(served, "rules-web") == []


@pytest.mark.parametrize(
    "header",
    [{"Connect-Timeout-Ms": "0000000001"}, {"Connect-Timeout-Ms": "30000"}, {"grpc-timeout": "5S"}],
)
def test_a_timeout_that_keeps_its_rule_is_taken(served: Served, header: dict[str, str]) -> None:
    status, answer = served.call("ListNamespaces", {}, **header)
    assert status == 200, answer


def test_timeout_seconds() -> None:
    assert timeout_seconds({"connect-timeout-ms": "1500"}) == 1.5
    assert timeout_seconds({"connect-timeout-ms": "0"}) == 0
    assert timeout_seconds({"grpc-timeout": "2M"}) == 120
    assert timeout_seconds({"grpc-timeout": "20u"}) == pytest.approx(2e-5)
    assert timeout_seconds({"connect-timeout-ms": "10", "grpc-timeout": "1H"}) == 0.01
    assert timeout_seconds({}) is None
    assert broken_timeout({"connect-timeout-ms": "10", "grpc-timeout": "1x"}) is None  # unread
    assert broken_timeout({"connect-timeout-ms": "9999999999"}) is None
    assert broken_timeout({"grpc-timeout": "99999999n"}) is None


def test_a_deadline_still_ahead_lets_the_write_commit(served: Served) -> None:
    status, answer = served.call(
        "Ingest", ingest("in-time", "kept"), **{"Connect-Timeout-Ms": "30000"}
    )
    assert status == 200, answer
    assert stored(served, "in-time") == ["kept"]
