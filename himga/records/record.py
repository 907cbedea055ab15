"""The base of the memory records: lenient building, to_dict, from_dict and validate().

A record class extends a generated model, whose fields it reads; it stores what it is given
unchecked (as the seed's dataclasses did) and leaves judging to `validate()`, which checks
`to_dict()`'s output against the JSON Schema itself, so that the two cannot disagree.
"""

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict

from himga import validation
from himga.errors import HimgaError, SchemaError
from himga.model_base import SchemaModel
from himga.records import wording
from himga.records.fields import (
    RECORD_CLASSES,
    Slot,
    blank,
    slots,
    stored,
)
from himga.records.jsondata import Path, document_order, non_json, path_steps, replace
from himga.timeutil import parse_utc_datetime, to_utc_isoformat

# The schema rules a record may break while it is being built; `validate()` reports them. Any
# other broken rule (a wrong JSON type, an unknown key) means the data is not such a record.
VALUE_RULES = frozenset({"required", "minLength", "minimum", "maximum", "enum"})


class InvalidRecordError(HimgaError, ValueError):
    """A record that breaks its schema; `problems` holds every message of `validate()`."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class Record(SchemaModel):
    """What a record adds to its generated model (name that model first among the bases)."""

    model_config = ConfigDict(validate_assignment=False)

    #: The generated model a record class extends; its name is the schema's title.
    _generated: ClassVar[type[BaseModel]]
    #: JSON paths where to_dict() repeats other fields; problems there show at their source.
    _derived: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._generated = next(
            b for b in cls.__mro__[1:] if b.__module__.startswith("himga_schema.")
        )
        RECORD_CLASSES[cls._generated] = cls

    def __init__(self, **data: Any) -> None:
        """Keyword arguments by Python or wire name, stored unchecked (see `validate()`).

        A missing required string is left empty and a missing date-time is now (UTC), so that
        `validate()`, not the constructor, says what is missing; aware datetimes become UTC.
        """
        values: dict[str, Any] = {}
        for slot in slots(type(self)):
            keys = [k for k in dict.fromkeys((slot.name, slot.wire)) if k in data]
            if len(keys) > 1:
                raise TypeError(f"{type(self).__name__} got {' and '.join(keys)}; give one")
            values[slot.name] = stored(slot, data.pop(keys[0])) if keys else blank(slot)
        if data:
            raise TypeError(f"{type(self).__name__} has no field {', '.join(sorted(data))}")
        built = type(self).model_construct(**values)
        for state in ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__"):
            object.__setattr__(self, state, getattr(built, state))
        object.__setattr__(self, "__pydantic_private__", None)

    def to_dict(self) -> dict[str, Any]:
        """The record in its wire form (NOTES.md): wire names, date-times in UTC with `Z`."""
        document: dict[str, Any] = {}
        for slot in slots(type(self)):
            value = getattr(self, slot.name)
            if slot.absent_when_unset and value is None:
                continue  # an optional key is absent, never null
            if slot.is_datetime and isinstance(value, datetime):
                value = _written(value)
            document[slot.wire] = wire(value)
        return document

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """A record from its wire form or a legacy form; a SchemaError names what is malformed.

        Legacy forms: Python key names, date-times as datetimes or with any offset (naive ones
        taken as UTC), a missing date-time meaning now. Broken value rules are kept for
        `validate()`; a wrong type or an unknown key raises.
        """
        record = cls._read(data, [])
        problems = list(_malformations(record.to_dict(), cls._generated.__name__))
        problems = [p for p in problems if not p.path.startswith(cls._derived)] or problems
        if problems:
            first, *others = problems
            also = "".join(f"; also {p.path}: {p.reason}" for p in others)
            raise SchemaError(first.path, f"{first.reason}{also}", first.keyword, first.schema_path)
        return record

    def validate(self) -> list[str]:  # type: ignore[override]  # BaseModel's is a deprecated alias
        """Every problem of the record, worded as in the seed; never raises.

        Empty exactly when `to_dict()`'s output is valid against the record's JSON Schema.
        """
        document = self.to_dict()
        type_name = self._generated.__name__
        if _is_json(document) and validation.is_valid(document, type_name):
            return []  # the fast path; the reference below words what is wrong
        found: list[tuple[str, str]] = []  # (JSON path, message)
        for path in non_json(document, []):
            where, _ = wording.place(type(self), path)
            found.append((validation.json_path(path), f"{where} must be JSON data (a string, ...)"))
            if path:
                replace(document, path, None)  # reported here; the schema checks the rest
        reported = {path for path, _ in found}
        errors = [e for e in validation.validate(document, type_name) if e.path not in reported]
        errors.sort(key=lambda e: document_order(document, path_steps(e.path)))
        found.extend((e.path, wording.message(type(self), e)) for e in errors)
        primary = [(path, text) for path, text in found if not path.startswith(self._derived)]
        problems = [text for _, text in (primary or found)]
        return list(dict.fromkeys(problems))

    def check(self) -> Self:
        """The record itself when valid, else InvalidRecordError: for code that stores it.

        The seed's `validate()` only returns its problems, and a caller that forgets to look
        lets dirty data through; `record.check().to_dict()` cannot.
        """
        problems = self.validate()
        if problems:
            raise InvalidRecordError(problems)
        return self

    @classmethod
    def _read(cls, data: Any, path: Path) -> Self:
        """Builds the record from any accepted form, checking shapes but not values."""
        if not isinstance(data, Mapping):
            reason = f"must be an object ({cls.__name__}), got {_shown(data)}"
            raise SchemaError(validation.json_path(path), reason, "type")
        values: dict[str, Any] = {}
        known: set[str] = set()
        for slot in slots(cls):
            known.update((slot.name, slot.wire))
            keys = [k for k in dict.fromkeys((slot.wire, slot.name)) if k in data]
            if len(keys) > 1 and data[keys[0]] != data[keys[1]]:
                reason = f"and {keys[1]!r} (its Python name) disagree; give one"
                raise SchemaError(validation.json_path([*path, slot.wire]), reason, "type")
            if keys:
                values[slot.name] = _read_value(slot, data[keys[0]], [*path, slot.wire])
        unknown = [key for key in data if key not in known]
        if unknown:
            allowed = ", ".join(slot.wire for slot in slots(cls))
            reason = f"is not a field of {cls.__name__} (allowed: {allowed})"
            where = validation.json_path([*path, str(unknown[0])])
            raise SchemaError(where, reason, "additionalProperties")
        return cls(**values)


def wire(value: Any) -> Any:
    """A value's JSON form: records by their to_dict(), containers item by item."""
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [wire(item) for item in value]
    if isinstance(value, dict):
        return {key: wire(item) for key, item in value.items()}
    return value


