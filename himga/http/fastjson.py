"""ProtoJSON decoding by a plan per message type: the body read by msgspec (in C) into a Struct
per message type, which checks each value's JSON type as it reads it, then each message filled
from its Struct by a function made once per type, without json_format's walk in Python of every
value and its checks of each field's kind.

The plan takes only what it is sure of: what msgspec reads and protobuf's own setters take as
json_format would (a string for a string, an integer in range for a whole number, a number for
a double, true or false for a bool, an array for a repeated field, an object of strings for a
map of strings, an object for a message, a date-time string for a Timestamp, read by the
Timestamp's own parser as json_format reads it; null for a field unset). Anything else (a
number written as a string, a field of a kind it has no rule for, an unknown key, a key given
twice, whatever msgspec or a setter refuses) stops it with `Unsure`, and the caller parses the
body with json_format instead, which gives its own answer, valid or not. So the answers are
json_format's (tests/http/test_fastjson.py checks that on random messages of every type, and on
random breakages of them).

Where the time goes, measured on a batch of 10,000 LoCoMo turns (benchmarks/bench_http.py):
handing the message constructor nested keyword dicts costs more than reading the JSON (it is
slow on every field, and slowest on an empty list or map); setting each field on a message grown
by `add()` costs a third of that; reading into Structs rather than dicts, a third again (no key
is looked up, an unknown one is refused as it is read, and a Struct is cheaper to make and free
than a dict). Each type's fill is one Python function written out from its descriptor once
(`_source`): a line that sets each field as its kind needs, with no decision left for the
values (a loop over a type's fields doing the same cost twice as much).

msgspec keeps the last of a key given twice, where json_format refuses it, so `_read` checks
that no key was lost: every `:` of a JSON text outside its strings separates a key from its
value, and msgspec writes back what it read with its strings' colons as they were (leaving out
only the keys that were absent), so a text with as many colons as that writing lost no key. A
string holding an escaped colon (`\\u003a`) would upset the count: such a body is checked by the
json module, told of each key.
"""

import gc
import json
import keyword
import re
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

M = TypeVar("M", bound=Message)
Fill = Callable[[Any, Any], None]
"""Sets the fields of a message (the first argument) from its Struct, as read."""


class Unsure(Exception):
    """The plan has no rule for what it met: parse with json_format."""


class UnknownKeys(Unsure):
    """The body's top-level object has keys that name no field: json_format refuses it too, so
    there is nothing to ask it; `value` is the body as read (nothing of it changed yet)."""

    def __init__(self, value: dict[str, Any]) -> None:
        super().__init__("unknown keys")
        self.value = value


_TIMESTAMP = "google.protobuf.Timestamp"
_ESCAPED_COLON = re.compile(rb"\\u003[aA]")
_WHOLE = {
    FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_INT32,
    FieldDescriptor.TYPE_SINT32,
    FieldDescriptor.TYPE_FIXED32,
    FieldDescriptor.TYPE_SFIXED32,
}
_SCALARS: dict[int, type] = {
    FieldDescriptor.TYPE_STRING: str,  # a setter refuses a lone surrogate; msgspec reads none
    FieldDescriptor.TYPE_BOOL: bool,  # msgspec reads no number as a bool (a setter would)
    FieldDescriptor.TYPE_DOUBLE: float,  # msgspec reads no NaN, no infinity, no number past
    **{kind: int for kind in _WHOLE},  # msgspec reads no bool, no 1.0; a setter: in range
}
"""The scalar kinds the plan reads, and the Python type msgspec reads each as. Enums, bytes,
64-bit integers and floats are left to json_format (as msgspec.Raw: never decoded, only kept)."""


class _Plan:
    """One message type's Struct, its decoder and fill, and the keys its JSON object may have
    (a field's name or its json_name, as json_format takes them)."""

    def __init__(self, struct: type, fill: Fill, names: frozenset[str]) -> None:
        self.decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(struct)
        self.fill = fill
        self.names = names


_PLANS: dict[str, _Plan] = {}
_UNPLANNED: set[str] = set()
_STRUCTS: dict[str, type] = {}


def _timestamp(stamp: Any, text: str) -> None:
    """A Timestamp field (`stamp`) from its JSON string, read as json_format reads it."""
    stamp.SetInParent()
    try:
        stamp.FromJsonString(text)
    except ValueError:
        raise Unsure("a Timestamp that does not read") from None


_NAMESPACE: dict[str, Any] = {"Unsure": Unsure, "UNSET": msgspec.UNSET, "timestamp": _timestamp}
"""What the fills see: one another, by `_function_name`."""


def plan(descriptor: Any) -> _Plan | None:
    """The plan of a message type (made once, on first use, with those of the types within);
    None for a type the plan does not cover."""
    found = _PLANS.get(descriptor.full_name)
    if found is not None or descriptor.full_name in _UNPLANNED:
        return found
    if not _planned(descriptor):
        _UNPLANNED.add(descriptor.full_name)
        return None
    with _making:  # one thread at a time (see _being_made)
        found = _PLANS.get(descriptor.full_name)
        if found is None:
            struct = _struct(descriptor)
            names = frozenset(f.name for f in descriptor.fields)
            json_names = names | frozenset(f.json_name for f in descriptor.fields)
            found = _PLANS[descriptor.full_name] = _Plan(
                struct, _NAMESPACE[_function_name(descriptor)], json_names
            )
        return found


def _planned(kind: Descriptor) -> bool:
    """Whether a message type has a Struct and a fill of its own: not a map's entry nor a
    well-known type, and every field's JSON key its name (json_format also takes a json_name
    that differs), a name that can follow a dot."""
    if kind.GetOptions().map_entry or kind.full_name.startswith("google.protobuf."):
        return False
    return all(f.json_name == f.name and not keyword.iskeyword(f.name) for f in kind.fields)


