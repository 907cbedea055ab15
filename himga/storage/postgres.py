"""Database: one server process's pool of PostgreSQL connections (psycopg 3, psycopg-pool), the
schema's migrations, and the one place a lost database becomes DatabaseUnavailable.

A server opens one Database (`himga serve --database URL`): the pool keeps `min_size` to
`max_size` connections (a server sizes it from its worker count, so no call waits for one), and
reconnects by itself, with backoff, after the database went away or a standby was promoted.
A connection that failed is discarded by the pool, and the idle ones are checked then, so the
calls that meet a dead server are few. `URL` may name several hosts with
`target_session_attrs=read-write` (libpq's multi-host string): new connections then go to the
one that takes writes.

`transaction()` lends a connection for one transaction, committed when the block ends. Any
loss of the database inside it, COMMIT included, raises DatabaseUnavailable: the caller cannot
know whether a write that failed so committed, and the write's receipt (himga.storage.receipts)
answers its retry.
"""

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import psycopg_pool

from himga.errors import DatabaseUnavailable, IncompatibleStoreError, InvalidArgument
from himga.storage.postgres_schema import LOCK_KEY, MIGRATIONS, VERSION

_log = logging.getLogger(__name__)

CONNECT_SECONDS = 3.0
"""How long one connection attempt may take."""
WAIT_SECONDS = 5.0
"""How long a call waits for a connection before it answers that the database is unavailable."""
_CHECK_EVERY_SECONDS = 1.0
LOCK_SECONDS = 10
"""How long a statement waits for a row another transaction holds (a namespace's, mostly)."""
IDLE_SECONDS = 60
"""How long a transaction may sit idle before PostgreSQL ends its session."""


class Database:
    """A pool of connections to the PostgreSQL database at `url`, its schema migrated to
    VERSION when it opens (`migrate=False` leaves the schema to the caller)."""

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 2,
        max_size: int = 10,
        wait_seconds: float = WAIT_SECONDS,
        migrate: bool = True,
    ) -> None:
        self.url = url
        self._pool: psycopg_pool.ConnectionPool[psycopg.Connection[Any]] = (
            psycopg_pool.ConnectionPool(
                url,
                min_size=min_size,
                max_size=max_size,
                open=False,
                timeout=wait_seconds,
                kwargs={
                    "connect_timeout": int(CONNECT_SECONDS),
                    "application_name": "himga",
                    # A peer that stops while it holds a namespace's row (paused, cut off) holds
                    # no other server's calls, or stop(), for long: waits for a row end after
                    # LOCK_SECONDS, an idle transaction after IDLE_SECONDS, a dead peer's
                    # connection within about 25 s of silence.
                    "options": f"-c lock_timeout={LOCK_SECONDS * 1000} "
                    f"-c idle_in_transaction_session_timeout={IDLE_SECONDS * 1000}",
                    "keepalives": 1,
                    "keepalives_idle": 10,
                    "keepalives_interval": 5,
                    "keepalives_count": 3,
                },
                reconnect_timeout=24 * 3600.0,
                name="himga",
            )
        )
        self._checked = 0.0
        self._checking = threading.Lock()
        try:
            self._pool.open(wait=True, timeout=max(wait_seconds, CONNECT_SECONDS * 2))
        except psycopg_pool.PoolTimeout:
            self._pool.close()
            raise DatabaseUnavailable(
                f"cannot connect to the database at {redacted(url)}: is PostgreSQL running "
                "there, and does it let this user in?"
            ) from None
        try:
            if migrate:
                migrate_schema(self)
        except BaseException:
            self._pool.close()
            raise

    @property
    def name(self) -> str:
        """The connection string without its password, for logs."""
        return redacted(self.url)

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self, *, snapshot: bool = False) -> Iterator[psycopg.Connection[Any]]:
        """A connection in a transaction, committed when the block ends (rolled back on an
        error). `snapshot`: REPEATABLE READ, every statement sees one state (for reads);
        otherwise READ COMMITTED, each statement sees what was committed before it (for
        writes, which lock what they change first). DatabaseUnavailable when the database
        cannot be reached or is lost meanwhile."""
        try:
            with self._pool.connection() as connection:
                connection.isolation_level = (
                    psycopg.IsolationLevel.REPEATABLE_READ
                    if snapshot
                    else psycopg.IsolationLevel.READ_COMMITTED
                )
                yield connection
        except psycopg.DataError as error:  # a value PostgreSQL cannot hold: the caller's to fix
            raise InvalidArgument("", _data_rule(error)) from error
        except (psycopg.OperationalError, psycopg_pool.PoolTimeout) as error:
            self._check_soon()
            raise DatabaseUnavailable(
                f"the database is unavailable ({_first_line(error)}): nothing is known to be "
                "stored; call again (a write with the same request_id is stored once)"
            ) from error

    def reachable(self) -> bool:
        """Whether a connection can be had and takes writes (the primary, not a standby)."""
        try:
            with self.transaction() as connection:
                row = connection.execute("SELECT pg_is_in_recovery()").fetchone()
                return row is not None and not row[0]
        except DatabaseUnavailable:
            return False

    def _check_soon(self) -> None:
        """Have the pool check its idle connections (in the background, at most once a
        second): those to a server that went away are replaced before calls meet them."""
        now = time.monotonic()
        with self._checking:
            if now - self._checked < _CHECK_EVERY_SECONDS:
                return
            self._checked = now
        threading.Thread(target=self._check, name="himga-pool-check", daemon=True).start()

    def _check(self) -> None:
        try:
            self._pool.check()
        except Exception as error:  # a pool closing meanwhile; the next failure checks again
            _log.debug("pool check: %s", error)


