"""The HTTP port's codecs, in place of connect-python's: ProtoJSON written compact, and requests
that do not decode answered the way the gRPC port answers them.

connect-python 0.9 turns any decoding failure into a bare `invalid_argument` ("Failed to decode
request body: ...") before any handler runs, with no ErrorInfo and no field named. Within
`serving()`, these codecs instead leave the message empty and keep its bytes (`taken`) for the
handlers (himga.http.handlers), which hand them to the core with the codec's `parse`: the core
checks the token first, then parses, and a body that does not parse is answered INVALID_ARGUMENT
with reason INVALID_REQUEST and BadRequest violations naming its fields (at most the first 100,
himga.bounds), the same log line and metrics as over gRPC. `parse` reads JSON by
the plan of himga.http.fastjson, and with json_format where the plan is unsure (a date-time
written in lower case, which RFC 3339 allows and protobuf's parser does not, put in upper case
first).

Its encoder writes the ProtoJSON of `himga.http.protojson` without indentation, by msgspec (in
C; connect-python indents by two spaces, through the json module's pure-Python encoder, after
json_format's own walk of the message): a Retrieve answer of ten hits in under a third of the
time.

connect-python keeps one codec table per process and has no per-application option (its own
source says so); `install` puts these in it. Outside `serving()` (a connect-python client in the
same process), decoding fails by raising, as connect-python's own codecs do.
"""

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import msgspec
from connectrpc import _codec
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from himga.bounds import Violations
from himga.errors import unicode_problem
from himga.http import apart, fastjson, protojson
from himga.status import FieldViolation, Undecodable

_local = threading.local()


@contextmanager
def serving() -> Iterator[None]:
    """Within: a request decoded on this thread is not parsed but kept, bytes and codec, for
    `taken`, so that the core parses it once the caller's token is known good."""
    _local.serving, _local.body = True, None
    try:
        yield
    finally:
        _local.serving, _local.body = False, None


def taken(request: object) -> tuple[bytes, "JsonCodec | ProtoCodec"] | None:
    """The bytes and codec of `request`, the message a codec left empty on this thread within
    `serving()`; None if it was decoded."""
    body: tuple[object, bytes, JsonCodec | ProtoCodec] | None = getattr(_local, "body", None)
    if body is None or body[0] is not request:
        return None
    _local.body = None
    return body[1], body[2]


def _kept(message: Message, data: bytes | bytearray, codec: "JsonCodec | ProtoCodec") -> bool:
    if not getattr(_local, "serving", False):
        return False
    _local.body = (message, bytes(data), codec)
    return True


def _why(error: Exception) -> str:
    return str(error).splitlines()[0][:200] if str(error) else type(error).__name__


class JsonCodec:
    """ProtoJSON with the proto's json_names (the schemas' keys), written compact. Fields
    without presence are written even when empty: the schemas require `content` of a Message
    that may be "", and a client reads `"hits": []` rather than guessing from a missing key;
    unset `optional` fields and messages stay out, as the schemas have them optional."""

    def name(self) -> str:
        return "json"

    def encode(self, message: Message) -> bytes:
        return msgspec.json.encode(protojson.to_dict(message))

    def decode(self, data: bytes | bytearray, message: Message) -> Message:
        if _kept(message, data, self):
            return message
        self._into(data, message)
        return message

    def parse(self, data: bytes, kind: type[Message]) -> Message | Undecodable:
        """`data` as a `kind`, or an Undecodable naming its offending fields (a large body is
        read in a helper process, unless the plan reads it here: himga.http.apart)."""
        if len(data) < apart.APART_BYTES:
            return self.parse_here(data, kind)
        if len(data) <= apart.HERE_BYTES:
            try:
                return fastjson.parse(data, kind)
            except fastjson.Unsure:  # unknown keys too: the helper names them
                pass
        return apart.parse(data, kind)

    def parse_here(self, data: bytes, kind: type[Message]) -> Message | Undecodable:
        """`parse`, in this process. The plan reads no date-time written in lower case (the
        Timestamp's parser refuses it), so only a body it is unsure of is searched for one."""
        try:
            return fastjson.parse(data, kind)
        except fastjson.UnknownKeys as unknown:  # json_format refuses it: nothing to ask
            found = Violations()
            value = unknown.value
            if _LOWER_CASE_TIME.search(data) is not None:
                value = upper_case_times(value, kind.DESCRIPTOR)
            _object(value, cast(Descriptor, kind.DESCRIPTOR), "", found)
            why = f"{kind.DESCRIPTOR.name} has no field named by some of its keys"
            return Undecodable(why, len(data), tuple(found), found.more, found.unchecked)
        except fastjson.Unsure:
            pass  # json_format's answer, whatever it is
        message = kind()
        try:
            self._into(data, message, fast=False)
        except Exception as error:  # ParseError, UnicodeDecodeError, RecursionError (nesting)
            found = json_violations(data, message.DESCRIPTOR)
            return Undecodable(_why(error), len(data), tuple(found), found.more, found.unchecked)
        return message

    def _into(self, data: bytes | bytearray, message: Message, fast: bool = True) -> None:
        if fast:
            try:
                message.MergeFrom(fastjson.parse(data, type(message)))
                return
            except fastjson.Unsure:
                pass
        if _LOWER_CASE_TIME.search(data) is None:
            json_format.Parse(bytes(data), message)
        else:
            value = json.loads(data, object_pairs_hook=_once_each)
            json_format.ParseDict(upper_case_times(value, message.DESCRIPTOR), message)


