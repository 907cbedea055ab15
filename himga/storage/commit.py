"""The last word before a write commits: is it still wanted, and what receipt does it leave?

A server's call may end before its write commits (its deadline passed, its caller cancelled,
the server is stopping). A durable store (of messages or of episodes) calls `before_commit`
inside its write transaction, just before COMMIT: the check the caller set with `committing`
raises when the write is no longer wanted (CallerGone, usually), and the transaction rolls
back, so a caller told that its call failed finds nothing of it stored. The same call writes
the write's receipt (himga.storage.receipts), if the caller asked for one, in that transaction:
a retry with the same request id is then answered from the receipt, and the receipt exists
exactly when the write does (it survives what the write survives).

The terms travel in a context variable, so no store's signature changes: outside `committing`
(in-process use, the evaluations) `before_commit` does nothing.
"""

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from himga.errors import HimgaError
from himga.storage.receipts import Receipt


class CallerGone(HimgaError, RuntimeError):
    """The caller of a write went away (its deadline passed, it cancelled) before the write
    committed: nothing of it was stored."""


@dataclass(frozen=True, slots=True)
class Terms:
    """The terms of one write: `still_wanted` raises when it is not; `receipt` (its answer not
    yet known) is recorded with the write when given."""

    still_wanted: Callable[[], None]
    receipt: Receipt | None = None


_TERMS: ContextVar[Terms | None] = ContextVar("himga_commit_terms", default=None)


@contextmanager
def committing(terms: Terms) -> Iterator[None]:
    """Writes made inside this block (in this thread) commit only on `terms`."""
    token = _TERMS.set(terms)
    try:
        yield
    finally:
        _TERMS.reset(token)


def before_commit(record: Callable[[Receipt], None], answer: Sequence[str] | int) -> None:
    """Called by a durable store in its write transaction, just before COMMIT: raises (the
    store then rolls back) when the write is no longer wanted, and otherwise records its
    receipt, answering `answer`, with `record` (which writes in the same transaction)."""
    terms = _TERMS.get()
    if terms is None:
        return
    terms.still_wanted()
    if terms.receipt is not None:
        receipt = terms.receipt
        kept = answer if isinstance(answer, int) else tuple(answer)
        record(Receipt(receipt.request_id, receipt.digest, kept))


def still_wanted() -> None:
    """Raise if the current write is no longer wanted (for stores with no transaction)."""
    terms = _TERMS.get()
    if terms is not None:
        terms.still_wanted()
