"""Where `himga export` finds a namespace: a server (`--target HOST:PORT`,
through the wire), or its stores themselves (`--data-dir DIR` or `--database URL`: opened as a
server opens them, by himga.storage.namespaces, beside any server running over them).

How `himga export` and `himga import` reach a server (`remote_arguments`): its token, from
`$HIMGA_TOKEN` (or `--token`, which others may read in the process list), and TLS, as every
client takes it (`--tls-ca`, and `--tls-cert` with `--tls-key` for mutual TLS, as the Go
client's `-tls-ca/-tls-cert/-tls-key`)."""

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from himga.memory.base import BaseMemory


def add_place_arguments(parser: Any) -> None:
    """`--target`, `--data-dir` or `--database` (exactly one), and `--memory`."""
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--target", help="the server, as HOST:PORT")
    where.add_argument(
        "--data-dir", type=Path, help="a server's data directory, opened here (no server needed)"
    )
    where.add_argument(
        "--database", metavar="URL", help="a server's PostgreSQL database, opened here"
    )
    parser.add_argument(
        "--memory", default="", help="the namespace's memory (default: the server's)"
    )
    add_remote_arguments(parser)


TOKEN_VARIABLE = "HIMGA_TOKEN"


def add_remote_arguments(parser: Any) -> None:
    """How to reach the server of `--target`: `--token` and the `--tls-*` files."""
    parser.add_argument(
        "--token",
        help=f"with --target: the bearer token for a server with an auth file (default: "
        f"${TOKEN_VARIABLE}; avoid putting it in argument lists others can read)",
    )
    parser.add_argument(
        "--tls-ca",
        type=Path,
        metavar="PEM",
        help="with --target: connect over TLS, trusting server certificates of this CA",
    )
    parser.add_argument(
        "--tls-cert",
        type=Path,
        metavar="PEM",
        help="with --target and --tls-ca, for mutual TLS: this client's certificate chain",
    )
    parser.add_argument(
        "--tls-key", type=Path, metavar="PEM", help="with --tls-cert: its private key"
    )


def remote_arguments(args: argparse.Namespace) -> dict[str, Any]:
    """The `token` and `tls` keyword arguments of a RemoteMemory for the server of
    `args.target`; ValueError naming what is missing or given without --target."""
    tls_files = {"--tls-ca": args.tls_ca, "--tls-cert": args.tls_cert, "--tls-key": args.tls_key}
    if args.target is None:
        given = [flag for flag, value in tls_files.items() if value is not None]
        given += ["--token"] if args.token is not None else []
        if given:
            raise ValueError(f"{', '.join(given)}: only with --target (a server)")
        return {}
    if (args.tls_cert is None) != (args.tls_key is None):
        raise ValueError("--tls-cert and --tls-key go together (mutual TLS)")
    if args.tls_cert is not None and args.tls_ca is None:
        raise ValueError("--tls-cert needs --tls-ca: the CA the server's certificate is from")
    from himga.client import ClientTls

    tls = ClientTls(args.tls_ca, args.tls_cert, args.tls_key) if args.tls_ca else None
    token = args.token or os.environ.get(TOKEN_VARIABLE) or None
    return {"token": token, "tls": tls}


@contextmanager
def namespace_memory(args: argparse.Namespace, *, create: bool) -> Iterator["BaseMemory"]:
    """The memory of `args.namespace` where the arguments say; with `create` False, a namespace
    never written is an empty memory and nothing of it is made."""
    reach = remote_arguments(args)
    if args.target is not None:
        from himga.service import RemoteMemory

        with RemoteMemory(args.target, args.namespace, memory=args.memory, **reach) as remote:
            yield remote
        return
    from himga.memory.null import NullMemory
    from himga.storage.namespaces import NamespaceStores

    database = None
    if args.database is not None:
        from himga.storage.postgres import Database

        database = Database(args.database, min_size=1, max_size=2)
    try:
        stores = NamespaceStores(database or args.data_dir, memory=args.memory or None)
        try:
            with stores.messages(args.namespace, args.memory, create=create) as opened:
                if opened is None:
                    yield NullMemory()
                    return
                with opened.lock:
                    yield opened.memory
        finally:
            stores.close()
    finally:
        if database is not None:
            database.close()
