"""The tools: their names and descriptions for a model, their input and output schemas
(self-contained: the shipped JSON Schemas inlined for the records, the proto's request
descriptors for the rest), their hints for the host (read-only, destructive, idempotent), the
checking of a call (every problem, each naming its field, against the shipped schemas
themselves), what is made when a call leaves it out (a session and a time for remember, an id
and a timestamp for record_episode), and the request each makes of the core or the server
(himga.mcp.stores)."""

import builtins
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from typing import Any

from himga import validation
from himga.errors import MAX_VIOLATIONS, left_out
from himga.mcp import proto_read
from himga.mcp.proto_schema import fields_schema, message_schema
from himga.mcp.records_schema import inline
from himga.mcp.stores import Door
from himga.timeutil import to_utc_isoformat

Answer = tuple[str, dict[str, Any]]
"""What a tool gives back: text for the model, and the same as structured content."""


@dataclass(frozen=True, slots=True)
class Typed:
    """An argument that is a shipped type (`many`: a non-empty list of them), less the
    properties `drop` (each with why it is not taken), with `optional` made when absent."""

    type_name: str
    many: bool = False
    drop: Mapping[str, str] = field(default_factory=dict)
    optional: tuple[str, ...] = ()

    def schema(self) -> dict[str, Any]:
        one = inline(self.type_name, drop=tuple(self.drop), optional=self.optional)
        return {"type": "array", "items": one, "minItems": 1} if self.many else one


@dataclass(frozen=True, slots=True)
class Hints:
    """What the host may assume of a tool (MCP's tool annotations)."""

    read_only: bool
    destructive: bool
    idempotent: bool


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    run: Callable[[Door, dict[str, Any]], Answer]
    hints: Hints
    output: Mapping[str, dict[str, Any]]
    """The properties of the structured content (each always given)."""
    typed: Mapping[str, Typed] = field(default_factory=dict)
    plain: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    descriptions: Mapping[str, str] = field(default_factory=dict)
    rules: Callable[[Mapping[str, Any]], builtins.list[str]] | None = None
    """Problems of a call that its schema does not say (which arguments go together)."""
    complete: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    """What the call leaves out, made (after its plain arguments are checked, before its
    typed ones are)."""
    request: Any = None
    """The proto request the plain arguments are read into (their schema is its fields'): what
    their schema lets through and it does not parse is a problem of the call too."""

    def input_schema(self) -> dict[str, Any]:
        properties = {name: typed.schema() for name, typed in self.typed.items()}
        properties.update(self.plain)
        for name, text in self.descriptions.items():
            properties[name] = {**properties[name], "description": text}
        return {
            "type": "object",
            "properties": properties,
            "required": builtins.list(self.required),
            "additionalProperties": False,
        }

    def output_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": dict(self.output),
            "required": builtins.list(self.output),
            "additionalProperties": False,
        }

    def check(self, arguments: Mapping[str, Any]) -> tuple[builtins.list[str], dict[str, Any]]:
        """Every problem of a call, as `$.field: reason` (none for a good one), and its
        arguments with what it left out made."""
        found = [f"$.{name}: is required" for name in self.required if name not in arguments]
        known = {*self.typed, *self.plain}
        found += [
            f"$.{name}: is not an argument of {self.name} (allowed: {', '.join(sorted(known))})"
            for name in arguments
            if name not in known
        ]
        readable = {}
        for name, value in arguments.items():
            if name in self.plain:
                problems = _plain_problems(name, self.plain[name], value)
                found += problems
                if not problems:
                    readable[name] = value
        if self.request is not None and readable:  # as its request reads them (ProtoJSON)
            found += proto_read.problems(self.request, readable)
        if not found and self.rules is not None:
            found = self.rules(arguments)
        if found:
            return found, dict(arguments)
        completed = dict(arguments) if self.complete is None else self.complete(dict(arguments))
        unchecked = False
        for name, value in completed.items():
            if name in self.typed:
                problems, cut = _typed_problems(name, self.typed[name], value)
                found += problems
                unchecked = unchecked or cut
        if len(found) > MAX_VIOLATIONS or unchecked:  # the first ones, as the other doors name
            rest = max(0, len(found) - MAX_VIOLATIONS)
            found = [*found[:MAX_VIOLATIONS], left_out(rest, unchecked)]
        return found, completed


