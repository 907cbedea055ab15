"""What the ranking reads of an episode, worked out once when it is recorded.

An episode's text is indexed in three fields, each as himga.memory.text's terms (the keyword
method's tokenising and Porter stems, no second tokenizer): its goal; its errors (type,
message, resolution); its actions (tool, target, result). Its files are the paths it modified,
read, or names (its context's files_involved, and action targets that are paths), each with the
weight of how it touched the file. The rest is what the ranking weighs: phase, outcome, whether
an error met was resolved, importance and time.
"""

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from himga.memory.text import terms_of
from himga.records import TaskContext
from himga.timeutil import parse_utc_datetime

MODIFIED = 1.0
READ = 0.6
NAMED = 0.4
"""How much a file counts for an episode: changed, read, or only named."""

_PATH = re.compile(r"[^\s]*[/\\][^\s]*|[^\s/\\]+\.[A-Za-z0-9]{1,8}", re.ASCII)


@dataclass(frozen=True, slots=True)
class Features:
    """One episode as the index holds it."""

    id: str
    timestamp: float
    """Seconds since the epoch."""
    importance: float
    phase: str
    outcome: str
    resolved: bool
    """It met an error and wrote down how it was resolved."""
    goal: list[str]
    errors: list[str]
    actions: list[str]
    files: dict[str, float]
    """Path -> the most its episode touched it (MODIFIED, READ or NAMED)."""


def features(document: dict[str, Any]) -> Features:
    """The features of an episode in its wire form (schema-valid; absent keys are defaults)."""
    context = document["context"]
    errors = document.get("errors_encountered", [])
    actions = document.get("action_log", [])
    error_text = " ".join(f"{e['type']} {e['message']} {e.get('resolution', '')}" for e in errors)
    action_text = " ".join(
        f"{a['action']} {a.get('target', '')} {a.get('result', '')}" for a in actions
    )
    goal, error_terms, action_terms = terms_of([context["goal"], error_text, action_text])
    files: dict[str, float] = {}
    named = [*context.get("files_involved", [])]
    named += [a["target"] for a in actions if _PATH.fullmatch(a.get("target", ""))]
    for paths, weight in (
        (named, NAMED),
        (document.get("files_read", []), READ),
        (document.get("files_modified", []), MODIFIED),
    ):
        for path in map(normal_path, paths):
            if path:
                files[path] = max(files.get(path, 0.0), weight)
    return Features(
        id=document["id"],
        timestamp=seconds(parse_utc_datetime(document["timestamp"])),
        importance=float(document.get("importance", 0.5)),
        phase=context.get("phase", ""),
        outcome=document.get("outcome", "success"),
        resolved=any(e.get("resolution") for e in errors),
        goal=goal,
        errors=error_terms,
        actions=action_terms,
        files=files,
    )


@dataclass(frozen=True, slots=True)
class Query:
    """A task and free text as the ranking reads them."""

    terms: list[str]
    """The distinct terms of the goal and the free text, in order of first use."""
    files: list[str]
    phase: str
    debugging: bool


# Stems of the words that mark a task as fixing something, as the keyword method stems them;
# a quoted error (a word ending in "error" or "exception") marks it too.
_DEBUGGING = frozenset(
    terms_of(
        [
            "fix fixes fixing bug bugs debug error errors fail fails failing failure crash "
            "crashes broken exception traceback regression flaky wrong"
        ]
    )[0]
)


# What a quoted error's name ends with, once stemmed: KeyError, ValueError, TimeoutException.
_ERROR_ENDINGS = ("error", "except")


def task_query(task: TaskContext, text: str = "") -> Query:
    """What the ranking reads of a task and free text (constraints are not ranked on)."""
    goal, extra = terms_of([task.goal, text])
    distinct = list(dict.fromkeys(goal + extra))
    files = list(dict.fromkeys(filter(None, map(normal_path, task.files))))
    return Query(
        terms=distinct,
        files=files,
        phase=task.phase,
        debugging=any(term in _DEBUGGING or term.endswith(_ERROR_ENDINGS) for term in distinct),
    )


def normal_path(path: str) -> str:
    """A path as files are compared: `/` separators, no leading `./`, no trailing `/`."""
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip("/")


def directory(path: str) -> str:
    """The folder of a normal path ("" for a file at the top)."""
    return path.rsplit("/", 1)[0] if "/" in path else ""


def seconds(moment: datetime) -> float:
    """An aware datetime as seconds since the epoch."""
    return (moment - _EPOCH).total_seconds()


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
