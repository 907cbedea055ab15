"""The checks of the whole memory API: ids and corrections, deletes, filters, budgets and
listings.

Required: every stored message's id is answered; a Delete that names nothing is refused and
deletes nothing; a deleted message never comes back; a filter is never ignored (no hit or listed
message outside it, nothing of an excluded message in the context); a context keeps its token
budget (counted by himga.tokens); a page token the server never made is refused. A memory may
refuse a delete, a filter or a listing it cannot do with FAILED_PRECONDITION and reason
UNSUPPORTED: that keeps the contract, answering half of the request does not. Capabilities are
what a storing memory shows by doing it: corrections in place, deletes by session and time that
stay in their namespace, filters that fill the limit, listings that give every message once
whatever happens between pages, and message times.
"""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import grpc
from google.protobuf.timestamp_pb2 import Timestamp
from himga_proto.memory.v1 import memory_pb2 as pb

from himga.conformance.checks import INVALID, NewNamespace, check, said, text_message
from himga.conformance.wire import CheckFailed, Wire, expect_error, marker, unsupported
from himga.tokens import count_tokens

T0 = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)
R = TypeVar("R")


def _at(hours: int, minutes: int = 0) -> Timestamp:
    moment = Timestamp()
    moment.FromDatetime(T0 + timedelta(hours=hours, minutes=minutes))
    return moment


def _item(
    content: str,
    turn_id: str,
    session: str = "s1",
    role: str = "Ada",
    hours: int | None = None,
    metadata: dict[str, str] | None = None,
) -> pb.IngestItem:
    message = pb.Message(role=role, content=content, turn_id=turn_id, metadata=metadata)
    if hours is not None:
        message.timestamp.CopyFrom(_at(hours))
    return pb.IngestItem(message=message, session=pb.Session(session_id=session))