class ProtoCodec:
    """The protobuf binary form; a broken one names no field (as over gRPC)."""

    def name(self) -> str:
        return "proto"

    def encode(self, message: Message) -> bytes:
        return message.SerializeToString()

    def decode(self, data: bytes | bytearray, message: Message) -> Message:
        if not _kept(message, data, self):
            message.ParseFromString(bytes(data))
        return message

    def parse(self, data: bytes, kind: type[Message]) -> Message | Undecodable:
        """`data` as a `kind`, or why not (a broken protobuf names no field)."""
        try:
            return kind.FromString(data)
        except Exception as error:  # DecodeError
            return Undecodable(_why(error), len(data))


# A date-time written with a lower-case `t` or `z`, as RFC 3339 and the schemas allow and
# protobuf's Timestamp parser does not: such a body takes the slower path of upper_case_times.
_LOWER_CASE_TIME = re.compile(rb"[0-9]t[0-9]{2}:|[0-9]z\"")
_TIMESTAMP = "google.protobuf.Timestamp"


def upper_case_times(value: Any, descriptor: Any) -> Any:
    """`value`, the JSON of a `descriptor` message, with every Timestamp field's string in upper
    case (`2024-05-08t13:56:00z` -> `2024-05-08T13:56:00Z`; a date-time holds no other letter),
    in place; other strings, and anything that is not what its field takes, are left for the
    parser to judge."""
    if not isinstance(value, dict):
        return value
    for key, item in value.items():
        field = _field(descriptor, key)
        if field is None or field.message_type is None:
            continue
        if _is_map(field):
            inner = _map_value(field).message_type
            if inner is not None and isinstance(item, dict):
                for name, element in item.items():
                    item[name] = _upper_case(element, inner)
        elif field.is_repeated and isinstance(item, list):
            value[key] = [_upper_case(element, field.message_type) for element in item]
        else:
            value[key] = _upper_case(item, field.message_type)
    return value


def _upper_case(item: Any, descriptor: Descriptor) -> Any:
    if descriptor.full_name == _TIMESTAMP:
        return item.upper() if isinstance(item, str) else item
    return item if _well_known(descriptor) else upper_case_times(item, descriptor)


JSON = JsonCodec()
PROTO = ProtoCodec()


def install() -> None:
    """Make `JSON` and `PROTO` connect-python's codecs (for every application in the process)."""
    _codec._codecs.update(
        {
            _codec.CODEC_NAME_JSON: JSON,
            _codec.CODEC_NAME_JSON_CHARSET_UTF8: JSON,
            _codec.CODEC_NAME_PROTO: PROTO,
        }
    )
    if _codec.get_codec("json") is not JSON:  # a connect-python that keeps its codecs elsewhere
        raise RuntimeError("connect-python's codec table moved: himga.http.codec needs updating")


def json_violations(data: bytes | bytearray, descriptor: Any) -> Violations:
    """What is wrong with `data` as the ProtoJSON of a `descriptor` message: each offending
    field by its path (`items[2].session.date_str`) and the rule it breaks; one violation of
    the whole body when no field is to blame (not JSON, a key given twice). The walk stops at
    the bound of himga.bounds: past it, unknown keys are only counted, and nothing
    else is looked at."""
    found = Violations()
    try:
        value = json.loads(data)
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError
        found.append(FieldViolation("", f"the body is not JSON: {error}"))
        return found
    except RecursionError:
        found.append(FieldViolation("", "the body nests arrays or objects too deeply"))
        return found
    try:
        if _LOWER_CASE_TIME.search(data) is not None:
            value = upper_case_times(value, descriptor)
        _object(value, descriptor, "", found)
    except RecursionError:
        found.append(FieldViolation("", "the body nests objects too deeply"))
    return found


def _once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict; ValueError for a key given twice (as ProtoJSON has it)."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"the key {key!r} is given twice")
        found[key] = value
    return found


def _object(value: Any, descriptor: Descriptor, path: str, found: Violations) -> None:
    if not isinstance(value, dict):
        found.append(FieldViolation(path, f"must be a JSON object ({descriptor.name})"))
        return
    _field(descriptor, "")  # its names made
    names = _NAMES[descriptor.full_name]
    unknown = len(value.keys() - names.keys())  # counted in C, however many there are
    known = len(value) - unknown
    unknown_named = known_seen = 0
    for key, item in value.items():
        field = names.get(key)
        if found.full:  # past the bound: count the unknown keys, walk nothing more
            found.more += unknown - unknown_named
            found.unchecked = found.unchecked or known_seen < known
            return
        where = f"{path}.{key}" if path else key
        if field is None:
            unknown_named += 1
            found.append(FieldViolation(where, f"{descriptor.name} has no such field"))
            continue
        known_seen += 1
        if not _parses(descriptor, {key: item}):
            before = len(found)
            _inside(field, item, where, found)
            if len(found) == before and not found.full:
                found.append(_broken(field, where, item=item))


