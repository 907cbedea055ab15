"""Request bodies that are not what their method takes, over HTTP: Connect's error JSON with code
invalid_argument, the ErrorInfo reason INVALID_REQUEST and a BadRequest naming each offending
field of a JSON body (the whole body when no field is to blame), as the gRPC port answers
undecodable requests; nothing is stored, one log line, and the server answers the next call."""

import base64
import json
import logging
import struct
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from google.rpc import error_details_pb2, status_pb2
from himga_proto.memory.v1 import memory_pb2 as pb

from himga.http import codec
from himga.service import tokens
from himga.service.auth import AuthFile
from himga.service.server import create_server
from himga.status import Undecodable, field_violations, reason_of
from tests.http.conftest import EPISODES, MEMORY, Served, error_reason_and_violations

SESSION = {"session_id": "s1"}
MESSAGE = {"role": "user", "content": "kayaking on the lake", "turn_id": "t1"}
TIMESTAMP = "an RFC 3339 date-time in UTC, such as 2024-05-08T13:56:00Z"
UNPAIRED = "must be valid Unicode: a lone surrogate at character"

# (method, body, the violations (field, description) the answer names)
MALFORMED: list[tuple[str, Any, list[tuple[str, str]]]] = [
    (
        "Retrieve",
        b"namespace=n&query=x",
        [("", "the body is not JSON: Expecting value: line 1 column 1 (char 0)")],
    ),
    ("Retrieve", b'{"namespace": "n"', [("", "the body is not JSON: ")]),
    ("Retrieve", b'{"namespace": "\xff"}', [("", "the body is not JSON: ")]),
    ("Retrieve", b"[" * 100_000, [("", "the body nests arrays or objects too deeply")]),
    (
        "Retrieve",
        b'{"namespace": "n", "namespace": "m", "query": "x"}',
        [("", "the request does not decode: ")],
    ),
    (  # the same on the path that reads lower-case date-times
        "Retrieve",
        b'{"namespace": "n", "namespace": "m", "filter": {"after": "2023-01-01t00:00:00z"}}',
        [("", "the request does not decode: the key 'namespace' is given twice")],
    ),
    (
        "Retrieve",
        b'{"namespace": "n", "filter": {"after": "2023-01-01t00:00:00zz"}}',
        [("filter.after", "must be an RFC 3339 date-time in UTC")],
    ),
    ("Retrieve", ["n", "x"], [("", "must be a JSON object (RetrieveRequest)")]),
    ("Retrieve", {"namespace": 7, "query": "x"}, [("namespace", "must be a string")]),
    (
        "Retrieve",
        {"namespace": "n", "query": "x", "limit": "ten"},
        [("limit", "must be an integer from 0 to 4294967295")],
    ),
    (
        "Retrieve",
        {"namespace": "n", "query": "x", "limit": -1},
        [("limit", "must be an integer from 0 to 4294967295")],
    ),
    (
        "Retrieve",
        {"namespace": "n", "queryText": "x"},
        [("queryText", "RetrieveRequest has no such field")],
    ),
    (
        "Retrieve",
        {"namespace": "n", "filter": {"session_ids": "s1", "after": "yesterday"}},
        [
            ("filter.session_ids", "must be a JSON array, each item a string"),
            ("filter.after", f"must be {TIMESTAMP}"),
        ],
    ),
    (
        "Retrieve",
        {"namespace": "n", "filter": {"session_ids": ["s1", 2], "metadata": {"user": 1}}},
        [
            ("filter.session_ids[1]", "must be a string"),
            ("filter.metadata.user", "must be a string"),
        ],
    ),
    (
        "Ingest",
        {"namespace": "n", "message": {**MESSAGE, "content": ["kayak"]}, "session": SESSION},
        [("message.content", "must be a string")],
    ),
    # "\ud83d" is JSON but not Unicode: half of an emoji's UTF-16 pair, which no string holds
    (
        "Ingest",
        {"namespace": "n", "message": {**MESSAGE, "content": "ok \ud83d"}, "session": SESSION},
        [("message.content", f"{UNPAIRED} 3")],
    ),
    (
        "Retrieve",
        {
            "namespace": "n",
            "filter": {"session_ids": ["s1", "\udc00"], "metadata": {"u": "\ud800"}},
        },
        [("filter.session_ids[1]", f"{UNPAIRED} 0"), ("filter.metadata.u", f"{UNPAIRED} 0")],
    ),
    (  # a key spelt so is named escaped, as the answer's text can hold it
        "Retrieve",
        {"namespace": "n", "\ud800": 1, "filter": {"metadata": {"\udc00": "v"}}},
        [
            ("\\ud800", "RetrieveRequest has no such field"),
            ("filter.metadata.\\udc00", f"{UNPAIRED} 0"),
        ],
    ),
    (
        "IngestBatch",
        {
            "namespace": "n",
            "items": [
                {"message": MESSAGE, "session": SESSION},
                {
                    "message": {**MESSAGE, "turn_id": "t2"},
                    "session": {"session_id": "s1", "date": 3},
                },
                "third",
            ],
        },
        [
            ("items[1].session.date", "Session has no such field"),
            ("items[2]", "must be a JSON object (IngestItem)"),
        ],
    ),
]


def _ids(case: tuple[str, Any, list[tuple[str, str]]]) -> str:
    method, _, violations = case
    return f"{method}:{','.join(field or 'body' for field, _ in violations)}"