def _plain_problems(name: str, schema: dict[str, Any], value: Any) -> builtins.list[str]:
    from jsonschema import Draft202012Validator  # on the first call, not at start-up

    checker = Draft202012Validator(schema, format_checker=validation.format_checker())
    return [
        f"{validation.json_path([name, *error.absolute_path])}: {error.message}"
        for error in checker.iter_errors(value)
    ]


def _typed_problems(name: str, typed: Typed, value: Any) -> tuple[builtins.list[str], bool]:
    """The problems of a typed argument, and whether its items were left unread past the most
    an answer names (MAX_VIOLATIONS)."""
    if not typed.many:
        items: builtins.list[tuple[builtins.list[str | int], Any]] = [([name], value)]
    elif not isinstance(value, builtins.list) or not value:
        return [f"$.{name}: must be a non-empty list of {typed.type_name}"], False
    else:
        items = [([name, i], item) for i, item in enumerate(value)]
    found: builtins.list[str] = []
    for where, document in items:
        if len(found) > MAX_VIOLATIONS:  # enough to name: the rest is not read
            return found, True
        if isinstance(document, dict):
            found += [
                f"{validation.json_path([*where, key])}: {typed.drop[key]}"
                for key in document
                if key in typed.drop
            ]
        for error in validation.validate(document, typed.type_name):
            found.append(f"{validation.json_path(where)}{error.path[1:]}: {error.reason}")
    return found, False


def _request(door: Door, proto: Any, arguments: Mapping[str, Any], names: tuple[str, ...]) -> Any:
    """The request the plain arguments make (read as ProtoJSON), for the door's namespace."""
    request: Any = proto_read.parse(proto, {n: arguments[n] for n in names if n in arguments})
    request.namespace = door.namespace
    if "memory" in proto.DESCRIPTOR.fields_by_name:
        request.memory = door.memory
    return request


def _pb() -> Any:
    from himga_proto.memory.v1 import memory_pb2

    return memory_pb2


def _now() -> str:
    return to_utc_isoformat(datetime.now(UTC).replace(microsecond=0))


# remember

SESSION_PREFIX = "mcp-"
"""A session remember makes is `mcp-YYYY-MM-DD`: the UTC day of the call."""


def _complete_remember(arguments: dict[str, Any]) -> dict[str, Any]:
    """The messages and session of a remember call: `text` (said by `role`, `user` by
    default) after `messages`; without a session, the UTC day's (`mcp-YYYY-MM-DD`); a session
    with no time of its own, timed now."""
    given = arguments.get("messages", [])
    if not isinstance(given, builtins.list):  # not a list to add to: its check says so
        return arguments
    messages = builtins.list(given)
    if "text" in arguments:
        messages.append({"role": arguments.get("role", "user"), "content": arguments["text"]})
    now = _now()
    session = arguments.get("session")
    if session is None:
        session = {"session_id": SESSION_PREFIX + now[:10], "timestamp": now}
    elif isinstance(session, dict) and "timestamp" not in session and "date_str" not in session:
        session = {**session, "timestamp": now}
    return {"messages": messages, "session": session}


def _remember(door: Door, arguments: dict[str, Any]) -> Answer:
    from himga.data.conversation import Message, Session
    from himga.service.memory_calls import MemoryCalls

    session = Session.model_validate({**arguments["session"], "messages": []})
    items = [(Message.model_validate(m), session) for m in arguments["messages"]]
    request = MemoryCalls(door.namespace, door.memory).ingest_batch(items)
    ids = builtins.list(door("MemoryService/IngestBatch", request).ids)
    text = f"remembered {len(ids)} message(s) in session {session.session_id}: {', '.join(ids)}"
    return text, {"ids": ids, "session_id": session.session_id}


def _remember_problems(arguments: Mapping[str, Any]) -> builtins.list[str]:
    if "text" not in arguments and "messages" not in arguments:
        return ["$.text: is required (or messages): what to remember"]
    if "role" in arguments and "text" not in arguments:
        return ["$.role: is the speaker of text, and there is no text"]
    text = arguments.get("text")
    if isinstance(text, str) and text and not text.strip():  # "" is the schema's to refuse
        return ["$.text: holds only white space: give what to remember"]
    return []


