"""The conformance vectors: their shape, one verdict from every validator, every rule covered.

Every vector goes through the jsonschema reference, the generated pydantic models (at the JSON
boundary) and the jsonschema-rs fast path; each must give the vector's `valid`. With format
assertion off (2020-12's default), jsonschema and jsonschema-rs must still give it, but for the
vectors marked `needs_format_assertion`. The list of rules that need an invalid vector is read
from the schema files, never written down here.
"""

import copy
import functools
import importlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import TypeAdapter, ValidationError

from himga import validation
from tests.contract.vectors import (
    SHAPE_FILE,
    SOURCE_DIR,
    VECTOR_FILES,
    VECTORS,
    verdict_without_formats,
)
from tests.contract.vectors import load as _load

# Keywords whose every occurrence in a schema is a rule that needs an invalid vector.
RULE_KEYWORDS = (
    "type",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "maxProperties",
    "enum",
    "format",
    "pattern",
    "not",
)


def _pydantic_validator(type_name: str) -> Callable[[str], object]:
    """The generated model's JSON parser for a type.

    Phase has no model of its own (the generator inlines it as a Literal wherever it is
    used), so its vectors go through the exact type the TaskContext model uses for `phase`.
    """
    if type_name == "Phase":
        module = importlib.import_module("himga_schema.task_context")
        annotation = module.TaskContext.model_fields["phase"].annotation
        return TypeAdapter(annotation).validate_json
    stem = validation.schema_id(type_name).rsplit("/", 1)[1].removesuffix(".json")
    model = getattr(importlib.import_module(f"himga_schema.{stem}"), type_name)
    parse: Callable[[str], object] = model.model_validate_json
    return parse


def _reference(document: Any, type_name: str) -> bool:
    return not validation.validate(document, type_name)


def _pydantic(document: Any, type_name: str) -> bool:
    try:
        _pydantic_validator(type_name)(json.dumps(document))
    except ValidationError:
        return False
    return True


def _fast(document: Any, type_name: str) -> bool:
    return validation.is_valid(document, type_name)


VALIDATORS = {"reference": _reference, "pydantic": _pydantic, "fast": _fast}


@functools.cache
def _reference_without_formats_for(type_name: str) -> Draft202012Validator:
    return Draft202012Validator(validation.schema_for(type_name), registry=validation.registry())


@functools.cache
def _fast_without_formats_for(type_name: str) -> jsonschema_rs.Validator:
    names = validation.type_names()
    resources = [(validation.schema_id(t), validation.schema_for(t)) for t in names]
    return jsonschema_rs.validator_for(
        validation.schema_for(type_name),
        registry=jsonschema_rs.Registry(resources),
        validate_formats=False,
    )


def _reference_without_formats(document: Any, type_name: str) -> bool:
    return _reference_without_formats_for(type_name).is_valid(document)


def _fast_without_formats(document: Any, type_name: str) -> bool:
    return _fast_without_formats_for(type_name).is_valid(document)


# 2020-12 leaves `format` unchecked unless a validator is told otherwise, as many users leave it.
WITHOUT_FORMATS = {"reference": _reference_without_formats, "fast": _fast_without_formats}


def test_there_is_a_vector_file_for_every_type() -> None:
    schema_stems = {p.stem for p in SOURCE_DIR.glob("*.json")}
    assert {p.stem for p in VECTOR_FILES} == schema_stems


@pytest.mark.parametrize("path", VECTOR_FILES, ids=lambda p: p.name)
def test_vector_file_has_the_test_suite_shape(path: Path) -> None:
    shape = _load(SHAPE_FILE)
    Draft202012Validator.check_schema(shape)
    groups = _load(path)
    errors = [e.message for e in Draft202012Validator(shape).iter_errors(groups)]
    assert errors == []
    # Every group of a file tests the schema the file is named after.
    assert {g["schema"]["$ref"].rsplit("/", 1)[1] for g in groups} == {path.name}
    for group in groups:
        descriptions = [t["description"] for t in group["tests"]]
        assert len(descriptions) == len(set(descriptions)), group["description"]


def test_shape_schema_rejects_a_malformed_vector_file() -> None:
    validator = Draft202012Validator(_load(SHAPE_FILE))
    good = {"description": "d", "schema": {"$ref": validation.schema_id("Message")}, "tests": []}
    assert not validator.is_valid([good])  # a group needs vectors
    vector = {"description": "v", "data": {}, "valid": "yes"}
    assert not validator.is_valid([{**good, "tests": [vector]}])  # valid is a boolean


