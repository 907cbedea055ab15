"""`himga auth new-token | list | revoke`: the tokens of a server's auth file, or of the servers
over a PostgreSQL database (`--database URL`).

`new-token` adds a token (creating the file, 0600) and prints it on stdout, once: the file keeps
only its hash. `list` shows each token's id, namespaces, rights and creation time, never a
secret. `revoke ID` removes one. A running server reads the file again on SIGHUP; servers over
a database (`himga serve --database URL --database-tokens`) see a change within a second or so.
"""

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from himga.service.tokens import Tokens


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "auth",
        help="make, list and revoke the tokens of a server's auth file",
        description="Manage the auth file of `himga serve --auth-file FILE`. After a change, "
        "send the server SIGHUP to make it read the file again.",
    )
    commands = parser.add_subparsers(dest="auth_command", required=True, metavar="COMMAND")

    new = commands.add_parser(
        "new-token",
        help="add a token and print it (once)",
        description="Add a token granting RIGHTS on the namespaces PATTERN names, creating the "
        "file (0600) if needed, and print the token on stdout: it is shown only this once.",
    )
    _file_argument(new)
    new.add_argument(
        "--namespace",
        action="append",
        required=True,
        metavar="PATTERN",
        help="a namespace, or a prefix of namespaces ending in '*' ('*': every namespace); "
        "repeat for more",
    )
    new.add_argument(
        "--rights",
        required=True,
        metavar="RIGHTS",
        help="comma-separated: read (Retrieve), write (Ingest, IngestBatch), admin (Reset)",
    )
    new.set_defaults(run=run_new)

    listing = commands.add_parser("list", help="list the tokens (ids, never secrets)")
    _file_argument(listing)
    listing.set_defaults(run=run_list)

    revoke = commands.add_parser("revoke", help="remove a token by its id")
    _file_argument(revoke)
    revoke.add_argument("id", metavar="ID", help="the token's id, as `himga auth list` shows it")
    revoke.set_defaults(run=run_revoke)


def _file_argument(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--auth-file", type=Path, metavar="FILE")
    where.add_argument(
        "--database", metavar="URL", help="the tokens of the servers over this PostgreSQL database"
    )


@contextmanager
def _editing(args: argparse.Namespace, *, create: bool = False) -> Iterator["Tokens"]:
    """The tokens of the file or the database the arguments name, saved after the block."""
    if args.database is None:
        from himga.service import tokens

        with tokens.editing(args.auth_file, create=create) as held:
            yield held
        return
    from himga.service import database_tokens
    from himga.storage.postgres import Database

    with (
        Database(args.database, min_size=1, max_size=1) as database,
        database_tokens.editing(database) as held,
    ):
        yield held


def _load(args: argparse.Namespace) -> "Tokens":
    """The tokens of the file or the database the arguments name."""
    if args.database is None:
        from himga.service import tokens

        return tokens.load(args.auth_file)
    from himga.service import database_tokens
    from himga.storage.postgres import Database

    with Database(args.database, min_size=1, max_size=1) as database:
        return database_tokens.load(database)[1]


def _where(args: argparse.Namespace) -> str:
    return str(args.auth_file) if args.database is None else "the database"


def _tell(args: argparse.Namespace) -> str:
    if args.database is None:
        return "Send the server SIGHUP to use it."
    return "Servers over the database see it within a few seconds."


def _fail(message: object) -> int:
    print(f"himga auth: {message}", file=sys.stderr)
    return 2


def run_new(args: argparse.Namespace) -> int:
    from himga.service import tokens

    try:
        rights = tokens.parse_rights(args.rights)
        with _editing(args, create=True) as held:
            token, grant = held.new(args.namespace, rights)
    except (ValueError, OSError) as error:
        return _fail(error)
    print(token)
    print(
        f"himga auth: token {grant.id} added to {_where(args)}; it is shown only now. "
        + _tell(args),
        file=sys.stderr,
    )
    return 0


def run_list(args: argparse.Namespace) -> int:
    from himga.service import tokens

    try:
        held = _load(args)
    except (ValueError, OSError) as error:
        return _fail(error)
    print(f"{'ID':<9} {'RIGHTS':<17} {'CREATED':<28} NAMESPACES")
    for grant in held.grants.values():
        rights = ",".join(sorted(grant.rights, key=tokens.RIGHTS.index))
        print(f"{grant.id:<9} {rights:<17} {grant.created:<28} {' '.join(grant.namespaces)}")
    return 0


def run_revoke(args: argparse.Namespace) -> int:
    try:
        with _editing(args) as held:
            held.revoke(args.id)
    except KeyError:
        return _fail(f"no token {args.id!r} in {_where(args)} (`himga auth list` shows them)")
    except (ValueError, OSError) as error:
        return _fail(error)
    print(f"himga auth: token {args.id} revoked. {_tell(args)}", file=sys.stderr)
    return 0
