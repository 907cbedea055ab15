"""The required checks: what every MemoryService must do, a memory that stores nothing
included (the seed's contracts on the wire, namespaces isolated in what they give and in what
forgetting one takes, batch atomicity, error codes, health)."""

from collections.abc import Callable

import grpc
from grpc_health.v1 import health_pb2
from himga_proto.memory.v1 import memory_pb2 as pb

from himga.conformance.api_requests import filtered_items, shown, unless_unsupported
from himga.conformance.checks import (
    INVALID,
    MAX_LIMIT,
    OVERSIZED_BYTES,
    NewNamespace,
    batch_item,
    check,
    said,
    send_oversized,
    text_message,
)
from himga.conformance.wire import (
    GRPC,
    CheckFailed,
    Wire,
    expect_absent,
    expect_empty,
    expect_error,
    marker,
)


@check("health", "required", "grpc.health.v1 Check('') answers SERVING", (GRPC,))
def _health(wire: Wire, new_namespace: NewNamespace) -> None:
    answer: health_pb2.HealthCheckResponse = wire.health.Check(
        health_pb2.HealthCheckRequest(service=""), timeout=wire.timeout
    )
    if answer.status != health_pb2.HealthCheckResponse.SERVING:
        status = health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)
        raise CheckFailed(f"health status {status}")


