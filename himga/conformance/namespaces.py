"""The required checks of namespaces as things: ListNamespaces shows, under a prefix and a page
at a time in the byte order of their names, every namespace whose messages can be read back;
DeleteNamespace forgets one wholly (its messages and the receipts of its writes) and answers
whether it was held; a namespace whose only write failed is not listed, nor one whose only
write since it was deleted failed (the same for an episode: himga.conformance.episodes). A
memory that stores nothing may list nothing; what it lists must still keep the order, the
prefix and the paging. `forget_namespaces` is how the kit removes what it wrote once a check
is done.
"""

import time
from collections.abc import Callable

import grpc
from himga_proto.memory.v1 import memory_pb2 as pb

from himga.conformance.checks import NewNamespace, batch_item, check, said
from himga.conformance.wire import CheckFailed, NotExercised, Wire, code_of, marker

PAGE_SIZE = 1000


def listed(wire: Wire, prefix: str, page_size: int = PAGE_SIZE) -> list[pb.NamespaceInfo]:
    """Every namespace ListNamespaces shows under `prefix`, page after page; fails on a page
    that breaks the prefix, the order or the page size, and on a token that never ends."""
    found: list[pb.NamespaceInfo] = []
    token = ""
    for _ in range(10_000):
        page = wire.memory.ListNamespaces(
            pb.ListNamespacesRequest(prefix=prefix, page_size=page_size, page_token=token),
            timeout=wire.timeout,
        )
        if len(page.namespaces) > page_size:
            raise CheckFailed(f"a page of size {page_size} held {len(page.namespaces)}")
        found += page.namespaces
        token = page.next_page_token
        if not token:
            break
    else:
        raise CheckFailed("ListNamespaces kept answering a next page")
    names = [info.name for info in found]
    if any(not name.startswith(prefix) for name in names):
        raise CheckFailed(f"under prefix {prefix!r} it listed {names}")
    if names != sorted(set(names), key=lambda name: name.encode()):
        raise CheckFailed(f"not once each in the byte order of their names: {names}")
    return found


def _readable(wire: Wire, namespace: str, word: str) -> bool:
    """Whether the namespace gives back a message holding `word`."""
    answer = wire.retrieve(namespace, word)
    return bool(answer.hits) or word in answer.context


@check(
    "namespaces-listed",
    "required",
    "ListNamespaces lists, under a prefix, a page at a time and in the byte order of their "
    "names, every namespace whose messages can be read back, and no other name",
)
def _namespaces_listed(wire: Wire, new_namespace: NewNamespace) -> None:
    prefix = new_namespace() + "."
    names = [prefix + suffix for suffix in ("b", "a", "a:1", "c-2")]
    outside = new_namespace()
    word = marker()
    for namespace in [*names, outside]:
        wire.store(namespace, batch_item(said(word)))
    shown = [info.name for info in listed(wire, prefix, page_size=1)]
    if outside in shown:
        raise CheckFailed(f"{outside!r} was listed under the prefix {prefix!r}")
    missing = [name for name in names if name not in shown and _readable(wire, name, word)]
    if missing:
        raise CheckFailed(f"namespaces holding messages were not listed: {missing}")
    if shown != [info.name for info in listed(wire, prefix)]:
        raise CheckFailed("pages of 1 and one page of 1000 listed different namespaces")


@check(
    "namespace-deleted",
    "required",
    "after DeleteNamespace a namespace holds no message, is not listed, and its request ids "
    "are new again; deleting it again answers deleted false",
)
def _namespace_deleted(wire: Wire, new_namespace: NewNamespace) -> None:
    namespace = new_namespace()
    word = marker()
    request = pb.IngestBatchRequest(
        namespace=namespace, items=[batch_item(said(word))], request_id="kit-1"
    )
    wire.memory.IngestBatch(request, timeout=wire.timeout)
    held = [info.name for info in listed(wire, namespace)] == [namespace]
    answer = wire.memory.DeleteNamespace(
        pb.DeleteNamespaceRequest(namespace=namespace), timeout=wire.timeout
    )
    if answer.deleted != held:
        raise CheckFailed(f"DeleteNamespace of a namespace listed {held} answered {answer}")
    if _readable(wire, namespace, word):
        raise CheckFailed("a message of the deleted namespace was retrieved")
    if wire.list_page(namespace).messages:
        raise CheckFailed("messages of the deleted namespace were listed")
    if [info.name for info in listed(wire, namespace)]:
        raise CheckFailed("the deleted namespace is still listed")
    again = wire.memory.DeleteNamespace(
        pb.DeleteNamespaceRequest(namespace=namespace), timeout=wire.timeout
    )
    if again.deleted:
        raise CheckFailed("deleting the deleted namespace again answered deleted true")
    other = pb.IngestBatchRequest(
        namespace=namespace, items=[batch_item(said(marker())), batch_item(said(word))]
    )
    other.request_id = "kit-1"  # another request under the first one's id: new again
    stored = wire.memory.IngestBatch(other, timeout=wire.timeout)
    if stored.ingested != 2:
        raise CheckFailed(f"the first write's request id answered {stored.ingested} items")


