"""A server over a small storing memory, so service tests can see what was (not) stored."""

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.data.conversation import Message, Session, optional_text
from himga.kinds import Keeps, Kind, NoOptions
from himga.memory import registry
from himga.memory.base import DEFAULT_LIMIT, BaseMemory, Hit
from himga.service import create_server

LISTING = "test-listing"
FAILING = "test-failing"


class ListMemory(BaseMemory):
    """Keeps every message in a list; a hit is a message whose content contains the query."""

    def __init__(self) -> None:
        self.items: list[tuple[Message, Session]] = []

    @classmethod
    def for_namespace(
        cls, namespace: str, data_dir: Path | None, options: NoOptions
    ) -> "ListMemory":
        return cls()

    def ingest(self, message: Message, session: Session) -> None:
        self.items.append((message, session))

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[Hit]:
        if not query:
            return []
        return [
            Hit(
                turn_id=optional_text(m.turn_id),
                session_id=s.session_id,
                role=m.role,
                content=m.content,
                date_str=optional_text(s.date_str),
                score=1.0,
            )
            for m, s in self.items
            if query in m.content
        ][:limit]

    def retrieve(self, query: str) -> str:
        return "\n".join(f"{h.role}: {h.content}" for h in self.search(query))

    def reset(self) -> None:
        self.items.clear()


class FailingMemory(ListMemory):
    """Breaks on every ingest, as a memory with a bug would."""

    def ingest(self, message: Message, session: Session) -> None:
        raise RuntimeError("disk on fire at /secret/path")


@pytest.fixture(scope="session")
def listing_server() -> Iterator[str]:
    """The target of a server whose default memory is ListMemory (FailingMemory on request)."""
    registry.register(
        LISTING, Kind(__name__, "ListMemory.for_namespace", Keeps.PROCESS, shared=False)
    )
    registry.register(
        FAILING, Kind(__name__, "FailingMemory.for_namespace", Keeps.PROCESS, shared=False)
    )
    server, port = create_server("127.0.0.1:0", memory=LISTING)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(None)
        registry.unregister(LISTING)
        registry.unregister(FAILING)


@pytest.fixture(scope="session")
def stub(listing_server: str) -> Iterator[memory_pb2_grpc.MemoryServiceStub]:
    """The generated stub, connected to the listing server."""
    with grpc.insecure_channel(listing_server) as channel:
        yield memory_pb2_grpc.MemoryServiceStub(channel)


def ingest_request(namespace: str, content: str, **overrides: object) -> pb.IngestRequest:
    """A valid Ingest of `content` (said by Caroline in session s1), or with `overrides`."""
    fields: dict[str, object] = {
        "namespace": namespace,
        "message": pb.Message(role="Caroline", content=content, turn_id="D1:1"),
        "session": pb.Session(session_id="s1", date_str="1:56 pm on 8 May, 2023"),
    }
    fields.update(overrides)
    return pb.IngestRequest(**fields)  # type: ignore[arg-type]
