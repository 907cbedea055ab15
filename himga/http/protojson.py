"""`to_dict`: a message as its ProtoJSON object, as `json_format.MessageToDict(message,
always_print_fields_with_no_presence=True)` writes it, in well under half the time.

json_format decides each field's form anew for every value it writes. Here each message type is
planned once (which fields are always written, which only when set, which are lists or maps, and
how a value is written) as one Python function, then every message of that type follows it
(keys in the order of the fields, as json_format writes them). The plan covers the kinds the
proto uses (strings, booleans, integers, doubles, messages, Timestamps, lists, maps
with string keys); a message type with any other kind (float, bytes, enums, another well-known
type) is written by json_format itself. tests/http/test_protojson.py holds both to the same
answers on random messages of every type of the proto, but one: a double marked
`(whole_number) = true` in the proto (a count the schemas type as integer) that holds a whole
number is written as a JSON integer (4, where json_format writes 4.0), as the schemas ask.
"""

import keyword
import math
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from himga_proto.memory.v1 import options_pb2

Writer = Callable[[Any], Any]
_AS_IS = {
    FieldDescriptor.TYPE_STRING,
    FieldDescriptor.TYPE_BOOL,
    FieldDescriptor.TYPE_INT32,
    FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_SINT32,
    FieldDescriptor.TYPE_FIXED32,
    FieldDescriptor.TYPE_SFIXED32,
}
_INT64 = {
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_FIXED64,
    FieldDescriptor.TYPE_SFIXED64,
}
_TIMESTAMP = "google.protobuf.Timestamp"
_EPOCH = datetime(1970, 1, 1)
_SECONDS = (-62135596800, 253402300799)  # 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z
_plans: dict[str, Writer] = {}


def to_dict(message: Message) -> Any:
    """The ProtoJSON object of `message` (json_names as keys; fields without presence written
    even when empty)."""
    return _writer(message.DESCRIPTOR)(message)


class _Unplanned(Exception):
    """A field of a kind the plans do not cover."""


def _writer(descriptor: Any) -> Writer:
    found = _plans.get(descriptor.full_name)
    if found is None:
        with _planning:
            found = _plans.get(descriptor.full_name)
            if found is None:
                try:
                    found = _plan(descriptor)
                except _Unplanned:
                    found = _by_json_format
                _plans[descriptor.full_name] = found
    return found


_planning = threading.RLock()
"""Held while a plan is made (by one thread at a time; a type within is planned within)."""


def _by_json_format(message: Message) -> Any:
    return json_format.MessageToDict(message, always_print_fields_with_no_presence=True)


def _plan(descriptor: Descriptor) -> Writer:
    """The writer of a `descriptor` message: one function, written out once, with a line per
    field that writes it as its kind needs (a loop over the fields deciding each one's kind
    for every message cost twice as much)."""
    if descriptor.full_name == _TIMESTAMP:
        return _timestamp
    if descriptor.full_name.startswith("google.protobuf."):
        raise _Unplanned(descriptor.full_name)
    _plans[descriptor.full_name] = _by_json_format  # a type that holds itself, while planning
    namespace: dict[str, Any] = {}
    lines = ["def write(message):", "    found = {}"]
    for number, field in enumerate(descriptor.fields):
        key, target = repr(field.json_name), f"message.{field.name}"
        if keyword.iskeyword(field.name):
            raise _Unplanned(field.full_name)
        entry = field.message_type
        if entry is not None and entry.GetOptions().map_entry:
            if entry.fields_by_name["key"].type != FieldDescriptor.TYPE_STRING:
                raise _Unplanned(field.full_name)
            value = namespace[f"value_{number}"] = _value(entry.fields_by_name["value"])
            if value is None:
                lines.append(f"    found[{key}] = dict({target})")
            else:
                each = f"value_{number}(v)"
                lines.append(f"    found[{key}] = {{k: {each} for k, v in {target}.items()}}")
            continue
        value = namespace[f"value_{number}"] = _value(field)
        each = "item" if value is None else f"value_{number}(item)"
        if field.is_repeated:
            whole = f"list({target})" if value is None else f"[{each} for item in {target}]"
            lines.append(f"    found[{key}] = {whole}")
        elif field.has_presence:
            lines.append(f"    if message.HasField({field.name!r}):")
            lines.append(f"        item = {target}")
            lines.append(f"        found[{key}] = {each}")
        else:
            lines.append(f"    item = {target}")
            lines.append(f"    found[{key}] = {each}")
    lines.append("    return found")
    exec("\n".join(lines), namespace)
    write: Writer = namespace["write"]
    return write


def _value(field: FieldDescriptor) -> Writer | None:
    """How one value of `field` is written; None: as Python holds it."""
    if field.message_type is not None:
        return _writer(field.message_type)
    if field.type in _AS_IS:
        return None
    if field.type in _INT64:
        return str
    if field.type == FieldDescriptor.TYPE_DOUBLE:
        return _whole if field.GetOptions().Extensions[options_pb2.whole_number] else _double
    raise _Unplanned(field.full_name)


def _whole(value: float) -> int | float | str:
    """A double marked whole_number (a count): a JSON integer when it holds one."""
    if value.is_integer():
        return int(value)
    return _double(value)


def _double(value: float) -> float | str:
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def _timestamp(stamp: Any) -> str:
    """RFC 3339 in UTC with Z, with 0, 3, 6 or 9 fractional digits (as json_format)."""
    seconds, nanos = stamp.seconds, stamp.nanos
    if not _SECONDS[0] <= seconds <= _SECONDS[1] or not 0 <= nanos < 1_000_000_000:
        text: str = stamp.ToJsonString()  # raises as json_format does
        return text
    text = (_EPOCH + timedelta(seconds=seconds)).isoformat()
    if nanos == 0:
        return text + "Z"
    if nanos % 1_000_000 == 0:
        return f"{text}.{nanos // 1_000_000:03d}Z"
    if nanos % 1_000 == 0:
        return f"{text}.{nanos // 1_000:06d}Z"
    return f"{text}.{nanos:09d}Z"
