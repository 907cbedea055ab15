"""`himga conformance --target HOST:PORT [--http URL]`: check any MemoryService against the
contract, over its gRPC port, its HTTP port (Connect JSON), or both; reaching the server as
every client does (himga.cli._remote: the token, and TLS on both ports)."""

import argparse
import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from himga.cli._remote import TOKEN_VARIABLE, add_remote_arguments, remote_arguments

if TYPE_CHECKING:
    from himga.conformance import CheckResult

SERVERS = ("--target", "--http")
"""The options that name a port of the server: its token and TLS go with both."""


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "conformance",
        help="check a MemoryService server (any language) against the behavioural contract",
        description="Run the MemoryService contract over the wire against the server at "
        "--target and print a pass/fail table. Required checks are the contract; capabilities "
        "are what only a storing memory shows. Exit 0 only when every required check passes "
        "(1: some failed, 2: no server answered, or not in the port's protocol: an HTTP port given "
        "as --target, a gRPC port as --http; a TLS port reached without TLS, or the reverse; a "
        "server certificate not of --tls-ca). Each check uses fresh namespaces of its own, "
        f"so a shared server can be checked. A server with an auth file needs a token "
        f"(${TOKEN_VARIABLE}, or --token) of read, write and admin on the namespaces "
        "'conformance.*'.",
    )
    parser.add_argument("--target", help="the server's gRPC port, as HOST:PORT")
    parser.add_argument(
        "--http",
        metavar="URL",
        help="the server's HTTP port, as http://HOST:PORT (https:// for a TLS port, trusting "
        "--tls-ca): every promise of the wire is checked again over Connect JSON (with "
        "--target too: both ports, one table each)",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=10.0,
        help="seconds to wait for the server and for each call (default: %(default)s)",
    )
    add_remote_arguments(parser, SERVERS)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from himga.conformance import run_checks, run_checks_http
    from himga.conformance.report import passed_required, render
    from himga.conformance.wire import check_http_url

    if args.target is None and args.http is None:
        print("himga conformance: give --target HOST:PORT, --http URL, or both", file=sys.stderr)
        return 2
    try:
        reach = remote_arguments(args, SERVERS)
        if args.http is not None:
            check_http_url(args.http, reach["tls"])  # before any table: the arguments
    except ValueError as error:
        print(f"himga conformance: {error}", file=sys.stderr)
        return 2
    ports: list[tuple[str, Callable[..., list[CheckResult]]]] = []
    ports += [(args.target, run_checks)] if args.target is not None else []
    ports += [(args.http, run_checks_http)] if args.http is not None else []
    passed = True
    for where, run_on in ports:
        try:
            results = run_on(where, timeout=args.timeout, **reach)
        except (ConnectionError, ValueError) as error:  # ValueError: a TLS file unreadable
            print(f"himga conformance: {error}", file=sys.stderr)
            return 2
        print(render(where, results))
        passed = passed and passed_required(results)
    return 0 if passed else 1


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < math.inf:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, not {text}")
    return seconds
