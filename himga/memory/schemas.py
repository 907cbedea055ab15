"""The seed's memory records (EpisodeTrace, TaskContext, ActionEntry, ErrorEntry) in Python.

Each class is a lenient subclass of the model generated from its JSON Schema: fields, wire
names, defaults and enums all come from the generated model; none is restated here. Unlike the
generated models, these records can be built and changed with values the schema rejects, as the
seed's dataclasses could. `validate()` then lists every problem by checking `to_dict()`'s output
against the schema itself, so the two cannot disagree. `from_dict` reads the wire form and the
seed's legacy forms and raises one `SchemaError` (a ValueError) on data that does not have a
record's shape; broken value rules (empty, out of range, not in an enum) are kept for
`validate()` to report, as in the seed.
"""

import json
import math
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar, Self, get_args, get_origin
from uuid import uuid4

import annotated_types
from himga_schema import action_entry, episode_trace, error_entry, task_context
from pydantic import AwareDatetime, BaseModel, ConfigDict
from pydantic.fields import FieldInfo
from pydantic_core import MISSING

from himga import schemas
from himga.errors import SchemaError
from himga.model_base import SchemaModel
from himga.timeutil import (
    _parse_utc_datetime,
    _to_utc_isoformat,
    as_utc,
    parse_utc_datetime,
    to_utc_isoformat,
)

__all__ = [
    "ActionEntry",
    "EpisodeContext",
    "EpisodeTrace",
    "ErrorEntry",
    "TaskContext",
    "_parse_utc_datetime",
    "_to_utc_isoformat",
    "parse_utc_datetime",
    "to_utc_isoformat",
]

# The schema rules a record may break while it is being built; `validate()` reports them. Any
# other broken rule (a wrong JSON type, an unknown key) means the data is not such a record.
_VALUE_RULES = frozenset({"required", "minLength", "minimum", "maximum", "enum"})


