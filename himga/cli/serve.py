"""`himga serve`: run the memory server until SIGTERM or SIGINT, then stop gracefully; SIGHUP
reads the auth file again.

Secure by default: without `--auth-file` the server serves loopback addresses only, unless told
`--insecure`; the data directory is made 0700 (one that others can read is reported)."""

import argparse
import ipaddress
import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import himga
from himga.episodes.registry import DATABASE_STORE, DEFAULT_STORE, store_names
from himga.memory.registry import DATABASE_MEMORY, DEFAULT_MEMORY, memory_names

GRACE_SECONDS = 5.0
"""How long in-flight calls may run on after a stop signal."""
WORKERS = 8
"""The server's threads for calls, and so its connections to a database (two spare)."""
MAX_OPEN_NAMESPACES = 256
"""The default bound on open namespaces: about 3 file descriptors each for SQLite."""

if TYPE_CHECKING:
    from himga.cli.signals import Signals
    from himga.service.database_tokens import DatabaseTokens
    from himga.storage.postgres import Database

_log = logging.getLogger("himga.serve")


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the memory server (gRPC MemoryService and EpisodeService, health, reflection)",
        description="Run the himga memory server until SIGTERM or SIGINT; in-flight calls "
        "finish before it exits. Logs to stderr, including 'listening on HOST:PORT' once ready.",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: %(default)s)"
    )
    parser.add_argument(
        "--port",
        type=_port,
        default=50051,
        help="port to bind; 0 picks a free one (default: %(default)s)",
    )
    parser.add_argument(
        "--memory",
        choices=memory_names(),
        help=f"memory of namespaces whose calls name none (default: {DEFAULT_MEMORY}; "
        f"{DATABASE_MEMORY} with --database)",
    )
    parser.add_argument(
        "--embedding-model",
        metavar="NAME|DIR",
        help="with --memory hybrid: the embedding model, a name from the model cache (`himga "
        "models list`) or a model directory (default: e5-small-v2, fetched by `himga models "
        "fetch e5-small-v2`)",
    )
    parser.add_argument(
        "--episodes",
        choices=store_names(),
        help=f"where namespaces keep their episodes (default: {DEFAULT_STORE}; "
        f"{DATABASE_STORE} with --database)",
    )
    parser.add_argument(
        "--episodes-option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an option of the episode store (repeatable): embedding_model=e5-small-v2 (a "
        "catalog model, a model directory or openai:MODEL@URL) ranks SearchEpisodes by meaning "
        "too (himga models fetch NAME first)",
    )
    parser.add_argument(
        "--database",
        metavar="URL",
        help="keep every namespace in this PostgreSQL database (postgresql://USER@HOST/DB; "
        "several hosts, with target_session_attrs=read-write, for failover), shared with every "
        "other server given it: they serve as one (needs `pip install 'himga-memory[postgres]'`)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="directory where durable memories keep their files (default: none, keep nothing)",
    )
    parser.add_argument(
        "--auth-file",
        type=Path,
        metavar="FILE",
        help="require a token from FILE on every call but health and reflection (`himga auth "
        "new-token` makes one); SIGHUP reads FILE again",
    )
    parser.add_argument(
        "--database-tokens",
        action="store_true",
        help="with --database: require a token from the database's tokens (`himga auth "
        "new-token --database URL`) on every call but health and reflection; every server over "
        "the database sees a change within a few seconds",
    )
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="serve a non-loopback --host without --auth-file: anyone who reaches the port "
        "may read and reset every namespace",
    )
    parser.add_argument("--tls-cert", type=Path, metavar="PEM", help="serve TLS: certificate chain")
    parser.add_argument("--tls-key", type=Path, metavar="PEM", help="serve TLS: its private key")
    parser.add_argument(
        "--tls-client-ca",
        type=Path,
        metavar="PEM",
        help="mutual TLS: accept only clients with a certificate from this CA",
    )
    parser.add_argument(
        "--max-open-namespaces",
        type=_positive,
        default=MAX_OPEN_NAMESPACES,
        metavar="N",
        help="close the least recently used idle namespaces beyond N (default: %(default)s)",
    )
    parser.add_argument(
        "--metrics-port",
        type=_port,
        metavar="PORT",
        help="serve Prometheus metrics at http://--metrics-host:PORT/metrics (default: off)",
    )
    parser.add_argument(
        "--metrics-host", default="127.0.0.1", help="address of the metrics (default: %(default)s)"
    )
    parser.add_argument(
        "--http-port",
        type=_port,
        metavar="PORT",
        help="also serve the services over HTTP on --host:PORT (Connect JSON and binary, "
        "gRPC-Web), the OpenAPI document at /openapi.json and the memory browser at / "
        "(default: off); over TLS with --tls-cert's certificate when given",
    )
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let pages from ORIGIN (e.g. https://app.example) call the HTTP port; repeatable "
        "(default: none, CORS off)",
    )
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
    authenticated = args.auth_file is not None or args.database_tokens
    if not authenticated and not args.insecure and not _loopback(args.host):
        return (
            f"--host {args.host} is reachable from other machines: pass --auth-file FILE "
            "(`himga auth new-token` makes one) or, with --database, --database-tokens; or "
            "--insecure to serve it without auth"
        )
    return None


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run(args: argparse.Namespace) -> int:
    """Serve as `args` say until SIGTERM or SIGINT; the exit code."""
    from himga.cli.signals import Signals

    wanted = [signal.SIGTERM, signal.SIGINT]
    if args.auth_file is not None:
        wanted.append(signal.SIGHUP)
    with Signals(wanted) as signals:
        return _serve(args, signals)


