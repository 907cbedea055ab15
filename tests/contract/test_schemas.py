"""himga.validation: loading the shipped schemas, the errors `validate` reports, type lookup."""

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import rfc3339_validator
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from himga import validation
from himga.errors import HimgaError, SchemaError, UnknownTypeError

EPISODE: dict[str, Any] = {
    "id": "ep-2024-05-08-1a2b3c4d",
    "task_id": "task-42",
    "timestamp": "2024-05-08T13:56:00Z",
    "agent": "coder",
    "context": {"goal": "Fix the failing test"},
}


def test_the_reference_really_checks_date_times() -> None:
    # Without jsonschema's format extras the checker silently has no date-time check.
    assert "date-time" in Draft202012Validator.FORMAT_CHECKER.checkers
    assert "date-time" in validation.format_checker().checkers
    assert not validation.format_checker().conforms("not-a-date", "date-time")
    assert validation.format_checker().conforms("2024-05-08T13:56:00Z", "date-time")


def test_a_trailing_newline_is_not_a_date_time() -> None:
    # The stock checker accepts it; RFC 3339, ajv, Go and jsonschema-rs do not.
    assert not validation.format_checker().conforms("2024-05-08T13:56:00Z\n", "date-time")


def test_every_format_the_schemas_use_is_checked() -> None:
    assert validation.formats_used() == {"date-time"}
    assert validation.formats_used() <= set(validation.format_checker().checkers)


@pytest.mark.parametrize(
    ("text", "holds"),
    [
        ("2024-02-29T00:00:00Z", True),  # a leap year's day
        ("2023-02-29T00:00:00Z", False),  # a day the calendar lacks
        ("2024-04-31T00:00:00Z", False),
        ("0000-01-01T00:00:00Z", False),  # no year 0
        ("2024-05-08t13:56:00.123456z", True),  # T and Z in either case
        ("2024-05-08T13:56:60+05:30", True),  # a leap second, an offset
        ("2024-05-08T24:00:00Z", False),
        ("2024-05-08 13:56:00Z", False),
        ("2024-05-08T13:56:00", False),  # no offset
        ("2024-05-08T13:56:00Z ", False),
    ],
)
def test_date_times_are_checked_by_rfc_3339(text: str, holds: bool) -> None:
    assert validation.format_checker().conforms(text, "date-time") is holds


_SHAPED = (
    r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,3})?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})?\n?\Z"
)


@settings(max_examples=3000, deadline=None)
@given(st.one_of(st.from_regex(_SHAPED), st.text(max_size=30)))
def test_himga_checks_date_times_as_jsonschema_s_format_extras_did(text: str) -> None:
    """The reference's date-time before it checked them itself: rfc3339-validator, as
    jsonschema's format extras call it (upper-cased), minus the trailing newline it let by."""
    expected = not text.endswith("\n") and rfc3339_validator.validate_rfc3339(text.upper())
    assert validation.format_checker().conforms(text, "date-time") is expected


def test_schemas_come_from_the_installed_package_not_the_working_directory(
    tmp_path: Path,
) -> None:
    # A decoy where a working-directory loader would look: it must be ignored.
    decoy = tmp_path / "schemas" / "v1"
    decoy.mkdir(parents=True)
    (decoy / "message.json").write_text('{"title": "Decoy", "$id": "urn:decoy"}')
    script = "from himga import validation; print(validation.type_names())"
    shown = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout
    assert "EpisodeTrace" in shown
    assert "Decoy" not in shown


def test_type_names_are_the_schema_titles() -> None:
    assert validation.type_names() == [
        "ActionEntry",
        "EpisodeTrace",
        "ErrorEntry",
        "Message",
        "Phase",
        "Session",
        "TaskContext",
    ]


@pytest.mark.parametrize("type_name", validation.type_names())
def test_a_schema_id_maps_back_to_its_type(type_name: str) -> None:
    uri = validation.schema_id(type_name)
    assert uri.startswith("https://himga.dev/schemas/v1/")
    assert validation.type_for_id(uri) == type_name
    assert validation.type_for_id(uri + "#") == type_name


def test_unknown_types_and_ids_are_lookup_errors_naming_the_known_ones() -> None:
    with pytest.raises(UnknownTypeError, match="EpisodeTrace") as caught:
        validation.schema_for("Episode")
    assert isinstance(caught.value, LookupError)
    assert isinstance(caught.value, HimgaError)
    with pytest.raises(UnknownTypeError, match=r"episode_trace\.json"):
        validation.type_for_id("https://himga.dev/schemas/v2/episode_trace.json")


