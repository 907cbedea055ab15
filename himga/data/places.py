"""Where in a JSON file a loader's complaint is: the line of a place such as
`[2].conversation.session_1[3].text`, as DatasetError names it after the file."""

import json
import re
from pathlib import Path

from himga.data.errors import DatasetError

_PLACE = re.compile(r"^((?:\[\d+\])(?:\[\d+\]|\.[A-Za-z0-9_$-]+)*)(?=: )")
_STEP = re.compile(r"\[(\d+)\]|\.([A-Za-z0-9_$-]+)")
_SPACE = re.compile(r"[ \t\n\r]*")


def located(error: DatasetError, path: Path, text: str) -> str:
    """`error` as `FILE:LINE: place: reason`, LINE being where its place starts in `text`
    (the JSON of `path`); the line of the deepest part of the place that exists, for a key that
    is missing. An error that names no place inside the file is returned as it is."""
    said = str(error)
    rest = said.removeprefix(f"{path}: ")
    found = _PLACE.match(rest)
    if rest == said or found is None:
        return said
    return f"{path}:{line_of(text, found.group(1))}: {rest}"


def line_of(text: str, place: str) -> int:
    """The line (from 1) where the deepest existing part of `place` starts in JSON `text`."""
    decoder = json.JSONDecoder()
    at = _skip(text, 0)
    for index, key in _STEP.findall(place):
        found = _item(text, at, int(index), decoder) if index else _member(text, at, key, decoder)
        if found is None:
            break
        at = found
    return text.count("\n", 0, at) + 1


def _skip(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    return match.end() if match else at


def _item(text: str, at: int, wanted: int, decoder: json.JSONDecoder) -> int | None:
    if not text.startswith("[", at):
        return None
    at, index = _skip(text, at + 1), 0
    while not text.startswith("]", at):
        if index == wanted:
            return at
        at = _skip(text, decoder.raw_decode(text, at)[1])
        at = _skip(text, at + 1) if text.startswith(",", at) else at
        index += 1
    return None


def _member(text: str, at: int, wanted: str, decoder: json.JSONDecoder) -> int | None:
    if not text.startswith("{", at):
        return None
    at = _skip(text, at + 1)
    while text.startswith('"', at):
        key, at = decoder.raw_decode(text, at)
        at = _skip(text, _skip(text, at) + 1)  # past the colon
        if key == wanted:
            return at
        at = _skip(text, decoder.raw_decode(text, at)[1])
        at = _skip(text, at + 1) if text.startswith(",", at) else at
    return None