def _serve(args: argparse.Namespace, signals: "Signals") -> int:
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from himga.embeddings import ModelError
    from himga.kinds import option_pairs
    from himga.service import fairness
    from himga.service.auth import AuthFile
    from himga.service.credentials import ServerTls
    from himga.service.metrics import Metrics
    from himga.service.server import ServerConfig, start_server
    from himga.service.tokens import AuthFileError
    from himga.storage.files import exposed_to_others, make_private_dir, mode_of

    problem = _problem(args)
    if problem is not None:
        _log.error("%s", problem)
        return 2
    try:
        auth: AuthFile | DatabaseTokens | None = (
            AuthFile(args.auth_file) if args.auth_file is not None else None
        )
    except AuthFileError as error:
        _log.error("%s", error)
        return 2
    if args.auth_file is not None and exposed_to_others(args.auth_file):
        _log.warning(
            "%s is readable by others (mode %s): chmod 600 it",
            args.auth_file,
            mode_of(args.auth_file),
        )
    tls = ServerTls(args.tls_cert, args.tls_key, args.tls_client_ca) if args.tls_cert else None
    fairness.share_interpreter()
    data_dir: Path | None = args.data_dir
    if data_dir is not None:
        make_private_dir(data_dir)
        if exposed_to_others(data_dir):
            _log.warning(
                "data dir %s can be read by other users (mode %s): chmod 700 it",
                data_dir,
                mode_of(data_dir),
            )
    host = f"[{args.host}]" if ":" in args.host else args.host
    metrics = Metrics() if args.metrics_port is not None else None
    # Each call holds a connection: the gRPC port's workers, and the HTTP port's as many more.
    calls = WORKERS * (2 if args.http_port is not None else 1)
    database = _database(args.database, calls) if args.database is not None else None
    if isinstance(database, int):
        return database
    if args.database_tokens:
        from himga.errors import HimgaError
        from himga.service import database_tokens

        assert database is not None
        try:
            auth = database_tokens.DatabaseTokens(database)
        except HimgaError as error:  # unreachable meanwhile, or a row it cannot read
            _log.error("cannot read the tokens in the database: %s", error)
            _close(database)
            return 1
    memory = args.memory or (DATABASE_MEMORY if database is not None else DEFAULT_MEMORY)
    options = _memory_options(memory, args.embedding_model)
    if isinstance(options, int):
        _close(database)
        return options
    try:
        server, port = start_server(
            ServerConfig(
                f"{host}:{args.port}",
                memory=args.memory,
                episodes=args.episodes,
                data_dir=data_dir,
                database=database,
                max_workers=WORKERS,
                auth=auth,
                tls=tls,
                max_open_namespaces=args.max_open_namespaces,
                metrics=metrics,
                http_address=(args.host, args.http_port) if args.http_port is not None else None,
                cors_origins=args.cors_origin,
                memory_options={memory: options},
                episode_options=option_pairs(args.episodes_option),
            )
        )
    except (ValueError, ModelError) as error:  # an unreadable TLS file, a memory the place
        # cannot keep, a bad option, an embedding model missing or not what its card says
        _log.error("%s", error)
        _close(database)
        return 2
    except RuntimeError as error:  # grpc cannot bind the address
        _log.error("cannot listen on %s:%s: %s", host, args.port, error)
        _close(database)
        return 1
    except OSError as error:  # the HTTP port cannot bind its address (or read its TLS files)
        _log.error("cannot serve HTTP on %s:%s: %s", host, args.http_port, error)
        _close(database)
        return 1
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
    if metrics is not None:
        metrics_port = metrics.serve(args.metrics_host, args.metrics_port)
        _log.info("metrics on http://%s:%d/metrics", args.metrics_host, metrics_port)
    if data_dir is None and database is None:
        _log.warning("no --data-dir: memories keep nothing on disk and forget all at exit")
    if server.http_port is not None:
        _log.info(
            "HTTP (Connect, gRPC-Web, the memory browser) on %s://%s:%d/",
            "http" if tls is None else "https",
            host,
            server.http_port,
        )
    _log.info(
        "listening on %s:%d (memory %s, episodes %s, %s, %s)",
        host,
        port,
        server.namespaces.default_memory,
        server.episodes_kind,
        f"database {database.name}" if database else f"data dir {data_dir or 'none'}",
        "TLS" if tls is not None else "plaintext",
    )
    while (received := signals.next()) == signal.SIGHUP:
        assert isinstance(auth, AuthFile)
        auth.reload()
    _log.info("%s received", received.name if received is not None else "a stop")
    stopped = server.stop(GRACE_SECONDS)
    _log.info("stopping: no new calls; calls in flight have %.0f s to finish", GRACE_SECONDS)
    stopped.wait()
    if auth is not None and not isinstance(auth, AuthFile):
        auth.stop()
    _close(database)
    if metrics is not None:
        metrics.stop()
    _log.info("stopped")
    return 0


