"""`himga serve`: run the memory server until SIGTERM or SIGINT, then stop gracefully; SIGHUP
reads the auth file again.

Secure by default: without `--auth-file` the server serves loopback addresses only, unless told
`--insecure`; the data directory is made 0700 (one that others can read is reported)."""

import argparse
import contextlib
import logging
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import himga
from himga.episodes.registry import DATABASE_STORE, DEFAULT_STORE, store_names
from himga.memory.registry import DATABASE_MEMORY, DEFAULT_MEMORY, memory_names
from himga.service.doors import DOORS
from himga.storage.namespaces import MAX_OPEN

GRACE_SECONDS = 5.0
"""How long in-flight calls may run on after a stop signal."""
WORKERS = 8
"""The server's threads for calls, and so its connections to a database (two spare)."""

if TYPE_CHECKING:
    from himga.service.auth import AuthFile
    from himga.service.database_tokens import DatabaseTokens
    from himga.service.metrics import Metrics
    from himga.service.server import MemoryServer, ServerConfig
    from himga.storage.postgres import Database

_log = logging.getLogger("himga.serve")


def _positive(text: str) -> int:
    number = int(text)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {number}")
    return number


def _port(text: str) -> int:
    port = int(text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0 to 65535, not {port}")
    return port


@dataclass(frozen=True)
class Option:
    """One option of `himga serve`: its flags and argparse settings, and the field of
    `ServerConfig` it sets as it is given (None: `run` makes something of it first)."""

    flags: tuple[str, ...]
    settings: dict[str, Any]
    config: str | None = None


def option(*flags: str, config: str | None = None, **settings: Any) -> Option:
    return Option(flags, settings, config)


def options() -> tuple[Option, ...]:
    """The options of `himga serve` but the doors' ports, which `DOORS` gives (`--NAME-port`);
    made when asked, so that memories and episode stores registered before (a plug-in, a
    test's) are among the choices. A new option of the server is one more row."""
    return (
        option("--host", default="127.0.0.1", help="address to bind (default: %(default)s)"),
        option(
            "--port",
            type=_port,
            default=50051,
            help="port to bind; 0 picks a free one (default: %(default)s)",
        ),
        option(
            "--memory",
            config="memory",
            choices=memory_names(),
            help=f"memory of namespaces whose calls name none (default: {DEFAULT_MEMORY}; "
            f"{DATABASE_MEMORY} with --database)",
        ),
        option(
            "--embedding-model",
            metavar="NAME|DIR",
            help="with --memory hybrid: the embedding model, a name from the model cache (`himga "
            "models list`) or a model directory (default: e5-small-v2, fetched by `himga models "
            "fetch e5-small-v2`)",
        ),
        option(
            "--memory-option",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="an option of the memory given by --memory (repeatable), as `himga eval-retrieval "
            "--memory-option` takes it: e.g. k1=1.5 for the keyword kinds, graph_threshold=50000 "
            "for hybrid (its vector search through a graph past 50k vectors)",
        ),
        option(
            "--episodes",
            config="episodes",
            choices=store_names(),
            help=f"where namespaces keep their episodes (default: {DEFAULT_STORE}; "
            f"{DATABASE_STORE} with --database)",
        ),
        option(
            "--episodes-option",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="an option of the episode store (repeatable): embedding_model=e5-small-v2 (a "
            "catalog model, a model directory or openai:MODEL@URL) ranks SearchEpisodes by "
            "meaning too (himga models fetch NAME first)",
        ),
        option(
            "--database",
            metavar="URL",
            help="keep every namespace in this PostgreSQL database (postgresql://USER@HOST/DB; "
            "several hosts, with target_session_attrs=read-write, for failover), shared with "
            "every other server given it: they serve as one (needs `pip install "
            "'himga-memory[postgres]'`)",
        ),
        option(
            "--data-dir",
            config="data_dir",
            type=Path,
            default=None,
            help="directory where durable memories keep their files (default: none, keep nothing)",
        ),
        option(
            "--auth-file",
            type=Path,
            metavar="FILE",
            help="require a token from FILE on every call but health and reflection (`himga auth "
            "new-token` makes one); SIGHUP reads FILE again",
        ),
        option(
            "--database-tokens",
            action="store_true",
            help="with --database: require a token from the database's tokens (`himga auth "
            "new-token --database URL`) on every call but health and reflection; every server over "
            "the database sees a change within a few seconds",
        ),
        option(
            "--insecure",
            action="store_true",
            help="serve a non-loopback --host without --auth-file: anyone who reaches the port "
            "may read and reset every namespace",
        ),
        option("--tls-cert", type=Path, metavar="PEM", help="serve TLS: certificate chain"),
        option("--tls-key", type=Path, metavar="PEM", help="serve TLS: its private key"),
        option(
            "--tls-client-ca",
            type=Path,
            metavar="PEM",
            help="mutual TLS: accept only clients with a certificate from this CA",
        ),
        option(
            "--max-open-namespaces",
            config="max_open_namespaces",
            type=_positive,
            default=MAX_OPEN,
            metavar="N",
            help="close the least recently used idle namespaces beyond N (default: %(default)s)",
        ),
        option(
            "--metrics-port",
            type=_port,
            metavar="PORT",
            help="serve Prometheus metrics at http://--metrics-host:PORT/metrics (default: off)",
        ),
        option(
            "--metrics-host",
            default="127.0.0.1",
            help="address of the metrics (default: %(default)s)",
        ),
        option(
            "--cors-origin",
            config="cors_origins",
            action="append",
            default=[],
            metavar="ORIGIN",
            help="let pages from ORIGIN (e.g. https://app.example) call the HTTP port; repeatable "
            "(default: none, CORS off)",
        ),
        option(
            "--allowed-host",
            config="allowed_hosts",
            action="append",
            default=[],
            metavar="HOST",
            help="on a loopback --host, let the HTTP port answer requests addressed to HOST too "
            "(NAME, NAME:PORT, or * for any), as a reverse proxy passing its own Host on sends "
            "them; repeatable (default: localhost, 127.0.0.1, [::1] and --host alone; a --host "
            "others can reach answers any Host)",
        ),
    )


def door_options() -> tuple[Option, ...]:
    """`--NAME-port` for each door of `DOORS`."""
    return tuple(
        option(
            f"--{name}-port",
            type=_port,
            metavar="PORT",
            help=f"also serve the services over {kind.serves} on --host:PORT (default: off); "
            "over TLS with --tls-cert's certificate when given",
        )
        for name, kind in DOORS.items()
    )


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the memory server (gRPC MemoryService and EpisodeService, health, reflection)",
        description="Run the himga memory server until SIGTERM or SIGINT; in-flight calls "
        "finish before it exits. Logs to stderr, including 'listening on HOST:PORT' once ready.",
    )
    for each in (*options(), *door_options()):
        parser.add_argument(*each.flags, **each.settings)
    parser.set_defaults(run=run)


