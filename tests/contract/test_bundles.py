"""The bundled schemas (generated/bundled/v1/, written by `make generate`): one file per type,
holding every schema it references, so that a validator needs neither the other files nor the
network. Through them, every conformance vector gets the verdict it gets through the separate
files: from jsonschema with its stock format checker and from jsonschema-rs, with format
assertion on, and, off, every verdict but those that need it (`needs_format_assertion`)."""

import functools
from typing import Any

import jsonschema_rs
import pytest
from jsonschema import Draft202012Validator
from referencing import Registry

from himga import validation
from tests.contract.vectors import (
    BUNDLE_DIR,
    SOURCE_DIR,
    VECTORS,
    bundle_path,
    load,
    verdict_without_formats,
)


def test_every_schema_has_a_bundle_of_its_name_and_id() -> None:
    assert sorted(p.name for p in BUNDLE_DIR.glob("*.json")) == sorted(
        p.name for p in SOURCE_DIR.glob("*.json")
    )
    for type_name in validation.type_names():
        assert load(bundle_path(type_name))["$id"] == validation.schema_id(type_name)


@pytest.mark.parametrize("type_name", validation.type_names())
def test_a_bundle_is_its_schema_with_the_schemas_it_references_embedded_whole(
    type_name: str,
) -> None:
    bundle = load(bundle_path(type_name))
    source = validation.schema_for(type_name)
    by_id = {validation.schema_id(t): validation.schema_for(t) for t in validation.type_names()}
    embedded = {key: value for key, value in bundle.get("$defs", {}).items() if key in by_id}
    # Each embedded schema is a shipped schema as it is, `$id` and `$schema` included.
    for uri, schema in embedded.items():
        assert schema == by_id[uri]
    assert validation.schema_id(type_name) not in embedded
    # Apart from those and a comment saying it is generated, the bundle is its schema.
    rest = {key: value for key, value in bundle.items() if key not in ("$comment", "$defs")}
    own_defs = {k: v for k, v in bundle.get("$defs", {}).items() if k not in embedded}
    if own_defs:
        rest["$defs"] = own_defs
    assert rest == source
    assert "DO NOT EDIT" in bundle["$comment"]


def test_a_bundle_embeds_what_its_schema_references_through_others() -> None:
    # EpisodeTrace reaches Phase only through its $defs/EpisodeContext.
    embedded = set(load(bundle_path("EpisodeTrace"))["$defs"])
    assert {validation.schema_id(t) for t in ("ActionEntry", "ErrorEntry", "Phase")} <= embedded
    assert "$defs" not in load(bundle_path("Message"))


def _no_download(uri: str) -> Any:
    raise AssertionError(f"the bundle sent the validator to fetch {uri}")


@functools.cache
def _jsonschema(type_name: str, formats: bool) -> Draft202012Validator:
    # An empty registry: a reference that the bundle does not hold fails to resolve.
    checker = Draft202012Validator.FORMAT_CHECKER if formats else None
    bundle = load(bundle_path(type_name))
    return Draft202012Validator(bundle, registry=Registry(), format_checker=checker)


@functools.cache
def _jsonschema_rs(type_name: str, formats: bool) -> jsonschema_rs.Validator:
    bundle = load(bundle_path(type_name))
    return jsonschema_rs.validator_for(bundle, validate_formats=formats, retriever=_no_download)


VALIDATORS = {"jsonschema": _jsonschema, "jsonschema-rs": _jsonschema_rs}


@pytest.mark.parametrize("formats", [True, False], ids=["format assertion", "no format assertion"])
@pytest.mark.parametrize("validator", VALIDATORS)
@pytest.mark.parametrize(("type_name", "vector"), [(t, v) for t, _, v in VECTORS],
                         ids=[i for _, i, _ in VECTORS])  # fmt: skip
def test_a_bundle_gives_each_vector_its_verdict(
    validator: str, formats: bool, type_name: str, vector: dict[str, Any]
) -> None:
    expected = vector["valid"] if formats else verdict_without_formats(vector)
    assert VALIDATORS[validator](type_name, formats).is_valid(vector["data"]) is expected
