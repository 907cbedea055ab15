"""himga over HTTP: the Connect protocol (JSON and binary) and gRPC-Web on the HTTP port reach
the same servicers, namespaces and rights as the gRPC port, answer in the schemas' JSON, fail
with the same codes and details, and serve a valid OpenAPI document naming every RPC."""

import json
import struct
import urllib.request
from pathlib import Path

import grpc
import pytest
from himga_proto.memory.v1 import memory_pb2 as pb
from openapi_spec_validator import validate

from himga import validation
from himga.service import tokens
from himga.service.auth import AuthFile
from himga.service.server import create_server
from himga.status import field_violations, reason_of
from tests.episodes.helpers import episode
from tests.http.conftest import MEMORY, Served, error_reason_and_violations

MESSAGE = {"role": "user", "content": "Caroline went to the LGBTQ support group", "turn_id": "D1:3"}
SESSION = {"session_id": "session_1", "date_str": "1:56 pm on 8 May, 2023"}


def test_a_curl_style_json_retrieve_answers_in_the_schemas_keys(served: Served) -> None:
    status, _ = served.call("Ingest", {"namespace": "n", "message": MESSAGE, "session": SESSION})
    assert status == 200
    status, answer = served.call("Retrieve", {"namespace": "n", "query": "support group"})
    assert status == 200
    hit = answer["hits"][0]
    assert hit["turn_id"] == "D1:3" and hit["session_id"] == "session_1"
    assert hit["date_str"] == SESSION["date_str"] and hit["score"] > 0
    assert "LGBTQ support group" in answer["context"]


def test_a_namespace_written_over_grpc_is_read_over_http_and_back(served: Served) -> None:
    request = pb.IngestRequest(namespace="over-grpc")
    request.message.role, request.message.content, request.message.turn_id = "user", "kayak", "a"
    request.session.session_id = "s"
    served.stub.Ingest(request)
    _, answer = served.call("ListMessages", {"namespace": "over-grpc"})
    message = answer["messages"][0]["message"]
    assert message["content"] == "kayak"
    assert validation.validate(message, "Message") == []
    assert validation.validate(answer["messages"][0]["session"], "Session") == []

    served.call("Ingest", {"namespace": "over-http", "message": MESSAGE, "session": SESSION})
    listed = served.stub.ListMessages(pb.ListMessagesRequest(namespace="over-http"))
    assert [m.message.turn_id for m in listed.messages] == ["D1:3"]


def test_empty_fields_are_written_as_the_schemas_require_them(served: Served) -> None:
    # ProtoJSON may leave out an empty string; the Message schema requires `content`, even "".
    request = pb.IngestRequest(namespace="quiet")
    request.message.role, request.message.content, request.message.turn_id = "user", "", "a"
    request.session.session_id = "s"
    served.stub.Ingest(request)
    _, answer = served.call("ListMessages", {"namespace": "quiet"})
    message = answer["messages"][0]["message"]
    assert message["content"] == ""
    assert validation.validate(message, "Message") == []
    assert validation.validate(answer["messages"][0]["session"], "Session") == []
    assert "timestamp" not in message  # unset: left out, as the schema has it optional
    assert served.call("Retrieve", {"namespace": "quiet", "query": "nothing like it"}) == (
        200,
        {"context": "", "hits": []},
    )


def test_errors_carry_the_grpc_ports_code_reason_and_violations(served: Served) -> None:
    body = {"namespace": "bad namespace!", "query": "x", "limit": 5000}
    status, error = served.call("Retrieve", body)
    with pytest.raises(grpc.RpcError) as over_grpc:
        served.stub.Retrieve(pb.RetrieveRequest(namespace="bad namespace!", query="x", limit=5000))
    assert status == 400
    assert error["code"] == over_grpc.value.code().name.lower() == "invalid_argument"
    reason, over_http = error_reason_and_violations(error)
    assert reason == reason_of(over_grpc.value) == "INVALID_REQUEST"
    assert over_http == [(v.field, v.description) for v in field_violations(over_grpc.value)]
    assert {field for field, _ in over_http} == {"namespace", "limit"}


def test_binary_connect_and_grpc_web_reach_the_same_memory(served: Served) -> None:
    served.call("Ingest", {"namespace": "n", "message": MESSAGE, "session": SESSION})
    request = pb.RetrieveRequest(namespace="n", query="support").SerializeToString()
    status, headers, raw = served.post(
        MEMORY + "Retrieve", request, {"Content-Type": "application/proto"}
    )
    assert status == 200 and headers["content-type"] == "application/proto"
    assert pb.RetrieveResponse.FromString(raw).hits[0].turn_id == "D1:3"

    framed = struct.pack(">BI", 0, len(request)) + request
    status, headers, raw = served.post(
        MEMORY + "Retrieve", framed, {"Content-Type": "application/grpc-web+proto"}
    )
    assert status == 200
    flags, size = struct.unpack(">BI", raw[:5])
    assert flags == 0
    assert pb.RetrieveResponse.FromString(raw[5 : 5 + size]).hits[0].turn_id == "D1:3"
    assert b"grpc-status: 0" in raw[5 + size :].lower().replace(b"grpc-status:0", b"grpc-status: 0")


