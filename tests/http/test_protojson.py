"""himga.http.protojson writes every message of the proto as json_format does (with the fields
without presence always written), on random messages of every type: unicode strings, every
double including NaN and the infinities, Timestamps at the ends of their range with 0, 3, 6 and 9
fractional digits, lists and maps, nested messages set and unset; but for the doubles marked
whole_number (counts), which it writes as JSON integers when they hold one."""

import json
import random
import string
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from google.rpc import error_details_pb2
from himga_proto.memory.v1 import memory_pb2, options_pb2

from himga.http import protojson

TEXT = string.printable + 'é中\u2028\U0001f600"\\/'
DOUBLES = [0.0, -0.0, 1.5, -2.25e-300, 1e300, 5e-324, float("nan"), float("inf"), float("-inf")]
SECONDS = [-62135596800, 0, 1715176560, 253402300799]
NANOS = [0, 250_000_000, 123_000, 7]


def _types() -> list[Descriptor]:
    found: list[Descriptor] = []

    def add(descriptor: Descriptor) -> None:
        if not descriptor.GetOptions().map_entry:
            found.append(descriptor)
        for nested in descriptor.nested_types:
            add(nested)

    for descriptor in memory_pb2.DESCRIPTOR.message_types_by_name.values():
        add(descriptor)
    return found


def fill(message: Any, rng: random.Random, depth: int = 0) -> Any:
    """Sets a random choice of `message`'s fields to random values."""
    for field in message.DESCRIPTOR.fields:
        if rng.random() < 0.3:
            continue
        entry = field.message_type
        if entry is not None and entry.GetOptions().map_entry:
            target = getattr(message, field.name)
            for _ in range(rng.randint(0, 3)):
                value_field = entry.fields_by_name["value"]
                key = _scalar(entry.fields_by_name["key"], rng)
                if value_field.message_type is None:
                    target[key] = _scalar(value_field, rng)
                else:
                    fill(target[key], rng, depth + 1)
        elif field.is_repeated:
            target = getattr(message, field.name)
            for _ in range(rng.randint(0, 3)):
                if field.message_type is None:
                    target.append(_scalar(field, rng))
                elif depth < 3:
                    fill(target.add(), rng, depth + 1)
        elif field.message_type is not None:
            if field.message_type.full_name == "google.protobuf.Timestamp":
                stamp = getattr(message, field.name)
                stamp.seconds, stamp.nanos = rng.choice(SECONDS), rng.choice(NANOS)
            elif depth < 3:
                fill(getattr(message, field.name), rng, depth + 1)
                getattr(message, field.name).SetInParent()
        else:
            setattr(message, field.name, _scalar(field, rng))
    return message


def _scalar(field: FieldDescriptor, rng: random.Random) -> Any:
    kind = field.type
    if kind == FieldDescriptor.TYPE_STRING:
        return "".join(rng.choice(TEXT) for _ in range(rng.randint(0, 12)))
    if kind == FieldDescriptor.TYPE_DOUBLE:
        return rng.choice([*DOUBLES, rng.uniform(-1e6, 1e6)])
    if kind == FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.5
    if kind == FieldDescriptor.TYPE_UINT32:
        return rng.choice([0, 1, 4294967295, rng.randint(0, 10_000)])
    if kind == FieldDescriptor.TYPE_ENUM:
        return rng.choice(field.enum_type.values).number
    if kind == FieldDescriptor.TYPE_UINT64:
        return rng.choice([0, 2**64 - 1, rng.randint(0, 2**53)])
    if kind in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64):
        return rng.randint(-(2**31), 2**31 - 1)
    if kind == FieldDescriptor.TYPE_FLOAT:
        return rng.choice([0.0, 0.1, -3.5e38, float("inf")])
    if kind == FieldDescriptor.TYPE_BYTES:
        return rng.randbytes(rng.randint(0, 8))
    raise AssertionError(f"a field of another kind: {field.full_name}")


def _same(message: Message) -> None:
    expected = json_format.MessageToDict(message, always_print_fields_with_no_presence=True)
    whole_numbers(expected, message.DESCRIPTOR)
    found = protojson.to_dict(message)
    # Through JSON text, so that NaN compares, 4 differs from 4.0 and a key's order does not.
    assert json.dumps(found, sort_keys=True) == json.dumps(expected, sort_keys=True)


def whole_numbers(written: Any, descriptor: Descriptor) -> None:
    """json_format's object of a message, with each whole value of a double marked
    whole_number as an integer: what protojson writes (and the schemas want) instead."""
    if descriptor.full_name.startswith("google.") or not isinstance(written, dict):
        return
    for field in descriptor.fields:
        if field.json_name not in written:
            continue
        value = written[field.json_name]
        if field.GetOptions().Extensions[options_pb2.whole_number]:
            is_whole = isinstance(value, float) and value.is_integer()
            written[field.json_name] = int(value) if is_whole else value
        elif field.message_type is not None and not field.message_type.GetOptions().map_entry:
            for item in value if field.is_repeated else [value]:
                whole_numbers(item, field.message_type)


def test_counts_are_written_as_json_integers() -> None:
    episode = memory_pb2.EpisodeTrace(access_count=4, tokens_used=2**53, duration_seconds=0)
    episode.action_log.add(t=12, action="edit")
    text = json.dumps(protojson.to_dict(episode), sort_keys=True)
    assert '"access_count": 4,' in text and '"tokens_used": 9007199254740992}' in text
    assert '"duration_seconds": 0,' in text and '"t": 12,' in text
    # A fraction stays one (the schema refuses it), as do NaN and the infinities.
    assert protojson.to_dict(memory_pb2.EpisodeTrace(access_count=1.5))["access_count"] == 1.5
    assert protojson.to_dict(memory_pb2.ActionEntry(t=float("inf")))["t"] == "Infinity"


@pytest.mark.parametrize("descriptor", _types(), ids=lambda d: d.name)
def test_every_type_of_the_proto_is_written_as_json_format_writes_it(
    descriptor: Descriptor,
) -> None:
    kind = getattr(memory_pb2, descriptor.name, None) or _nested(descriptor)
    rng = random.Random(descriptor.full_name)
    for _ in range(60):
        _same(fill(kind(), rng))
    _same(kind())


def _nested(descriptor: Descriptor) -> Any:
    outer = getattr(memory_pb2, descriptor.containing_type.name)
    return getattr(outer, descriptor.name)


def test_types_of_other_kinds_are_left_to_json_format() -> None:
    rng = random.Random(7)
    for _ in range(20):
        _same(fill(descriptor_pb2.FieldDescriptorProto(), rng))  # enums: json_format's
        _same(fill(error_details_pb2.ErrorInfo(), rng))  # a map of strings: planned