@pytest.mark.parametrize("validator", VALIDATORS)
@pytest.mark.parametrize(("type_name", "vector"), [(t, v) for t, _, v in VECTORS],
                         ids=[i for _, i, _ in VECTORS])  # fmt: skip
def test_validator_gives_the_vectors_verdict(
    validator: str, type_name: str, vector: dict[str, Any]
) -> None:
    assert VALIDATORS[validator](vector["data"], type_name) is vector["valid"]


@pytest.mark.parametrize("validator", WITHOUT_FORMATS)
@pytest.mark.parametrize(("type_name", "vector"), [(t, v) for t, _, v in VECTORS],
                         ids=[i for _, i, _ in VECTORS])  # fmt: skip
def test_without_format_assertion_only_the_calendar_needs_it(
    validator: str, type_name: str, vector: dict[str, Any]
) -> None:
    expected = verdict_without_formats(vector)
    assert WITHOUT_FORMATS[validator](vector["data"], type_name) is expected


def test_the_vectors_that_need_format_assertion_are_days_the_calendar_lacks() -> None:
    flagged = [(t, v) for t, _, v in VECTORS if v.get("needs_format_assertion")]
    assert flagged  # 29 February of a common year, at least
    for type_name, vector in flagged:
        # Each breaks the format rule and nothing else, by the reference.
        assert {e.keyword for e in validation.validate(vector["data"], type_name)} == {"format"}


def _rules(schema: dict[str, Any], uri: str, pointer: str = "") -> Iterator[str]:
    """Every rule of a schema, named by where it sits (`<$id>#/properties/t/minimum`)."""
    for keyword in RULE_KEYWORDS:
        if keyword in schema:
            yield f"{uri}#{pointer}/{keyword}"
    for name in schema.get("required", []):
        yield f"{uri}#{pointer}/required/{name}"
    if schema.get("additionalProperties") is False:
        yield f"{uri}#{pointer}/additionalProperties"
    for name, subschema in schema.get("properties", {}).items():
        yield from _rules(subschema, uri, f"{pointer}/properties/{name.replace('/', '~1')}")
    for keyword in ("items", "additionalProperties", "propertyNames"):
        if isinstance(schema.get(keyword), dict):
            yield from _rules(schema[keyword], uri, f"{pointer}/{keyword}")
    for name, subschema in schema.get("$defs", {}).items():
        yield from _rules(subschema, uri, f"{pointer}/$defs/{name}")


def _broken_rules(document: Any, type_name: str) -> set[str]:
    broken = set()
    for error in validation.validate(document, type_name):
        rule = error.schema_path
        if error.keyword == "required":
            # The error's path ends with the missing property.
            rule += "/" + error.path.rsplit(".", 1)[1]
        broken.add(rule)
    return broken


def test_every_rule_of_every_schema_has_an_invalid_vector() -> None:
    rules = {
        rule
        for type_name in validation.type_names()
        for rule in _rules(validation.schema_for(type_name), validation.schema_id(type_name))
    }
    assert len(rules) > 50  # the walk found the schemas' rules (a sanity floor, not a target)
    covered: set[str] = set()
    for type_name, _, vector in VECTORS:
        if not vector["valid"]:
            covered |= _broken_rules(vector["data"], type_name)
    assert sorted(rules - covered) == []


def test_every_property_appears_in_a_valid_vector() -> None:
    present: dict[str, set[str]] = {name: set() for name in validation.type_names()}
    for type_name, _, vector in VECTORS:
        if vector["valid"] and isinstance(vector["data"], dict):
            present[type_name] |= set(vector["data"])
    for type_name in validation.type_names():
        properties = set(validation.schema_for(type_name).get("properties", {}))
        assert properties <= present[type_name], type_name


# Date-times at the edges of RFC 3339 and of a google.protobuf.Timestamp, each with its verdict:
# the ones whose verdict once hung on the validator (year 0000 passed jsonschema-rs, ajv and Go
# but not jsonschema) and their neighbours. Every type with a date-time has a vector of each.
EDGE_DATE_TIMES = {
    "0001-01-01T00:00:00Z": True,  # a Timestamp's first year
    "9999-12-31T23:59:59.999999999Z": True,  # its last nanosecond
    "2024-05-08T13:56:00.123456789Z": True,  # nanoseconds: 9 digits after the point
    "2024-05-08t13:56:00z": True,  # RFC 3339 section 5.6 allows lower case
    "0000-01-01T00:00:00Z": False,  # RFC 3339's grammar allows year 0000; a Timestamp does not
    "2024-05-08T13:56:00.1234567891Z": False,  # 10 digits: more than a Timestamp holds
    "2016-12-31T23:59:60Z": False,  # a leap second: RFC 3339's, not a Timestamp's
    "2024-02-30T00:00:00Z": False,  # a day no calendar has (format assertion)
}