def _written(moment: datetime) -> str:
    """A date-time as the wire writes it; one with no UTC form keeps its offset (and is invalid)."""
    try:
        return to_utc_isoformat(moment)
    except ValueError:
        return moment.isoformat()


def _read_value(slot: Slot, value: Any, path: Path) -> Any:
    """A field's value from a document: date-times parsed, nested records read."""
    if slot.is_datetime:
        if not slot.info.is_required() and value in (None, ""):
            return None  # the seed wrote no key, or an empty one, for "never"
        if not isinstance(value, str | datetime):
            reason = f"must be a date-time string or a datetime, got {_shown(value)}"
            raise SchemaError(validation.json_path(path), reason, "type")
        try:
            return parse_utc_datetime(value)
        except ValueError as error:
            raise SchemaError(validation.json_path(path), str(error), "format") from None
    record: Any = slot.record
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
    reported = [validation.json_path(path) for path in non_json(document, [])]
    if reported:
        yield from (SchemaError(path, "must be JSON data", "type") for path in reported)
        return
    if validation.is_valid(document, type_name):
        return  # the fast path: nothing broken at all
    for error in validation.validate(document, type_name):
        if error.keyword not in VALUE_RULES:
            yield error


def _is_json(document: Any) -> bool:
    return next(non_json(document, []), None) is None


def _shown(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:80]
