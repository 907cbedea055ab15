"""`himga export --target HOST:PORT --namespace NS`: every message of a namespace, as JSON Lines.

Writes the namespace's messages, page by page (ListMessages), as Session documents one a line
(himga.memory.dump says how), to stdout or `--output`. `himga import` reads them back. With
`--data-dir DIR` (or `--database URL`) instead of `--target`, the namespace is read from the
stores themselves, opened as a server opens them; a namespace never written exports nothing and
nothing of it is made. Exits 0 when all was written, 1 when the server (or the store) refused,
2 when no server answered or an argument is wrong.
"""

import argparse
import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from himga.cli._places import add_place_arguments, namespace_memory
from himga.cli._remote import remote_arguments, rpc_failure

if TYPE_CHECKING:
    from himga.memory.base import BaseMemory, StoredMessage

PAGE_SIZE = 1000


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "export",
        help="write every message of a namespace as JSON Lines (Session documents)",
        description="Write every message a namespace holds, in its order, as JSON Lines: each "
        "line a Session document (schemas/v1/session.json) with a run of its messages. "
        "`himga import` stores them again; exporting what it stored gives the same bytes.",
    )
    parser.add_argument("--namespace", required=True, help="the namespace to export")
    add_place_arguments(parser)
    parser.add_argument("--output", "-o", default="-", help="a file to write ('-': stdout)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import grpc

    from himga.errors import HimgaError
    from himga.storage.files import replacing_private

    try:
        remote_arguments(args)  # how to reach the server: checked before anything is read
    except ValueError as error:
        print(f"himga export: {error}", file=sys.stderr)
        return 2
    try:
        with namespace_memory(args, create=False) as memory:
            if args.output == "-":
                write(memory, sys.stdout)
            else:  # a file holding the whole namespace, or (on any error) the one there before
                with replacing_private(Path(args.output)) as raw:
                    out = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
                    write(memory, out)
                    out.detach()  # written through; the file itself is the block's to close
    except (HimgaError, ValueError, OSError) as error:  # OSError: a data dir it cannot open
        print(f"himga export: {error}", file=sys.stderr)
        return 1
    except grpc.RpcError as error:
        said, code = rpc_failure(error, args.target)
        print(f"himga export: {said}", file=sys.stderr)
        return code
    return 0


def write(memory: "BaseMemory", out: TextIO) -> None:
    """Write every message `memory` holds to `out` as JSON Lines."""
    from himga.memory.dump import dump_lines

    for line in dump_lines(_stored(memory)):
        out.write(line + "\n")


def _stored(memory: "BaseMemory") -> Iterator["StoredMessage"]:
    token = ""
    while True:
        page = memory.list(page_size=PAGE_SIZE, page_token=token)
        yield from page.messages
        token = page.next_page_token
        if not token:
            return
