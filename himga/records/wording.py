"""The seed's wording of schema errors: `action_log[0]: ActionEntry.tool is required`.

A JSON path into a record's wire form is told by the record's Python names: nested records
get their place as a prefix, and a nested object that Python reads flat (an episode's
`context`) names its fields as the owner's own.
"""

from typing import Any, get_args

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from himga.errors import SchemaError
from himga.records.fields import bounds, field_named, is_list, python_name, record_in
from himga.records.jsondata import Path, path_steps


def place(model: type[BaseModel], path: Path) -> tuple[str, FieldInfo | None]:
    """How the seed names the place of `path` in a `model` record, and the field there."""
    owner, prefix, attribute = model.__name__, "", ""
    found: FieldInfo | None = None
    i = 0
    while i < len(path):
        step = path[i]
        field = field_named(model, step) if isinstance(step, str) and not attribute else None
        nested: Any = record_in(field) if field is not None else None
        if field is None:
            attribute += f"[{step}]" if isinstance(step, int) else f".{step}"
            attribute, found = attribute.removeprefix("."), None
        elif nested is not None and is_list(field) and i + 2 < len(path):
            prefix += f"{python_name(model, field)}[{path[i + 1]}]: "
            model, owner = nested, nested.__name__
            i += 2
            continue
        elif nested is not None and not is_list(field) and i + 1 < len(path):
            model = nested  # its fields read as the owner's own (an episode's phase, goal)
        else:
            attribute, found = python_name(model, field), field
        i += 1
    return prefix + owner + (f".{attribute}" if attribute else ""), found


def message(model: type[BaseModel], error: SchemaError) -> str:
    """The seed's message for one schema error, else the place and the schema's reason."""
    where, field = place(model, path_steps(error.path))
    if error.keyword == "required" or (error.keyword == "minLength" and field is not None):
        return f"{where} is required"
    if error.keyword == "enum" and field is not None:
        choices = [str(value) for value in get_args(field.annotation) if value != ""]
        return f"{where} must be one of: {', '.join(choices)}"
    if error.keyword in ("minimum", "maximum") and field is not None:
        low, high = bounds(field)
        if low is not None and high is not None:
            return f"{where} must be between {low} and {high}"
        if low == 0:
            return f"{where} must be non-negative"
    return f"{where} {error.reason}"
