"""The shipped JSON Schemas: load them, validate documents, and a fast path for bulk checks.

The schemas are read from the installed `himga_schema` package (not the working directory), so
an installed himga validates without a checkout. `validate` is the reference: it uses
`jsonschema` (formats checked) and reports every problem with a JSON path and a reason.
`is_valid` and `fast_validator` use `jsonschema-rs` for bulk work; the contract tests hold the
two to the same verdict on every conformance vector.
"""

import calendar
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any

import jsonschema_rs
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from himga.errors import SchemaError, UnknownTypeError

if TYPE_CHECKING:
    # Imported where used (the reference, and messages for invalid documents only), so the fast
    # path and `himga --help` do not pay for it.
    from jsonschema import Draft202012Validator, FormatChecker
    from jsonschema import ValidationError as _JsonschemaError

__all__ = [
    "SchemaError",
    "UnknownTypeError",
    "fast_validator",
    "format_checker",
    "formats_used",
    "is_valid",
    "json_path",
    "reference_validator",
    "registry",
    "schema_for",
    "schema_id",
    "type_for_id",
    "type_names",
    "validate",
]

_SCHEMA_PACKAGE = "himga_schema"
_SCHEMA_DIR = "json/v1"


# RFC 3339's date-time, as the reference has always checked it (rfc3339-validator's grammar,
# which jsonschema's format extras use: T and Z in either case, a leap second allowed), held to
# the whole string: the stock checker lets a trailing newline through, RFC 3339 does not.
_DATE_TIME_GRAMMAR = re.compile(
    r"(\d{4})-(0[1-9]|1[0-2])-(\d{2})T(?:[01]\d|2[0-3]):[0-5]\d:(?:[0-5]\d|60)(?:\.\d+)?"
    r"(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)",
    re.IGNORECASE,
)


def _date_time(instance: object) -> bool:
    """Whether `instance` is an RFC 3339 date-time (anything but a string passes, as formats
    apply to strings only): the grammar, then the calendar (no year 0, no 30 February)."""
    if not isinstance(instance, str):
        return True
    found = _DATE_TIME_GRAMMAR.fullmatch(instance)
    if found is None:
        return False
    year, month, day = (int(part) for part in found.groups())
    return year > 0 and 1 <= day <= calendar.monthrange(year, month)[1]


@cache
def format_checker() -> "FormatChecker":
    """The format checker of the reference validator: every format the shipped schemas use,
    `date-time` (the only one today) checked as strictly as RFC 3339 (and the other languages)
    check it, by himga itself, so that no format package (jsonschema's `format-nongpl` extras
    take seconds to import) is needed. A format added to a schema is taken from `jsonschema`'s
    own checker, or refused here, never left unchecked."""
    from jsonschema import Draft202012Validator, FormatChecker

    checker = FormatChecker(formats=())
    checker.checks("date-time")(_date_time)
    stock = Draft202012Validator.FORMAT_CHECKER.checkers
    for name in sorted(formats_used() - set(checker.checkers)):
        if name not in stock:
            raise UnknownTypeError(f"the shipped schemas use the format {name!r}, unchecked here")
        checker.checkers[name] = stock[name]
    return checker


def formats_used() -> set[str]:
    """Every `format` a shipped schema names."""
    return {
        subschema["format"]
        for schema in _shipped().by_type.values()
        for _, subschema in _subschemas(schema, "")
        if isinstance(subschema.get("format"), str)
    }


@dataclass(frozen=True)
class _Shipped:
    """The loaded schemas and what is derived from them once."""

    by_type: dict[str, dict[str, Any]]
    type_by_id: dict[str, str]
    # id() of every subschema -> (its resource's $id, JSON pointer), to name broken rules.
    locations: dict[int, tuple[str, str]]
    registry: Registry[Any]


