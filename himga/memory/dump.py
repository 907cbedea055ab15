"""The JSON Lines form of what a memory holds (`himga export` writes it, `himga import` reads it).

Each line is a Session document (schemas/v1/session.json, with its `$schema`) holding a run of
consecutive messages that were stored with the same session (id, date_str and timestamp), in
the memory's order; a message keeps its id as its turn_id, its own timestamp and its metadata.
Stored again in that order into an empty namespace, the lines give the same listing, so a
second export is byte-for-byte the first.
"""

import json
from collections.abc import Iterable, Iterator
from typing import Any

from himga import validation
from himga.data.conversation import Message, Session
from himga.memory.base import StoredMessage

SESSION_SCHEMA = validation.schema_id("Session")


def dump_lines(stored: Iterable[StoredMessage]) -> Iterator[str]:
    """The lines (without their newline) of the stored messages, in the order given."""
    run: list[StoredMessage] = []
    for message in stored:
        if run and _session_key(run[0]) != _session_key(message):
            yield _line(run)
            run = []
        run.append(message)
    if run:
        yield _line(run)


def _session_key(stored: StoredMessage) -> tuple[object, ...]:
    return (stored.session_id, stored.date_str, stored.session_timestamp)


def _line(run: list[StoredMessage]) -> str:
    session = run[0].session().model_dump(mode="json", exclude_defaults=True)
    messages = [stored.message().model_dump(mode="json", exclude_defaults=True) for stored in run]
    document = {"$schema": SESSION_SCHEMA, **session, "messages": messages}
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def read_line(text: str) -> tuple[list[tuple[Message, Session]], list[str]]:
    """The messages of one line with their session, or the problems that make it no Session
    document (`$.path: reason` each, nothing read)."""
    try:
        document: Any = json.loads(text)
        problems = [f"{e.path}: {e.reason}" for e in validation.validate(document, "Session")]
    except json.JSONDecodeError as error:
        return [], [f"$: not JSON ({error.msg} at column {error.colno})"]
    except RecursionError:
        return [], ["$: its arrays and objects are nested too deeply to read"]
    if problems:
        return [], problems
    session = Session.model_validate(document)
    bare = session.model_copy(update={"messages": []})
    return [(message, bare) for message in session.messages], []