def _memory_options(memory: str, embedding_model: str | None) -> Any:
    """The options of the default memory, with its model loaded now if it has one (a missing
    or corrupt model is refused at start-up); or the exit code after saying why not."""
    from himga.embeddings import ModelError
    from himga.errors import InvalidArgument
    from himga.memory.registry import memory_options

    given: dict[str, object] = {}
    if embedding_model is not None:
        given["embedding_model"] = embedding_model
    try:
        options = memory_options(memory, given)
    except InvalidArgument as error:  # a memory that takes no model, or a bad name
        _log.error("--embedding-model (memory %s): %s", memory, error)
        return 2
    prepare = getattr(options, "prepare", None)  # the kinds whose options load something
    if prepare is not None:
        try:
            prepare()
        except ModelError as error:
            _log.error("%s", error)
            return 2
    return options


def _database(url: str, calls: int) -> "Database | int":
    """The database at `url`, its schema migrated, with a connection for each of `calls` calls
    at once (and two more: health's probe, the token watcher); or the exit code after saying
    why not."""
    try:
        import psycopg

        from himga.storage.postgres import Database, redacted
    except ImportError:
        _log.error("--database needs PostgreSQL's driver: %s", himga.install_hint("postgres"))
        return 2
    from himga.errors import DatabaseUnavailable, IncompatibleStoreError

    try:
        return Database(url, min_size=WORKERS, max_size=calls + 2)
    except (DatabaseUnavailable, IncompatibleStoreError) as error:
        _log.error("%s", error)
        return 1
    except psycopg.Error as error:  # e.g. a standby, read-only, named without read-write
        _log.error(
            "the database at %s refused to set up himga's schema (%s): give the primary, or "
            "every host with target_session_attrs=read-write",
            redacted(url),
            str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__,
        )
        return 1


def _close(database: "Database | None") -> None:
    if database is not None:
        database.close()


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
