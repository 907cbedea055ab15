"""What the dataset loaders share: reading a JSON file, and checking a field with an error that
names the file and the place in it (`[2].qa[5].question`)."""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from himga.data.errors import DatasetError

T = TypeVar("T")


def read_json(path: Path, what: str) -> object:
    """The JSON document in `path` (a `what` file); DatasetError when it cannot be read, is not
    JSON, or nests arrays and objects deeper than Python's JSON reader goes (about 1,000 levels;
    a benchmark file nests a few)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such {what} file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise DatasetError(f"{path}: cannot read the {what} file: {error}") from None
    except json.JSONDecodeError as error:
        raise DatasetError(f"{path}: not JSON: {error}") from None
    except RecursionError:  # the JSON reader recurses once per level of arrays and objects
        raise DatasetError(
            f"{path}: its arrays and objects are nested too deeply to read as a {what} file"
        ) from None


def require_object(value: object, where: str) -> dict[str, Any]:
    """`value` if it is a JSON object."""
    if not isinstance(value, dict):
        raise DatasetError(f"{where}: must be an object, got {kind(value)}")
    return value


def require_list(value: object, where: str, of: str) -> list[Any]:
    """`value` if it is a JSON array (of `of`, as the message says)."""
    if not isinstance(value, list):
        raise DatasetError(f"{where}: must be an array of {of}, got {kind(value)}")
    return value


def require_string(obj: dict[str, Any], key: str, where: str) -> str:
    """`obj[key]` if it is a non-empty string."""
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise DatasetError(f"{where}.{key}: must be a non-empty string, got {kind(value)}")
    return value


def kind(value: object) -> str:
    """What a JSON value is, for an error message."""
    if value is None:
        return "null or nothing"
    if value == "":
        return "an empty string"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), f"a {type(value).__name__}"
    )


def each_once(
    path: Path,
    raw: list[Any],
    read: Callable[[Any, str], T],
    key: str,
    name: Callable[[T], str],
    item: str,
) -> list[T]:
    """Each of `raw`'s items (the file at `path`'s array; an `item`: "sample") read by
    `read(item, where)`, in order; DatasetError when two share `name` (their `key` field: it
    names the item's namespace and results), naming both."""
    found: list[T] = []
    first: dict[str, int] = {}  # a name -> the index of its item
    for index, each in enumerate(raw):
        read_item = read(each, f"{path}: [{index}]")
        seen = first.setdefault(name(read_item), index)
        if seen != index:
            raise DatasetError(
                f"{path}: [{index}].{key}: {name(read_item)!r} is the {key} of [{seen}] too; "
                f"each {item} needs its own (it names the {item}'s namespace and results)"
            )
        found.append(read_item)
    return found
