"""ProtoJSON decoding by a plan per message type: the body read by the json module (in C), the
few values whose JSON form the message constructor does not take turned into what it takes
(a Timestamp's string), then the message made by its constructor (in C), without json_format's
walk in Python of every value.

The plan takes only what it is sure of: what the constructor takes as json_format would (a
string for a string, an integer in range for a whole number, a finite number for a double, an
array for a repeated field, an object of strings for a map of strings, an object for a message,
a date-time string for a Timestamp). Anything else (a number written as a string, a field of a
kind it has no rule for, an unknown key, a key given twice, whatever the constructor refuses)
stops it with `Unsure`, and the caller parses the body with json_format instead, which gives its
own answer, valid or not. So the answers are json_format's (tests/http/test_fastjson.py checks
that on random messages of every type, and on random breakages of them)."""

import gc
import json
import math
from collections.abc import Callable
from typing import Any, TypeVar

from google.protobuf import timestamp_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

M = TypeVar("M", bound=Message)


class Unsure(Exception):
    """The plan has no rule for what it met: parse with json_format."""


class UnknownKeys(Unsure):
    """The body's top-level object has keys that name no field: json_format refuses it too, so
    there is nothing to ask it; `value` is the body as read (nothing of it changed yet)."""

    def __init__(self, value: dict[str, Any]) -> None:
        super().__init__("unknown keys")
        self.value = value


_TIMESTAMP = "google.protobuf.Timestamp"


def _once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise Unsure("a key is given twice")
    return found


class _Plan:
    """What to look at in one message type's JSON before the message is made from it by its
    constructor (in C, which refuses a value of the wrong type, an integer out of range, a key
    that names no field): the fields whose JSON form differs from what the constructor takes
    (a Timestamp's string, a double that must be finite), the lists and maps (which must be
    arrays and objects), and the messages within, walked in turn."""

    def __init__(self, descriptor: Descriptor) -> None:
        self.descriptor = descriptor
        self.checks: list[tuple[str, Callable[[dict[str, Any], str], None]]] = []
        self.names = frozenset(f.name for f in descriptor.fields) | frozenset(
            f.json_name for f in descriptor.fields
        )


_PLANS: dict[str, _Plan] = {}


def plan(descriptor: Any) -> _Plan:
    """The plan of a message type (made once, on first use)."""
    found = _PLANS.get(descriptor.full_name)
    if found is not None:
        return found
    made = _PLANS[descriptor.full_name] = _Plan(descriptor)
    for field in descriptor.fields:
        check = _check(field)
        if check is not None:
            made.checks.append((field.name, check))
    return made


def _check(field: FieldDescriptor) -> Callable[[dict[str, Any], str], None] | None:
    kind = field.message_type
    if kind is None:
        if field.is_repeated:
            return _array
        if field.type == FieldDescriptor.TYPE_STRING:
            return None  # the constructor refuses anything but a str
        if field.type == FieldDescriptor.TYPE_BOOL:
            return _boolean  # the constructor takes a number for a bool; JSON does not
        if field.type in _WHOLE:
            return None  # the constructor refuses a bool, a float, one out of range
        if field.type == FieldDescriptor.TYPE_DOUBLE:
            return _finite
        return _never  # enums, bytes, 64-bit integers, floats: json_format's
    if kind.GetOptions().map_entry:
        key, value = kind.fields_by_name["key"], kind.fields_by_name["value"]
        if key.type == value.type == FieldDescriptor.TYPE_STRING:
            return _object
        return _never
    if kind.full_name == _TIMESTAMP:
        return _never if field.is_repeated else _timestamp
    if kind.full_name.startswith("google.protobuf."):
        return _never
    if field.is_repeated:
        return _messages(kind)
    return _message(kind)


_WHOLE = {
    FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_INT32,
    FieldDescriptor.TYPE_SINT32,
    FieldDescriptor.TYPE_FIXED32,
    FieldDescriptor.TYPE_SFIXED32,
}


def _never(value: dict[str, Any], name: str) -> None:
    raise Unsure(name)


def _array(value: dict[str, Any], name: str) -> None:
    if type(value[name]) is not list:
        raise Unsure(name)


def _object(value: dict[str, Any], name: str) -> None:
    if type(value[name]) is not dict:
        raise Unsure(name)


def _boolean(value: dict[str, Any], name: str) -> None:
    if type(value[name]) is not bool:
        raise Unsure(name)


def _finite(value: dict[str, Any], name: str) -> None:
    number = value[name]
    if type(number) is float and not math.isfinite(number):
        raise Unsure(name)


def _timestamp(value: dict[str, Any], name: str) -> None:
    text = value[name]
    if type(text) is not str:
        raise Unsure(name)
    stamp = timestamp_pb2.Timestamp()
    try:
        stamp.FromJsonString(text)
    except ValueError:
        raise Unsure(name) from None
    value[name] = stamp


def _message(kind: Descriptor) -> Callable[[dict[str, Any], str], None]:
    def check_message(value: dict[str, Any], name: str) -> None:
        _walk(plan(kind), value[name])

    return check_message


def _messages(kind: Descriptor) -> Callable[[dict[str, Any], str], None]:
    def check_messages(value: dict[str, Any], name: str) -> None:
        items = value[name]
        if type(items) is not list:
            raise Unsure(name)
        inner = plan(kind)
        for item in items:
            _walk(inner, item)

    return check_messages


def _walk(found: _Plan, value: Any) -> None:
    if type(value) is not dict:
        raise Unsure(found.descriptor.name)
    for name, check in found.checks:
        if name in value and value[name] is not None:
            check(value, name)


def parse(data: bytes | bytearray, kind: type[M]) -> M:
    """The `kind` message of the ProtoJSON `data`, as json_format.Parse would make it; Unsure
    where the plan cannot say. The cyclic collector is paused meanwhile: the many small objects
    of a large body would otherwise set it walking them again and again (what they are is freed
    by reference counting as soon as the message is made)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        try:
            value = json.loads(bytes(data).decode("utf-8"), object_pairs_hook=_once_each)
        except Unsure:
            raise
        except (ValueError, RecursionError):  # UnicodeDecodeError, JSONDecodeError
            raise Unsure("not JSON") from None
        found = plan(kind.DESCRIPTOR)
        if type(value) is dict and not value.keys() <= found.names:
            raise UnknownKeys(value)
        try:
            _walk(found, value)
            return kind(**value)
        except (ValueError, TypeError, OverflowError, RecursionError):  # what a field refused
            raise Unsure("a value the constructor refuses") from None
    finally:
        if paused:
            gc.enable()
