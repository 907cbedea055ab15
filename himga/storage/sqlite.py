"""Opening a SQLite database as every durable store here does: WAL journal, one connection
shared by threads (the store's lock serialises it), each transaction begun by the store.

A database in WAL mode keeps its index of the log in a `-shm` file beside it. On a disk with
no room left that file cannot be made, and the database would not open even to be read: then it
is opened with the log's index in this process's memory instead, which SQLite allows only with
the database locked to this one connection (`locking_mode=EXCLUSIVE`) until it is closed. So a
store opens, and answers reads, on a full disk; other processes wait for it meanwhile.
"""

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from himga.errors import DamagedStoreError
from himga.storage import exhaustion

_DAMAGED = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})


def connect(path: Path | None, timeout: float) -> sqlite3.Connection:
    """A connection to the database at `path` in WAL mode (None: a database in memory), with
    `timeout` seconds to wait for another connection's lock."""
    if path is None:
        return _connection(":memory:", timeout)
    db = _connection(str(path), timeout)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        return db
    except sqlite3.Error as error:
        db.close()
        if not exhaustion.cannot_write(error):
            raise
    db = _connection(str(path), timeout)  # no room for -shm: the log's index in memory
    try:
        db.execute("PRAGMA locking_mode=EXCLUSIVE")
        db.execute("PRAGMA journal_mode=WAL")
    except BaseException:
        db.close()
        raise
    return db


def damaged(error: sqlite3.DatabaseError, path: Path | None) -> DamagedStoreError | None:
    """`error` as a DamagedStoreError naming the file at `path` when SQLite raised it for a file
    that is not a database, or a damaged one; else (or for a database in memory) None."""
    if path is None or getattr(error, "sqlite_errorcode", 0) & 0xFF not in _DAMAGED:
        return None
    return DamagedStoreError(
        f"{path}: not a readable store ({error}); restore the file from a backup (`sqlite3 FILE "
        ".recover` may save what is left of it), or move it away to start afresh"
    )


@contextmanager
def named_if_damaged(path: Path | None) -> Iterator[None]:
    """The block's SQLite errors for a damaged file raised as `damaged` makes them."""
    try:
        yield
    except sqlite3.DatabaseError as error:
        named = damaged(error, path)
        if named is None:
            raise
        raise named from error


def _connection(target: str, timeout: float) -> sqlite3.Connection:
    return sqlite3.connect(target, isolation_level=None, check_same_thread=False, timeout=timeout)


KEYS_AT_ONCE = 500
"""Text keys bound in one statement by `with_keys` (SQLite allows 32,766 `?` by default)."""


def with_keys(db: sqlite3.Connection, select: str, keys: Sequence[str]) -> list[Any]:
    """The rows of `select`, whose `{keys}` is replaced by `?` for each key, run over `keys` a
    chunk at a time. Text keys are bound one by one, never through json_each: SQLite's JSON
    functions end a string at an escaped NUL (U+0000), so a key holding one would match
    another key, its prefix (and a delete would take the wrong row)."""
    rows: list[Any] = []
    for start in range(0, len(keys), KEYS_AT_ONCE):
        chunk = keys[start : start + KEYS_AT_ONCE]
        statement = select.format(keys=", ".join("?" * len(chunk)))
        rows.extend(db.execute(statement, tuple(chunk)))
    return rows
