"""Walking decoded JSON documents: values JSON cannot hold, and JSON paths read back."""

import json
import math
import re
from collections.abc import Iterator
from typing import Any

Path = list[str | int]


def non_json(value: Any, path: Path) -> Iterator[Path]:
    """Paths of the values JSON cannot hold (sets, datetimes, NaN, non-string keys, ...)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                yield path
                return
            yield from non_json(item, [*path, key])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from non_json(item, [*path, index])
    elif value is not None and not isinstance(value, str | int | float):
        yield path
    elif isinstance(value, float) and not math.isfinite(value):
        yield path  # NaN and infinities have no JSON form


def replace(document: Any, path: Path, value: Any) -> None:
    """Puts `value` at a non-empty `path` of `document`."""
    for step in path[:-1]:
        document = document[step]
    document[path[-1]] = value


def document_order(document: Any, path: Path) -> tuple[int, ...]:
    """Where a path lies in document order (keys as written), to list problems field by field."""
    position: list[int] = []
    for step in path:
        if isinstance(document, dict) and step in document:
            position.append(list(document).index(step))
            document = document[step]
        elif isinstance(document, list) and isinstance(step, int) and step < len(document):
            position.append(step)
            document = document[step]
        else:
            position.append(len(document) if isinstance(document, dict | list) else 0)
            break
    return tuple(position)


_PATH_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[(\"(?:[^\"\\]|\\.)*\")\]")


def path_steps(path: str) -> Path:
    """The steps of a JSON path as `himga.validation.json_path` writes it (`$.a[0]["$b"]`)."""
    steps: Path = []
    for match in _PATH_STEP.finditer(path, 1):
        name, index, quoted = match.groups()
        steps.append(name if name is not None else int(index) if index else json.loads(quoted))
    return steps
