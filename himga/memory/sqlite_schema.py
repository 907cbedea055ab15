"""The SQLite memory's tables, the format version a database records, and the migrations that
bring an older database up to date.

`himga_meta` holds `format` (FORMAT for the tables below), `method` (the retrieval method the
index was built with, himga.memory.ranking.METHOD), `generation` (bumped whenever rows
change other than by being appended, so other connections read everything again) and, once the
newest turns have been deleted, `end` (the number past the newest ever deleted, so that no
connection numbers a new turn where another holds a deleted one; gone with a reset).

A database is brought up to date when it opens, in place, inside the one transaction that opens
it: a crash half-way leaves it exactly as it was (SQLite's journal undoes the rest), readable by
the code that wrote it and migrated again on the next open. Format 1 is the store before
`format` was recorded (himga up to this change: no ids, times or metadata). A database of a
later format than FORMAT was written by a newer himga and is refused (IncompatibleStoreError);
one indexed by another retrieval method is indexed again from the text it stores.
"""

import sqlite3
from collections.abc import Callable, Iterator
from itertools import count

from himga.errors import IncompatibleStoreError
from himga.memory.base import new_id
from himga.memory.ranking import METHOD, speaker_key
from himga.memory.text import terms_of
from himga.memory.times import micros, parse_date_str
from himga.storage.receipts import SQLITE_TABLE, keep_sqlite, read_sqlite

FORMAT = 3
_BATCH = 10_000

# Receipts of writes made with a request id (himga.storage.receipts): written in the write's
# transaction, so one exists exactly when its write does.
RECEIPTS = SQLITE_TABLE
read_receipt = read_sqlite
keep_receipt = keep_sqlite


META = "CREATE TABLE IF NOT EXISTS himga_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
TABLES = (
    "CREATE TABLE speakers (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE)",
    "CREATE TABLE sessions (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE)",
    # id: the turn's number + 1, in the order ids were first stored. turn_id: the message's id.
    # time, timestamp, session_timestamp: microseconds since 1970 UTC (the message's resolved
    # time, its own timestamp, its session's), NULL for none. metadata: a JSON object or NULL.
    """CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        session INTEGER NOT NULL REFERENCES sessions (id),
        speaker INTEGER NOT NULL REFERENCES speakers (id),
        length INTEGER NOT NULL,
        turn_id TEXT NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        date_str TEXT NOT NULL,
        timestamp INTEGER,
        session_timestamp INTEGER,
        time INTEGER,
        metadata TEXT
    )""",
    "CREATE UNIQUE INDEX messages_turn_id ON messages (turn_id)",
    # Each turn's own terms, already stemmed by himga.memory.text, so FTS5's plain `ascii`
    # tokenizer only splits on the spaces between them. Contentless: the text is in messages.
    "CREATE VIRTUAL TABLE turns_fts USING fts5(terms, content='', tokenize='ascii', columnsize=0)",
    "CREATE VIRTUAL TABLE turns_vocab USING fts5vocab(turns_fts, instance)",
    *RECEIPTS,
)


def open_store(db: sqlite3.Connection, name: str) -> None:
    """Make the database (in a write transaction of the caller's) one of FORMAT indexed by
    METHOD: create its tables, or migrate it, or refuse it; `name` names it in messages."""
    db.execute(META)
    meta = dict(db.execute("SELECT key, value FROM himga_meta"))
    found = int(meta.get("format", "1" if _has_table(db, "messages") else "0"))
    if found > FORMAT:
        raise IncompatibleStoreError(
            f"{name}: written by a newer himga (store format {found}; this himga reads formats "
            f"up to {FORMAT}); open it with that version, or move the file away to start afresh"
        )
    if found == 0:  # a new database
        for statement in TABLES:
            db.execute(statement)
        db.execute("INSERT OR REPLACE INTO himga_meta VALUES ('generation', '0')")
    else:
        for version in range(found, FORMAT):
            MIGRATIONS[version](db)
        if meta.get("method", METHOD) != METHOD:
            reindex(db)
    db.execute("INSERT OR REPLACE INTO himga_meta VALUES ('format', ?)", (str(FORMAT),))
    db.execute("INSERT OR REPLACE INTO himga_meta VALUES ('method', ?)", (METHOD,))