class _Record(SchemaModel):
    """What the records add to their generated models: lenient building and the seed's API."""

    model_config = ConfigDict(validate_assignment=False)

    #: The generated model a record class extends: its schema's title names the schema.
    _generated: ClassVar[type[BaseModel]]
    _record_of: ClassVar[dict[type[BaseModel], type["_Record"]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._generated = next(
            b for b in cls.__mro__[1:] if b.__module__.startswith("himga_schema.")
        )
        _Record._record_of[cls._generated] = cls

    def __init__(self, **data: Any) -> None:
        """Keyword arguments by Python or wire name, stored unchecked (see `validate()`).

        A missing required string is left empty and a missing date-time is now (UTC), so that
        `validate()`, not the constructor, says what is missing; aware datetimes become UTC.
        """
        values: dict[str, Any] = {}
        for name, field in type(self).model_fields.items():
            key = next((k for k in (name, field.alias) if k is not None and k in data), None)
            values[name] = _blank(field) if key is None else _stored(field, data.pop(key))
        if data:
            raise TypeError(f"{type(self).__name__} has no field {', '.join(sorted(data))}")
        built = type(self).model_construct(**values)
        for state in ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__"):
            object.__setattr__(self, state, getattr(built, state))
        object.__setattr__(self, "__pydantic_private__", None)

    def to_dict(self) -> dict[str, Any]:
        """The record in its wire form (NOTES.md): wire names, date-times in UTC with `Z`."""
        document: dict[str, Any] = {}
        for name, field in type(self).model_fields.items():
            value = getattr(self, name)
            if field.default is MISSING and (value is None or value is MISSING):
                continue  # an optional key is absent, never null
            if _holds_datetime(field.annotation) and isinstance(value, datetime):
                value = to_utc_isoformat(value)
            document[field.alias or name] = _wire(value)
        return document

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """A record from its wire form or a legacy form; a SchemaError names what is malformed."""
        record = cls._read(data, [])
        problems = list(_malformations(record.to_dict(), cls._generated.__name__))
        if problems:
            first, *others = problems
            also = "".join(f"; also {p.path}: {p.reason}" for p in others)
            raise SchemaError(first.path, f"{first.reason}{also}", first.keyword, first.schema_path)
        return record

    def validate(self) -> list[str]:  # type: ignore[override]  # BaseModel's is a deprecated alias
        """Every problem of the record, worded as in the seed; empty exactly when valid.

        Valid means `to_dict()`'s output is valid against the record's JSON Schema.
        """
        document = self.to_dict()
        problems: list[str] = []
        for path in _non_json(document, []):
            problems.append(f"{self._place(path)[0]} must be JSON data (a string, number, ...)")
            if path:
                _replace(document, path, None)  # reported here; the schema checks the rest
        errors = schemas.validate(document, self._generated.__name__)
        derived = [e for e in errors if e.path.startswith(self._derived)]
        if len(derived) < len(errors):
            errors = [e for e in errors if e not in derived]
        # In the order of the record's fields, as the seed checks them; then as himga.schemas sorts.
        order: dict[str | int, int] = {key: i for i, key in enumerate(document)}
        errors.sort(key=lambda e: order.get(next(iter(_path_steps(e.path)), ""), len(order)))
        problems.extend(self._message(e) for e in errors)
        return list(dict.fromkeys(problems))

    # Where the output of to_dict() repeats other fields; problems there are reported at the source.
    _derived: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def _read(cls, data: Any, path: list[str | int]) -> Self:
        """Builds the record from any accepted form, without checking values; see from_dict."""
        if not isinstance(data, Mapping):
            reason = f"must be an object (a {cls.__name__} record), got {_type_of(data)}"
            raise SchemaError(schemas.json_path(path), reason, "type")
        values: dict[str, Any] = {}
        known: set[str] = set()
        for name, field in cls.model_fields.items():
            wire = field.alias or name
            known.update((name, wire))
            key = next((k for k in (wire, name) if k in data), None)  # the wire name wins
            if key is not None:
                values[name] = _read_value(field, data[key], [*path, wire])
        unknown = [key for key in data if key not in known]
        if unknown:
            allowed = ", ".join(f.alias or n for n, f in cls.model_fields.items())
            where = schemas.json_path([*path, str(unknown[0])])
            reason = f"is not a field of {cls.__name__} (allowed: {allowed})"
            raise SchemaError(where, reason, "additionalProperties")
        return cls(**values)

    def _place(self, path: list[str | int]) -> tuple[str, FieldInfo | None]:
        """How the seed names a place (`action_log[0]: ActionEntry.tool`), and its field."""
        model: type[_Record] = type(self)
        owner, prefix, attribute, found = model.__name__, "", "", None
        i = 0
        while i < len(path):
            step = path[i]
            field = _field_named(model, step) if isinstance(step, str) and not attribute else None
            nested = _record_in(field) if field is not None else None
            if field is None:
                attribute += f"[{step}]" if isinstance(step, int) else f".{step}"
                attribute = attribute.removeprefix(".")
                found = None
            elif nested is not None and _is_list(field) and i + 2 < len(path):
                prefix += f"{_python_name(model, field)}[{path[i + 1]}]: "
                model, owner = nested, nested.__name__
                i += 2
                continue
            elif nested is not None and not _is_list(field) and i + 1 < len(path):
                model = nested  # its fields read as the owner's own (an episode's phase, goal)
            else:
                attribute, found = _python_name(model, field), field
            i += 1
        return prefix + owner + (f".{attribute}" if attribute else ""), found

    def _message(self, error: SchemaError) -> str:
        """The seed's wording of one schema error, else the schema's reason."""
        where, field = self._place(_path_steps(error.path))
        if error.keyword == "required" or (error.keyword == "minLength" and field is not None):
            return f"{where} is required"
        if error.keyword == "enum" and field is not None:
            choices = [str(value) for value in get_args(field.annotation) if value != ""]
            return f"{where} must be one of: {', '.join(choices)}"
        if error.keyword in ("minimum", "maximum") and field is not None:
            low, high = _bounds(field)
            if low is not None and high is not None:
                return f"{where} must be between {low} and {high}"
            if low == 0:
                return f"{where} must be non-negative"
        return f"{where} {error.reason}"


class ActionEntry(action_entry.ActionEntry, _Record):
    """One tool call of an episode: `tool`, `input`, `output`, `timestamp` (seconds from start)."""


class ErrorEntry(error_entry.ErrorEntry, _Record):
    """One error met in an episode: `error_type`, `message`, `resolution`."""


class TaskContext(task_context.TaskContext, _Record):
    """A task's `goal`, `phase` (may be empty), `files` and `constraints`."""

    VALID_PHASES: ClassVar[list[str]] = [
        p for p in get_args(task_context.TaskContext.model_fields["phase"].annotation) if p
    ]


class EpisodeContext(episode_trace.EpisodeContext, _Record):
    """An episode's goal and phase as the wire nests them; EpisodeTrace reads them flat."""


class EpisodeTrace(episode_trace.EpisodeTrace, _Record):
    """What happened in one execution of a task, with the seed's flat `phase` and `goal`.

    `files_involved` is derived: files_read then files_modified, each once, in first-seen order.
    `to_dict()` writes it into `context`; the copy inside `context` is not kept up to date.
    """

    VALID_PHASES: ClassVar[list[str]] = [
        p for p in get_args(episode_trace.EpisodeContext.model_fields["phase"].annotation) if p
    ]
    VALID_OUTCOMES: ClassVar[list[str]] = list(
        get_args(episode_trace.EpisodeTrace.model_fields["outcome"].annotation)
    )
    _derived: ClassVar[tuple[str, ...]] = ("$.context.files_involved",)

    def __init__(self, **data: Any) -> None:
        """Keywords as in the seed (`phase=`, `goal=`), or a `context=`, plus the other fields."""
        context = data.pop("context", None)
        if isinstance(context, Mapping):
            context = EpisodeContext(**context)
        elif context is None:
            context = EpisodeContext(goal="")
        for name in ("phase", "goal"):
            if name in data:
                setattr(context, name, data.pop(name))
        super().__init__(context=context, **data)

    @property
    def phase(self) -> str:
        """The RARV phase (`REASON`, `ACT`, `REFLECT`, `VERIFY`), or empty when unknown."""
        return self.context.phase

    @phase.setter
    def phase(self, value: str) -> None:
        setattr(self.context, "phase", value)  # noqa: B010  # unchecked, as in the seed

    @property
    def goal(self) -> str:
        """What the episode's task had to achieve."""
        return self.context.goal

    @goal.setter
    def goal(self, value: str) -> None:
        self.context.goal = value

    @property
    def files_involved(self) -> list[Any]:
        """files_read then files_modified, each once, in the order first seen."""
        items = [
            item
            for files in (self.files_read, self.files_modified)
            if isinstance(files, list | tuple)
            for item in files
        ]
        return _first_seen(items)

    def to_dict(self) -> dict[str, Any]:
        document = super().to_dict()
        if isinstance(document.get("context"), dict):
            document["context"]["files_involved"] = self.files_involved
        return document

    @classmethod
    def _read(cls, data: Any, path: list[str | int]) -> Self:
        """Also the seed's legacy forms: top-level phase/goal, files only in files_involved."""
        if isinstance(data, Mapping) and isinstance(data.get("context", {}), Mapping):
            data = dict(data)
            context = dict(data.get("context", {}))
            for name in ("phase", "goal"):
                if name in data:
                    context.setdefault(name, data.pop(name))  # context first, as in the seed
            if "files_read" not in data and "files_involved" in context:
                data["files_read"] = context["files_involved"]
            data["context"] = context
        return super()._read(data, path)

    @classmethod
    def create(
        cls, task_id: str, agent: str, goal: str, phase: str = "ACT", id_prefix: str = "ep"
    ) -> Self:
        """A new episode: id `{id_prefix}-YYYY-MM-DD-xxxxxxxx` (UTC date), started now (UTC)."""
        now = datetime.now(UTC)
        episode_id = f"{id_prefix}-{now:%Y-%m-%d}-{uuid4().hex[:8]}"
        return cls(
            id=episode_id, task_id=task_id, timestamp=now, agent=agent, goal=goal, phase=phase
        )


def _read_value(field: FieldInfo, value: Any, path: list[str | int]) -> Any:
    """A field's value from a document: date-times parsed, nested records read."""
    if _holds_datetime(field.annotation):
        if not field.is_required() and value in (None, ""):
            return None  # the seed wrote no key, or an empty one, for "never"
        if not isinstance(value, str | datetime):
            reason = f"must be a date-time string or a datetime, got {_type_of(value)}"
            raise SchemaError(schemas.json_path(path), reason, "type")
        try:
            return parse_utc_datetime(value)
        except ValueError as error:
            raise SchemaError(schemas.json_path(path), str(error), "format") from None
    record = _record_in(field)
    if record is not None and isinstance(value, Mapping):
        return record._read(value, path)
    if record is not None and isinstance(value, list):
        return [
            record._read(item, [*path, i]) if isinstance(item, Mapping) else item
            for i, item in enumerate(value)
        ]
    return value


def _malformations(document: dict[str, Any], type_name: str) -> Iterator[SchemaError]:
    """What makes a document something other than a record (not its broken value rules)."""
    for path in _non_json(document, []):
        yield SchemaError(schemas.json_path(path), "must be JSON data", "type")
        return
    for error in schemas.validate(document, type_name):
        if error.keyword not in _VALUE_RULES:
            yield error


def _stored(field: FieldInfo, value: Any) -> Any:
    """What a record keeps for a value: datetimes as aware UTC, anything else as given."""
    if _holds_datetime(field.annotation) and isinstance(value, datetime):
        return as_utc(value)
    return value


def _blank(field: FieldInfo) -> Any:
    """A missing field's value: its default, else an empty stand-in that validate() reports."""
    if field.default is MISSING:
        return None  # as in the seed; to_dict() leaves the key out
    if not field.is_required():
        return field.get_default(call_default_factory=True, validated_data={})
    if _holds_datetime(field.annotation):
        return datetime.now(UTC)
    record = _record_in(field)
    if record is not None:
        return record()
    return ""


def _wire(value: Any) -> Any:
    """A value's JSON form: records by their to_dict(), containers item by item."""
    if isinstance(value, _Record):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [_wire(item) for item in value]
    if isinstance(value, dict):
        return {key: _wire(item) for key, item in value.items()}
    return value


def _first_seen(items: list[Any]) -> list[Any]:
    """Items without repeats, in the order first seen (unhashable ones compared by ==)."""
    unique: list[Any] = []
    seen: set[Any] = set()
    for item in items:
        try:
            if (type(item), item) in seen:
                continue
            seen.add((type(item), item))
        except TypeError:
            if any(type(other) is type(item) and other == item for other in unique):
                continue
        unique.append(item)
    return unique


def _non_json(value: Any, path: list[str | int]) -> Iterator[list[str | int]]:
    """Paths of the values JSON cannot hold (sets, datetimes, NaN, non-string keys, ...)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                yield path
                return
            yield from _non_json(item, [*path, key])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _non_json(item, [*path, index])
    elif value is not None and not isinstance(value, str | int | float):
        yield path
    elif isinstance(value, float) and not math.isfinite(value):
        yield path  # NaN and infinities have no JSON form


def _replace(document: Any, path: list[str | int], value: Any) -> None:
    for step in path[:-1]:
        document = document[step]
    document[path[-1]] = value


_PATH_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[(\"(?:[^\"\\]|\\.)*\")\]")


def _path_steps(path: str) -> list[str | int]:
    """The steps of a JSON path as `himga.schemas.json_path` writes it."""
    steps: list[str | int] = []
    for match in _PATH_STEP.finditer(path, 1):
        name, index, quoted = match.groups()
        steps.append(name if name is not None else int(index) if index else json.loads(quoted))
    return steps


def _field_named(model: type[BaseModel], wire: str) -> FieldInfo | None:
    return next((f for n, f in model.model_fields.items() if (f.alias or n) == wire), None)


def _python_name(model: type[BaseModel], field: FieldInfo) -> str:
    return next(n for n, f in model.model_fields.items() if f is field)


def _record_in(field: FieldInfo) -> type[_Record] | None:
    """The record class a field holds (one, or a list of them), if any."""
    annotation = field.annotation
    if get_origin(annotation) is list:
        annotation = get_args(annotation)[0]
    return _Record._record_of.get(annotation) if isinstance(annotation, type) else None


def _is_list(field: FieldInfo) -> bool:
    return get_origin(field.annotation) is list


def _holds_datetime(annotation: Any) -> bool:
    if annotation in (datetime, AwareDatetime):
        return True
    return any(_holds_datetime(arg) for arg in get_args(annotation))


def _bounds(field: FieldInfo) -> tuple[Any, Any]:
    low = next((m.ge for m in field.metadata if isinstance(m, annotated_types.Ge)), None)
    high = next((m.le for m in field.metadata if isinstance(m, annotated_types.Le)), None)
    return low, high


def _type_of(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:80]