def _date_time_properties(type_name: str) -> set[str]:
    properties = validation.schema_for(type_name).get("properties", {})
    return {name for name, p in properties.items() if p.get("format") == "date-time"}


@pytest.mark.parametrize(
    "type_name", [t for t in validation.type_names() if _date_time_properties(t)]
)
def test_every_type_with_a_date_time_has_a_vector_at_each_edge(type_name: str) -> None:
    found: dict[str, set[bool]] = {text: set() for text in EDGE_DATE_TIMES}
    for vector_type, _, vector in VECTORS:
        if vector_type == type_name and isinstance(vector["data"], dict):
            for name in _date_time_properties(type_name):
                if vector["data"].get(name) in found:
                    found[vector["data"][name]].add(vector["valid"])
    assert found == {text: {valid} for text, valid in EDGE_DATE_TIMES.items()}


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("0000-01-01T00:00:00Z", "year 0000"),
        ("2024-05-08T13:56:00.1234567891Z", "10 digits after the point"),
        ("2016-12-31T23:59:60Z", "a leap second"),
    ],
)
def test_a_date_time_no_timestamp_holds_is_refused_naming_the_field_and_why(
    text: str, what: str
) -> None:
    document = {
        "session_id": "s1",
        "messages": [{"role": "Ada", "content": "x", "timestamp": text}],
    }
    assert not validation.is_valid(document, "Session")
    refusals = [e for e in validation.validate(document, "Session") if e.keyword == "pattern"]
    assert [e.path for e in refusals] == ["$.messages[0].timestamp"]
    assert f"a google.protobuf.Timestamp cannot hold {what}" in refusals[0].reason
    assert refusals[0].schema_path.endswith("message.json#/properties/timestamp/pattern")


def test_the_schema_a_valid_vector_claims_names_its_own_type() -> None:
    claims = [
        (type_name, vector["data"]["$schema"])
        for type_name, _, vector in VECTORS
        if vector["valid"] and isinstance(vector["data"], dict) and "$schema" in vector["data"]
    ]
    object_types = {
        t
        for t in validation.type_names()
        if "$schema" in validation.schema_for(t).get("properties", {})
    }
    assert {type_name for type_name, _ in claims} == object_types
    for type_name, uri in claims:
        assert validation.type_for_id(uri) == type_name


# Beyond the vectors: random edits of the valid vectors, where the three must still agree.
# (This found that strict pydantic refused `5.0` for an integer, which the schemas allow.)

NEAR_RULES = st.sampled_from(
    [
        "2024-05-08T13:56:00Z",
        "2024-05-08T13:56:00.5z",
        "2024-05-08T13:56:00,5Z",
        "2024-05-08T13:56:00Z ",
        "2024-05-08T13:56:00+00:00",
        "2024-02-30T00:00:00Z",
        "0000-01-01T00:00:00Z",
        "2024-05-08T13:56:00.1234567891Z",
        "2024-05-08T13:56:00.123456789Z",
        "2016-12-31T23:59:60Z",
        "20240508T135600Z",
        "REASON",
        "reason",
        "success",
        "",
        0,
        -1,
        1,
        0.0,
        2.0,
        -0.0,
        1e300,
        0.5,
        1.0000001,
        True,
        None,
    ]
)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | NEAR_RULES,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
VALID_OBJECTS = [
    (t, v["data"]) for t, _, v in VECTORS if v["valid"] and isinstance(v["data"], dict)
]


def _locations(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every value inside a document."""
    if isinstance(node, dict):
        items: Any = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        return []
    found = []
    for key, value in items:
        found += [(*path, key), *_locations(value, (*path, key))]
    return found


@st.composite
def _edited_documents(draw: st.DrawFn) -> tuple[str, Any]:
    """A valid vector with one value replaced, or one property deleted."""
    type_name, original = draw(st.sampled_from(VALID_OBJECTS))
    document = copy.deepcopy(original)
    location = draw(st.sampled_from(_locations(document)))
    parent = document
    for key in location[:-1]:
        parent = parent[key]
    if isinstance(parent, dict) and draw(st.booleans()):
        del parent[location[-1]]
    else:
        parent[location[-1]] = draw(NEAR_RULES | JSON_VALUES)
    return type_name, document


@settings(max_examples=500, deadline=None, derandomize=True)
@given(_edited_documents())
def test_validators_agree_on_edited_documents(edited: tuple[str, Any]) -> None:
    type_name, document = edited
    verdicts = {name: check(document, type_name) for name, check in VALIDATORS.items()}
    assert len(set(verdicts.values())) == 1, verdicts
