"""Receipts: what a write made with a request id leaves, so that its retry stores nothing again.

A receipt holds the request id, a digest of the request (the same id with another request is
refused) and the answer the write got. A durable store writes it in the write's own transaction
(himga.storage.commit.before_commit), so it exists exactly when the write does. One table
definition and one SQL for each engine, used by the messages' stores and the episodes' alike:
- SQLite: `himga_receipts` in each namespace's database (`SQLITE_TABLE`, `read_sqlite`,
  `keep_sqlite`); a database holds the writes of one service, so no kind is kept.
- PostgreSQL: `himga_receipts` keyed by the namespace's id and the service's `kind` (its table
  is made by migration 1 of himga.storage.postgres_schema; `read_postgres`, `keep_postgres`).
"""

import json
import time
from dataclasses import dataclass
from typing import Any

RECEIPT_WINDOW_SECONDS = 24 * 60 * 60
"""How long a write's receipt is kept: a retry with the same request id within it is answered
from the receipt and stores nothing again."""

Answer = tuple[str, ...] | int
"""What a write answered: the ids of the messages it stored, or how many things it recorded or
deleted (a bool for a delete of one). Kept as JSON: a list of strings, or a number."""


def answer_from_json(text: str) -> Answer:
    """The answer a receipt kept as JSON text (what `json.dumps` made of an Answer)."""
    loaded = json.loads(text)
    return tuple(loaded) if isinstance(loaded, list) else loaded


@dataclass(frozen=True, slots=True)
class Receipt:
    """What a write with a request id leaves: the id, a digest of the request (the same id with
    another request is refused), and the answer it got."""

    request_id: str
    digest: str
    answer: Answer = ()


class ReceiptTaken(Exception):
    """Raised by a store, rolling its write back, when its receipt's request id was recorded
    by another write meanwhile (the same request sent through two servers at once): the
    caller answers from that receipt. Never reaches a client."""


SQLITE_TABLE = (
    """CREATE TABLE IF NOT EXISTS himga_receipts (
        request_id TEXT PRIMARY KEY, digest TEXT NOT NULL, answer TEXT NOT NULL, at REAL NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS himga_receipts_at ON himga_receipts (at)",
)
"""The receipts' table in a SQLite database; `answer` is the Answer as JSON."""


def read_sqlite(db: Any, request_id: str) -> Receipt | None:
    """The receipt of the write made with `request_id` within the window, if any, from the
    sqlite3 connection `db`."""
    found = db.execute(
        "SELECT digest, answer FROM himga_receipts WHERE request_id = ? AND at >= ?",
        (request_id, time.time() - RECEIPT_WINDOW_SECONDS),
    ).fetchone()
    return None if found is None else Receipt(request_id, found[0], answer_from_json(found[1]))


def keep_sqlite(db: Any, receipt: Receipt) -> None:
    """Record `receipt` in the write's transaction on `db`, forgetting those past the window."""
    now = time.time()
    db.execute("DELETE FROM himga_receipts WHERE at < ?", (now - RECEIPT_WINDOW_SECONDS,))
    db.execute(
        "INSERT INTO himga_receipts VALUES (?, ?, ?, ?)",
        (receipt.request_id, receipt.digest, json.dumps(receipt.answer), now),
    )


def read_postgres(connection: Any, namespace: int, kind: str, request_id: str) -> Receipt | None:
    """The receipt of the write of `kind` made with `request_id` within the window, if any, in
    the namespace whose row id is `namespace` (`connection`: a psycopg connection)."""
    found = connection.execute(
        "SELECT digest, answer FROM himga_receipts "
        "WHERE namespace = %s AND kind = %s AND request_id = %s AND at >= %s",
        (namespace, kind, request_id, time.time() - RECEIPT_WINDOW_SECONDS),
    ).fetchone()
    if found is None:
        return None
    return Receipt(request_id, found[0], answer_from_json(found[1]))


def keep_postgres(connection: Any, namespace: int, kind: str, receipt: Receipt) -> None:
    """Record `receipt` in the write's transaction, forgetting those past the window;
    ReceiptTaken when another server's write of the same request id came first."""
    now = time.time()
    connection.execute(
        "DELETE FROM himga_receipts WHERE namespace = %s AND kind = %s AND at < %s",
        (namespace, kind, now - RECEIPT_WINDOW_SECONDS),
    )
    inserted = connection.execute(
        "INSERT INTO himga_receipts VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (namespace, kind, receipt.request_id, receipt.digest, json.dumps(receipt.answer), now),
    )
    if inserted.rowcount == 0:
        raise ReceiptTaken(receipt.request_id)