@pytest.mark.parametrize("case", MALFORMED, ids=[_ids(c) for c in MALFORMED])
def test_a_malformed_json_body_names_its_fields(
    served: Served, case: tuple[str, Any, list[tuple[str, str]]], caplog: pytest.LogCaptureFixture
) -> None:
    method, body, expected = case
    with caplog.at_level(logging.WARNING):
        status, _, raw = served.post(MEMORY + method, body)
    error = json.loads(raw)
    assert (status, error["code"]) == (400, "invalid_argument"), error
    reason, violations = error_reason_and_violations(error)
    assert reason == "INVALID_REQUEST"
    assert [field for field, _ in violations] == [field for field, _ in expected]
    for (_, description), (_, wanted) in zip(violations, expected, strict=True):
        assert description.startswith(wanted), description
    assert error["message"]
    lines = [r.getMessage() for r in caplog.records if "(decoding)" in r.getMessage()]
    assert len(lines) == 1 and "\n" not in lines[0] and f"/{method} from http:" in lines[0]
    assert not any(r.exc_info for r in caplog.records)
    # Nothing was stored, and the server answers the next call.
    status, answer = served.call("ListMessages", {"namespace": "n"})
    assert (status, answer["messages"]) == (200, [])
    status, _ = served.call("Ingest", {"namespace": "n", "message": MESSAGE, "session": SESSION})
    assert status == 200


def test_the_auth_check_comes_before_the_body_is_judged(tmp_path: Path) -> None:
    tokens.save(tmp_path / "auth.json", tokens.Tokens())
    server, port = create_server(
        "127.0.0.1:0", auth=AuthFile(tmp_path / "auth.json"), http_address=("127.0.0.1", 0)
    )
    try:
        status, _, raw = Served(server, port).post(MEMORY + "Retrieve", b"not json")
        assert (status, json.loads(raw)["code"]) == (401, "unauthenticated")
    finally:
        server.stop(0).wait()


def test_an_episode_with_a_wrong_field_names_it(served: Served) -> None:
    episode = {"id": "e1", "task_id": "t", "agent": "a", "timestamp": "2024-05-08 13:56"}
    status, _, raw = served.post(EPISODES + "RecordEpisode", {"namespace": "n", "episode": episode})
    reason, violations = error_reason_and_violations(json.loads(raw))
    assert (status, reason) == (400, "INVALID_REQUEST")
    assert violations == [("episode.timestamp", f"must be {TIMESTAMP}")]


# A field 1 (namespace) of wire type 2 whose length runs past the end; a string that is not
# UTF-8 (as tests/service/test_decoding.py sends the gRPC port).
BROKEN_PROTOBUF = [b"\x0a\xff\x01", b"\x0a\x02\xff\xfe"]


@pytest.mark.parametrize("data", BROKEN_PROTOBUF, ids=["truncated", "not-utf-8"])
def test_a_broken_binary_body_is_answered_as_the_grpc_port_answers_it(
    served: Served, data: bytes
) -> None:
    status, _, raw = served.post(MEMORY + "Retrieve", data, {"Content-Type": "application/proto"})
    over_http = json.loads(raw)
    with pytest.raises(grpc.RpcError) as caught:
        served.channel.unary_unary(MEMORY + "Retrieve")(data, timeout=30)
    over_grpc = caught.value
    assert (status, over_http["code"]) == (400, "invalid_argument")
    assert over_grpc.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    reason, violations = error_reason_and_violations(over_http)
    assert reason == reason_of(over_grpc) == "INVALID_REQUEST"
    assert [field for field, _ in violations] == [v.field for v in field_violations(over_grpc)]
    assert violations[0][1].startswith("the request does not decode: ")


def test_grpc_web_json_carries_the_same_details_in_its_trailers(served: Served) -> None:
    body = json.dumps({"namespace": "n", "limit": "ten"}).encode()
    framed = struct.pack(">BI", 0, len(body)) + body
    status, _, raw = served.post(
        MEMORY + "Retrieve", framed, {"Content-Type": "application/grpc-web+json"}
    )
    assert status == 200  # gRPC-Web: the call's status is in the trailers
    flags, size = struct.unpack(">BI", raw[:5])
    assert flags == 0x80  # the trailers frame, with no message before it
    lines = raw[5 : 5 + size].decode().strip().split("\r\n")
    trailers = {name.strip(): value.strip() for name, value in (ln.split(":", 1) for ln in lines)}
    assert trailers["grpc-status"] == str(grpc.StatusCode.INVALID_ARGUMENT.value[0])
    details = status_pb2.Status.FromString(
        base64.b64decode(trailers["grpc-status-details-bin"] + "==")
    ).details
    info, bad = error_details_pb2.ErrorInfo(), error_details_pb2.BadRequest()
    assert details[0].Unpack(info) and details[1].Unpack(bad)
    assert info.reason == "INVALID_REQUEST"
    assert [(v.field, v.description) for v in bad.field_violations] == [
        ("limit", "must be an integer from 0 to 4294967295")
    ]


def test_only_the_server_side_keeps_the_body_for_the_core_instead_of_parsing() -> None:
    # A connect-python client in the same process shares the codec table: its answers that do
    # not decode still raise, as with connect-python's own codecs.
    with pytest.raises(json_format.ParseError):
        codec.JSON.decode(b'{"limit": "ten"}', pb.RetrieveRequest())
    with codec.serving():
        data = b'{"namespace": "n", "limit": "ten"}'
        request = codec.JSON.decode(data, pb.RetrieveRequest())
        assert request == pb.RetrieveRequest()  # nothing half-decoded reaches a handler
        kept = codec.taken(request)
        assert kept is not None and codec.taken(request) is None  # taken once
        body, parser = kept
        assert body == data
        failure = parser.parse(body, pb.RetrieveRequest)
        assert isinstance(failure, Undecodable)
        assert [(v.field, v.description) for v in failure.violations] == [
            ("limit", "must be an integer from 0 to 4294967295")
        ]
        assert parser.parse(b"{}", pb.RetrieveRequest) == pb.RetrieveRequest()
