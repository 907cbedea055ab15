"""PostgreSQL servers of the tests' own: each made by initdb in a temporary directory, on a port
of its own, on 127.0.0.1 only, and removed at the end; a primary alone, or with a synchronous
standby fed by streaming replication (PostgreSQL's own), which a test may promote after killing
the primary.

    with postgres.primary() as db:               # db.url: postgresql://himga@127.0.0.1:PORT/himga
        with postgres.standby(db) as replica:     # synchronous: a COMMIT waits for its WAL there
            url = postgres.cluster_url(db, replica)   # both hosts, read-write target
            db.kill()                              # SIGKILL to the whole server
            replica.promote()                      # the standby takes writes

The binaries come from `pg_config --bindir` or Debian's /usr/lib/postgresql/<version>/bin
(`scripts/postgres.sh` installs them). PostgreSQL refuses to run as root: when the tests run as
root, the servers run as the `postgres` user (Debian's package makes it), in directories that user
owns. Connections are trusted from 127.0.0.1 only, as the user `himga`, and the servers listen on
nothing else, so only this machine's processes can reach them, for the duration of a test run.
"""

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.ports import free_port

USER = "himga"
"""The superuser and the database of every server here."""
DATABASE = "himga"
_START_SECONDS = 60.0
_SYNC_SECONDS = 60.0


def binaries() -> Path:
    """The directory of PostgreSQL's server programs; RuntimeError, saying how to get them,
    when this machine has none."""
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        found = Path(subprocess.check_output([pg_config, "--bindir"], text=True).strip())
        if (found / "initdb").exists():
            return found
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda path: int(path.parent.parent.name) if path.parent.parent.name.isdigit() else 0,
    )
    if versions:
        return versions[-1].parent
    raise RuntimeError("no PostgreSQL server programs here: run `bash scripts/postgres.sh`")


def _owner() -> dict[str, Any]:
    """Popen's arguments that run a server program as its owner: `postgres` when this is root."""
    if os.geteuid() != 0:
        return {}
    return {"user": "postgres", "group": pwd.getpwnam("postgres").pw_gid}