def test_a_valid_document_has_no_errors() -> None:
    assert validation.validate(EPISODE, "EpisodeTrace") == []
    assert validation.is_valid(EPISODE, "EpisodeTrace")


def test_validate_reports_every_error_at_once_with_paths_sorted() -> None:
    document = {
        **EPISODE,
        "id": "",
        "importance": 1.5,
        "turnId": "x",
        "context": {"phase": "PLAN"},
        "action_log": [{"action": "a"}] * 9 + [{"t": -1, "action": "a"}, {}],
        "$schema": 1,
    }
    found = [(e.path, e.keyword) for e in validation.validate(document, "EpisodeTrace")]
    assert found == [
        ("$.action_log[9].t", "minimum"),
        ("$.action_log[10].action", "required"),
        ("$.context.goal", "required"),
        ("$.context.phase", "enum"),
        ("$.id", "minLength"),
        ("$.importance", "maximum"),
        ("$.turnId", "additionalProperties"),
        ('$["$schema"]', "type"),
    ]
    assert not validation.is_valid(document, "EpisodeTrace")


def test_an_error_names_the_field_the_rule_and_where_the_rule_is() -> None:
    (error,) = validation.validate({**EPISODE, "tokens_used": -3}, "EpisodeTrace")
    assert isinstance(error, SchemaError)
    assert isinstance(error, ValueError)
    assert isinstance(error, HimgaError)
    assert error.path == "$.tokens_used"
    assert error.reason == "must be >= 0 (got -3)"
    assert str(error) == "$.tokens_used: must be >= 0 (got -3)"
    assert error.keyword == "minimum"
    assert error.schema_path == (
        "https://himga.dev/schemas/v1/episode_trace.json#/properties/tokens_used/minimum"
    )


@pytest.mark.parametrize(
    ("change", "path", "reason"),
    [
        ({"context": {}}, "$.context.goal", "is required"),
        ({"agent": ""}, "$.agent", "must not be empty"),
        ({"outcome": "done"}, "$.outcome", 'must be one of "success", "failure", "partial"'),
        ({"importance": -1}, "$.importance", "must be >= 0.0 (got -1)"),
        (
            {"duration_seconds": "5"},
            "$.duration_seconds",
            'must be of type integer (got string "5")',
        ),
        ({"agent": None}, "$.agent", "must be of type string (got null)"),
        ({"tokens_used": True}, "$.tokens_used", "must be of type integer (got true)"),
        ({"timestamp": "2024-05-08"}, "$.timestamp", "must be a valid date-time"),
        (
            {"timestamp": "2024-05-08T13:56:00+02:00"},
            "$.timestamp",
            "must be an RFC 3339 date-time in UTC",
        ),
        ({"timestamp": "2024-05-08T13:56:00Z\n"}, "$.timestamp", "must be a valid date-time"),
        ({"git_commit": 1}, "$.git_commit", "must be of type string or null"),
        ({"taskId": "t"}, "$.taskId", "is not a property of this type (allowed: $schema, id,"),
        ({"errors_encountered": [{"type": "x"}]}, "$.errors_encountered[0].message", "is required"),
    ],
)
def test_each_reason_says_what_the_rule_wants(
    change: dict[str, Any], path: str, reason: str
) -> None:
    errors = validation.validate({**EPISODE, **change}, "EpisodeTrace")
    assert [e.path for e in errors][:1] == [path]
    assert errors[0].reason.startswith(reason)


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        ([], "$"),
        (["context", "goal"], "$.context.goal"),
        (["action_log", 0, "t"], "$.action_log[0].t"),
        (["$schema"], '$["$schema"]'),
        (["a b", "é"], '$["a b"]["é"]'),
    ],
)
def test_json_path(parts: list[str | int], expected: str) -> None:
    assert validation.json_path(parts) == expected


def test_fast_validator_checks_formats() -> None:
    assert not validation.fast_validator("EpisodeTrace").is_valid({**EPISODE, "timestamp": "nope"})


def test_each_date_time_rule_a_value_breaks_is_named_once() -> None:
    # A space for `T` breaks the format, the pattern and the rule against white space (which
    # stands in for the pattern's `$` where a regex engine lets it match before a newline).
    errors = validation.validate({**EPISODE, "timestamp": "2024-05-08 13:56:00Z"}, "EpisodeTrace")
    assert [(e.keyword, e.reason.split(" (got ")[0]) for e in errors] == [
        ("format", "must be a valid date-time"),
        ("not", "must hold no white space"),
        ("pattern", "must be an RFC 3339 date-time in UTC with a Z, such as 2024-05-08T13:56:00Z"),
    ]
