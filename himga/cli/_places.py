"""Where `himga export` finds a namespace: a server (`--target HOST:PORT`,
through the wire), or its stores themselves (`--data-dir DIR` or `--database URL`: opened as a
server opens them, by himga.storage.namespaces, beside any server running over them); a
server is reached as himga.cli._remote says."""

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from himga.cli._remote import add_remote_arguments, remote_arguments

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

    if args.data_dir is not None and not args.data_dir.is_dir():  # a typo would export nothing
        said = "is not a directory" if args.data_dir.exists() else "does not exist"
        raise FileNotFoundError(
            f"--data-dir {args.data_dir} {said}: give the directory a server keeps its "
            "namespaces in (its `himga serve --data-dir`)"
        )
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