def _listed(
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


def _unless_unsupported(call: Callable[[], R]) -> R | None:
    """The answer of `call`, or None when the server refused it as UNSUPPORTED."""
    try:
        return call()
    except grpc.RpcError as error:
        if unsupported(error):
            return None
        raise


# --- required ---------------------------------------------------------------------------


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
        _item(marker(), "D2:1"),
        pb.IngestItem(message=said(marker()), session=session),
        _item(marker(), "D2:3"),
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
    wire.store(namespace, _item(f"I keep {word} here", "D1:1"))
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
    wire.store(namespace, *(_item(f"Today: {w}.", f"D1:{i}") for i, w in enumerate(words)))
    deleted = _unless_unsupported(lambda: wire.delete(namespace, ("D1:1", "never-1")))
    if deleted is None:
        return
    if deleted > 1:
        raise CheckFailed(f"deleting one stored id and one unknown id deleted {deleted}")
    answer = wire.retrieve(namespace, words[1], limit=100)
    if any(hit.turn_id == "D1:1" for hit in answer.hits) or words[1] in answer.context:
        raise CheckFailed("the deleted message was retrieved")
    listed = _unless_unsupported(lambda: _listed(wire, namespace)) or []
    if any(m.message.turn_id == "D1:1" for m in listed):
        raise CheckFailed("the deleted message was listed")
    if (again := wire.delete(namespace, ("D1:1",))) != 0:
        raise CheckFailed(f"deleting the deleted message again deleted {again}")


# Six messages, each holding the same marker: two sessions, two speakers, two users, an hour
# apart. Each filter below selects some; `_FILTERED` says which.
def _filtered_items(word: str) -> list[pb.IngestItem]:
    return [
        _item(
            f"{word} number {i} {'kayak' if i % 2 else 'pottery'}",
            f"F{i}",
            session=f"s{i % 2 + 1}",
            role=["Ada", "Bo", "Bo"][i % 3],
            hours=i,
            metadata={"user": f"u{i // 3 + 1}"},
        )
        for i in range(6)
    ]


_FILTERED: list[tuple[pb.MessageFilter, set[str]]] = [
    (pb.MessageFilter(session_ids=["s2"]), {"F1", "F3", "F5"}),
    (pb.MessageFilter(roles=["Ada"]), {"F0", "F3"}),
    (pb.MessageFilter(metadata={"user": "u2"}), {"F3", "F4", "F5"}),
    (pb.MessageFilter(after=_at(2), before=_at(4)), {"F2", "F3"}),
    (pb.MessageFilter(session_ids=["s1"], roles=["Bo"], after=_at(1)), {"F2", "F4"}),
]


@check(
    "filter-never-ignored",
    "required",
    "with a filter (sessions, roles, time, metadata) no hit, context line or listed message is "
    "outside it (or the filter is refused as UNSUPPORTED)",
)
def _filter_never_ignored(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    word = marker()
    items = _filtered_items(word)
    wire.store(namespace, *items)
    contents = {item.message.turn_id: item.message.content for item in items}
    for chosen, allowed in _FILTERED:
        _judge_filter(wire, namespace, word, chosen, allowed, contents)


def _judge_filter(
    wire: Wire,
    namespace: str,
    word: str,
    chosen: pb.MessageFilter,
    allowed: set[str],
    contents: dict[str, str],
) -> None:
    """Fail if a Retrieve or a listing with `chosen` gives anything outside `allowed`."""
    what = f"filter {_describe(chosen)}"
    answer = _unless_unsupported(lambda: wire.retrieve(namespace, word, 100, chosen))
    if answer is not None:
        if outside := [hit.turn_id for hit in answer.hits if hit.turn_id not in allowed]:
            raise CheckFailed(f"{what}: hits {outside} are outside it")
        excluded = [turn_id for turn_id in contents if turn_id not in allowed]
        if leaked := [t for t in excluded if contents[t] in answer.context]:
            raise CheckFailed(f"{what}: the context holds {leaked}, outside it")
    listed = _unless_unsupported(lambda: _listed(wire, namespace, 2, chosen)) or []
    if outside := [m.message.turn_id for m in listed if m.message.turn_id not in allowed]:
        raise CheckFailed(f"{what}: ListMessages gave {outside}, outside it")


def _describe(chosen: pb.MessageFilter) -> str:
    parts = [f"session_ids={list(chosen.session_ids)}"] if chosen.session_ids else []
    parts += [f"roles={list(chosen.roles)}"] if chosen.roles else []
    parts += [f"metadata={dict(chosen.metadata)}"] if chosen.metadata else []
    for name in ("after", "before"):
        if chosen.HasField(name):
            parts.append(f"{name}={getattr(chosen, name).ToJsonString()}")
    return "(" + ", ".join(parts) + ")"


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
        *(_item(f"{word}, said for the {i}th time: " + "so on " * i, f"B{i}") for i in range(8)),
    )
    for budget in (1, 3, 8, 40):
        context = wire.retrieve(namespace, word, max_context_tokens=budget).context
        if (tokens := count_tokens(context)) > budget:
            raise CheckFailed(f"max_context_tokens {budget}: a context of {tokens} tokens")


@check(
    "page-token-checked",
    "required",
    "ListMessages of a new namespace lists nothing, and a page_token the server never made is "
    "INVALID_ARGUMENT naming page_token (or listings are refused as UNSUPPORTED)",
)
def _page_token_checked(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    first = _unless_unsupported(lambda: wire.list_page(namespace))
    if first is None:
        return
    if first.messages or first.next_page_token:
        raise CheckFailed("a namespace never used listed messages or a next page")
    expect_error(lambda: wire.list_page(namespace, page_token="not-a-token"), INVALID, "page_token")


# --- capabilities -----------------------------------------------------------------------


@check(
    "replaces-by-id",
    "capability",
    "storing an id again replaces its message: the old text is never retrieved, the new one is, "
    "and the id is listed once",
)
def _replaces_by_id(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    old, new = marker(), marker()
    wire.store(namespace, _item(f"first {old}", "R1"), _item("unrelated", "R2", session="s2"))
    wire.store(namespace, _item(f"then {new}", "R1"))
    answer = wire.retrieve(namespace, old)
    if any(hit.turn_id == "R1" for hit in answer.hits) or old in answer.context:
        raise CheckFailed("the replaced text was retrieved")
    hits = wire.retrieve(namespace, new).hits
    if not hits or (hits[0].turn_id, hits[0].content) != ("R1", f"then {new}"):
        raise CheckFailed(f"the new text: hits {[(h.turn_id, h.content) for h in hits]}")
    listed = [m.message.turn_id for m in _listed(wire, namespace)]
    if listed != ["R1", "R2"]:
        raise CheckFailed(f"listed {listed}, want ['R1', 'R2']")


@check(
    "deletes-by-session-and-time",
    "capability",
    "Delete by session_ids and by a time range answers how many it deleted and forgets exactly "
    "those",
)
def _deletes_by_session_and_time(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    word = marker()
    wire.store(namespace, *_filtered_items(word))
    for chosen, gone in (
        (pb.MessageFilter(session_ids=["s2"]), {"F1", "F3", "F5"}),
        (pb.MessageFilter(after=_at(0), before=_at(3)), {"F0", "F2"}),
    ):
        if (count := wire.delete(namespace, filter=chosen)) != len(gone):
            raise CheckFailed(f"Delete {_describe(chosen)} deleted {count}, want {len(gone)}")
    found = {hit.turn_id for hit in wire.retrieve(namespace, word, 100).hits}
    if found != {"F4"}:
        raise CheckFailed(f"after the deletes, hits {sorted(found)}, want ['F4']")


@check(
    "deletes-stay-in-namespace",
    "capability",
    "a Delete in one namespace leaves another namespace's messages of the same ids",
)
def _deletes_stay_in_namespace(wire: Wire, new_namespace: NewNamespace) -> None:
    one, other = new_namespace(), new_namespace()
    word = marker()
    for namespace in (one, other):
        wire.store(namespace, *_filtered_items(word))
    wire.delete(one, ("F0", "F1"))
    wire.delete(one, filter=pb.MessageFilter(session_ids=["s1", "s2"]))
    kept = {hit.turn_id for hit in wire.retrieve(other, word, 100).hits}
    if kept != {f"F{i}" for i in range(6)}:
        raise CheckFailed(f"the other namespace kept {sorted(kept)} of F0..F5")


@check(
    "filter-fills-the-limit",
    "capability",
    "a filtered Retrieve gives `limit` hits when that many match, all inside the filter",
)
def _filter_fills_the_limit(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    word = marker()
    wire.store(
        namespace,
        *(_item(f"{word} in s1, {i}", f"A{i}") for i in range(12)),
        *(_item(f"{word} in s2, {i}", f"B{i}", session="s2") for i in range(6)),
    )
    hits = wire.retrieve(namespace, word, 5, pb.MessageFilter(session_ids=["s2"])).hits
    if len(hits) != 5 or any(hit.session_id != "s2" for hit in hits):
        raise CheckFailed(
            f"limit 5 of 6 matching: hits {[(h.turn_id, h.session_id) for h in hits]}"
        )


@check(
    "lists-every-message-once",
    "capability",
    "ListMessages page by page gives every message stored before the first page exactly once, "
    "while messages are stored, replaced and deleted between pages",
)
def _lists_every_message_once(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    ids = [f"L{i}" for i in range(23)]
    wire.store(namespace, *(_item(f"message {i}", turn_id) for i, turn_id in enumerate(ids)))
    page = wire.list_page(namespace, page_size=5)
    seen = [m.message.turn_id for m in page.messages]
    wire.store(namespace, _item("stored between pages", "L-new"), _item("again", "L2"))
    wire.store(namespace, _item("corrected later message", "L17"))
    wire.delete(namespace, ("L11",))
    while page.next_page_token:
        page = wire.list_page(namespace, 5, page.next_page_token)
        if len(page.messages) > 5:
            raise CheckFailed(f"a page of {len(page.messages)} messages, page_size 5")
        seen += [m.message.turn_id for m in page.messages]
    want = [turn_id for turn_id in ids if turn_id != "L11"]
    if seen[: len(want)] != want or seen[len(want) :] not in ([], ["L-new"]):
        raise CheckFailed(f"listed {seen}, want {want} (then perhaps L-new)")


@check(
    "message-times",
    "capability",
    "a hit's time is its message's timestamp, else its session's, else the time in the "
    "session's date_str (LoCoMo's '1:56 pm on 8 May, 2023')",
)
def _message_times(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    word = marker()
    own = _item(f"{word} own", "M1", hours=5)
    of_session = _item(f"{word} session", "M2", session="s2")
    of_session.session.timestamp.CopyFrom(_at(24))
    dated = _item(f"{word} dated", "M3", session="s3")
    dated.session.date_str = "1:56 pm on 8 May, 2023"
    wire.store(namespace, own, of_session, dated)
    want = {"M1": _at(5), "M2": _at(24), "M3": _at(0, 56)}
    got = {h.turn_id: h.time for h in wire.retrieve(namespace, word, 10).hits}
    for turn_id, moment in want.items():
        if turn_id not in got or got[turn_id].ToSeconds() != moment.ToSeconds():
            seen = got[turn_id].ToJsonString() if turn_id in got else "no hit"
            raise CheckFailed(f"{turn_id}: time {seen}, want {moment.ToJsonString()}")