def _problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the combination of options, or None."""
    if (args.tls_cert is None) != (args.tls_key is None):
        return "--tls-cert and --tls-key go together"
    if args.tls_client_ca is not None and args.tls_cert is None:
        return "--tls-client-ca needs --tls-cert and --tls-key"
    if args.database is not None and args.data_dir is not None:
        return "--database keeps every namespace in PostgreSQL: leave out --data-dir"
    if args.database_tokens and (args.database is None or args.auth_file is not None):
        return "--database-tokens needs --database, and takes the place of --auth-file"
    for entry in args.allowed_host:
        from himga.http.hosts import listed_host

        try:
            listed_host(entry)
        except ValueError as error:
            return f"--allowed-host {error}"
    authenticated = args.auth_file is not None or args.database_tokens
    if not authenticated and not args.insecure and not _loopback(args.host):
        return (
            f"--host {args.host} is reachable from other machines: pass --auth-file FILE "
            "(`himga auth new-token` makes one) or, with --database, --database-tokens; or "
            "--insecure to serve it without auth"
        )
    return None


def _loopback(host: str) -> bool:
    from himga.http.hosts import as_host, is_loopback

    return is_loopback(as_host(host))  # 127.0.0.1, localhost, ::1 or [::1]


def run(args: argparse.Namespace) -> int:
    """Serve as `args` say until SIGTERM or SIGINT; the exit code."""
    from himga.cli._signals import Signals
    from himga.service.auth import AuthFile

    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    wanted = [signal.SIGTERM, signal.SIGINT]
    if args.auth_file is not None:
        wanted.append(signal.SIGHUP)
    with Signals(wanted) as signals, contextlib.ExitStack() as closing:
        try:
            serving = _start(args, closing)
        except _Refused as refused:
            _log.error("%s", refused.message)
            return refused.code
        _announce(args, serving)
        while (received := signals.next()) == signal.SIGHUP:
            assert isinstance(serving.config.auth, AuthFile)
            serving.config.auth.reload()
        _log.info("%s received", received.name if received is not None else "a stop")
        stopped = serving.server.stop(GRACE_SECONDS)
        _log.info("stopping: no new calls; calls in flight have %.0f s to finish", GRACE_SECONDS)
        stopped.wait()
    _log.info("stopped")  # after the database, the token watcher and the metrics are closed
    return 0


class _Refused(Exception):
    """`himga serve` cannot start: what to log, and its exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(frozen=True)
class _Serving:
    server: "MemoryServer"
    port: int
    config: "ServerConfig"