class Postgres:
    """One PostgreSQL server: its directory (data and socket), its port and its process."""

    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory
        self.name = name
        """The application name it uses as a standby (`synchronous_standby_names`)."""
        self.data = directory / "data"
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log = directory / "server.log"

    @property
    def url(self) -> str:
        """The connection string of its database."""
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{DATABASE}"

    def run(self, program: str, *args: str) -> str:
        """Run one of PostgreSQL's programs as the servers' owner; its output. CalledProcessError
        (with what it said) when it fails."""
        done = subprocess.run(
            [str(binaries() / program), *args],
            capture_output=True,
            text=True,
            cwd=self.directory,
            **_owner(),
        )
        if done.returncode != 0:
            raise subprocess.CalledProcessError(
                done.returncode, done.args, done.stdout, done.stderr
            )
        output: str = done.stdout
        return output

    def sql(self, statement: str) -> str:
        """Run `statement` on its database, as the superuser; the rows, `|`-separated."""
        return self.run(
            "psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", self.url, "-c", statement
        ).strip()

    def start(self) -> None:
        """Start the server and wait until it takes connections (a standby: read-only ones)."""
        self.port = self.port or free_port()
        log = self.log.open("ab")
        self.process = subprocess.Popen(
            [
                str(binaries() / "postgres"),
                "-D",
                str(self.data),
                "-p",
                str(self.port),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                f"unix_socket_directories={self.directory}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: kill() ends every process of it
            **_owner(),
        )
        log.close()
        deadline = time.monotonic() + _START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"postgres exited with {self.process.returncode}: {self._said()}"
                )
            ready = subprocess.run(
                [str(binaries() / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)],
                check=False,
            )
            if ready.returncode == 0:
                return
            time.sleep(0.1)
        raise RuntimeError(f"postgres did not start in {_START_SECONDS} s: {self._said()}")

    def stop(self) -> None:
        """Stop the server cleanly (a fast shutdown), if it runs."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(_START_SECONDS)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """SIGKILL every process of the server at once, as a machine that dies would."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def promote(self) -> None:
        """Make a standby a primary, and wait until it takes writes."""
        self.run("pg_ctl", "promote", "-w", "-t", str(int(_START_SECONDS)), "-D", str(self.data))

    def _said(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except FileNotFoundError:
            return ""


@contextmanager
def _directory(prefix: str) -> Iterator[Path]:
    """A fresh directory the servers' owner owns, mode 0700; removed at the end."""
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    owner = _owner()
    if owner:
        os.chown(directory, pwd.getpwnam(owner["user"]).pw_uid, owner["group"])
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@contextmanager
def primary(*, fsync: bool = True) -> Iterator[Postgres]:
    """A new PostgreSQL server with an empty database `himga`, ready for standbys; stopped and
    removed at the end. `fsync=False` only for tests that do not survive a machine's crash."""
    with _directory("himga-postgres-") as directory:
        server = Postgres(directory, "primary")
        server.run(
            "initdb", "-D", str(server.data), "-U", USER, "--auth=trust",
            "--encoding=UTF8", "--locale=C", "--no-instructions",
        )  # fmt: skip
        with (server.data / "postgresql.conf").open("a") as conf:
            conf.write(
                "wal_level = replica\n"
                "max_wal_senders = 8\n"
                "max_replication_slots = 8\n"
                "hot_standby = on\n"
                "wal_keep_size = 256MB\n"
                "max_connections = 200\n"
                f"fsync = {'on' if fsync else 'off'}\n"
            )
        # Only 127.0.0.1, as `himga`, for queries and for replication.
        (server.data / "pg_hba.conf").write_text(
            f"local all {USER} trust\n"
            f"host all {USER} 127.0.0.1/32 trust\n"
            f"host replication {USER} 127.0.0.1/32 trust\n"
        )
        server.start()
        try:
            server.run("createdb", "-h", "127.0.0.1", "-p", str(server.port), "-U", USER, DATABASE)
            yield server
        finally:
            server.stop()


@contextmanager
def standby(
    of: Postgres, name: str = "standby1", *, synchronous: bool = True
) -> Iterator[Postgres]:
    """A hot standby of `of`, fed by streaming replication; with `synchronous`, `of` is set to
    wait for it on every COMMIT (synchronous_commit on, this standby named in
    synchronous_standby_names), and this returns once it is in sync."""
    with _directory(f"himga-{name}-") as directory:
        server = Postgres(directory, name)
        server.run(
            "pg_basebackup", "-D", str(server.data), "-h", "127.0.0.1", "-p", str(of.port),
            "-U", USER, "-X", "stream", "-R", "-c", "fast",
            "-d", f"application_name={name} host=127.0.0.1 port={of.port} user={USER}",
        )  # fmt: skip
        server.start()
        try:
            if synchronous:
                of.sql(f"ALTER SYSTEM SET synchronous_standby_names = '{name}'")
                of.sql("SELECT pg_reload_conf()")
                _wait_sync(of, name)
            yield server
        finally:
            server.stop()


def _wait_sync(primary: Postgres, name: str) -> None:
    deadline = time.monotonic() + _SYNC_SECONDS
    while time.monotonic() < deadline:
        state = primary.sql(
            f"SELECT sync_state FROM pg_stat_replication WHERE application_name = '{name}'"
        )
        if state == "sync":
            return
        time.sleep(0.1)
    raise RuntimeError(f"standby {name} was not in sync after {_SYNC_SECONDS} s")


def cluster_url(*servers: Postgres) -> str:
    """One connection string naming every server, for a client that must find the one that
    takes writes (libpq's multi-host string with target_session_attrs=read-write)."""
    hosts = ",".join(f"127.0.0.1:{server.port}" for server in servers)
    return f"postgresql://{USER}@{hosts}/{DATABASE}?target_session_attrs=read-write"
