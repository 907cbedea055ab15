"""The pydantic configuration every generated schema model inherits.

`make generate` passes this class to datamodel-code-generator as `--base-class`, so the
generated files stay untouched while all of them share one configuration and the one schema
rules pydantic cannot express on its own. This module must not import the generated packages
(they import it).
"""

import functools
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from importlib.resources import files
from typing import Any, Self

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    TypeAdapter,
    ValidationInfo,
    field_validator,
)
from pydantic.config import ExtraValues
from pydantic_core import PydanticCustomError

from himga.timeutil import holds_datetime


class SchemaModel(BaseModel):
    """Base of the models generated from `schemas/`: as strict as the JSON Schemas they mirror."""

    model_config = ConfigDict(
        # No coercion: "5" is not an integer and 5 is not a string, as in the schemas.
        strict=True,
        # Unknown keys are errors, as `additionalProperties: false` says.
        extra="forbid",
        # Python names (`tool`) and wire names (`action`) are both accepted; dumps use the wire.
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        # Assignments are checked like construction, so a model never holds what it would reject.
        validate_assignment=True,
    )

    @classmethod
    def model_validate_json(
        cls,
        json_data: str | bytes | bytearray,
        *,
        strict: bool | None = None,
        extra: ExtraValues | None = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> Self:
        """Parse JSON text: the wire, where only the schemas' names are valid.

        Python names (`tool` for `action`) stay welcome in Python code, but in JSON they are
        unknown properties, as the schemas say; pass `by_name=True` to accept them anyway.
        """
        return super().model_validate_json(
            json_data,
            strict=strict,
            extra=extra,
            context=context,
            by_alias=by_alias,
            by_name=False if by_name is None else by_name,
        )

    @field_validator("*", mode="before")
    @classmethod
    def _schema_rules_pydantic_lacks(cls, value: Any, info: ValidationInfo) -> Any:
        """Two rules of the schemas that strict pydantic alone gets wrong.

        `integer` is any number with a zero fraction (JSON Schema), so `5.0` becomes 5 while
        `5.5` is still refused. Date-times carry a `pattern` (RFC 3339 in UTC with `Z`), which
        the generator has to drop: a string must match it; a Python datetime with any offset is
        converted to UTC, so that dumps are always valid on the wire.
        """
        kind = _field_kinds(cls).get(info.field_name or "")
        if kind is None:
            return value
        if kind is int:
            if isinstance(value, float) and value.is_integer():
                return int(value)
            return value
        if isinstance(value, str):
            if not _utc_date_time().fullmatch(value):
                raise PydanticCustomError(
                    "utc_date_time",
                    "a date-time must be RFC 3339 in UTC, such as 2024-05-08T13:56:00Z",
                )
            # A before-validator hands its result on as Python input, where strict mode refuses
            # strings; parse it as the JSON path would.
            value = _JSON_DATE_TIME.validate_json(json.dumps(value))
        if isinstance(value, datetime) and value.tzinfo is not None:
            return value.astimezone(UTC)
        return value


@functools.cache
def _field_kinds(cls: type[BaseModel]) -> dict[str, type]:
    """The fields of a model class that the rules above concern: integers and date-times.

    Worked out once per class: the validator runs for every field of every validation."""
    kinds: dict[str, type] = {}
    for name, field in cls.model_fields.items():
        if field.annotation is int:
            kinds[name] = int
        elif holds_datetime(field.annotation):
            kinds[name] = datetime
    return kinds


@functools.cache
def _utc_date_time() -> re.Pattern[str]:
    """The `pattern` the shipped schemas give every date-time (RFC 3339 in UTC with `Z`; pydantic
    alone would also take a space for `T` or minutes without seconds). The calendar (29 February)
    is left to pydantic's parser.

    Read from the schemas themselves, once, at the first validation: the generated packages
    have been imported by then. Whole-string matching, as the pattern means in JSON Schema."""
    folder = files("himga_schema").joinpath("json/v1")
    patterns = {
        pattern
        for entry in folder.iterdir()
        if entry.name.endswith(".json")
        for pattern in _date_time_patterns(json.loads(entry.read_text(encoding="utf-8")))
    }
    if len(patterns) != 1:
        raise RuntimeError(f"the schemas' date-times should share one pattern, not {patterns}")
    return re.compile(patterns.pop(), re.ASCII)


def _date_time_patterns(node: Any) -> Iterator[str]:
    """The `pattern` of every `format: date-time` subschema of a schema."""
    if isinstance(node, dict):
        if node.get("format") == "date-time" and "pattern" in node:
            yield node["pattern"]
        for value in node.values():
            yield from _date_time_patterns(value)
    elif isinstance(node, list):
        for value in node:
            yield from _date_time_patterns(value)


_JSON_DATE_TIME: TypeAdapter[datetime] = TypeAdapter(AwareDatetime, config=ConfigDict(strict=True))
