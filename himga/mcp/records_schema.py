"""The JSON Schema of a shipped record type (Message, Session, EpisodeTrace, ...) as a tool
argument takes it: self-contained, so a host that resolves references offline, or not at all,
reads it as it is.

Made from the shipped schema (himga.validation), never written again here: every `$ref` (to
another shipped schema by its file name or `$id`, or to a `$defs` entry) is replaced by the
schema it names, less that schema's own description (the place that refers to it says what it
is for there), and what only tooling reads is left out (`$schema`, `$id`, `$comment`, `title`,
the optional `$schema` property a document may carry, and a `default` that is only the empty
value of its type, which is what an absent optional property means anyway). So the tool
schema accepts what the shipped schema accepts (the tests hold it to every conformance
vector), except where a tool narrows it (`drop`) or loosens `required` (`optional`); the tools
still check every call against the shipped schema itself.

`terse` leaves out descriptions, defaults and patterns too: the shape of a record as a tool
answers it (its output schema), where the host reads structure, not guidance."""

from typing import Any

from himga import validation

_TOOLING = frozenset({"$schema", "$id", "$comment", "$defs", "title"})
_GUIDANCE = frozenset({"description", "default", "pattern", "not"})
_EMPTY: tuple[Any, ...] = ([], {}, "", None)


def inline(
    type_name: str,
    *,
    drop: tuple[str, ...] = (),
    optional: tuple[str, ...] = (),
    terse: bool = False,
) -> dict[str, Any]:
    """The schema of `type_name`, self-contained, without the properties `drop`, with
    `optional` no longer required."""
    schema: dict[str, Any] = _inline(validation.schema_for(type_name), type_name, terse)
    if drop:
        schema["properties"] = {
            name: value for name, value in schema["properties"].items() if name not in drop
        }
    if drop or optional:
        schema["required"] = [
            name for name in schema.get("required", []) if name not in (*drop, *optional)
        ]
    return schema


def _inline(node: Any, type_name: str, terse: bool) -> Any:
    """`node` of the schema of `type_name`, with every reference replaced by what it names."""
    if isinstance(node, list):
        return [_inline(item, type_name, terse) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    reference = node.get("$ref")
    if reference is not None:
        target, target_type = _target(reference, type_name)
        out.update(_inline(target, target_type, terse))
        out.pop("description", None)
    for key, value in node.items():
        if key == "$ref" or key in _TOOLING or (terse and key in _GUIDANCE):
            continue
        if key == "default" and value in _EMPTY:
            continue
        if key == "properties":
            out[key] = {
                name: _inline(sub, type_name, terse)
                for name, sub in value.items()
                if name != "$schema"
            }
        else:
            out[key] = _inline(value, type_name, terse)
    return out


def _target(reference: str, type_name: str) -> tuple[Any, str]:
    """The schema a `$ref` met in the schema of `type_name` names, and the type it is part of."""
    if reference.startswith("#/$defs/"):
        return validation.schema_for(type_name)["$defs"][reference.removeprefix("#/$defs/")], (
            type_name
        )
    if "://" not in reference:
        base = validation.schema_id(type_name).rsplit("/", 1)[0]
        reference = f"{base}/{reference}"
    target_type = validation.type_for_id(reference)
    return validation.schema_for(target_type), target_type
