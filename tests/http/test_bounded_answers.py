"""Bad input has a bounded answer on every door: at most the first 100 violations, then one
saying how many more there are (or that the request was not checked to its end), the whole of
the details well under 64 KiB, and the same violations over gRPC and HTTP; a refused request is
not walked past its first 100 violations."""

import base64
import json
import struct

import grpc
import pytest
from google.rpc import status_pb2
from grpc_status import rpc_status
from himga_proto.memory.v1 import memory_pb2 as pb

from himga.bounds import MAX_VIOLATIONS
from himga.http import apart
from himga.status import field_violations, reason_of
from tests.http.conftest import MEMORY, Served, error_reason_and_violations

DETAILS_BOUND = 64 * 1024


def invalid_batch(count: int) -> pb.IngestBatchRequest:
    """A batch of `count` items, each with an empty role and no session."""
    return pb.IngestBatchRequest(
        namespace="n",
        items=[pb.IngestItem(message=pb.Message(role="", content="x")) for _ in range(count)],
    )


def test_a_5000_item_invalid_batch_reaches_a_grpc_client_as_invalid_argument(
    served: Served,
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        served.stub.IngestBatch(invalid_batch(5000), timeout=60)
    error = caught.value
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
    assert reason_of(error) == "INVALID_REQUEST"
    violations = field_violations(error)
    assert 2 <= len(violations) <= MAX_VIOLATIONS + 1
    assert violations[0].field.startswith("items[0].")
    last = violations[-1]
    assert last.field == "" and "not checked to its end" in last.description
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None and len(status.SerializeToString()) < DETAILS_BOUND
    assert len(error.details() or "") < 2000


def test_http_sends_the_same_bounded_violations_as_grpc(served: Served) -> None:
    request = invalid_batch(5000)
    with pytest.raises(grpc.RpcError) as caught:
        served.stub.IngestBatch(request, timeout=60)
    over_grpc = [(v.field, v.description) for v in field_violations(caught.value)]
    body = pb.IngestBatchRequest.SerializeToString(request)
    status, _, raw = served.post(
        MEMORY + "IngestBatch", body, {"Content-Type": "application/proto"}
    )
    assert status == 400 and len(raw) < DETAILS_BOUND
    error = json.loads(raw)
    assert error["code"] == "invalid_argument"
    reason, over_http = error_reason_and_violations(error)
    assert reason == "INVALID_REQUEST"
    assert over_http == over_grpc
    assert error["message"] == caught.value.details()


def test_a_json_batch_of_bad_items_is_not_walked_past_the_bound(served: Served) -> None:
    items = [{"message": {"role": "", "content": 5}, "session": []} for _ in range(5000)]
    status, _, raw = served.post(MEMORY + "IngestBatch", {"namespace": "n", "items": items})
    assert status == 400 and len(raw) < DETAILS_BOUND
    reason, violations = error_reason_and_violations(json.loads(raw))
    assert reason == "INVALID_REQUEST"
    assert 2 <= len(violations) <= MAX_VIOLATIONS + 1
    assert violations[0][0].startswith("items[0].")
    assert violations[-1][0] == "" and "not checked to its end" in violations[-1][1]


def test_a_body_of_many_unknown_keys_gets_the_first_100_and_a_count(served: Served) -> None:
    keys = 100_000
    body = "{" + ",".join(f'"k{i}":1' for i in range(keys)) + "}"
    status, _, raw = served.post(MEMORY + "Retrieve", body.encode())
    assert status == 400 and len(raw) < DETAILS_BOUND
    reason, violations = error_reason_and_violations(json.loads(raw))
    assert reason == "INVALID_REQUEST"
    assert len(violations) <= MAX_VIOLATIONS + 1
    assert violations[0] == ("k0", "RetrieveRequest has no such field")
    named = len(violations) - 1
    assert violations[-1] == ("", f"and {keys - named:,} more")
    # The server keeps serving.
    assert served.call("Retrieve", {"namespace": "n", "query": "x"})[0] == 200


def test_grpc_web_carries_the_bounded_details_in_its_trailers(served: Served) -> None:
    request = invalid_batch(5000).SerializeToString()
    framed = struct.pack(">BI", 0, len(request)) + request
    status, _, raw = served.post(
        MEMORY + "IngestBatch", framed, {"Content-Type": "application/grpc-web+proto"}
    )
    assert status == 200 and len(raw) < DETAILS_BOUND
    text = raw.decode("latin-1")
    assert "grpc-status: 3" in text.lower().replace("grpc-status:3", "grpc-status: 3"), text
    found = [
        line.split(":", 1)[1].strip()
        for line in text.split("\r\n")
        if line.lower().startswith("grpc-status-details-bin")
    ]
    assert found
    details = status_pb2.Status.FromString(base64.b64decode(found[0] + "=="))
    assert details.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]


def test_a_large_body_is_read_apart_with_the_same_answers(served: Served) -> None:
    # Valid, and over HERE_BYTES: read in the helper process, stored as any other batch.
    words = [f"quill{i}" for i in range(12_000)]
    items = [
        {"message": {"role": "u", "content": f"{word} pad " * 32}, "session": {"session_id": "s"}}
        for word in words
    ]
    body = json.dumps({"namespace": "apart", "items": items}).encode()
    assert len(body) > apart.HERE_BYTES
    status, _, raw = served.post(MEMORY + "IngestBatch", body)
    assert status == 200 and json.loads(raw)["ingested"] == len(words)
    found = served.stub.Retrieve(pb.RetrieveRequest(namespace="apart", query="quill11999"))
    assert [hit.content for hit in found.hits][:1] == ["quill11999 pad " * 32]
    # Invalid, and as large: the same violations as the same fault in a small body.
    items[3]["message"]["role"] = 5
    small = {"namespace": "apart", "items": items[:4]}
    _, _, small_raw = served.post(MEMORY + "IngestBatch", small)
    status, _, raw = served.post(MEMORY + "IngestBatch", {"namespace": "apart", "items": items})
    assert status == 400
    assert error_reason_and_violations(json.loads(raw)) == error_reason_and_violations(
        json.loads(small_raw)
    )


def test_a_body_the_plan_reads_here_first_has_the_same_answers(served: Served) -> None:
    # Between APART_BYTES and HERE_BYTES: valid, read by the plan in the server's thread; with
    # a fault, or an unknown key, the helper's answer (as for a small body with the same fault).
    items = [
        {"message": {"role": "u", "content": f"plume{i} pad " * 8}, "session": {"session_id": "s"}}
        for i in range(12_000)
    ]
    body = json.dumps({"namespace": "here", "items": items}).encode()
    assert apart.APART_BYTES <= len(body) <= apart.HERE_BYTES
    status, _, raw = served.post(MEMORY + "IngestBatch", body)
    assert status == 200 and json.loads(raw)["ingested"] == len(items)
    for fault in ({"role": 5}, {"colour": "red"}):
        broken = [dict(item) for item in items]
        broken[3] = {**items[3], "message": {**items[3]["message"], **fault}}
        _, _, small_raw = served.post(
            MEMORY + "IngestBatch", {"namespace": "here", "items": broken[:4]}
        )
        status, _, raw = served.post(MEMORY + "IngestBatch", {"namespace": "here", "items": broken})
        assert status == 400
        assert error_reason_and_violations(json.loads(raw)) == error_reason_and_violations(
            json.loads(small_raw)
        )
