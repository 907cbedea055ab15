"""The capabilities: what only a storing memory can show (finding what was ingested, hit
fields, limits), and having a request-size limit at all."""

import math

import grpc
from himga_proto.memory.v1 import memory_pb2 as pb

from himga.conformance.checks import (
    DEFAULT_LIMIT,
    OVERSIZED_BYTES,
    NewNamespace,
    batch_item,
    check,
    find_hit,
    send_oversized,
    text_message,
)
from himga.conformance.wire import (
    CheckFailed,
    Wire,
    expect_absent,
    marker,
)


@check(
    "request-size-limit",
    "capability",
    f"a request of {OVERSIZED_BYTES >> 20} MiB gets RESOURCE_EXHAUSTED: the server has a limit",
)
def _request_size_limit(wire: Wire, new_namespace: NewNamespace) -> None:
    code = send_oversized(wire, new_namespace())
    if code is None:
        raise CheckFailed("accepted: the server's limit is higher, or it has none")
    if code != grpc.StatusCode.RESOURCE_EXHAUSTED:
        raise CheckFailed(f"got {code.name}, want RESOURCE_EXHAUSTED")


@check(
    "finds-ingested",
    "capability",
    "IngestBatch stores every item, and each is retrieved by its own words",
)
def _finds_ingested(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    words = [marker() for _ in range(3)]
    items = [
        batch_item(text_message(f"Today I learnt about {w}.", turn_id=f"D1:{i}"))
        for i, w in enumerate(words, 1)
    ]
    answer = wire.memory.IngestBatch(
        pb.IngestBatchRequest(namespace=namespace, items=items), timeout=wire.timeout
    )
    if answer.ingested != len(items):
        raise CheckFailed(f"ingested {answer.ingested}, sent {len(items)}")
    for i, word in enumerate(words, 1):
        find_hit(wire, namespace, word, f"D1:{i}")


@check(
    "hit-fields",
    "capability",
    "a hit carries the turn_id, session_id, role, content and date_str ingested, and a score",
)
def _hit_fields(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    word = marker()
    message = text_message(f"I went to the {word} support group yesterday.", "Caroline", "D1:3")
    session = pb.Session(session_id="session_1", date_str="1:56 pm on 8 May, 2023")
    wire.memory.Ingest(
        pb.IngestRequest(namespace=namespace, message=message, session=session),
        timeout=wire.timeout,
    )
    hit = find_hit(wire, namespace, word, "D1:3")
    want = (message.turn_id, session.session_id, message.role, message.content, session.date_str)
    got = (hit.turn_id, hit.session_id, hit.role, hit.content, hit.date_str)
    if got != want:
        raise CheckFailed(f"hit {got}, ingested {want}")
    if not math.isfinite(hit.score):
        raise CheckFailed(f"score {hit.score}")


@check(
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
        batch_item(text_message(f"{fillers[i % len(fillers)]}{word} number {i}", turn_id=f"D2:{i}"))
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


@check(
    "reset-then-new",
    "capability",
    "after Reset, a new message is found and the old one is not",
)
def _reset_then_new(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    old, new = marker(), marker()
    wire.ingest(namespace, text_message(f"first {old}", turn_id="old"))
    wire.reset(namespace)
    wire.ingest(namespace, text_message(f"then {new}", turn_id="new"))
    find_hit(wire, namespace, new, "new")
    expect_absent(wire.retrieve(namespace, old), old, "the message from before Reset")


@check(
    "isolation-keeps-data",
    "capability",
    "a namespace finds what it holds while another namespace is reset",
)
def _isolation_keeps_data(wire: Wire, new_namespace: NewNamespace) -> None:
    holder, other = new_namespace(), new_namespace()
    word = marker()
    wire.ingest(holder, text_message(f"mine: {word}", turn_id="mine"))
    wire.ingest(other, text_message(f"theirs: {marker()}", turn_id="theirs"))
    wire.reset(other)
    find_hit(wire, holder, word, "mine")