def _inside(field: FieldDescriptor, item: Any, where: str, found: Violations) -> None:
    """The violations within a field that does not parse, when they can be told apart."""
    if _is_map(field):
        if not isinstance(item, dict):
            return
        value = _map_value(field)
        for key, element in item.items():
            if found.full:
                found.unchecked = True
                return
            if not _parses(_owner(field), {field.name: {key: element}}):
                unpaired = _lone_surrogate(key) or (
                    _lone_surrogate(element) if value.type == FieldDescriptor.TYPE_STRING else None
                )
                found.append(
                    FieldViolation(f"{where}.{key}", unpaired or f"must be {_kind(value)}")
                )
        return
    if field.is_repeated and isinstance(item, list):
        for index, element in enumerate(item):
            if found.full:
                found.unchecked = True
                return
            if not _parses(_owner(field), {field.name: [element]}):
                at = f"{where}[{index}]"
                before = len(found)
                _single(field, element, at, found)
                if len(found) == before and not found.full:
                    found.append(_broken(field, at, element=True, item=element))
        return
    if not field.is_repeated:
        _single(field, item, where, found)


def _single(field: FieldDescriptor, item: Any, where: str, found: Violations) -> None:
    kind = field.message_type
    if kind is None or _well_known(kind) or not isinstance(item, dict):
        return
    _object(item, kind, where, found)


def _lone_surrogate(item: Any) -> str | None:
    """What is wrong with a string JSON allows ("\\ud800") but Unicode does not, if it is one."""
    return unicode_problem(item) if isinstance(item, str) else None


def _broken(
    field: FieldDescriptor, where: str, *, element: bool = False, item: Any = None
) -> FieldViolation:
    if field.type == FieldDescriptor.TYPE_STRING and (unpaired := _lone_surrogate(item)):
        return FieldViolation(where, unpaired)
    kind = _kind(field)
    if field.is_repeated and not element and not _is_map(field):
        return FieldViolation(where, f"must be a JSON array, each item {kind}")
    return FieldViolation(where, f"must be {kind}")


_INTEGERS = {
    FieldDescriptor.TYPE_UINT32: "an integer from 0 to 4294967295",
    FieldDescriptor.TYPE_FIXED32: "an integer from 0 to 4294967295",
    FieldDescriptor.TYPE_INT32: "an integer from -2147483648 to 2147483647",
    FieldDescriptor.TYPE_SINT32: "an integer from -2147483648 to 2147483647",
    FieldDescriptor.TYPE_SFIXED32: "an integer from -2147483648 to 2147483647",
}
_KINDS = {
    FieldDescriptor.TYPE_STRING: "a string",
    FieldDescriptor.TYPE_BOOL: "true or false",
    FieldDescriptor.TYPE_DOUBLE: "a number",
    FieldDescriptor.TYPE_FLOAT: "a number",
    FieldDescriptor.TYPE_BYTES: "base64 text",
    **_INTEGERS,
}


def _kind(field: FieldDescriptor) -> str:
    """What one value of `field` must be, in words."""
    if _is_map(field):
        return f"a JSON object whose values are each {_kind(_map_value(field))}"
    if field.enum_type is not None:
        return "one of " + ", ".join(value.name for value in field.enum_type.values)
    kind = field.message_type
    if kind is not None:
        if kind.full_name == _TIMESTAMP:
            return "an RFC 3339 date-time in UTC, such as 2024-05-08T13:56:00Z"
        return f"a JSON object ({kind.name})"
    return _KINDS.get(field.type, "an integer")


def _is_map(field: FieldDescriptor) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _map_value(field: FieldDescriptor) -> FieldDescriptor:
    """The value field of a map field's entries."""
    assert field.message_type is not None
    value: FieldDescriptor = field.message_type.fields_by_name["value"]
    return value


def _owner(field: FieldDescriptor) -> Descriptor:
    """The message type `field` belongs to."""
    assert field.containing_type is not None
    return field.containing_type


def _well_known(descriptor: Descriptor) -> bool:
    """Types with a ProtoJSON form of their own (a Timestamp is a string)."""
    return descriptor.full_name.startswith("google.protobuf.")


def _field(descriptor: Descriptor, key: str) -> FieldDescriptor | None:
    """The field `key` names, by its name or its json_name (ProtoJSON accepts both)."""
    names = _NAMES.get(descriptor.full_name)
    if names is None:
        names = {f.json_name: f for f in descriptor.fields}
        names.update(descriptor.fields_by_name)
        _NAMES[descriptor.full_name] = names
    return names.get(key)


_NAMES: dict[str, dict[str, FieldDescriptor]] = {}
"""Each message type's fields by name and by json_name, made on first use."""


def _parses(descriptor: Descriptor, value: dict[str, Any]) -> bool:
    try:
        json_format.ParseDict(value, message_factory.GetMessageClass(descriptor)())
    except Exception:  # ParseError, and whatever a field's parser lets through
        return False
    return True