def _struct(kind: Descriptor) -> type:
    """The Struct of `kind` (made with those of the types within, and their fills, first; the
    proto has no type that holds itself, and a type that did would be read by json_format)."""
    found = _STRUCTS.get(kind.full_name)
    if found is not None:
        return found
    types = {f.name: _type(f) for f in kind.fields}
    fields = [
        (name, read | None | msgspec.UnsetType, msgspec.UNSET) for name, read in types.items()
    ]
    made = msgspec.defstruct(
        kind.name, fields, forbid_unknown_fields=True, gc=False, module=__name__
    )
    exec(_source(kind, types), _NAMESPACE)  # defines its fill, `_function_name(kind)`
    _STRUCTS[kind.full_name] = made
    return made


def _type(field: FieldDescriptor) -> Any:
    """The type msgspec reads `field`'s JSON value as (Raw: the plan leaves it to json_format)."""
    kind = field.message_type
    if kind is None:
        scalar = _SCALARS.get(field.type, msgspec.Raw)
        return list[scalar] if field.is_repeated and scalar is not msgspec.Raw else scalar  # type: ignore[valid-type]
    if kind.GetOptions().map_entry:
        key, value = kind.fields_by_name["key"], kind.fields_by_name["value"]
        if key.type == value.type == FieldDescriptor.TYPE_STRING:
            return dict[str, str]
        return msgspec.Raw
    if kind.full_name == _TIMESTAMP:
        return msgspec.Raw if field.is_repeated else str
    if not _planned(kind) or kind.full_name in _being_made:
        return msgspec.Raw
    _being_made.add(kind.full_name)
    try:
        inner = _struct(kind)
    finally:
        _being_made.discard(kind.full_name)
    return list[inner] if field.is_repeated else inner  # type: ignore[valid-type]


_being_made: set[str] = set()
"""The types whose Structs are being made, within `_making`: a type met again within itself."""
_making = threading.Lock()


def _function_name(kind: Descriptor) -> str:
    return "fill_" + kind.full_name.replace(".", "_")


def _source(kind: Descriptor, types: dict[str, Any]) -> str:
    """The Python source of the function that fills a `kind` message from its Struct, whose
    fields msgspec reads as `types`."""
    lines = [f"def {_function_name(kind)}(message, value):"]
    for field in kind.fields:
        lines.append(f"    item = value.{field.name}")
        lines.append("    if item is not None and item is not UNSET:")
        lines.extend("        " + line for line in _sets(field, types[field.name]))
    if not kind.fields:
        lines.append("    pass")
    return "\n".join([*lines, "", ""])


def _sets(field: FieldDescriptor, read: Any) -> list[str]:
    """The lines that set `field` of `message` from `item`, its value as msgspec read it (as a
    `read`)."""
    target = f"message.{field.name}"
    if read is msgspec.Raw:
        return [f"raise Unsure({field.name!r})"]
    inner = field.message_type
    if inner is None or inner.GetOptions().map_entry:
        if field.is_repeated:  # a list, or a dict for a map
            method = "update" if inner is not None else "extend"
            return ["if item:", f"    {target}.{method}(item)"]
        return [f"{target} = item"]
    if inner.full_name == _TIMESTAMP:
        return [f"timestamp({target}, item)"]
    fill = _function_name(inner)
    if field.is_repeated:
        return ["add = " + target + ".add", "for element in item:", f"    {fill}(add(), element)"]
    return [f"inner = {target}", "inner.SetInParent()", f"{fill}(inner, item)"]


def _once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise Unsure("a key is given twice")
    return found


def _once_each_key(data: bytes, value: Any) -> None:
    """Unsure if the JSON text `data`, read as `value`, gives a key twice."""
    if _ESCAPED_COLON.search(data) is not None:
        json.loads(data.decode("utf-8"), object_pairs_hook=_once_each)
    elif data.count(b":") != msgspec.json.encode(value).count(b":"):
        raise Unsure("a key is given twice")


def parse(data: bytes | bytearray, kind: type[M]) -> M:
    """The `kind` message of the ProtoJSON `data`, as json_format.Parse would make it; Unsure
    where the plan cannot say. The cyclic collector is paused meanwhile: the many small objects
    of a large body would otherwise set it walking them again and again (what they are is freed
    by reference counting as soon as the message is made)."""
    found = plan(kind.DESCRIPTOR)
    if found is None:
        raise Unsure(kind.DESCRIPTOR.full_name)
    data = bytes(data)
    paused = gc.isenabled()
    gc.disable()
    try:
        try:
            value = found.decoder.decode(data)
            _once_each_key(data, value)
        except msgspec.ValidationError:  # JSON, not what the plan reads (an unknown key?)
            _unknown_keys(data, found)
            raise Unsure("not what the plan reads") from None
        except (ValueError, RecursionError):  # not JSON, not UTF-8 (msgspec.DecodeError too)
            raise Unsure("not JSON") from None
        message = kind()
        try:
            found.fill(message, value)
        except (ValueError, TypeError, OverflowError):  # what a setter refused
            raise Unsure("a value a setter refuses") from None
        return message
    finally:
        if paused:
            gc.enable()


def _unknown_keys(data: bytes, found: _Plan) -> None:
    """UnknownKeys if `data` is a JSON object, each key once, with a key that names no field."""
    try:
        value = msgspec.json.decode(data)
        _once_each_key(data, value)
    except (ValueError, RecursionError):
        return
    if type(value) is dict and not value.keys() <= found.names:
        raise UnknownKeys(value)
