"""`himga import --target HOST:PORT --namespace NS FILE`: store JSON Lines of Session documents.

Reads what `himga export` writes (one Session document a line, with its messages; '-' reads
stdin), checks every line first, and stores nothing when any line is not a valid Session: it
prints `FILE:LINE: $.path: reason` for each problem and exits 1. Then it stores the messages in
order, in IngestBatch calls of at most BATCH messages; a message whose id is stored already
replaces it. Exits 0 when all was stored, 1 on a refused call or bad input, 2 when no server
answered.
"""

import argparse
import sys
from pathlib import Path
from typing import Any

BATCH = 500


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "import",
        help="store JSON Lines of Session documents (what `himga export` writes)",
        description="Store the messages of a JSON Lines file of Session documents in a "
        "namespace, in order, after checking every line (nothing is stored if one is invalid).",
    )
    parser.add_argument("--target", required=True, help="the server, as HOST:PORT")
    parser.add_argument("--namespace", required=True, help="the namespace to store into")
    parser.add_argument(
        "--memory", default="", help="the namespace's memory (default: the server's)"
    )
    parser.add_argument("file", metavar="FILE", help="the JSON Lines file, or '-' for stdin")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import grpc

    from himga.errors import HimgaError
    from himga.memory.dump import read_line
    from himga.service import RemoteMemory

    shown = "<stdin>" if args.file == "-" else args.file
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        print(f"himga import: cannot read {shown}: {error}", file=sys.stderr)
        return 2
    items: list[Any] = []
    problems = 0
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        read, found = read_line(line)
        for problem in found:
            print(f"{shown}:{number}: {problem}", file=sys.stderr)
        problems += len(found)
        items += read
    if problems:
        print(f"himga import: {problems} problems; nothing stored", file=sys.stderr)
        return 1
    try:
        with RemoteMemory(args.target, args.namespace, memory=args.memory) as memory:
            for start in range(0, len(items), BATCH):
                memory.store(items[start : start + BATCH])
    except (HimgaError, ValueError) as error:
        print(f"himga import: {error}", file=sys.stderr)
        return 1
    except grpc.RpcError as error:
        code = error.code() if isinstance(error, grpc.Call) else None
        print(f"himga import: {args.target}: {error}", file=sys.stderr)
        return 2 if code == grpc.StatusCode.UNAVAILABLE else 1
    print(f"stored {len(items)} messages in {args.namespace}", file=sys.stderr)
    return 0