@check("empty-query", "required", "Retrieve with an empty query succeeds, with an empty answer")
def _empty_query(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    wire.ingest(namespace, said(marker()))
    expect_empty(wire.retrieve(namespace, ""), "empty query")


@check(
    "retrieve-answers",
    "required",
    "Retrieve answers a question with at most `limit` hits",
)
def _retrieve_answers(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    word = marker()
    wire.ingest(namespace, *(said(word) for _ in range(3)))
    answer = wire.retrieve(namespace, f"What about {word}?", limit=1)
    if len(answer.hits) > 1:
        raise CheckFailed(f"limit 1, got {len(answer.hits)} hits")


@check(
    "unknown-namespace",
    "required",
    "a namespace never used answers Retrieve with nothing and accepts Reset",
)
def _unknown_namespace(wire: Wire, new_namespace: NewNamespace) -> None:
    expect_empty(wire.retrieve(new_namespace(), "anything at all"), "unknown namespace")
    wire.reset(new_namespace())


@check("reset-forgets", "required", "after Reset, nothing ingested before is retrieved")
def _reset_forgets(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    word = marker()
    wire.ingest(namespace, said(word), said(word))
    wire.reset(namespace)
    expect_empty(wire.retrieve(namespace, word), "after Reset")


@check(
    "reset-keeps-usable",
    "required",
    "after Reset, the namespace takes Ingest, IngestBatch and Retrieve again",
)
def _reset_keeps_usable(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    wire.ingest(namespace, said(marker()))
    wire.reset(namespace)
    wire.reset(namespace)
    wire.ingest(namespace, said(marker()))
    wire.memory.IngestBatch(
        pb.IngestBatchRequest(namespace=namespace, items=[batch_item(said(marker()))]),
        timeout=wire.timeout,
    )
    wire.retrieve(namespace, "anything")


@check(
    "namespaces-isolated",
    "required",
    "what one namespace holds is never retrieved from another, and a Reset, a Delete (by ids, "
    "by a filter) or a DeleteNamespace of one leaves every message another shows",
)
def _namespaces_isolated(wire: Wire, new_namespace: NewNamespace) -> None:
    holder, other = new_namespace(), new_namespace()
    word = marker()
    wire.ingest(other, said(marker()))  # both exist: a server may answer one that does not at once
    wire.ingest(holder, said(word))
    expect_absent(wire.retrieve(other, word), word, "another namespace")
    wire.store(holder, *filtered_items(word))  # the same ids as the other namespace's
    kept = _held(wire, holder, word)
    for what, forget in _forgetting(wire, other).items():
        wire.store(other, *filtered_items(marker()))
        forget()
        if lost := sorted(kept - _held(wire, holder, word)):
            raise CheckFailed(f"{what} of another namespace: {lost} of this one are gone")


def _held(wire: Wire, namespace: str, word: str) -> set[str]:
    """What a namespace shows of the messages holding `word`: their ids (`shown`), and
    "the context" when its answer's context holds the word."""
    found = shown(wire, namespace, word)
    return found | ({"the context"} if word in wire.retrieve(namespace, word).context else set())


def _forgetting(wire: Wire, namespace: str) -> dict[str, Callable[[], object]]:
    """Each call that forgets something of `namespace`, by what it is (a Delete refused as
    UNSUPPORTED forgets nothing, and keeps the contract)."""
    return {
        "a Reset": lambda: wire.reset(namespace),
        "a Delete by ids": lambda: unless_unsupported(lambda: wire.delete(namespace, ("F0", "F1"))),
        "a Delete by a filter": lambda: unless_unsupported(
            lambda: wire.delete(namespace, filter=pb.MessageFilter(session_ids=["s1", "s2"]))
        ),
        "a DeleteNamespace": lambda: wire.memory.DeleteNamespace(
            pb.DeleteNamespaceRequest(namespace=namespace), timeout=wire.timeout
        ),
    }


# --- required: malformed requests -----------------------------------------------------------


@check(
    "batch-all-or-nothing",
    "required",
    "a batch with one bad item is INVALID_ARGUMENT naming the item, and stores none of it",
)
def _batch_all_or_nothing(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    words = [marker() for _ in range(3)]
    items = [batch_item(said(words[0])), batch_item(said(words[1]))]
    items += [
        batch_item(text_message(f"nobody said {marker()}", role="")),
        batch_item(said(words[2])),
    ]
    expect_error(
        lambda: wire.memory.IngestBatch(
            pb.IngestBatchRequest(namespace=namespace, items=items), timeout=wire.timeout
        ),
        INVALID,
        "items[2].message.role",
    )
    for word in words:
        expect_empty(wire.retrieve(namespace, word), "after the rejected batch")


@check(
    "error-info",
    "required",
    "a malformed request's status carries a google.rpc.ErrorInfo of domain himga.dev and "
    "reason INVALID_REQUEST",
)
def _error_info(wire: Wire, new_namespace: NewNamespace) -> None:
    expect_error(
        lambda: wire.ingest(new_namespace(), text_message("no speaker", role="")),
        INVALID,
        reason="INVALID_REQUEST",
    )


@check(
    "error-empty-role",
    "required",
    "Ingest of a message with an empty role is INVALID_ARGUMENT naming message.role; "
    "nothing is stored",
)
def _error_empty_role(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    word = marker()
    expect_error(
        lambda: wire.ingest(namespace, text_message(f"who said {word}?", role="")),
        INVALID,
        "message.role",
    )
    expect_empty(wire.retrieve(namespace, word), "after the rejected Ingest")


def _every_call(wire: Wire, namespace: str, memory: str = "") -> dict[str, Callable[[], object]]:
    """One call of each method on `namespace`, naming `memory`; well-formed otherwise."""
    session = pb.Session(session_id="s1")
    message = said("namespaces")
    return {
        "Ingest": lambda: wire.memory.Ingest(
            pb.IngestRequest(namespace=namespace, message=message, session=session, memory=memory),
            timeout=wire.timeout,
        ),
        "IngestBatch": lambda: wire.memory.IngestBatch(
            pb.IngestBatchRequest(namespace=namespace, items=[batch_item(message)], memory=memory),
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


@check(
    "error-namespace-missing",
    "required",
    "every method with an empty namespace is INVALID_ARGUMENT naming namespace",
)
def _error_namespace_missing(wire: Wire, new_namespace: NewNamespace) -> None:
    _namespace_rejected(wire, "")


@check(
    "error-namespace-invalid",
    "required",
    "every method with a namespace outside [A-Za-z0-9._:-]{1,128} is INVALID_ARGUMENT naming "
    "namespace",
)
def _error_namespace_invalid(wire: Wire, new_namespace: NewNamespace) -> None:
    for namespace in ("has spaces", "slash/ed", "é", "n" * 129):
        _namespace_rejected(wire, namespace)


@check(
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


@check(
    "error-session-missing",
    "required",
    "Ingest without a session, or with an empty session_id, is INVALID_ARGUMENT naming it",
)
def _error_session_missing(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    message = said(marker())
    expect_error(
        lambda: wire.memory.Ingest(
            pb.IngestRequest(namespace=namespace, message=message), timeout=wire.timeout
        ),
        INVALID,
        "session",
    )
    expect_error(lambda: wire.ingest(namespace, message, session=""), INVALID, "session.session_id")


@check(
    "error-limit",
    "required",
    f"Retrieve with a limit over {MAX_LIMIT} is INVALID_ARGUMENT naming limit",
)
def _error_limit(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    expect_error(
        lambda: wire.retrieve(namespace, "anything", limit=MAX_LIMIT + 1), INVALID, "limit"
    )


@check(
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


@check(
    "oversized-request",
    "required",
    f"a request of {OVERSIZED_BYTES >> 20} MiB is stored, or refused with RESOURCE_EXHAUSTED "
    "(nothing else)",
)
def _oversized_request(wire: Wire, new_namespace: NewNamespace) -> None:
    code = send_oversized(wire, new_namespace())
    if code is not None and code != grpc.StatusCode.RESOURCE_EXHAUSTED:
        raise CheckFailed(f"got {code.name}, want RESOURCE_EXHAUSTED or success")