def is_current(db: sqlite3.Connection) -> bool:
    """Whether the database (read in a transaction of the caller's) is of FORMAT and indexed by
    METHOD, so that it opens without a write."""
    if not _has_table(db, "himga_meta"):
        return False
    meta = dict(db.execute("SELECT key, value FROM himga_meta"))
    return meta.get("format") == str(FORMAT) and meta.get("method") == METHOD


def _has_table(db: sqlite3.Connection, table: str) -> bool:
    found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
    return found.fetchone() is not None


def bump_generation(db: sqlite3.Connection) -> str:
    """Tell other connections to read everything again; the new generation."""
    db.execute("UPDATE himga_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
    (generation,) = db.execute("SELECT value FROM himga_meta WHERE key = 'generation'").fetchone()
    return str(generation)


def _from_1(db: sqlite3.Connection) -> None:
    """Format 1 -> 2: ids, times and metadata.

    Every message keeps its row, text and place. Its turn_id becomes its id; a message stored
    without one (an empty turn_id) gets a new id, and a later message that repeated an earlier
    one's turn_id (format 1 kept both, as when two conversations shared a namespace) becomes
    `<turn_id>#2`, `#3`, ..., so that every message is still there and still reads as the turn
    it was. Its time is read from its date_str (himga.memory.times)."""
    for column in (
        "timestamp INTEGER",
        "session_timestamp INTEGER",
        "time INTEGER",
        "metadata TEXT",
    ):
        db.execute(f"ALTER TABLE messages ADD COLUMN {column}")
    dates = [date for (date,) in db.execute("SELECT DISTINCT date_str FROM messages")]
    for date in dates:
        moment = parse_date_str(date)
        if moment is not None:
            db.execute("UPDATE messages SET time = ? WHERE date_str = ?", (micros(moment), date))
    rows = db.execute("SELECT id, turn_id FROM messages ORDER BY id").fetchall()
    taken = {turn_id for _, turn_id in rows}
    seen: set[str] = set()
    renamed = []
    for row_id, turn_id in rows:
        if not turn_id:
            renamed.append((new_id(), row_id))
        elif turn_id in seen:
            again = next(f"{turn_id}#{n}" for n in count(2) if f"{turn_id}#{n}" not in taken)
            taken.add(again)
            renamed.append((again, row_id))
        else:
            seen.add(turn_id)
    db.executemany("UPDATE messages SET turn_id = ? WHERE id = ?", renamed)
    db.execute("CREATE UNIQUE INDEX messages_turn_id ON messages (turn_id)")
    db.execute("INSERT OR IGNORE INTO himga_meta VALUES ('generation', '0')")


def _from_2(db: sqlite3.Connection) -> None:
    """Format 2 -> 3: the receipts of writes made with a request id."""
    for statement in RECEIPTS:
        db.execute(statement)


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _from_1, 2: _from_2}
"""format -> the step that takes a database of that format to the next one."""


def reindex(db: sqlite3.Connection) -> None:
    """Index every stored message again with this himga's method: its terms, length and
    speaker, from the text it stores."""
    db.execute("INSERT INTO turns_fts (turns_fts) VALUES ('delete-all')")
    db.execute("DELETE FROM speakers")
    speakers: dict[str, int] = {}
    numbers = count(1)
    for rows in _batches(db, "SELECT id, role, content FROM messages"):
        ids, roles, contents = zip(*rows, strict=True)
        own_terms = terms_of(contents)
        keys = [speaker_key(role) for role in roles]
        for key in keys:
            if key not in speakers:
                speakers[key] = next(numbers)
                db.execute("INSERT INTO speakers VALUES (?, ?)", (speakers[key], key))
        db.executemany(
            "UPDATE messages SET speaker = ?, length = ? WHERE id = ?",
            [
                (speakers[key], len(own), row_id)
                for row_id, key, own in zip(ids, keys, own_terms, strict=True)
            ],
        )
        db.executemany(
            "INSERT INTO turns_fts (rowid, terms) VALUES (?, ?)",
            [(i, " ".join(own)) for i, own in zip(ids, own_terms, strict=True) if own],
        )
    bump_generation(db)


def _batches(db: sqlite3.Connection, select: str) -> Iterator[list[tuple[int, str, str]]]:
    """The rows of `select` (whose first column is the rowid) in rowid order, a batch at a time,
    each batch read whole before the caller changes any row."""
    last = 0
    while rows := db.execute(
        f"{select} WHERE id > ? ORDER BY id LIMIT ?", (last, _BATCH)
    ).fetchall():
        yield rows
        last = rows[-1][0]
