"""The capabilities of the whole memory API, which a storing memory shows by doing it:
corrections in place, deletes by session and time that stay in their namespace, filters that
fill the limit, listings that give every message once whatever happens between pages,
message times, and a context built from the hits answered.
"""

from himga_proto.memory.v1 import memory_pb2 as pb

from himga.conformance.api_requests import at, describe, filtered_items, item, list_all
from himga.conformance.checks import NewNamespace, check
from himga.conformance.wire import CheckFailed, Wire, marker


@check(
    "replaces-by-id",
    "capability",
    "storing an id again replaces its message: the old text is never retrieved, the new one is, "
    "and the id is listed once",
)
def _replaces_by_id(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    old, new = marker(), marker()
    wire.store(namespace, item(f"first {old}", "R1"), item("unrelated", "R2", session="s2"))
    wire.store(namespace, item(f"then {new}", "R1"))
    answer = wire.retrieve(namespace, old)
    if any(old in hit.content for hit in answer.hits) or old in answer.context:
        raise CheckFailed("the replaced text was retrieved")
    hits = wire.retrieve(namespace, new).hits
    if not hits or (hits[0].turn_id, hits[0].content) != ("R1", f"then {new}"):
        raise CheckFailed(f"the new text: hits {[(h.turn_id, h.content) for h in hits]}")
    listed = [m.message.turn_id for m in list_all(wire, namespace)]
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
    wire.store(namespace, *filtered_items(word))
    for chosen, gone in (
        (pb.MessageFilter(session_ids=["s2"]), {"F1", "F3", "F5"}),
        (pb.MessageFilter(after=at(0), before=at(3)), {"F0", "F2"}),
    ):
        if (count := wire.delete(namespace, filter=chosen)) != len(gone):
            raise CheckFailed(f"Delete {describe(chosen)} deleted {count}, want {len(gone)}")
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
        wire.store(namespace, *filtered_items(word))
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
        *(item(f"{word} in s1, {i}", f"A{i}") for i in range(12)),
        *(item(f"{word} in s2, {i}", f"B{i}", session="s2") for i in range(6)),
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
    wire.store(namespace, *(item(f"message {i}", turn_id) for i, turn_id in enumerate(ids)))
    page = wire.list_page(namespace, page_size=5)
    seen = [m.message.turn_id for m in page.messages]
    wire.store(namespace, item("stored between pages", "L-new"), item("again", "L2"))
    wire.store(namespace, item("corrected later message", "L17"))
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
    own = item(f"{word} own", "M1", hours=5)
    of_session = item(f"{word} session", "M2", session="s2")
    of_session.session.timestamp.CopyFrom(at(24))
    dated = item(f"{word} dated", "M3", session="s3")
    dated.session.date_str = "1:56 pm on 8 May, 2023"
    wire.store(namespace, own, of_session, dated)
    want = {"M1": at(5), "M2": at(24), "M3": at(0, 56)}
    got = {h.turn_id: h.time for h in wire.retrieve(namespace, word, 10).hits}
    for turn_id, moment in want.items():
        if turn_id not in got or got[turn_id].ToSeconds() != moment.ToSeconds():
            seen = got[turn_id].ToJsonString() if turn_id in got else "no hit"
            raise CheckFailed(f"{turn_id}: time {seen}, want {moment.ToJsonString()}")


@check(
    "context-follows-limit",
    "capability",
    "Retrieve's context is built from the hits it answers: with limit 1, 5 or 20 of 15 matching "
    "messages, the context holds exactly the messages among the hits, and limit 0 as many as "
    "the default 10",
)
def _context_follows_limit(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    word = marker()
    tags = [marker() for _ in range(15)]
    wire.store(namespace, *(item(f"{word} {tag}", f"C{i}") for i, tag in enumerate(tags)))
    for limit, wanted in ((1, 1), (5, 5), (20, 15), (0, 10)):
        answer = wire.retrieve(namespace, word, limit)
        if len(answer.hits) != wanted:
            raise CheckFailed(f"limit {limit}: {len(answer.hits)} hits of 15, want {wanted}")
        hit = {h.turn_id for h in answer.hits}
        shown = {f"C{i}" for i, tag in enumerate(tags) if tag in answer.context}
        if shown != hit:
            raise CheckFailed(
                f"limit {limit}: the context holds {sorted(shown)}, the hits are {sorted(hit)}"
            )
