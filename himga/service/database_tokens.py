"""Tokens kept in PostgreSQL (`himga_tokens`), for servers over one database: a token made or
revoked with `himga auth ... --database URL` holds on every server within a second or so.

Each server reads the table at start and then watches `himga_counters`' `tokens` row, which
every change raises: once a second it reads that one row, and the tokens again only when it
moved. While the database cannot be read the tokens read last stay in force (the log says so).
Rows hold what an auth file holds (himga.service.tokens): ids and SHA-256 hashes, never a
token.
"""

import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from himga.errors import DatabaseUnavailable
from himga.service import tokens
from himga.service.tokens import Tokens
from himga.storage.postgres import Database

_log = logging.getLogger(__name__)

CHECK_SECONDS = 1.0
"""How often a server looks whether the tokens changed."""


def _counter(connection: psycopg.Connection[Any], lock: bool = False) -> int:
    row = connection.execute(
        "SELECT value FROM himga_counters WHERE name = 'tokens'" + (" FOR UPDATE" if lock else "")
    ).fetchone()
    assert row is not None  # made by the migration that made the table
    return int(row[0])


def _read(connection: psycopg.Connection[Any]) -> Tokens:
    rows = connection.execute(
        "SELECT id, sha256, namespaces, rights, created FROM himga_tokens ORDER BY created, id"
    ).fetchall()
    return tokens.from_json(
        {
            "himga_auth": tokens.FORMAT,
            "tokens": [
                {
                    "id": token_id,
                    "sha256": digest,
                    "namespaces": json.loads(namespaces),
                    "rights": rights.split(","),
                    "created": created,
                }
                for token_id, digest, namespaces, rights, created in rows
            ],
        },
        "himga_tokens",
    )


def load(database: Database) -> tuple[int, Tokens]:
    """The tokens in the database, and the counter they were read at."""
    with database.transaction(snapshot=True) as connection:
        return _counter(connection), _read(connection)


@contextmanager
def editing(database: Database) -> Iterator[Tokens]:
    """The tokens in the database, saved when the block ends without an error (edits wait for
    each other: the counter's row is held)."""
    with database.transaction() as connection:
        _counter(connection, lock=True)
        held = _read(connection)
        yield held
        connection.execute("DELETE FROM himga_tokens")
        for grant in held.grants.values():
            connection.execute(
                "INSERT INTO himga_tokens VALUES (%s, %s, %s, %s, %s)",
                (
                    grant.id,
                    grant.sha256,
                    json.dumps(list(grant.namespaces)),
                    ",".join(sorted(grant.rights, key=tokens.RIGHTS.index)),
                    grant.created,
                ),
            )
        connection.execute("UPDATE himga_counters SET value = value + 1 WHERE name = 'tokens'")


class DatabaseTokens:
    """The tokens a server accepts, read from the database and kept current by a thread."""

    def __init__(self, database: Database, check_seconds: float = CHECK_SECONDS) -> None:
        self._database = database
        self._seen, self._tokens = load(database)  # DatabaseUnavailable: no start
        self._stopped = threading.Event()
        self._check_seconds = check_seconds
        self._watcher = threading.Thread(target=self._watch, name="himga-tokens", daemon=True)
        self._watcher.start()

    @property
    def tokens(self) -> Tokens:
        return self._tokens

    def reload(self) -> bool:
        """Read the tokens again if they changed; False (keeping those held) when the database
        cannot be read."""
        try:
            with self._database.transaction(snapshot=True) as connection:
                seen = _counter(connection)
                if seen != self._seen:
                    self._tokens, self._seen = _read(connection), seen
                    _log.info("tokens read again: %d tokens", len(self._tokens.grants))
        except DatabaseUnavailable as error:
            _log.warning("tokens not read again, keeping the last ones: %s", error)
            return False
        return True

    def _watch(self) -> None:
        while not self._stopped.wait(self._check_seconds):
            try:
                self.reload()
            except Exception:  # a row this himga cannot read: keep the tokens, keep watching
                _log.exception("tokens not read again, keeping the last ones")

    def stop(self) -> None:
        self._stopped.set()
