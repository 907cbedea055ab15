"""What a generated model's fields say: wire names, date-times, nested records, bounds.

Everything the records know about their fields is read here from the generated pydantic
models, so that no field list is written twice.
"""

from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import MISSING

from himga.timeutil import as_utc, holds_datetime

#: Each generated model that has a lenient record class, mapped to that class.
RECORD_CLASSES: dict[type[BaseModel], type[Any]] = {}


@dataclass(frozen=True, slots=True)
class Slot:
    """One field of a model with what the records ask of it on every call, worked out once."""

    name: str
    wire: str
    info: FieldInfo
    is_datetime: bool
    absent_when_unset: bool
    #: The record class the field holds, one or (`is_list`) a list of them, if any.
    record: type[Any] | None
    is_list: bool


@cache
def slots(model: type[BaseModel]) -> tuple[Slot, ...]:
    """The fields of a model, in schema order (asked once every record class exists)."""
    return tuple(
        Slot(
            name=name,
            wire=wire_name(name, field),
            info=field,
            is_datetime=holds_datetime(field.annotation),
            absent_when_unset=is_absent_when_unset(field),
            record=record_in(field),
            is_list=is_list(field),
        )
        for name, field in model.model_fields.items()
    )


def wire_name(name: str, field: FieldInfo) -> str:
    """The key a field has on the wire (its alias), else its Python name."""
    return field.alias or name


def field_named(model: type[BaseModel], wire: str) -> FieldInfo | None:
    """The field of `model` whose wire name is `wire`, if any."""
    return next((f for n, f in model.model_fields.items() if wire_name(n, f) == wire), None)


def python_name(model: type[BaseModel], field: FieldInfo) -> str:
    """The attribute name of one of `model`'s fields."""
    return next(n for n, f in model.model_fields.items() if f is field)


def is_list(field: FieldInfo) -> bool:
    return get_origin(field.annotation) is list


def record_in(field: FieldInfo) -> type[Any] | None:
    """The record class a field holds (one, or a list of them), if any."""
    annotation = field.annotation
    if get_origin(annotation) is list:
        annotation = get_args(annotation)[0]
    return RECORD_CLASSES.get(annotation) if isinstance(annotation, type) else None


def bounds(field: FieldInfo) -> tuple[Any, Any]:
    """A numeric field's inclusive lower and upper bounds (None where there is none)."""
    low = next((m.ge for m in field.metadata if isinstance(m, annotated_types.Ge)), None)
    high = next((m.le for m in field.metadata if isinstance(m, annotated_types.Le)), None)
    return low, high


def is_absent_when_unset(field: FieldInfo) -> bool:
    """An optional key that the wire leaves out rather than writing null (`last_accessed`)."""
    return field.default is MISSING


def blank(slot: Slot) -> Any:
    """A missing field's value: its default, else an empty stand-in that validate() reports."""
    if slot.absent_when_unset:
        return None  # as in the seed; to_dict() leaves the key out
    if not slot.info.is_required():
        return slot.info.get_default(call_default_factory=True, validated_data={})
    if slot.is_datetime:
        return datetime.now(UTC)
    if slot.record is not None:
        return slot.record()
    return ""


def stored(slot: Slot, value: Any) -> Any:
    """What a record keeps for a value: datetimes as aware UTC, anything else as given."""
    if slot.is_datetime and isinstance(value, datetime):
        try:
            return as_utc(value)
        except ValueError:
            return value  # no UTC form: kept, and validate() reports it
    return value
