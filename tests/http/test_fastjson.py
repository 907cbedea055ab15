"""himga.http.fastjson (through the HTTP port's JSON codec) reads every request type of the
proto as json_format does: the same message for random valid messages of every type (read by
the plan itself, not handed to json_format), and the same refusal (or the same message) after a
random breakage of one value, key or nesting, or in the corners where msgspec and the json
module part ways (numbers, keys given twice, escaped colons)."""

import json
import random
from typing import Any

import pytest
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import Descriptor
from himga_proto.memory.v1 import memory_pb2
from hypothesis import assume, given, settings
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


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(TYPES), st.randoms(use_true_random=False))
def test_the_plan_itself_reads_a_random_valid_message_of_every_type(
    descriptor: Descriptor, rng: random.Random
) -> None:
    kind = message_factory.GetMessageClass(descriptor)
    message = fill(kind(), rng)
    data = json.dumps(_json(message)).encode()
    assume(b'"NaN"' not in data and b'Infinity"' not in data)  # strings: json_format's to read
    assert fastjson.parse(data, kind) == json_format.Parse(data, kind())


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(TYPES), st.randoms(use_true_random=False))
def test_a_broken_message_is_refused_or_read_as_json_format_does(
    descriptor: Descriptor, rng: random.Random
) -> None:
    message = fill(message_factory.GetMessageClass(descriptor)(), rng)
    data = json.dumps(_break(_json(message), rng)).encode()
    reference, found = _both(data, descriptor)
    assert found == reference, data


RETRIEVE = [
    b'{"query": "a", "limit": 7, "limit": 7}',
    b'{"query": "a:b", "filter": {"roles": ["u"], "roles": ["v"]}}',
    b'{"filter": {"roles": "uv"}}',
    b'{"filter": {"roles": ["u", null]}}',
    b'{"filter": {"roles": {"u": "v"}}}',
    b'{"filter": {"after": "2024-05-08T13:56:00.5+01:00"}}',
    b'{"filter": {"after": "2024-13-08T13:56:00Z"}}',
    b'{"filter": {"after": 5}}',
    b'{"filter": {"metadata": {"k": "v", "k": "w"}}}',
    b'{"filter": {"metadata": {"k": "v", "k2": "w"}}}',
    b'{"query": "a\\u003ab", "limit": 1}',
    b'{"query": "a\\u003Ab", "query": "c"}',
    b'{"query": "\\u003a", "namespace": "n:\\u003a"}',
    b'{"query": "\\"limit\\": 1", "limit": 2}',
    b'{"query": null, "limit": null, "filter": null}',
    b'{"filter": {}}',
    b'{"filter": {"metadata": {}}}',
    b'{"filter": {"metadata": null}}',
    b'{"filter": {"metadata": {"k": null}}}',
    b'{"filter": {"nope": 1}}',
    b'{"nope": 1, "query": "a"}',
    b'{"nope": 1, "nope": 2}',
    b'{"limit": 1.0}',
    b'{"limit": -1}',
    b'{"limit": 4294967296}',
    b'{"limit": 123456789012345678901234567890}',
    b'{"limit": true}',
    b'{"limit": NaN}',
    b'{"query": 1e400}',
    b'{"query": "\\ud800"}',
    b'{"query": "\\ud83d\\ude00"}',
    b'{"query": "a"} ',
    b'{"query": "a"} x',
]
EPISODES = [
    b'{"episode": {"duration_seconds": true}}',
    b'{"episode": {"duration_seconds": 1}}',
    b'{"episode": {"duration_seconds": 123456789012345678901234567890}}',
    b'{"episode": {"duration_seconds": 1' + b"0" * 400 + b"}}",
    b'{"episode": {"duration_seconds": -0.0, "tokens_used": 5e-324}}',
    b'{"episode": {"duration_seconds": "1.5"}}',
    b'{"episode": {"importance": null, "timestamp": "2024-05-08T13:56:00Z"}}',
    b'{"episode": {"files_read": ["a"], "files_read": ["a"]}}',
    b'{"episode": {"context": {}, "action_log": []}}',
    b'{"episode": {"action_log": [{}, null]}}',
]
BOOLEANS = [b'{"deleted": true}', b'{"deleted": 1}', b'{"deleted": "true"}', b'{"deleted": null}']


@pytest.mark.parametrize(
    ("data", "descriptor"),
    [(d, memory_pb2.RetrieveRequest.DESCRIPTOR) for d in RETRIEVE]
    + [(d, memory_pb2.RecordEpisodeRequest.DESCRIPTOR) for d in EPISODES]
    + [(d, memory_pb2.DeleteEpisodeResponse.DESCRIPTOR) for d in BOOLEANS],
)
def test_a_corner_where_msgspec_and_the_json_module_part_ways_is_read_as_json_format_reads_it(
    data: bytes, descriptor: Descriptor
) -> None:
    reference, found = _both(data, descriptor)
    assert found == reference, data


def test_a_date_time_in_lower_case_reads_as_in_upper_case_which_the_plan_leaves_alone() -> None:
    kind = memory_pb2.RetrieveRequest
    lower = b'{"filter": {"after": "2024-05-08t13:56:00z", "roles": ["u"]}, "query": "at 9t12:"}'
    upper = b'{"filter": {"after": "2024-05-08T13:56:00Z", "roles": ["u"]}, "query": "at 9t12:"}'
    with pytest.raises(fastjson.Unsure):
        fastjson.parse(lower, kind)
    assert codec.JSON.parse(lower, kind) == json_format.Parse(upper, kind())
    refused = codec.JSON.parse(lower[:-1] + b', "nope": 1}', kind)
    assert isinstance(refused, Undecodable)
    assert [v.field for v in refused.violations] == ["nope"]


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
