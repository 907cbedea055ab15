"""`himga conformance --target HOST:PORT`: check any MemoryService against the contract."""

import argparse
import math
import os
import sys
from typing import Any


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "conformance",
        help="check a MemoryService server (any language) against the behavioural contract",
        description="Run the MemoryService contract over the wire against the server at "
        "--target and print a pass/fail table. Required checks are the contract; capabilities "
        "are what only a storing memory shows. Exit 0 only when every required check passes "
        "(1: some failed, 2: no server answered). Each check uses fresh namespaces of its own, "
        "so a shared server can be checked.",
    )
    parser.add_argument("--target", required=True, help="the server, as HOST:PORT")
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=10.0,
        help="seconds to wait for the server and for each call (default: %(default)s)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("HIMGA_TOKEN"),
        help="a bearer token for a server with an auth file (default: $HIMGA_TOKEN); it needs "
        "read, write and admin on the namespaces 'conformance.*'",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from himga.conformance import run_checks
    from himga.conformance.report import passed_required, render

    try:
        results = run_checks(args.target, timeout=args.timeout, token=args.token)
    except ConnectionError as error:
        print(f"himga conformance: {error}", file=sys.stderr)
        return 2
    print(render(args.target, results))
    return 0 if passed_required(results) else 1


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < math.inf:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, not {text}")
    return seconds
