"""himga.http.fastjson (through the HTTP port's JSON codec) reads every request type of the
proto as json_format does: the same message for random valid messages of every type, and the
same refusal (or the same message) after a random breakage of one value, key or nesting."""

import json
import random
from typing import Any

from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import Descriptor
from himga_proto.memory.v1 import memory_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from himga.http import codec, fastjson
from himga.status import Undecodable
from tests.http.test_protojson import _types, fill

TYPES = [t for t in _types() if not t.GetOptions().map_entry]
WRONG = [
    None,
    "12",
    "x",
    1.5,
    2.0,
    True,
    False,
    [],
    {},
    -1,
    0,
    2**40,
    1e400,
    "NaN",
    [None],
    [1],
    {"a": 1},
    {"seconds": 5},
    "2024-05-08T13:56:00Z",
    "2024-13-08T13:56:00Z",
    "\ud800",
]


def _json(message: Any) -> Any:
    return json.loads(json_format.MessageToJson(message, preserving_proto_field_name=True))


def _both(data: bytes, descriptor: Descriptor) -> tuple[Any, Any]:
    kind = message_factory.GetMessageClass(descriptor)
    try:
        reference: Any = json_format.Parse(data, kind())
    except Exception:
        reference = "refused"
    found = codec.JSON.parse(data, kind)
    return reference, "refused" if isinstance(found, Undecodable) else found


def _break(value: Any, rng: random.Random) -> Any:
    """`value` with one of its values, somewhere, replaced, or a key added."""
    if isinstance(value, dict) and value and rng.random() < 0.7:
        key = rng.choice(list(value))
        if rng.random() < 0.5 and isinstance(value[key], dict | list) and value[key]:
            value[key] = _break(value[key], rng)
        else:
            value[key] = rng.choice(WRONG)
        return value
    if isinstance(value, list) and value:
        index = rng.randrange(len(value))
        value[index] = _break(value[index], rng) if rng.random() < 0.5 else rng.choice(WRONG)
        return value
    if isinstance(value, dict):
        value["no_such_field"] = 1
    return value


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(TYPES), st.randoms(use_true_random=False))
def test_a_random_valid_message_reads_as_json_format_reads_it(
    descriptor: Descriptor, rng: random.Random
) -> None:
    message = fill(message_factory.GetMessageClass(descriptor)(), rng)
    data = json.dumps(_json(message)).encode()
    reference, found = _both(data, descriptor)
    assert found == reference
    if descriptor.full_name.endswith("Request"):
        assert found == message or reference == "refused"


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(TYPES), st.randoms(use_true_random=False))
def test_a_broken_message_is_refused_or_read_as_json_format_does(
    descriptor: Descriptor, rng: random.Random
) -> None:
    message = fill(message_factory.GetMessageClass(descriptor)(), rng)
    data = json.dumps(_break(_json(message), rng)).encode()
    reference, found = _both(data, descriptor)
    assert found == reference, data


def test_a_key_given_twice_or_a_body_that_is_not_utf_8_is_json_formats() -> None:
    descriptor = memory_pb2.RetrieveRequest.DESCRIPTOR
    assert _both(b'{"query": "a", "query": "b"}', descriptor) == ("refused", "refused")
    assert _both('{"query": "é"}'.encode("utf-16"), descriptor) == ("refused", "refused")
    for data in (b"[]", b'{"query": null}', b'{"limit": 1e2}', b'{"limit": "7"}'):
        reference, found = _both(data, descriptor)
        assert found == reference, data


def test_the_plan_is_sure_of_a_large_valid_batch() -> None:
    items = [
        memory_pb2.IngestItem(
            message=memory_pb2.Message(role="u", content=f"m{i}", metadata={"k": "v"}),
            session=memory_pb2.Session(session_id="s", date_str="d"),
        )
        for i in range(100)
    ]
    request = memory_pb2.IngestBatchRequest(namespace="n", items=items)
    data = json.dumps(_json(request)).encode()
    assert fastjson.parse(data, memory_pb2.IngestBatchRequest) == request