def _start(args: argparse.Namespace, closing: contextlib.ExitStack) -> _Serving:
    """The server `args` describe, started; what it holds is closed by `closing` when it
    stops (or when it fails to start). _Refused when it cannot start."""
    from himga.errors import InvalidArgument, ModelError
    from himga.kinds import option_pairs
    from himga.service import fairness
    from himga.service.credentials import ServerTls
    from himga.service.server import ServerConfig, start_server

    problem = _problem(args)
    if problem is not None:
        raise _Refused(problem, 2)
    auth: AuthFile | DatabaseTokens | None = _auth_file(args)
    tls = ServerTls(args.tls_cert, args.tls_key, args.tls_client_ca) if args.tls_cert else None
    fairness.share_interpreter()
    if args.data_dir is not None:
        _private_data_dir(args.data_dir)
    addresses = {
        name: (args.host, getattr(args, f"{name}_port"))
        for name in DOORS
        if getattr(args, f"{name}_port") is not None
    }
    database: Database | None = None
    if args.database is not None:
        # Each call holds a connection: the gRPC port's workers, and each door's as many more.
        database = _database(args.database, WORKERS * (1 + len(addresses)))
        closing.callback(database.close)
    if args.database_tokens:
        auth = watched = _database_tokens(database)
        closing.callback(watched.stop)
    metrics = _metrics(args, closing)  # before the ports: a metrics port in use stops no server
    memory = args.memory or (DATABASE_MEMORY if database is not None else DEFAULT_MEMORY)
    config = ServerConfig(
        f"{_bracketed(args.host)}:{args.port}",
        database=database,
        max_workers=WORKERS,
        auth=auth,
        tls=tls,
        metrics=metrics,
        door_addresses=addresses,
        memory_options={memory: _memory_options(memory, args.embedding_model, args.memory_option)},
        episode_options=option_pairs(args.episodes_option),
        **{each.config: getattr(args, _dest(each)) for each in options() if each.config},
    )
    try:
        server, port = start_server(config)
    except (ValueError, ModelError) as error:  # an unreadable TLS file, a memory the place
        # cannot keep, a bad option, an embedding model missing or not what its card says
        said = error.whole() if isinstance(error, InvalidArgument) else str(error)
        raise _Refused(said, 2) from error
    except RuntimeError as error:  # grpc cannot bind the address
        raise _Refused(
            f"cannot listen on {config.address} (--host, --port): {error}: give a free port (0 "
            "picks one) on an address of this machine",
            1,
        ) from error
    except OSError as error:  # a door cannot bind its address (or read its TLS files)
        doors = ", ".join(f"{_bracketed(host)}:{port}" for host, port in addresses.values())
        flags = ", ".join(f"--{name}-port" for name in addresses)
        raise _Refused(f"cannot serve HTTP on {doors} (--host, {flags}): {error}", 1) from error
    return _Serving(server, port, config)


def _metrics(args: argparse.Namespace, closing: contextlib.ExitStack) -> "Metrics | None":
    """The metrics, served at --metrics-host:--metrics-port (None: not asked for); stopped by
    `closing`. _Refused when they cannot be served there."""
    from himga.service.metrics import Metrics

    if args.metrics_port is None:
        return None
    metrics = Metrics()
    try:
        port = metrics.serve(args.metrics_host, args.metrics_port)
    except OSError as error:  # in use, not an address of this machine, a name that resolves not
        said = error.strerror or str(error) or type(error).__name__
        raise _Refused(
            f"cannot serve metrics on {_bracketed(args.metrics_host)}:{args.metrics_port} "
            f"(--metrics-host, --metrics-port): {said}: give a free port (0 picks one) on an "
            "address of this machine",
            1,
        ) from error
    closing.callback(metrics.stop)
    _log.info("metrics on http://%s:%d/metrics", _bracketed(args.metrics_host), port)
    return metrics


def _dest(each: Option) -> str:
    return each.flags[0].lstrip("-").replace("-", "_")


