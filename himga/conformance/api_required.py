"""The required checks of the whole memory API, which any memory keeps, one that stores nothing
included: every stored message's id is answered, and kept exact (ids that differ only past
a NUL stay two messages); a Delete that names nothing is refused and
deletes nothing; a deleted message never comes back; a filter is never ignored (no hit or
listed message outside it, nothing of an excluded message in the context, no message outside
it deleted, and a filtered Delete answers how many it deleted); a context keeps its
token budget (counted by himga.tokens); a page token the server never made is refused. A memory
may refuse a delete, a filter or a listing it cannot do with FAILED_PRECONDITION and reason
UNSUPPORTED: that keeps the contract, answering half of the request does not.
"""

import grpc
from himga_proto.memory.v1 import memory_pb2 as pb

from himga.conformance.api_requests import (
    FILTERED,
    describe,
    filtered_items,
    item,
    list_all,
    shown,
    unless_unsupported,
)
from himga.conformance.checks import INVALID, NewNamespace, check, said, text_message
from himga.conformance.wire import CheckFailed, Wire, code_of, expect_error, marker
from himga.tokens import count_tokens


@check(
    "ids-answered",
    "required",
    "Ingest answers the message's id (its turn_id, else one the server makes); IngestBatch "
    "the id of each item, in order",
)
def _ids_answered(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    session = pb.Session(session_id="s1")
    given = wire.memory.Ingest(
        pb.IngestRequest(namespace=namespace, message=said(marker()), session=session),
        timeout=wire.timeout,
    )
    named = pb.IngestRequest(
        namespace=namespace, message=text_message(marker(), turn_id="D1:1"), session=session
    )
    if (got := wire.memory.Ingest(named, timeout=wire.timeout).id) != "D1:1":
        raise CheckFailed(f"Ingest of turn D1:1 answered id {got!r}")
    ids = wire.store(
        namespace,
        item(marker(), "D2:1"),
        pb.IngestItem(message=said(marker()), session=session),
        item(marker(), "D2:3"),
    )
    if len(ids) != 3 or ids[0] != "D2:1" or ids[2] != "D2:3":
        raise CheckFailed(f"IngestBatch of D2:1, (none), D2:3 answered ids {ids}")
    made = {given.id, ids[1]}
    if "" in made or len(made) != 2:
        raise CheckFailed(f"the ids made for messages without a turn_id: {sorted(made)}")


@check(
    "delete-names-something",
    "required",
    "a Delete naming neither ids nor a filter is INVALID_ARGUMENT naming ids, and deletes nothing",
)
def _delete_names_something(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    word = marker()
    wire.store(namespace, item(f"I keep {word} here", "D1:1"))
    before = [hit.turn_id for hit in wire.retrieve(namespace, word).hits]
    expect_error(lambda: wire.delete(namespace), INVALID, "ids")
    expect_error(lambda: wire.delete(namespace, filter=pb.MessageFilter()), INVALID, "ids")
    after = [hit.turn_id for hit in wire.retrieve(namespace, word).hits]
    if after != before:
        raise CheckFailed(f"hits {before} before the refused Deletes, {after} after")


@check(
    "deleted-never-returns",
    "required",
    "a message deleted by id (or refused as UNSUPPORTED) is never a hit, in a context or listed "
    "again; deleting it again deletes 0",
)
def _deleted_never_returns(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    words = [marker() for _ in range(3)]
    wire.store(namespace, *(item(f"Today: {w}.", f"D1:{i}") for i, w in enumerate(words)))
    deleted = unless_unsupported(lambda: wire.delete(namespace, ("D1:1", "never-1")))
    if deleted is None:
        return
    if deleted > 1:
        raise CheckFailed(f"deleting one stored id and one unknown id deleted {deleted}")
    answer = wire.retrieve(namespace, words[1], limit=100)
    if any(hit.turn_id == "D1:1" for hit in answer.hits) or words[1] in answer.context:
        raise CheckFailed("the deleted message was retrieved")
    listed = unless_unsupported(lambda: list_all(wire, namespace)) or []
    if any(m.message.turn_id == "D1:1" for m in listed):
        raise CheckFailed("the deleted message was listed")
    if (again := wire.delete(namespace, ("D1:1",))) != 0:
        raise CheckFailed(f"deleting the deleted message again deleted {again}")


@check(
    "ids-exact",
    "required",
    "ids that differ only past a NUL (U+0000) name two messages: deleting one leaves the other "
    "(or an id holding NUL is refused as INVALID_ARGUMENT)",
)
def _ids_exact(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    kept, gone = marker(), marker()
    wire.store(namespace, item(f"Today: {kept}.", "N1"))
    try:
        wire.store(namespace, item(f"Today: {gone}.", "N1\x00x"))
    except grpc.RpcError as error:
        if code_of(error) == INVALID:
            return  # a store that cannot hold NUL (PostgreSQL's text) refuses it
        raise
    found = "N1" in {hit.turn_id for hit in wire.retrieve(namespace, kept).hits}
    deleted = unless_unsupported(lambda: wire.delete(namespace, ("N1\x00x",)))
    if deleted is None:
        return
    if found and "N1" not in {hit.turn_id for hit in wire.retrieve(namespace, kept).hits}:
        raise CheckFailed("deleting id 'N1\\x00x' deleted the message of id 'N1'")
    if any(hit.turn_id == "N1\x00x" for hit in wire.retrieve(namespace, gone, limit=100).hits):
        raise CheckFailed("the deleted message of id 'N1\\x00x' was retrieved")


@check(
    "filter-never-ignored",
    "required",
    "with a filter (sessions, roles, time, metadata) no hit, context line or listed message is "
    "outside it, and a Delete (of ids too: those inside it) deletes nothing outside it and "
    "answers how many it deleted (or the filter is refused as UNSUPPORTED, deleting nothing)",
)
def _filter_never_ignored(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    word = marker()
    items = filtered_items(word)
    wire.store(namespace, *items)
    contents = {item.message.turn_id: item.message.content for item in items}
    for chosen, allowed in FILTERED:
        _judge_filter(wire, namespace, word, chosen, allowed, contents)
    for chosen, allowed in FILTERED:
        _judge_filtered_delete(wire, new_namespace(), chosen, allowed)
    chosen, allowed = FILTERED[0]
    _judge_filtered_delete(wire, new_namespace(), chosen, allowed, ("F0", "F1", "F2"))


def _judge_filter(
    wire: Wire,
    namespace: str,
    word: str,
    chosen: pb.MessageFilter,
    allowed: set[str],
    contents: dict[str, str],
) -> None:
    """Fail if a Retrieve or a listing with `chosen` gives anything outside `allowed`."""
    what = f"filter {describe(chosen)}"
    answer = unless_unsupported(lambda: wire.retrieve(namespace, word, 100, chosen))
    if answer is not None:
        if outside := [hit.turn_id for hit in answer.hits if hit.turn_id not in allowed]:
            raise CheckFailed(f"{what}: hits {outside} are outside it")
        excluded = [turn_id for turn_id in contents if turn_id not in allowed]
        if leaked := [t for t in excluded if contents[t] in answer.context]:
            raise CheckFailed(f"{what}: the context holds {leaked}, outside it")
    listed = unless_unsupported(lambda: list_all(wire, namespace, 2, chosen)) or []
    if outside := [m.message.turn_id for m in listed if m.message.turn_id not in allowed]:
        raise CheckFailed(f"{what}: ListMessages gave {outside}, outside it")


def _judge_filtered_delete(
    wire: Wire,
    namespace: str,
    chosen: pb.MessageFilter,
    allowed: set[str],
    ids: tuple[str, ...] = (),
) -> None:
    """Fail if a Delete with `chosen` (and `ids`, when given) in a namespace of the six
    filtered messages deletes one outside what it names, or answers a count other than the
    messages it deleted (when the server showed them all before: else at most what it names)."""
    word = marker()
    wire.store(namespace, *filtered_items(word))
    named = allowed & set(ids) if ids else allowed
    what = f"Delete {describe(chosen)}" + (f" of ids {list(ids)}" if ids else "")
    before = shown(wire, namespace, word)
    count = unless_unsupported(lambda: wire.delete(namespace, ids, chosen))
    gone = before - shown(wire, namespace, word)
    if outside := sorted(gone - named):
        raise CheckFailed(f"{what}: {outside} are gone, outside it")
    if count is None:
        if gone:
            raise CheckFailed(f"{what} was refused as UNSUPPORTED, yet {sorted(gone)} are gone")
        return
    every = {item.message.turn_id for item in filtered_items(word)}
    if before == every and count != len(gone):
        raise CheckFailed(f"{what} answered {count} deleted; {sorted(gone)} are gone")
    if count > len(named):
        raise CheckFailed(f"{what} answered {count} deleted; {len(named)} stored messages match")


@check(
    "budget-kept",
    "required",
    "with max_context_tokens, the context holds at most that many tokens (one per run of ASCII "
    "letters and digits, one per other non-space character)",
)
def _budget_kept(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    word = marker()
    wire.store(
        namespace,
        *(item(f"{word}, said for the {i}th time: " + "so on " * i, f"B{i}") for i in range(8)),
    )
    for budget in (1, 3, 8, 40):
        context = wire.retrieve(namespace, word, max_context_tokens=budget).context
        if (tokens := count_tokens(context)) > budget:
            raise CheckFailed(f"max_context_tokens {budget}: a context of {tokens} tokens")


@check(
    "page-token-checked",
    "required",
    "ListMessages of a new namespace lists nothing, and a page_token the server never made is "
    "INVALID_ARGUMENT naming page_token (or listings are refused as UNSUPPORTED), in "
    "ListNamespaces too",
)
def _page_token_checked(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    expect_error(
        lambda: wire.memory.ListNamespaces(
            pb.ListNamespacesRequest(page_token="not-a-token"), timeout=wire.timeout
        ),
        INVALID,
        "page_token",
    )
    first = unless_unsupported(lambda: wire.list_page(namespace))
    if first is None:
        return
    if first.messages or first.next_page_token:
        raise CheckFailed("a namespace never used listed messages or a next page")
    expect_error(lambda: wire.list_page(namespace, page_token="not-a-token"), INVALID, "page_token")