FAILED_WRITE_DEADLINE = 0.001
"""The deadline of the write the failed-write checks mean to fail (seconds): long past by the
time a server has opened a new namespace."""
FAILED_WRITE_TRIES = 5
"""How many writes a failed-write check tries, each into a namespace of its own, for one that
fails; should every one be answered in time, the check is not exercised (NotExercised)."""
SETTLE_SECONDS = 30.0
"""How long the failed-write checks wait for the call to end on the server (which may finish
its work after the client's deadline passed) before they hold the listing to what it stores."""


@check(
    "failed-write-unlisted",
    "required",
    "a namespace whose only write failed (its deadline passed) is not listed once the call has "
    "ended on the server, unless that write was stored after all",
)
def _failed_write_unlisted(wire: Wire, new_namespace: NewNamespace) -> None:
    until_a_write_fails(lambda: _failed_message_write_settles(wire, new_namespace()))


@check(
    "failed-write-after-delete-unlisted",
    "required",
    "a namespace deleted and then written once more, that write failing (its deadline passed), "
    "is not listed once the call has ended on the server, unless that write was stored after all",
)
def _failed_write_after_delete_unlisted(wire: Wire, new_namespace: NewNamespace) -> None:
    def attempt() -> bool:
        namespace = new_namespace()
        wire.store(namespace, batch_item(said(marker())))
        wire.memory.DeleteNamespace(
            pb.DeleteNamespaceRequest(namespace=namespace), timeout=wire.timeout
        )
        return _failed_message_write_settles(wire, namespace)

    until_a_write_fails(attempt)


def _failed_message_write_settles(wire: Wire, namespace: str) -> bool:
    """An Ingest into `namespace`, which holds nothing, past FAILED_WRITE_DEADLINE, held to
    the listing by `failed_write_settles` (whose answer it gives)."""
    word = marker()
    request = pb.IngestRequest(
        namespace=namespace, message=said(word), session=pb.Session(session_id="s1")
    )
    return failed_write_settles(
        wire,
        namespace,
        lambda: wire.memory.Ingest(request, timeout=FAILED_WRITE_DEADLINE),
        lambda: _readable(wire, namespace, word),
        "message",
    )


def until_a_write_fails(attempt: Callable[[], bool]) -> None:
    """Run `attempt` (a `failed_write_settles`, each time into a namespace of its own) until one
    write fails and the server is held to its listing, at most FAILED_WRITE_TRIES times;
    NotExercised should every write be answered in time."""
    for _ in range(FAILED_WRITE_TRIES):
        if attempt():
            return
    raise NotExercised(
        f"each of {FAILED_WRITE_TRIES} writes was answered within its "
        f"{FAILED_WRITE_DEADLINE * 1000:g} ms deadline, so none failed to be held to"
    )


def failed_write_settles(
    wire: Wire,
    namespace: str,
    write: Callable[[], object],
    stored: Callable[[], bool],
    what: str,
) -> bool:
    """Hold a server to its listing after `write`, the only write into the new `namespace`,
    failed past its deadline: once the call has ended on the server (waited for up to
    SETTLE_SECONDS), the namespace is listed only if `stored()` finds what was written (a
    `what`). False, holding it to nothing, when the write was stored in time; else True."""
    try:
        write()
        return False  # stored in time: nothing failed, so there is nothing to hold it to
    except grpc.RpcError as error:
        if code_of(error) not in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
            raise
    # The server ends the call in its own time: rolled back (then not listed) or, should the
    # answer have been on its way as the deadline passed, stored (then readable).
    waited = time.monotonic() + SETTLE_SECONDS
    while True:
        shown = [info.name for info in listed(wire, namespace)] == [namespace]
        if not shown or stored():
            return True
        if time.monotonic() > waited:
            raise CheckFailed(
                f"{SETTLE_SECONDS:g} s after its only write failed, the namespace is listed "
                f"and holds no {what}"
            )
        time.sleep(0.05)


def forget_namespaces(wire: Wire, made: list[str]) -> str:
    """Delete every namespace a check made (and those it made under their names); "" when they
    are gone, else why not (a server without DeleteNamespace, a token without admin)."""
    try:
        for namespace in made:
            for name in [namespace, *(info.name for info in listed(wire, namespace + "."))]:
                wire.memory.DeleteNamespace(
                    pb.DeleteNamespaceRequest(namespace=name), timeout=wire.timeout
                )
    except grpc.RpcError as error:
        code = code_of(error)
        details = error.details() if isinstance(error, grpc.Call) else str(error)
        return f"{code.name if code else 'error'}: {details}"
    except CheckFailed as failure:
        return str(failure)
    return ""
