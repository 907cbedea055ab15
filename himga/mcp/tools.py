"""The tools: their names and descriptions for a model, their input schemas (the shipped JSON
Schemas for the records, the proto's request descriptors for the rest), the checking of a call
against them (every problem, each naming its field), and what each does with the stores."""

import builtins
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message as ProtoMessage
from himga_proto.memory.v1 import memory_pb2 as pb
from jsonschema import Draft202012Validator

from himga import validation
from himga.data.conversation import Message, Session
from himga.mcp.proto_schema import fields_schema
from himga.mcp.stores import Stores
from himga.memory.base import DEFAULT_LIMIT
from himga.memory.filters import MessageFilter
from himga.records import EpisodeTrace, TaskContext
from himga.service import convert

Answer = tuple[str, dict[str, Any]]
"""What a tool gives back: text for the model, and the same as structured content."""


@dataclass(frozen=True, slots=True)
class Typed:
    """An argument that is a shipped type (`many`: a non-empty list of them)."""

    type_name: str
    many: bool = False

    def schema(self) -> dict[str, Any]:
        one = {"$ref": validation.schema_id(self.type_name)}
        return {"type": "array", "items": one, "minItems": 1} if self.many else one


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    run: Callable[[Stores, dict[str, Any]], Answer]
    typed: Mapping[str, Typed] = field(default_factory=dict)
    plain: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    descriptions: Mapping[str, str] = field(default_factory=dict)

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
            # Every shipped schema under its $id: the `$ref`s above, and theirs, resolve here.
            "$defs": {
                validation.schema_id(name): validation.schema_for(name)
                for name in validation.type_names()
            },
        }

    def problems(self, arguments: Mapping[str, Any]) -> builtins.list[str]:
        """Every problem of a call, as `$.field: reason`; none for a good one."""
        found = [f"$.{name}: is required" for name in self.required if name not in arguments]
        known = {*self.typed, *self.plain}
        found += [
            f"$.{name}: is not an argument of {self.name} (allowed: {', '.join(sorted(known))})"
            for name in arguments
            if name not in known
        ]
        for name, value in arguments.items():
            if name in self.typed:
                found += _typed_problems(name, self.typed[name], value)
            elif name in self.plain:
                checker = Draft202012Validator(
                    self.plain[name], format_checker=validation.format_checker()
                )
                for error in checker.iter_errors(value):
                    path = validation.json_path([name, *error.absolute_path])
                    found.append(f"{path}: {error.message}")
        return found


def _typed_problems(name: str, typed: Typed, value: Any) -> builtins.list[str]:
    if not typed.many:
        items: builtins.list[tuple[builtins.list[str | int], Any]] = [([name], value)]
    elif not isinstance(value, builtins.list) or not value:
        return [f"$.{name}: must be a non-empty list of {typed.type_name}"]
    else:
        items = [([name, i], item) for i, item in enumerate(value)]
    found = []
    for where, document in items:
        for error in validation.validate(document, typed.type_name):
            found.append(f"{validation.json_path(where)}{error.path[1:]}: {error.reason}")
    return found


def _request(
    proto: type[ProtoMessage], arguments: Mapping[str, Any], names: tuple[str, ...]
) -> Any:
    """The proto request the plain arguments make, read as ProtoJSON."""
    return json_format.ParseDict({n: arguments[n] for n in names if n in arguments}, proto())


def _filter(request: Any) -> MessageFilter | None:
    return convert.filter_from_proto(request.filter) if request.HasField("filter") else None


def _hit(hit: Any) -> dict[str, Any]:
    return json_format.MessageToDict(convert.hit_to_proto(hit), preserving_proto_field_name=True)


# remember


def _remember(stores: Stores, arguments: dict[str, Any]) -> Answer:
    session = Session.model_validate({**arguments["session"], "messages": []})
    items = [(Message.model_validate(m), session) for m in arguments["messages"]]
    ids = stores.memory.store(items)
    return f"remembered {len(ids)} message(s): {', '.join(ids)}", {"ids": ids}


# recall

_RECALL = ("query", "limit", "filter", "max_context_tokens")


def _recall(stores: Stores, arguments: dict[str, Any]) -> Answer:
    request = _request(pb.RetrieveRequest, arguments, _RECALL)
    context, hits = stores.memory.recall(
        request.query,
        request.limit or DEFAULT_LIMIT,
        filter=_filter(request),
        max_context_tokens=request.max_context_tokens,
    )
    return context or "(nothing remembered about this)", {
        "context": context,
        "hits": [_hit(hit) for hit in hits],
    }


# forget

_FORGET = ("ids", "filter")


def _forget(stores: Stores, arguments: dict[str, Any]) -> Answer:
    request = _request(pb.DeleteRequest, arguments, _FORGET)
    deleted = stores.memory.delete(builtins.list(request.ids), filter=_filter(request))
    return f"forgot {deleted} message(s)", {"deleted": deleted}


# episodes

_FIND = ("query", "limit", "max_context_tokens")


def _record_episode(stores: Stores, arguments: dict[str, Any]) -> Answer:
    episode = EpisodeTrace.from_dict(arguments["episode"])
    stores.episodes.record(episode)
    return f"recorded episode {episode.id}", {"id": episode.id}


def _find_episodes(stores: Stores, arguments: dict[str, Any]) -> Answer:
    request = _request(pb.SearchEpisodesRequest, arguments, _FIND)
    found = stores.episodes.search(
        TaskContext.from_dict(arguments["task"]),
        request.query,
        request.limit,
        request.max_context_tokens,
    )
    hits = [{"episode": hit.episode.to_dict(), "score": hit.score} for hit in found.hits]
    return found.context or "(no similar episode)", {"context": found.context, "hits": hits}


_BUDGET = "at most this many tokens of context (0 or absent: no budget)"

TOOLS = {
    tool.name: tool
    for tool in (
        Tool(
            "remember",
            "Store one or more messages of a conversation in long-term memory, so that later "
            "calls to recall find them. Give each message's speaker (role) and text (content), "
            "and the session they were said in (session_id, and when: date_str or timestamp).",
            _remember,
            typed={"messages": Typed("Message", many=True), "session": Typed("Session")},
            required=("messages", "session"),
            descriptions={
                "messages": "the messages, in the order they were said",
                "session": "the session they were said in (its own messages list is ignored)",
            },
        ),
        Tool(
            "recall",
            "Look up what memory holds about a question or topic. Returns context ready to "
            "read (one remembered message a line, with its date and speaker) and the matching "
            "messages with their ids, best first. Narrow it with filter (session_ids, roles, "
            "after/before as RFC 3339 times, metadata).",
            _recall,
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
            plain=fields_schema(pb.DeleteRequest.DESCRIPTOR, _FORGET),
            descriptions={
                "ids": "ids of the messages to forget",
                "filter": "forget only messages matching every criterion given",
            },
        ),
        Tool(
            "record_episode",
            "Record what an agent did on a task (an episode: the task, the actions taken, the "
            "errors met, the outcome), so that find_episodes can show it for similar tasks.",
            _record_episode,
            typed={"episode": Typed("EpisodeTrace")},
            required=("episode",),
        ),
        Tool(
            "find_episodes",
            "Find recorded episodes of tasks like the one given, best first, with context "
            "summarising what was done and what went wrong, to learn from before acting.",
            _find_episodes,
            typed={"task": Typed("TaskContext")},
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
}
