"""The records against the conformance vectors (schemas/conformance/*.json), read generically.

Valid vectors survive from_dict then to_dict unchanged, up to the documented normalisations
(defaults filled in, `files_involved` recomputed, date-times rewritten in one UTC form).
Invalid ones are refused by from_dict, reported by validate(), or broke only a date-time rule
that from_dict reads leniently on purpose (offsets, missing timestamp; see himga.timeutil).
"""

import json
from pathlib import Path
from typing import Any

import pytest
from himga_schema import action_entry, episode_trace, error_entry, task_context
from pydantic import BaseModel

from himga import validation
from himga.records import ActionEntry, EpisodeTrace, ErrorEntry, TaskContext
from himga.records.jsondata import path_steps

VECTORS = Path(__file__).resolve().parents[2] / "schemas" / "conformance"
RECORDS: dict[str, type[Any]] = {
    cls.__name__: cls for cls in (EpisodeTrace, TaskContext, ActionEntry, ErrorEntry)
}
GENERATED: dict[str, type[BaseModel]] = {
    "EpisodeTrace": episode_trace.EpisodeTrace,
    "TaskContext": task_context.TaskContext,
    "ActionEntry": action_entry.ActionEntry,
    "ErrorEntry": error_entry.ErrorEntry,
}


def _vectors(valid: bool) -> list[Any]:
    cases = []
    for path in sorted(VECTORS.glob("*.json")):
        groups = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(groups, list):
            continue  # the shape schema of the vector files
        for group in groups:
            type_name = validation.type_for_id(group["schema"]["$ref"])
            if type_name not in RECORDS:
                continue
            for test in group["tests"]:
                if test["valid"] is valid:
                    case_id = f"{type_name}: {test['description']}"
                    cases.append(pytest.param(type_name, test["data"], id=case_id))
    return cases


def test_every_record_type_has_vectors() -> None:
    covered = {case.values[0] for case in _vectors(True)} & {c.values[0] for c in _vectors(False)}
    assert covered == set(RECORDS)


def _normalised(type_name: str, document: dict[str, Any]) -> dict[str, Any]:
    """What to_dict writes for a valid document: the generated model's JSON dump (defaults
    filled in, date-times in one UTC form), with an episode's files_involved recomputed."""
    model = GENERATED[type_name].model_validate_json(json.dumps(document))
    expected = model.model_dump(mode="json")
    if type_name == "EpisodeTrace":
        if "files_read" not in document:  # the seed's legacy: files only in files_involved
            expected["files_read"] = expected["context"]["files_involved"]
        files = [*expected["files_read"], *expected["files_modified"]]
        expected["context"]["files_involved"] = list(dict.fromkeys(files))
    return expected


@pytest.mark.parametrize(("type_name", "document"), _vectors(True))
def test_a_valid_vector_survives_from_dict_then_to_dict(
    type_name: str, document: dict[str, Any]
) -> None:
    record = RECORDS[type_name].from_dict(document)
    assert record.validate() == []
    assert record.to_dict() == _normalised(type_name, document)
    assert validation.is_valid(record.to_dict(), type_name)


# Keys from_dict reads as the seed's legacy forms although the wire refuses them: Python names
# that differ from wire names (`tool` for `action`, `files` for `files_involved`), and an
# episode's flat phase and goal (which belong in `context`).
LEGACY_NAMES = {
    field.alias: name
    for cls in RECORDS.values()
    for name, field in cls.model_fields.items()
    if field.alias not in (None, name, "$schema")
} | {"phase": "phase", "goal": "goal"}


def _legacy_form_of(document: Any, steps: list[str | int], keyword: str) -> bool:
    """Whether a schema error is about a legacy key, or a wire key given by its legacy name."""
    *parent_steps, last = steps
    parent = document
    for step in parent_steps:
        parent = parent[step]
    if keyword == "additionalProperties":
        return last in LEGACY_NAMES.values()
    return keyword == "required" and isinstance(parent, dict) and LEGACY_NAMES.get(last) in parent


def _only_lenient_forms(type_name: str, document: Any) -> bool:
    """Whether the document broke nothing but rules that from_dict reads leniently on purpose:
    a date-time not in UTC-with-Z or missing (converted, or now), or a legacy key."""
    date_times = {"$.timestamp", "$.last_accessed"} if type_name == "EpisodeTrace" else set()
    errors = validation.validate(document, type_name)
    return bool(errors) and all(
        error.path in date_times or _legacy_form_of(document, path_steps(error.path), error.keyword)
        for error in errors
    )


@pytest.mark.parametrize(("type_name", "document"), _vectors(False))
def test_an_invalid_vector_is_refused_or_reported(type_name: str, document: Any) -> None:
    try:
        record = RECORDS[type_name].from_dict(document)
    except ValueError:
        return
    if _only_lenient_forms(type_name, document):
        # Read as the seed does: the record is valid on the way out, in the wire form.
        assert record.validate() == []
        assert validation.is_valid(record.to_dict(), type_name)
        return
    assert record.validate() != []
    assert not validation.is_valid(record.to_dict(), type_name)
