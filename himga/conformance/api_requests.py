"""What the checks of the whole memory API share: messages with times, sessions and metadata,
the filters that select some of them, and calls that may be refused as UNSUPPORTED.
"""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import grpc
from google.protobuf.timestamp_pb2 import Timestamp
from himga_proto.memory.v1 import memory_pb2 as pb

from himga.conformance.wire import CheckFailed, Wire, unsupported

T0 = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)
R = TypeVar("R")


def at(hours: int, minutes: int = 0) -> Timestamp:
    """The instant `hours` and `minutes` after T0."""
    moment = Timestamp()
    moment.FromDatetime(T0 + timedelta(hours=hours, minutes=minutes))
    return moment


def item(
    content: str,
    turn_id: str,
    session: str = "s1",
    role: str = "Ada",
    hours: int | None = None,
    metadata: dict[str, str] | None = None,
) -> pb.IngestItem:
    """A batch item: a message of `turn_id` in a session, at T0 + `hours` when given."""
    message = pb.Message(role=role, content=content, turn_id=turn_id, metadata=metadata)
    if hours is not None:
        message.timestamp.CopyFrom(at(hours))
    return pb.IngestItem(message=message, session=pb.Session(session_id=session))


def list_all(
    wire: Wire, namespace: str, page_size: int = 100, filter: pb.MessageFilter | None = None
) -> list[pb.StoredMessage]:
    """Every message a listing gives, page after page."""
    found: list[pb.StoredMessage] = []
    token = ""
    for _ in range(1000):
        page = wire.list_page(namespace, page_size, token, filter)
        if len(page.messages) > page_size:
            raise CheckFailed(f"a page of {len(page.messages)} messages, page_size {page_size}")
        found += page.messages
        token = page.next_page_token
        if not token:
            return found
    raise CheckFailed("a listing that never ends (1000 pages)")


def shown(wire: Wire, namespace: str, word: str) -> set[str]:
    """The ids of the messages a namespace shows: its hits for `word` (up to 100) and what it
    lists (nothing when listings are refused as UNSUPPORTED)."""
    found = {hit.turn_id for hit in wire.retrieve(namespace, word, 100).hits}
    listed = unless_unsupported(lambda: list_all(wire, namespace)) or []
    return found | {stored.message.turn_id for stored in listed}


def unless_unsupported(call: Callable[[], R]) -> R | None:
    """The answer of `call`, or None when the server refused it as UNSUPPORTED."""
    try:
        return call()
    except grpc.RpcError as error:
        if unsupported(error):
            return None
        raise


# Six messages, each holding the same marker: two sessions, two speakers, two users, an hour
# apart. Each filter below selects some; `FILTERED` says which.
def filtered_items(word: str) -> list[pb.IngestItem]:
    return [
        item(
            f"{word} number {i} {'kayak' if i % 2 else 'pottery'}",
            f"F{i}",
            session=f"s{i % 2 + 1}",
            role=["Ada", "Bo", "Bo"][i % 3],
            hours=i,
            metadata={"user": f"u{i // 3 + 1}"},
        )
        for i in range(6)
    ]


FILTERED: list[tuple[pb.MessageFilter, set[str]]] = [
    (pb.MessageFilter(session_ids=["s2"]), {"F1", "F3", "F5"}),
    (pb.MessageFilter(roles=["Ada"]), {"F0", "F3"}),
    (pb.MessageFilter(metadata={"user": "u2"}), {"F3", "F4", "F5"}),
    (pb.MessageFilter(after=at(2), before=at(4)), {"F2", "F3"}),
    (pb.MessageFilter(session_ids=["s1"], roles=["Bo"], after=at(1)), {"F2", "F4"}),
]


def describe(chosen: pb.MessageFilter) -> str:
    parts = [f"session_ids={list(chosen.session_ids)}"] if chosen.session_ids else []
    parts += [f"roles={list(chosen.roles)}"] if chosen.roles else []
    parts += [f"metadata={dict(chosen.metadata)}"] if chosen.metadata else []
    for name in ("after", "before"):
        if chosen.HasField(name):
            parts.append(f"{name}={getattr(chosen, name).ToJsonString()}")
    return "(" + ", ".join(parts) + ")"
