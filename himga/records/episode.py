"""The seed's memory records in Python: EpisodeTrace, TaskContext, ActionEntry, ErrorEntry.

Each is a lenient subclass of the model generated from its JSON Schema (fields, wire names,
defaults and enums come from there; none is restated). As with the seed's dataclasses, a
record can be built and changed with values the schema rejects; `validate()` then lists every
problem in the seed's words, by checking `to_dict()`'s output against the JSON Schema, so the
two agree; `check()` raises them instead. `from_dict` reads the wire form and the seed's
legacy forms, and raises one `SchemaError` (a ValueError) naming the field when data does not
have a record's shape.

`from_dict(d).to_dict()` gives back a valid `d` up to these normalisations: defaults are filled
in, date-times are written in UTC as `YYYY-MM-DDTHH:MM:SS[.ffffff]Z`, an episode's
`context.files_involved` is recomputed from files_read and files_modified (and, as in the seed,
becomes files_read when a document has no files_read).
"""

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar, Self, get_args
from uuid import uuid4

from himga_schema import action_entry, episode_trace, error_entry, task_context

from himga.records.record import InvalidRecordError, Record
from himga.timeutil import (
    _parse_utc_datetime,
    _to_utc_isoformat,
    parse_utc_datetime,
    to_utc_isoformat,
)

__all__ = [
    "ActionEntry",
    "EpisodeContext",
    "EpisodeTrace",
    "ErrorEntry",
    "InvalidRecordError",
    "TaskContext",
    "_parse_utc_datetime",
    "_to_utc_isoformat",
    "parse_utc_datetime",
    "to_utc_isoformat",
]


class ActionEntry(action_entry.ActionEntry, Record):
    """One tool call of an episode: `tool`, `input`, `output`, `timestamp` (seconds from start)."""


class ErrorEntry(error_entry.ErrorEntry, Record):
    """One error met in an episode: `error_type`, `message`, `resolution`."""


class TaskContext(task_context.TaskContext, Record):
    """A task's `goal`, `phase` (may be empty), `files` and `constraints`."""

    VALID_PHASES: ClassVar[list[str]] = [
        p for p in get_args(task_context.TaskContext.model_fields["phase"].annotation) if p
    ]


class EpisodeContext(episode_trace.EpisodeContext, Record):
    """An episode's goal and phase as the wire nests them; EpisodeTrace reads them flat."""


class EpisodeTrace(episode_trace.EpisodeTrace, Record):
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
        context = data.pop("context") if "context" in data else EpisodeContext(goal="")
        if isinstance(context, Mapping):
            context = EpisodeContext(**context)
        for name in ("phase", "goal"):
            if name not in data:
                continue
            if not isinstance(context, EpisodeContext):
                raise TypeError(f"EpisodeTrace got {name} but a context that is no object")
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
