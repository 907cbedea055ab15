"""The checks of the conformance kit, in the order they run, and `run_checks`.

Required checks are the contract every MemoryService keeps, a memory that stores nothing
included: the seed's five contracts on the wire (an empty query answers; reset forgets; reset
leaves the namespace usable; namespaces are isolated; retrieve answers a string), batch
atomicity, the error codes of malformed and oversized requests, and health. Capabilities are
what only a storing memory can show, and having a request-size limit at all: the contract says
that a request over the server's limit is RESOURCE_EXHAUSTED, but leaves the limit (and whether
there is one under the kit's request) to the deployment, so only the code is required.
Each check works in namespaces of its own, so the kit can run against a shared server.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import grpc
from grpc_health.v1 import health_pb2
from himga_proto.memory.v1 import memory_pb2 as pb

from himga.conformance.wire import (
    CheckFailed,
    Wire,
    code_of,
    connect,
    expect_empty,
    expect_error,
    fresh_namespace,
    marker,
)

Kind = Literal["required", "capability"]
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


@dataclass(frozen=True, slots=True)
class CheckResult:
    """How a server fared on one check; `detail` says what was seen when it failed."""

    check: Check
    passed: bool
    detail: str


CHECKS: list[Check] = []


def _check(
    name: str, kind: Kind, description: str
) -> Callable[[Callable[[Wire, NewNamespace], None]], Callable[[Wire, NewNamespace], None]]:
    def register(
        run: Callable[[Wire, NewNamespace], None],
    ) -> Callable[[Wire, NewNamespace], None]:
        CHECKS.append(Check(name, kind, description, run))
        return run

    return register


def _message(content: str, role: str = "user", turn_id: str | None = None) -> pb.Message:
    return pb.Message(role=role, content=content, turn_id=turn_id)


def _said(word: str) -> pb.Message:
    """A message whose only distinctive word is `word`."""
    return _message(f"I keep thinking about {word} these days.")


def _item(message: pb.Message, session: str = "s1") -> pb.IngestItem:
    return pb.IngestItem(message=message, session=pb.Session(session_id=session))


def _find(wire: Wire, namespace: str, word: str, turn_id: str) -> pb.Hit:
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


# --- required: the seed's contracts on the wire -------------------------------------------


@_check("health", "required", "grpc.health.v1 Check('') answers SERVING")
def _health(wire: Wire, new_namespace: NewNamespace) -> None:
    answer: health_pb2.HealthCheckResponse = wire.health.Check(
        health_pb2.HealthCheckRequest(service=""), timeout=wire.timeout
    )
    if answer.status != health_pb2.HealthCheckResponse.SERVING:
        status = health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)
        raise CheckFailed(f"health status {status}")


@_check("empty-query", "required", "Retrieve with an empty query succeeds, with an empty answer")
def _empty_query(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    wire.ingest(namespace, _said(marker()))
    expect_empty(wire.retrieve(namespace, ""), "empty query")


@_check(
    "retrieve-answers",
    "required",
    "Retrieve answers a question with a context string and at most `limit` hits",
)
def _retrieve_answers(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    word = marker()
    wire.ingest(namespace, *(_said(word) for _ in range(3)))
    answer = wire.retrieve(namespace, f"What about {word}?", limit=1)
    if not isinstance(answer.context, str):
        raise CheckFailed(f"context is a {type(answer.context).__name__}")
    if len(answer.hits) > 1:
        raise CheckFailed(f"limit 1, got {len(answer.hits)} hits")


@_check(
    "unknown-namespace",
    "required",
    "a namespace never used answers Retrieve with nothing and accepts Reset",
)
def _unknown_namespace(wire: Wire, new_namespace: NewNamespace) -> None:
    expect_empty(wire.retrieve(new_namespace(), "anything at all"), "unknown namespace")
    wire.reset(new_namespace())


@_check("reset-forgets", "required", "after Reset, nothing ingested before is retrieved")
def _reset_forgets(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    word = marker()
    wire.ingest(namespace, _said(word), _said(word))
    wire.reset(namespace)
    expect_empty(wire.retrieve(namespace, word), "after Reset")


@_check(
    "reset-keeps-usable",
    "required",
    "after Reset, the namespace takes Ingest, IngestBatch and Retrieve again",
)
def _reset_keeps_usable(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    wire.ingest(namespace, _said(marker()))
    wire.reset(namespace)
    wire.reset(namespace)
    wire.ingest(namespace, _said(marker()))
    wire.memory.IngestBatch(
        pb.IngestBatchRequest(namespace=namespace, items=[_item(_said(marker()))]),
        timeout=wire.timeout,
    )
    wire.retrieve(namespace, "anything")


@_check(
    "namespaces-isolated",
    "required",
    "what one namespace holds is never retrieved from another",
)
def _namespaces_isolated(wire: Wire, new_namespace: NewNamespace) -> None:
    holder, other = new_namespace(), new_namespace()
    word = marker()
    wire.ingest(holder, _said(word))
    expect_empty(wire.retrieve(other, word), "another namespace")


# --- required: malformed requests -----------------------------------------------------------


@_check(
    "batch-all-or-nothing",
    "required",
    "a batch with one bad item is INVALID_ARGUMENT naming the item, and stores none of it",
)
def _batch_all_or_nothing(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    words = [marker() for _ in range(3)]
    items = [_item(_said(words[0])), _item(_said(words[1]))]
    items += [_item(_message(f"nobody said {marker()}", role="")), _item(_said(words[2]))]
    expect_error(
        lambda: wire.memory.IngestBatch(
            pb.IngestBatchRequest(namespace=namespace, items=items), timeout=wire.timeout
        ),
        INVALID,
        "items[2].message.role",
    )
    for word in words:
        expect_empty(wire.retrieve(namespace, word), "after the rejected batch")


@_check(
    "error-empty-role",
    "required",
    "Ingest of a message with an empty role is INVALID_ARGUMENT naming message.role; "
    "nothing is stored",
)
def _error_empty_role(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    word = marker()
    expect_error(
        lambda: wire.ingest(namespace, _message(f"who said {word}?", role="")),
        INVALID,
        "message.role",
    )
    expect_empty(wire.retrieve(namespace, word), "after the rejected Ingest")


def _every_call(wire: Wire, namespace: str, memory: str = "") -> dict[str, Callable[[], object]]:
    """One call of each method on `namespace`, naming `memory`; well-formed otherwise."""
    session = pb.Session(session_id="s1")
    message = _said("namespaces")
    return {
        "Ingest": lambda: wire.memory.Ingest(
            pb.IngestRequest(namespace=namespace, message=message, session=session, memory=memory),
            timeout=wire.timeout,
        ),
        "IngestBatch": lambda: wire.memory.IngestBatch(
            pb.IngestBatchRequest(namespace=namespace, items=[_item(message)], memory=memory),
            timeout=wire.timeout,
        ),
        "Retrieve": lambda: wire.memory.Retrieve(
            pb.RetrieveRequest(namespace=namespace, query="namespaces", memory=memory),
            timeout=wire.timeout,
        ),
        "Reset": lambda: wire.memory.Reset(
            pb.ResetRequest(namespace=namespace, memory=memory), timeout=wire.timeout
        ),
    }


def _namespace_rejected(wire: Wire, namespace: str) -> None:
    for method, call in _every_call(wire, namespace).items():
        try:
            expect_error(call, INVALID, "namespace")
        except CheckFailed as failure:
            raise CheckFailed(f"{method} with namespace {namespace!r}: {failure}") from None


@_check(
    "error-namespace-missing",
    "required",
    "every method with an empty namespace is INVALID_ARGUMENT naming namespace",
)
def _error_namespace_missing(wire: Wire, new_namespace: NewNamespace) -> None:
    _namespace_rejected(wire, "")


@_check(
    "error-namespace-invalid",
    "required",
    "every method with a namespace outside [A-Za-z0-9._:-]{1,128} is INVALID_ARGUMENT naming "
    "namespace",
)
def _error_namespace_invalid(wire: Wire, new_namespace: NewNamespace) -> None:
    for namespace in ("has spaces", "slash/ed", "é", "n" * 129):
        _namespace_rejected(wire, namespace)


@_check(
    "error-message-missing",
    "required",
    "Ingest, or a batch item, without a message is INVALID_ARGUMENT naming it",
)
def _error_message_missing(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    session = pb.Session(session_id="s1")
    expect_error(
        lambda: wire.memory.Ingest(
            pb.IngestRequest(namespace=namespace, session=session), timeout=wire.timeout
        ),
        INVALID,
        "message",
    )
    expect_error(
        lambda: wire.memory.IngestBatch(
            pb.IngestBatchRequest(namespace=namespace, items=[pb.IngestItem(session=session)]),
            timeout=wire.timeout,
        ),
        INVALID,
        "items[0].message",
    )


@_check(
    "error-session-missing",
    "required",
    "Ingest without a session, or with an empty session_id, is INVALID_ARGUMENT naming it",
)
def _error_session_missing(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    message = _said(marker())
    expect_error(
        lambda: wire.memory.Ingest(
            pb.IngestRequest(namespace=namespace, message=message), timeout=wire.timeout
        ),
        INVALID,
        "session",
    )
    expect_error(lambda: wire.ingest(namespace, message, session=""), INVALID, "session.session_id")


@_check(
    "error-limit",
    "required",
    f"Retrieve with a limit over {MAX_LIMIT} is INVALID_ARGUMENT naming limit",
)
def _error_limit(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    expect_error(
        lambda: wire.retrieve(namespace, "anything", limit=MAX_LIMIT + 1), INVALID, "limit"
    )


@_check(
    "error-memory-unknown",
    "required",
    "every method naming a memory the server does not know is INVALID_ARGUMENT naming memory",
)
def _error_memory_unknown(wire: Wire, new_namespace: NewNamespace) -> None:
    memory = f"no-such-memory-{marker()}"
    for method, call in _every_call(wire, new_namespace(), memory).items():
        try:
            expect_error(call, INVALID, "memory")
        except CheckFailed as failure:
            raise CheckFailed(f"{method} naming memory {memory!r}: {failure}") from None


@_check(
    "oversized-request",
    "required",
    f"a request of {OVERSIZED_BYTES >> 20} MiB is stored, or refused with RESOURCE_EXHAUSTED "
    "(nothing else)",
)
def _oversized_request(wire: Wire, new_namespace: NewNamespace) -> None:
    code = _send_oversized(wire, new_namespace())
    if code is not None and code != grpc.StatusCode.RESOURCE_EXHAUSTED:
        raise CheckFailed(f"got {code.name}, want RESOURCE_EXHAUSTED or success")


def _send_oversized(wire: Wire, namespace: str) -> grpc.StatusCode | None:
    """Ingest an oversized message: the status code it gets, None when it is accepted (and
    then the namespace is reset, so that the server keeps none of it)."""
    try:
        wire.ingest(namespace, _message("x" * OVERSIZED_BYTES))
    except grpc.RpcError as error:
        return code_of(error) or grpc.StatusCode.UNKNOWN
    wire.reset(namespace)
    return None


# --- capabilities ---------------------------------------------------------------------------


@_check(
    "request-size-limit",
    "capability",
    f"a request of {OVERSIZED_BYTES >> 20} MiB gets RESOURCE_EXHAUSTED: the server has a limit",
)
def _request_size_limit(wire: Wire, new_namespace: NewNamespace) -> None:
    code = _send_oversized(wire, new_namespace())
    if code is None:
        raise CheckFailed("accepted: the server's limit is higher, or it has none")
    if code != grpc.StatusCode.RESOURCE_EXHAUSTED:
        raise CheckFailed(f"got {code.name}, want RESOURCE_EXHAUSTED")


@_check(
    "finds-ingested",
    "capability",
    "IngestBatch stores every item, and each is retrieved by its own words",
)
def _finds_ingested(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    words = [marker() for _ in range(3)]
    items = [
        _item(_message(f"Today I learnt about {w}.", turn_id=f"D1:{i}"))
        for i, w in enumerate(words, 1)
    ]
    answer = wire.memory.IngestBatch(
        pb.IngestBatchRequest(namespace=namespace, items=items), timeout=wire.timeout
    )
    if answer.ingested != len(items):
        raise CheckFailed(f"ingested {answer.ingested}, sent {len(items)}")
    for i, word in enumerate(words, 1):
        _find(wire, namespace, word, f"D1:{i}")


@_check(
    "hit-fields",
    "capability",
    "a hit carries the turn_id, session_id, role, content and date_str ingested, and a score",
)
def _hit_fields(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    word = marker()
    message = _message(f"I went to the {word} support group yesterday.", "Caroline", "D1:3")
    session = pb.Session(session_id="session_1", date_str="1:56 pm on 8 May, 2023")
    wire.memory.Ingest(
        pb.IngestRequest(namespace=namespace, message=message, session=session),
        timeout=wire.timeout,
    )
    hit = _find(wire, namespace, word, "D1:3")
    want = (message.turn_id, session.session_id, message.role, message.content, session.date_str)
    got = (hit.turn_id, hit.session_id, hit.role, hit.content, hit.date_str)
    if got != want:
        raise CheckFailed(f"hit {got}, ingested {want}")
    if not math.isfinite(hit.score):
        raise CheckFailed(f"score {hit.score}")


@_check(
    "limit-honoured",
    "capability",
    f"with more matches than asked for, Retrieve gives exactly `limit` hits ({DEFAULT_LIMIT} "
    "for limit 0), best first",
)
def _limit_honoured(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    word = marker()
    fillers = ["", "really ", "truly, really ", "and yes "]
    items = [
        _item(_message(f"{fillers[i % len(fillers)]}{word} number {i}", turn_id=f"D2:{i}"))
        for i in range(DEFAULT_LIMIT + 2)
    ]
    wire.memory.IngestBatch(
        pb.IngestBatchRequest(namespace=namespace, items=items), timeout=wire.timeout
    )
    for limit, want in ((3, 3), (0, DEFAULT_LIMIT)):
        hits = wire.retrieve(namespace, word, limit=limit).hits
        if len(hits) != want:
            raise CheckFailed(
                f"limit {limit}: {len(hits)} hits of {len(items)} matches, want {want}"
            )
        scores = [hit.score for hit in hits]
        if scores != sorted(scores, reverse=True):
            raise CheckFailed(f"limit {limit}: hits not best first, scores {scores}")


@_check(
    "reset-then-new",
    "capability",
    "after Reset, a new message is found and the old one is not",
)
def _reset_then_new(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    old, new = marker(), marker()
    wire.ingest(namespace, _message(f"first {old}", turn_id="old"))
    wire.reset(namespace)
    wire.ingest(namespace, _message(f"then {new}", turn_id="new"))
    _find(wire, namespace, new, "new")
    expect_empty(wire.retrieve(namespace, old), "the message from before Reset")


@_check(
    "isolation-keeps-data",
    "capability",
    "a namespace finds what it holds while another namespace is reset",
)
def _isolation_keeps_data(wire: Wire, new_namespace: NewNamespace) -> None:
    holder, other = new_namespace(), new_namespace()
    word = marker()
    wire.ingest(holder, _message(f"mine: {word}", turn_id="mine"))
    wire.ingest(other, _message(f"theirs: {marker()}", turn_id="theirs"))
    wire.reset(other)
    _find(wire, holder, word, "mine")


# --- running --------------------------------------------------------------------------------


def run_check(wire: Wire, check: Check) -> CheckResult:
    """Run one check; any failed call or broken expectation is a failure, with what was seen."""
    try:
        check.run(wire, lambda: fresh_namespace(check.name))
    except CheckFailed as failure:
        return CheckResult(check, False, str(failure))
    except grpc.RpcError as error:
        code = code_of(error)
        details = error.details() if isinstance(error, grpc.Call) else str(error)
        seen = f"a call failed: {code.name if code else 'error'}: {details}"
        return CheckResult(check, False, seen)
    return CheckResult(check, True, "")


def run_checks(target: str, timeout: float = 10.0) -> list[CheckResult]:
    """Every check against the MemoryService at `target` (HOST:PORT), in order.
    ConnectionError when nothing answers there within `timeout` seconds."""
    with connect(target, timeout) as wire:
        return [run_check(wire, check) for check in CHECKS]
