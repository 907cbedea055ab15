"""Safe retries: a write sent again with the same `request_id` is stored once.

A write carrying a request id leaves a receipt (himga.storage.receipts.Receipt): the id, a digest
of the request, and its answer. A durable memory or episode store keeps receipts in its own
store, written in the write's transaction, so a receipt exists exactly when its write does,
across crashes too. Others (in process) get `InProcessReceipts`, which live exactly as long as
their data. Receipts are per namespace: MemoryService's writes (Ingest, IngestBatch, Delete) and
EpisodeService's (RecordEpisode, RecordEpisodes, DeleteEpisode) each have their own.

Within `RECEIPT_WINDOW_SECONDS` (24 h) of the first write, the same request with the same id is
answered as the first was, without storing anything; the same id with another request is
INVALID_ARGUMENT (field `request_id`).
"""

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

from google.protobuf.message import Message as ProtoMessage

from himga.service.errors import FieldViolation, InvalidRequest
from himga.storage.commit import Terms, committing
from himga.storage.receipts import RECEIPT_WINDOW_SECONDS, Receipt, ReceiptTaken

MAX_REQUEST_ID = 128
"""The longest request id, in characters."""
IN_PROCESS_RECEIPTS = 100_000
"""At most this many receipts are kept for in-process memories (the oldest go first)."""
W = TypeVar("W", list[str], int)
"""A write's answer: the ids it stored, or a count (a bool for a delete of one)."""


@runtime_checkable
class KeepsReceipts(Protocol):
    """A memory or episode store that writes receipts with its writes
    (`himga.storage.commit.before_commit`)."""

    def receipt(self, request_id: str) -> Receipt | None: ...


class InProcessReceipts:
    """Receipts of the writes to memories (or episode stores) that keep none, per namespace,
    in process memory."""

    def __init__(self, limit: int = IN_PROCESS_RECEIPTS) -> None:
        self._limit = limit
        self._kept: OrderedDict[tuple[str, str], tuple[float, Receipt]] = OrderedDict()
        self._lock = threading.Lock()

    def find(self, namespace: str, request_id: str) -> Receipt | None:
        with self._lock:
            kept = self._kept.get((namespace, request_id))
        if kept is None or kept[0] < time.time() - RECEIPT_WINDOW_SECONDS:
            return None
        return kept[1]

    def forget(self, namespace: str) -> None:
        """Drop every receipt of `namespace` (DeleteNamespace)."""
        with self._lock:
            for key in [key for key in self._kept if key[0] == namespace]:
                del self._kept[key]

    def keep(self, namespace: str, receipt: Receipt) -> None:
        with self._lock:
            self._kept[(namespace, receipt.request_id)] = (time.time(), receipt)
            self._kept.move_to_end((namespace, receipt.request_id))
            while len(self._kept) > self._limit:
                self._kept.popitem(last=False)


def request_id_violations(request_id: str) -> list[FieldViolation]:
    if len(request_id) > MAX_REQUEST_ID:
        return [FieldViolation("request_id", f"must be at most {MAX_REQUEST_ID} characters")]
    return []


def digest(request: ProtoMessage) -> str:
    """A digest of `request` without its request id: equal for the same write sent again, and
    different for a request of another kind (its type's full name is part of it)."""
    copy = type(request)()
    copy.CopyFrom(request)
    copy.ClearField("request_id")
    named = request.DESCRIPTOR.full_name.encode() + b"\0"
    return hashlib.sha256(named + copy.SerializeToString(deterministic=True)).hexdigest()


def write_once(
    keeper: object,
    namespace: str,
    request: Any,
    still_wanted: Callable[[], None],
    in_process: InProcessReceipts,
    write: Callable[[], W],
) -> W:
    """Run `write` (returning the ids of the messages it stored, or a count) committing only
    while `still_wanted` does not raise; with a request id, at most once per request: a repeated
    request gets the first one's answer. `keeper` (a memory or an episode store) keeps the
    receipts if it can (KeepsReceipts), else `in_process` does."""
    request_id: str = request.request_id
    if not request_id:
        with committing(Terms(still_wanted)):
            return write()
    wanted = Receipt(request_id, digest(request))
    keeps = keeper if isinstance(keeper, KeepsReceipts) else None
    if keeps is not None:
        found = keeps.receipt(request_id)
    else:
        found = in_process.find(namespace, request_id)
    if found is not None:
        return cast(W, _answer(found, wanted))
    try:
        with committing(Terms(still_wanted, wanted)):
            answer = write()
    except ReceiptTaken:  # the same request, through another server, committed first
        found = keeps.receipt(request_id) if keeps is not None else None
        if found is None:
            raise
        return cast(W, _answer(found, wanted))
    if keeps is None:
        kept = answer if isinstance(answer, int) else tuple(answer)
        in_process.keep(namespace, Receipt(request_id, wanted.digest, kept))
    return answer


def _answer(found: Receipt, wanted: Receipt) -> Any:
    """The answer a request with `wanted`'s id and digest gets from the receipt `found` of that
    id; InvalidRequest when that receipt is another request's."""
    if found.digest != wanted.digest:
        raise InvalidRequest(
            [
                FieldViolation(
                    "request_id",
                    "was used for another request to this namespace within "
                    f"{RECEIPT_WINDOW_SECONDS // 3600} h: give each write an id of its own",
                )
            ]
        )
    # The same digest is the same kind of request, so the same kind of answer.
    return found.answer if isinstance(found.answer, int) else list(found.answer)