# recall

_RECALL = ("query", "limit", "filter", "max_context_tokens")


def _recall(door: Door, arguments: dict[str, Any]) -> Answer:
    from google.protobuf import json_format

    request = _request(door, _pb().RetrieveRequest, arguments, _RECALL)
    answer = door("MemoryService/Retrieve", request)
    found = [
        json_format.MessageToDict(hit, preserving_proto_field_name=True) for hit in answer.hits
    ]
    context = answer.context
    return context or "(nothing remembered about this)", {"context": context, "hits": found}


# forget

_FORGET = ("ids", "filter")


def _forget(door: Door, arguments: dict[str, Any]) -> Answer:
    request = _request(door, _pb().DeleteRequest, arguments, _FORGET)
    deleted = int(door("MemoryService/Delete", request).deleted)
    return f"forgot {deleted} message(s)", {"deleted": deleted}


# episodes

_FIND = ("query", "limit", "max_context_tokens")
_KEPT_BY_THE_STORE = "is kept by the store (it counts each time find_episodes returns the episode)"


def _complete_episode(arguments: dict[str, Any]) -> dict[str, Any]:
    """An episode without an id gets one as EpisodeTrace.create makes it
    (`ep-YYYY-MM-DD-xxxxxxxx`); without a timestamp, now (UTC)."""
    from himga.records import EpisodeTrace

    episode = arguments.get("episode")
    if isinstance(episode, dict) and ("id" not in episode or "timestamp" not in episode):
        made = EpisodeTrace.create(task_id="-", agent="-", goal="-").to_dict()
        episode = {"id": made["id"], "timestamp": made["timestamp"], **episode}
    return {**arguments, "episode": episode}


def _record_episode(door: Door, arguments: dict[str, Any]) -> Answer:
    from himga.records import EpisodeTrace
    from himga.service import convert

    episode = EpisodeTrace.from_dict(arguments["episode"])
    request = _pb().RecordEpisodeRequest(
        namespace=door.namespace, episode=convert.episode_to_proto(episode)
    )
    door("EpisodeService/RecordEpisode", request)
    timestamp = episode.to_dict()["timestamp"]
    return f"recorded episode {episode.id}", {"id": episode.id, "timestamp": timestamp}


def _find_episodes(door: Door, arguments: dict[str, Any]) -> Answer:
    from himga.records import TaskContext
    from himga.service import convert

    request = _request(door, _pb().SearchEpisodesRequest, arguments, _FIND)
    request.task.CopyFrom(convert.task_to_proto(TaskContext.from_dict(arguments["task"])))
    found = door("EpisodeService/SearchEpisodes", request)
    hits = [
        {
            "episode": convert.episode_from_proto(hit.episode, "hits.episode").to_dict(),
            "score": hit.score,
        }
        for hit in found.hits
    ]
    return found.context or "(no similar episode)", {"context": found.context, "hits": hits}


_BUDGET = "at most this many tokens of context (0 or absent: no budget)"
_TEXT = {"type": "string"}
_COUNT = {"type": "integer", "minimum": 0}