def _data_rule(error: psycopg.DataError) -> str:
    """What a request must change for PostgreSQL to store it."""
    if "NUL" in str(error):
        return (
            "text holding the NUL character (U+0000) cannot be stored in PostgreSQL: remove it "
            "from the request's strings"
        )
    return f"a value PostgreSQL cannot store: {_first_line(error)}"


def migrate_schema(database: Database, upto: int = VERSION) -> int:
    """Bring the schema to version `upto` (every migration not yet run, each in its own
    transaction under the advisory lock); the version found before. IncompatibleStoreError
    when the database is of a newer version than this himga's."""
    with database.transaction() as connection:
        connection.execute("SET LOCAL lock_timeout = 0")  # another server may be migrating
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        connection.execute("CREATE TABLE IF NOT EXISTS himga_schema (version integer NOT NULL)")
        row = connection.execute("SELECT version FROM himga_schema").fetchone()
        if row is None:
            connection.execute("INSERT INTO himga_schema VALUES (0)")
        found = 0 if row is None else int(row[0])
    if found > VERSION:
        raise IncompatibleStoreError(
            f"the database at {redacted(database.url)} has himga schema version {found}, newer "
            f"than this himga's {VERSION}: run a himga of that version (or newer)"
        )
    for version in range(found + 1, upto + 1):
        with database.transaction() as connection:
            connection.execute("SET LOCAL lock_timeout = 0")  # another server may be migrating
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
            (now,) = connection.execute("SELECT version FROM himga_schema").fetchone() or (0,)
            if now >= version:  # another server ran it while this one waited for the lock
                continue
            for statement in MIGRATIONS[version - 1]:
                connection.execute(statement)
            connection.execute("UPDATE himga_schema SET version = %s", (version,))
            _log.info("database schema migrated to version %d", version)
    return found


def namespace_id(connection: psycopg.Connection[Any], namespace: str) -> int:
    """The id of `namespace`'s row, made now if it has none (in the caller's transaction)."""
    connection.execute(
        "INSERT INTO himga_namespaces (name) VALUES (%s) ON CONFLICT (name) DO NOTHING",
        (namespace,),
    )
    row = connection.execute(
        "SELECT id FROM himga_namespaces WHERE name = %s", (namespace,)
    ).fetchone()
    assert row is not None
    return int(row[0])


def namespace_exists(database: Database, namespace: str) -> bool:
    """Whether `namespace` has a row (something of it was ever written), read without a write."""
    with database.transaction(snapshot=True) as connection:
        row = connection.execute(
            "SELECT 1 FROM himga_namespaces WHERE name = %s", (namespace,)
        ).fetchone()
        return row is not None


def recorded_memory(database: Database, namespace: str, memory: str | None) -> str | None:
    """The memory `namespace` holds; with `memory`, recorded now if it holds none yet (the
    first server to record one wins; every other server then reads that one)."""
    with database.transaction() as connection:
        if memory is None:
            row = connection.execute(
                "SELECT memory FROM himga_namespaces WHERE name = %s", (namespace,)
            ).fetchone()
            return None if row is None else row[0]
        row = connection.execute(
            """INSERT INTO himga_namespaces (name, memory) VALUES (%s, %s)
            ON CONFLICT (name) DO UPDATE
                SET memory = coalesce(himga_namespaces.memory, excluded.memory)
            RETURNING memory""",
            (namespace, memory),
        ).fetchone()
        assert row is not None
        return str(row[0])


_SHOWN = ("host", "hostaddr", "port", "dbname", "user", "target_session_attrs", "sslmode")
"""What of a connection string a message or the log may show: where, and as whom; never a
password, a key's passphrase or anything else the string may carry."""


def redacted(url: str) -> str:
    """`url` without its secrets (only the parts in _SHOWN), for messages and logs."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "(a malformed connection string)"
    return psycopg.conninfo.make_conninfo(
        "", **{key: value for key, value in info.items() if key in _SHOWN}
    )


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]
