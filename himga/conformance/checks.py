"""The conformance kit's checks: what a check is, the registry they join in the order they
run, and the requests they share (the checks themselves are in `required`, `capabilities`,
`api_required` and `api_capabilities`).

Required checks are the contract every MemoryService keeps, a memory that stores nothing
included: the seed's five contracts on the wire (an empty query answers; reset forgets; reset
leaves the namespace usable; namespaces are isolated; retrieve answers a string), batch
atomicity, the error codes of malformed and oversized requests, health, and the promises of the
whole memory API that hold for any memory (ids, deletes, filters, budgets, page tokens).
Capabilities are what only a storing memory can show, and having a request-size limit at all:
the contract says that a request over the server's limit is RESOURCE_EXHAUSTED, but leaves the
limit (and whether there is one under the kit's request) to the deployment, so only the code is
required. Each check works in namespaces of its own, so the kit can run against a shared server.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import grpc
from himga_proto.memory.v1 import memory_pb2 as pb

from himga.conformance.wire import (
    GRPC,
    HTTP,
    CheckFailed,
    Wire,
    code_of,
)

Kind = Literal["required", "capability", "episodes"]
KINDS: tuple[Kind, ...] = ("required", "capability", "episodes")
"""The kinds in the order the table shows them. `episodes` checks are EpisodeService's
contract: required of a server that offers the service, shown as not offered (and not held
against it) when the server answers UNIMPLEMENTED."""
NewNamespace = Callable[[], str]

INVALID = grpc.StatusCode.INVALID_ARGUMENT
MAX_LIMIT = 1000
"""The most hits a Retrieve may ask for, as the proto documents it."""
DEFAULT_LIMIT = 10
"""The hits a Retrieve with limit 0 gets, as the proto documents it."""
OVERSIZED_BYTES = 20 * 1024 * 1024
"""The size of the request the two size checks send: over gRPC's usual 4 MiB default and the
reference server's 16 MiB."""


@dataclass(frozen=True, slots=True)
class Check:
    """One behaviour of the contract: its name, its kind, what it asserts, and how."""

    name: str
    kind: Kind
    description: str
    run: Callable[[Wire, NewNamespace], None]
    transports: tuple[str, ...] = (GRPC, HTTP)
    """The transports whose promise it is (health: the gRPC port's only)."""


@dataclass(frozen=True, slots=True)
class CheckResult:
    """How a server fared on one check; `detail` says what was seen when it failed, or why a
    check that passed held nothing (its behaviour could not be brought about: NotExercised).
    `offered` is False when the server does not offer the check's service at all; `left` says
    why the namespaces the check wrote could not be deleted afterwards ("" when they were)."""

    check: Check
    passed: bool
    detail: str
    offered: bool = True
    left: str = ""


CHECKS: list[Check] = []


def check(
    name: str, kind: Kind, description: str, transports: tuple[str, ...] = (GRPC, HTTP)
) -> Callable[[Callable[[Wire, NewNamespace], None]], Callable[[Wire, NewNamespace], None]]:
    def register(
        run: Callable[[Wire, NewNamespace], None],
    ) -> Callable[[Wire, NewNamespace], None]:
        CHECKS.append(Check(name, kind, description, run, transports))
        # Required checks run first, then capabilities, then episodes, each kind in the order
        # it was defined, whichever module registered first (a stable sort).
        CHECKS.sort(key=lambda known: KINDS.index(known.kind))
        return run

    return register


def text_message(content: str, role: str = "user", turn_id: str | None = None) -> pb.Message:
    return pb.Message(role=role, content=content, turn_id=turn_id)


def said(word: str) -> pb.Message:
    """A message whose only distinctive word is `word`."""
    return text_message(f"I keep thinking about {word} these days.")


def batch_item(message: pb.Message, session: str = "s1") -> pb.IngestItem:
    return pb.IngestItem(message=message, session=pb.Session(session_id=session))


def find_hit(wire: Wire, namespace: str, word: str, turn_id: str) -> pb.Hit:
    """The hit of `turn_id` in the answer to `word`; fails unless it is there and the context
    holds the word."""
    answer = wire.retrieve(namespace, word)
    for hit in answer.hits:
        if hit.turn_id == turn_id:
            if word not in answer.context:
                raise CheckFailed(f"{word!r}: a hit, but the context does not hold the word")
            return hit
    found = [hit.turn_id for hit in answer.hits]
    raise CheckFailed(f"{word!r}: turn {turn_id!r} is not among the hits {found}")


def send_oversized(wire: Wire, namespace: str) -> grpc.StatusCode | None:
    """Ingest an oversized message: the status code it gets, None when it is accepted (and
    then the namespace is reset, so that the server keeps none of it)."""
    try:
        wire.ingest(namespace, text_message("x" * OVERSIZED_BYTES))
    except grpc.RpcError as error:
        return code_of(error) or grpc.StatusCode.UNKNOWN
    wire.reset(namespace)
    return None