@cache
def tools() -> dict[str, Tool]:
    """The tools by name (made on first use: `initialize` needs none of this)."""
    from himga.memory.base import DEFAULT_LIMIT

    pb = _pb()
    tools = (
        Tool(
            "remember",
            "Store what may matter later in long-term memory, so that recall finds it. Give "
            "text (said by role, `user` unless given), or messages (a conversation: each "
            "message's speaker, role, and text, content), or both (text is stored last). "
            "Without session, the messages go into the session of the day, `mcp-YYYY-MM-DD` "
            "(UTC); a session without timestamp or date_str, and so each message without its "
            "own timestamp, is timed now (UTC). A message given a turn_id already stored "
            "replaces that message; otherwise each call adds.",
            _remember,
            Hints(read_only=False, destructive=False, idempotent=False),
            output={
                "ids": {"type": "array", "items": _TEXT, "description": "the messages' ids"},
                "session_id": {**_TEXT, "description": "the session they were stored in"},
            },
            typed={
                "messages": Typed("Message", many=True),
                "session": Typed(
                    "Session", drop={"messages": "is not taken here: give them in messages"}
                ),
            },
            plain={"text": {"type": "string", "minLength": 1}, "role": {**_TEXT, "minLength": 1}},
            descriptions={
                "text": "what to remember, in plain words: stored as one message",
                "role": "who said text (default: user)",
                "messages": "messages of a conversation, in the order they were said",
                "session": "the session they were said in (default: the day's, timed now)",
            },
            rules=_remember_problems,
            complete=_complete_remember,
        ),
        Tool(
            "recall",
            "Look up what memory holds about a question or topic. Returns context ready to "
            "read (one remembered message a line, with its date and speaker) and the matching "
            "messages with their ids, best first. Narrow it with filter (session_ids, roles, "
            "after/before as RFC 3339 times, metadata).",
            _recall,
            Hints(read_only=True, destructive=False, idempotent=True),
            output={
                "context": {**_TEXT, "description": "the remembered messages, one a line"},
                "hits": {"type": "array", "items": message_schema(pb.Hit.DESCRIPTOR)},
            },
            request=pb.RetrieveRequest,
            plain=fields_schema(pb.RetrieveRequest.DESCRIPTOR, _RECALL),
            required=("query",),
            descriptions={
                "query": "what to recall, in words",
                "limit": f"at most this many messages (1 to 1000; default {DEFAULT_LIMIT})",
                "filter": "only messages matching every criterion given",
                "max_context_tokens": _BUDGET,
            },
        ),
        Tool(
            "forget",
            "Delete remembered messages: those whose ids are given (as recall returns them), "
            "and/or those matching a filter; to forget a whole session, give "
            "filter.session_ids. Naming nothing is an error: it never forgets everything.",
            _forget,
            Hints(read_only=False, destructive=True, idempotent=True),
            output={"deleted": {**_COUNT, "description": "how many messages were forgotten"}},
            request=pb.DeleteRequest,
            plain=fields_schema(pb.DeleteRequest.DESCRIPTOR, _FORGET),
            descriptions={
                "ids": "ids of the messages to forget",
                "filter": "forget only messages matching every criterion given",
            },
        ),
        Tool(
            "record_episode",
            "Record what an agent did on a task (the actions taken, the errors met, the "
            "outcome), so that find_episodes shows it for similar tasks. Without id, one is "
            "made (ep-YYYY-MM-DD-xxxxxxxx, UTC); without timestamp: now. An id recorded again "
            "is replaced.",
            _record_episode,
            Hints(read_only=False, destructive=False, idempotent=False),
            output={
                "id": _TEXT,
                "timestamp": {**_TEXT, "format": "date-time"},
            },
            typed={
                "episode": Typed(
                    "EpisodeTrace",
                    drop={"access_count": _KEPT_BY_THE_STORE, "last_accessed": _KEPT_BY_THE_STORE},
                    optional=("id", "timestamp"),
                )
            },
            required=("episode",),
            complete=_complete_episode,
        ),
        Tool(
            "find_episodes",
            "Find recorded episodes of tasks like the one given, best first, with context "
            "summarising what was done and what went wrong, to learn from before acting. "
            "Changes no episode, but counts each returned one as retrieved (access_count).",
            _find_episodes,
            Hints(read_only=True, destructive=False, idempotent=False),
            output={
                "context": _TEXT,
                "hits": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "episode": inline("EpisodeTrace", terse=True),
                            "score": {"type": "number"},
                        },
                        "required": ["episode", "score"],
                        "additionalProperties": False,
                    },
                },
            },
            typed={"task": Typed("TaskContext")},
            request=pb.SearchEpisodesRequest,
            plain=fields_schema(pb.SearchEpisodesRequest.DESCRIPTOR, _FIND),
            required=("task",),
            descriptions={
                "task": "the task at hand",
                "query": "words to match besides the task (optional)",
                "limit": "at most this many episodes (0 or absent: the store's default)",
                "max_context_tokens": _BUDGET,
            },
        ),
    )
    return {tool.name: tool for tool in tools}