def test_the_token_is_needed_and_its_rights_hold_over_http(tmp_path: Path) -> None:
    held = tokens.Tokens()
    reader, _ = held.new(["team-*"], {"read"})
    tokens.save(tmp_path / "auth.json", held)
    server, port = create_server(
        "127.0.0.1:0", auth=AuthFile(tmp_path / "auth.json"), http_address=("127.0.0.1", 0)
    )
    try:
        served = Served(server, port)
        status, error = served.call("Retrieve", {"namespace": "team-a", "query": "x"})
        assert (status, error["code"]) == (401, "unauthenticated")
        bearer = {"Authorization": f"Bearer {reader}"}
        status, _ = served.call("Retrieve", {"namespace": "team-a", "query": "x"}, **bearer)
        assert status == 200
        status, error = served.call("Reset", {"namespace": "team-a"}, **bearer)
        assert (status, error["code"]) == (403, "permission_denied")
    finally:
        server.stop(0).wait()


def test_the_openapi_document_is_valid_and_names_every_rpc(served: Served) -> None:
    with urllib.request.urlopen(served.base + "/openapi.json") as answer:
        document = json.loads(answer.read())
    validate(document)
    assert document["openapi"].startswith("3.1")
    for service in pb.DESCRIPTOR.services_by_name.values():
        for method in service.methods:
            assert f"/{service.full_name}/{method.name}" in document["paths"], method.name
    schemas = document["components"]["schemas"]
    hit = schemas["Hit"]["properties"]
    assert "turn_id" in hit and "turnId" not in hit
    # What generated clients need: short names, a server, the bearer scheme, required fields
    # (from the proto's (required) option) and counts typed integer (its (whole_number)).
    retrieve = document["paths"]["/himga.memory.v1.MemoryService/Retrieve"]["post"]
    assert retrieve["operationId"] == "MemoryService.Retrieve"
    assert retrieve["security"] == [{"bearer": []}, {}]
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert document["servers"][0]["url"] == "/"
    assert not [name for name in schemas if "." in name or name.startswith("himga")]
    assert schemas["RetrieveRequest"]["required"] == ["namespace"]
    assert schemas["IngestRequest"]["required"] == ["namespace", "message", "session"]
    assert schemas["Message"]["required"] == ["role", "content"]
    for count in ("access_count", "tokens_used", "duration_seconds"):
        assert schemas["EpisodeTrace"]["properties"][count]["type"] == "integer", count
    assert schemas["ActionEntry"]["properties"]["t"]["type"] == "integer"
    assert schemas["EpisodeTrace"]["properties"]["importance"]["type"] == "number"
    assert "context" in schemas["RetrieveResponse"]["required"]  # always written in answers


def test_date_times_in_lower_case_are_read_as_the_schemas_allow(served: Served) -> None:
    """RFC 3339 and the schemas take `t` and `z` in lower case; protobuf's own parser does not,
    so the HTTP port reads them for it, in Timestamp fields only (a message's text is kept)."""
    said = "we met at 2023-05-07t10:00:00z"
    message = {
        "role": "user",
        "content": said,
        "turn_id": "t1",
        "timestamp": "2023-05-08t13:56:00z",
    }
    session = {"session_id": "s1", "timestamp": "2023-05-08t13:00:00.5z"}
    status, _ = served.call(
        "Ingest", {"namespace": "lower", "message": message, "session": session}
    )
    assert status == 200
    _, page = served.call("ListMessages", {"namespace": "lower"})
    (stored,) = page["messages"]
    assert stored["message"]["timestamp"] == "2023-05-08T13:56:00Z"
    assert stored["session"]["timestamp"] == "2023-05-08T13:00:00.500Z"
    assert stored["message"]["content"] == said
    times = {"after": "2023-05-08t13:50:00z", "before": "2023-05-08t14:00:00Z"}
    _, kept = served.call("Retrieve", {"namespace": "lower", "query": "met", "filter": times})
    times["after"] = "2023-05-08t13:57:00z"
    _, dropped = served.call("Retrieve", {"namespace": "lower", "query": "met", "filter": times})
    assert [hit["turn_id"] for hit in kept["hits"]] == ["t1"] and dropped["hits"] == []


def test_counts_are_json_integers_in_answers(served: Served) -> None:
    """access_count, tokens_used, duration_seconds and t are integers in the schemas; the JSON
    answers write them as such (1, not 1.0), so a client decoding into an int reads them."""
    episodes = "/himga.memory.v1.EpisodeService/"
    document = episode(1).to_dict()
    document["tokens_used"] = 1234
    status, _, _ = served.post(
        episodes + "RecordEpisode", {"namespace": "counts", "episode": document}
    )
    assert status == 200
    status, _, raw = served.post(
        episodes + "GetEpisode", {"namespace": "counts", "id": document["id"]}
    )
    assert status == 200
    got = json.loads(raw)["episode"]
    assert (got["access_count"], got["tokens_used"]) == (1, 1234)
    for value in (got["access_count"], got["tokens_used"], got["duration_seconds"]):
        assert type(value) is int, raw
    assert all(type(action["t"]) is int for action in got["action_log"]), raw
    assert b".0," not in raw and b".0}" not in raw
    assert validation.is_valid(got, "EpisodeTrace")