def _bracketed(host: str) -> str:
    """`host` as it goes before `:PORT` (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host


def _auth_file(args: argparse.Namespace) -> "AuthFile | None":
    from himga.service.auth import AuthFile
    from himga.service.tokens import AuthFileError
    from himga.storage.files import exposed_to_others, mode_of

    if args.auth_file is None:
        return None
    try:
        auth = AuthFile(args.auth_file)
    except AuthFileError as error:
        raise _Refused(str(error), 2) from error
    if exposed_to_others(args.auth_file):
        _log.warning(
            "%s is readable by others (mode %s): chmod 600 it",
            args.auth_file,
            mode_of(args.auth_file),
        )
    return auth


def _private_data_dir(data_dir: Path) -> None:
    """`data_dir` made (0700) if missing; _Refused when it is no directory or cannot be made."""
    from himga.storage.files import exposed_to_others, make_private_dir, mode_of

    try:
        make_private_dir(data_dir)
        directory = data_dir.is_dir()
    except OSError as error:  # a parent that is a file, a file system that takes no directory
        said = error.strerror or str(error) or type(error).__name__
        where = f" ({error.filename})" if error.filename not in (None, str(data_dir)) else ""
        raise _Refused(
            f"--data-dir {data_dir}: cannot make it: {said}{where}: give a directory that "
            "exists or can be made",
            2,
        ) from error
    if not directory:
        raise _Refused(
            f"--data-dir {data_dir} is not a directory: give a directory (made if missing)", 2
        )
    if exposed_to_others(data_dir):
        _log.warning(
            "data dir %s can be read by other users (mode %s): chmod 700 it",
            data_dir,
            mode_of(data_dir),
        )


def _database_tokens(database: "Database | None") -> "DatabaseTokens":
    from himga.errors import HimgaError
    from himga.service import database_tokens

    assert database is not None  # _problem: --database-tokens needs --database
    try:
        return database_tokens.DatabaseTokens(database)
    except HimgaError as error:  # unreachable meanwhile, or a row it cannot read
        raise _Refused(f"cannot read the tokens in the database: {error}", 1) from error


def _announce(args: argparse.Namespace, serving: _Serving) -> None:
    """Log how the server is protected, where it keeps things, and where it listens."""
    from himga.service.auth import AuthFile

    server, config = serving.server, serving.config
    auth, tls, database = config.auth, config.tls, config.database
    if isinstance(auth, AuthFile):
        _log.info(
            "auth: %d tokens from %s (SIGHUP reloads it)", len(auth.tokens.grants), args.auth_file
        )
    elif auth is not None:
        _log.info("auth: %d tokens from the database, watched", len(auth.tokens.grants))
    elif _loopback(args.host):
        _log.warning(
            "no --auth-file: every local process may call this server; serving loopback only"
        )
    else:
        _log.warning("--insecure: no --auth-file, and %s is reachable by others", args.host)
    if tls is None and not _loopback(args.host):
        _log.warning("no --tls-cert: calls (and tokens) travel in plaintext")
    if config.data_dir is None and database is None:
        _log.warning("no --data-dir: memories keep nothing on disk and forget all at exit")
    host = _bracketed(args.host)
    for name, door in server.doors.items():
        kind = DOORS[name]
        scheme = kind.scheme if tls is None else kind.scheme + "s"
        _log.info("%s on %s://%s:%d/", kind.serves, scheme, host, door.port)
    _log.info(
        "listening on %s:%d (memory %s, episodes %s, %s, %s)",
        host,
        serving.port,
        server.namespaces.default_memory,
        server.episodes_kind,
        f"database {database.name}" if database else f"data dir {config.data_dir or 'none'}",
        "TLS" if tls is not None else "plaintext",
    )


def _memory_options(memory: str, embedding_model: str | None, texts: list[str]) -> Any:
    """The options of the default memory (`--memory-option` texts, and `--embedding-model`,
    which is `embedding_model=`), with its model loaded now if it has one (a missing or corrupt
    model is refused at start-up). _Refused, saying why, when they cannot be had."""
    from himga.errors import InvalidArgument, ModelError
    from himga.memory.registry import command_options

    flags = "--memory-option" if embedding_model is None else "--embedding-model"
    try:
        options = command_options(memory, texts, embedding_model)
    except InvalidArgument as error:  # an option the memory does not take, or a bad value
        raise _Refused(f"{flags} (memory {memory}): {error.whole()}", 2) from error
    prepare = getattr(options, "prepare", None)  # the kinds whose options load something
    if prepare is not None:
        try:
            prepare()
        except ModelError as error:
            raise _Refused(str(error), 2) from error
    return options


def _database(url: str, calls: int) -> "Database":
    """The database at `url`, its schema migrated, with a connection for each of `calls` calls
    at once (and two more: health's probe, the token watcher). _Refused, saying why, when it
    cannot be had."""
    try:
        import psycopg

        from himga.storage.postgres import Database, redacted
    except ImportError:
        raise _Refused(
            f"--database needs PostgreSQL's driver: {himga.install_hint('postgres')}", 2
        ) from None
    from himga.errors import DatabaseUnavailable, IncompatibleStoreError

    try:
        return Database(url, min_size=WORKERS, max_size=calls + 2)
    except (DatabaseUnavailable, IncompatibleStoreError) as error:
        raise _Refused(str(error), 1) from error
    except psycopg.Error as error:  # e.g. a standby, read-only, named without read-write
        said = str(error).strip()
        raise _Refused(
            f"the database at {redacted(url)} refused to set up himga's schema "
            f"({said.splitlines()[0] if said else type(error).__name__}): give the primary, or "
            "every host with target_session_attrs=read-write",
            1,
        ) from error