@cache
def _shipped() -> _Shipped:
    by_type: dict[str, dict[str, Any]] = {}
    for entry in sorted(files(_SCHEMA_PACKAGE).joinpath(_SCHEMA_DIR).iterdir(), key=str):
        if entry.name.endswith(".json"):
            schema = json.loads(entry.read_text(encoding="utf-8"))
            by_type[schema["title"]] = schema
    if not by_type:
        raise UnknownTypeError(f"no schemas shipped in {_SCHEMA_PACKAGE}/{_SCHEMA_DIR}")
    locations: dict[int, tuple[str, str]] = {}
    for schema in by_type.values():
        for pointer, subschema in _subschemas(schema, ""):
            locations[id(subschema)] = (schema["$id"], pointer)
    resources = [(s["$id"], DRAFT202012.create_resource(s)) for s in by_type.values()]
    return _Shipped(
        by_type=by_type,
        type_by_id={schema["$id"]: name for name, schema in by_type.items()},
        locations=locations,
        registry=Registry().with_resources(resources).crawl(),
    )


def _subschemas(node: Any, pointer: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        yield pointer, node
        for key, value in node.items():
            escaped = str(key).replace("~", "~0").replace("/", "~1")
            yield from _subschemas(value, f"{pointer}/{escaped}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _subschemas(value, f"{pointer}/{index}")


def type_names() -> list[str]:
    """The names (schema titles) of every shipped type, sorted: `EpisodeTrace`, `Message`, ..."""
    return sorted(_shipped().by_type)


def schema_for(type_name: str) -> dict[str, Any]:
    """The schema of a type, as shipped (do not mutate it)."""
    try:
        return _shipped().by_type[type_name]
    except KeyError:
        known = ", ".join(type_names())
        raise UnknownTypeError(f"unknown type {type_name!r}; known types: {known}") from None


def schema_id(type_name: str) -> str:
    """The absolute `$id` of a type's schema."""
    return str(schema_for(type_name)["$id"])


def type_for_id(uri: str) -> str:
    """The type a schema `$id` names, as a document's `$schema` property gives it.

    A trailing empty fragment (`...message.json#`) is accepted, as JSON Schema treats it alike.
    """
    shipped = _shipped()
    name = shipped.type_by_id.get(uri.removesuffix("#"))
    if name is None:
        known = ", ".join(sorted(shipped.type_by_id))
        raise UnknownTypeError(f"unknown schema {uri!r}; known schemas: {known}")
    return name


def registry() -> Registry[Any]:
    """A `referencing` registry holding every shipped schema under its `$id`."""
    return _shipped().registry


@cache
def reference_validator(type_name: str) -> "Draft202012Validator":
    """The `jsonschema` validator of a type, with formats checked: the reference."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(
        schema_for(type_name), registry=registry(), format_checker=format_checker()
    )


@cache
def fast_validator(type_name: str) -> jsonschema_rs.Validator:
    """The `jsonschema-rs` validator of a type, with formats checked: for bulk validation."""
    shipped = _shipped()
    resources = [(schema["$id"], schema) for schema in shipped.by_type.values()]
    return jsonschema_rs.validator_for(
        schema_for(type_name),
        registry=jsonschema_rs.Registry(resources),
        validate_formats=True,
    )


def is_valid(document: Any, type_name: str) -> bool:
    """Whether a decoded JSON document is a valid `type_name`, by the fast path."""
    return fast_validator(type_name).is_valid(document)


def validate(document: Any, type_name: str) -> list[SchemaError]:
    """Every way a decoded JSON document breaks the schema of `type_name`; empty when valid.

    Each error has a JSON path (`$.context.goal`) and a reason. A missing or unknown property
    is reported at its own path. The list is sorted by path, then rule, then reason.
    """
    errors: set[SchemaError] = set()
    for error in reference_validator(type_name).iter_errors(document):
        errors.update(_explain(error))
    return sorted(errors, key=_sort_key)


def json_path(parts: Iterable[str | int]) -> str:
    """A JSON path such as `$.action_log[0].action` (odd keys quoted: `$["$schema"]`)."""
    path = "$"
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        elif _IDENTIFIER.fullmatch(part):
            path += f".{part}"
        else:
            path += f"[{json.dumps(part, ensure_ascii=False)}]"
    return path


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)


def _explain(error: "_JsonschemaError") -> Iterator[SchemaError]:
    keyword = str(error.validator)
    where = list(error.absolute_path)
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    rule = _rule_location(schema, keyword)
    instance = error.instance
    value: Any = error.validator_value
    if keyword == "required" and isinstance(instance, Mapping):
        for name in value:
            if name not in instance:
                yield SchemaError(json_path([*where, name]), "is required", keyword, rule)
        return
    if keyword == "additionalProperties" and value is False and isinstance(instance, Mapping):
        allowed = schema.get("properties", {})
        for name in instance:
            if name not in allowed:
                reason = f"is not a property of this type (allowed: {', '.join(allowed)})"
                yield SchemaError(json_path([*where, name]), reason, keyword, rule)
        return
    reason = _reason(error, keyword, schema)
    if "propertyNames" in error.absolute_schema_path and isinstance(instance, str):
        # A key that breaks a rule for keys: name the key itself, as its value would be named.
        where, reason = [*where, instance], f"as a key, {reason}"
    yield SchemaError(json_path(where), reason, keyword, rule)


def _reason(error: "_JsonschemaError", keyword: str, schema: Mapping[str, Any]) -> str:
    value: Any = error.validator_value
    got = _show(error.instance)
    if keyword == "minLength" and value == 1:
        return "must not be empty"
    if keyword == "maxLength" and isinstance(error.instance, str):
        return f"must be at most {value} characters long (got {len(error.instance)})"
    if keyword == "maxProperties" and isinstance(error.instance, Mapping):
        return f"must have at most {value} properties (got {len(error.instance)})"
    if keyword == "minimum":
        return f"must be >= {value} (got {got})"
    if keyword == "maximum":
        return f"must be <= {value} (got {got})"
    if keyword == "enum":
        return f"must be one of {', '.join(_show(v) for v in value)} (got {got})"
    if keyword == "type":
        wanted = " or ".join(value) if isinstance(value, list) else value
        # null, true and false name their type themselves: "got null", not "got null null".
        if error.instance is not None and not isinstance(error.instance, bool):
            got = f"{_json_type(error.instance)} {got}"
        return f"must be of type {wanted} (got {got})"
    if keyword == "format":
        return f"must be a valid {value} (got {got})"
    if keyword == "pattern" and schema.get("format") == "date-time":
        reason = f"must be an RFC 3339 date-time in UTC with a Z, such as {_DATE_TIME} (got {got})"
        beyond = _beyond_timestamp(error.instance)
        return f"{reason}: {beyond}" if beyond else reason
    if keyword == "not" and schema.get("format") == "date-time":
        return f"must hold no white space (got {got})"
    return error.message


_DATE_TIME = "2024-05-08T13:56:00Z"

# RFC 3339 in UTC with a Z, as far as RFC 3339 itself goes: any year, a leap second, any number
# of digits after the point. What the schemas' pattern refuses of it is what a
# google.protobuf.Timestamp (the proto's date-time, a document's ProtoJSON form) cannot hold.
_RFC_3339_UTC = re.compile(
    r"([0-9]{4})-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])[Tt](?:[01][0-9]|2[0-3]):[0-5][0-9]:"
    r"([0-5][0-9]|60)(?:\.([0-9]+))?[Zz]"
)


def _beyond_timestamp(instance: object) -> str:
    """Why an RFC 3339 date-time in UTC that the pattern refuses is no Timestamp's: year 0000,
    a leap second, more than 9 digits after the point; empty for anything else."""
    found = _RFC_3339_UTC.fullmatch(instance) if isinstance(instance, str) else None
    if found is None:
        return ""
    year, second, fraction = found.groups()
    beyond = []
    if year == "0000":
        beyond.append("year 0000 (the years are 0001 to 9999)")
    if second == "60":
        beyond.append("a leap second (the seconds are 00 to 59)")
    if fraction is not None and len(fraction) > 9:
        beyond.append(f"{len(fraction)} digits after the point (at most 9: nanoseconds)")
    return f"a google.protobuf.Timestamp cannot hold {' or '.join(beyond)}" if beyond else ""


def _rule_location(schema: Mapping[str, Any], keyword: str) -> str:
    location = _shipped().locations.get(id(schema))
    if location is None:
        return ""
    uri, pointer = location
    return f"{uri}#{pointer}/{keyword}"


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _sort_key(error: SchemaError) -> tuple[str, str, str]:
    return (_natural(error.path), error.keyword, error.reason)


def _natural(path: str) -> str:
    """Pads array indices so that `[10]` sorts after `[9]`."""
    return re.sub(r"\[(\d+)\]", lambda m: f"[{int(m.group(1)):012d}]", path)
