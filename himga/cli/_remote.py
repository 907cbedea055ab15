"""How a command reaches a running server (`--target HOST:PORT`): its token, from
`$HIMGA_TOKEN` (or `--token`, which others may read in the process list), and TLS, as every
client takes it (`--tls-ca`, and `--tls-cert` with `--tls-key` for mutual TLS, as the Go
client's `-tls-ca/-tls-cert/-tls-key`). `himga export`, `import`, `eval` and `mcp` take them,
with `--target`; `himga conformance` with `--target`, `--http` or both (`servers`)."""

import argparse
import os
from pathlib import Path
from typing import Any

TOKEN_VARIABLE = "HIMGA_TOKEN"
TARGET = ("--target",)
"""The options that name a server, for most commands: `--target` alone."""


def add_remote_arguments(parser: Any, servers: tuple[str, ...] = TARGET) -> None:
    """How to reach the server of `servers` (options of `parser`, `--target` unless said):
    `--token` and the `--tls-*` files."""
    given = " or ".join(servers)
    parser.add_argument(
        "--token",
        help=f"with {given}: the bearer token for a server with an auth file (default: "
        f"${TOKEN_VARIABLE}; avoid putting it in argument lists others can read)",
    )
    parser.add_argument(
        "--tls-ca",
        type=Path,
        metavar="PEM",
        help=f"with {given}: connect over TLS, trusting server certificates of this CA",
    )
    parser.add_argument(
        "--tls-cert",
        type=Path,
        metavar="PEM",
        help=f"with {given} and --tls-ca, for mutual TLS: this client's certificate chain",
    )
    parser.add_argument(
        "--tls-key", type=Path, metavar="PEM", help="with --tls-cert: its private key"
    )


def remote_arguments(args: argparse.Namespace, servers: tuple[str, ...] = TARGET) -> dict[str, Any]:
    """The `token` and `tls` keyword arguments of a RemoteMemory for the server `servers` name
    (options of `args`, as `add_remote_arguments` was given them); ValueError naming what is
    missing, or given with none of `servers`."""
    tls_files = {"--tls-ca": args.tls_ca, "--tls-cert": args.tls_cert, "--tls-key": args.tls_key}
    named = [getattr(args, server.removeprefix("--").replace("-", "_")) for server in servers]
    if all(server is None for server in named):
        given = [flag for flag, value in tls_files.items() if value is not None]
        given += ["--token"] if args.token is not None else []
        if given:
            raise ValueError(f"{', '.join(given)}: only with {' or '.join(servers)} (a server)")
        return {}
    if (args.tls_cert is None) != (args.tls_key is None):
        raise ValueError("--tls-cert and --tls-key go together (mutual TLS)")
    if args.tls_cert is not None and args.tls_ca is None:
        raise ValueError("--tls-cert needs --tls-ca: the CA the server's certificate is from")
    from himga.client import ClientTls

    tls = ClientTls(args.tls_ca, args.tls_cert, args.tls_key) if args.tls_ca else None
    if tls is not None:
        tls.credentials()  # a file it cannot read is named now, as an argument's mistake
    token = args.token or os.environ.get(TOKEN_VARIABLE) or None
    return {"token": token, "tls": tls}


def rpc_failure(error: Exception, target: str) -> tuple[str, int]:
    """What a command says of a gRPC call to `target` that failed with no himga error (the
    server unreachable, or not a himga server), and its exit code: 2 when nothing answered."""
    import grpc

    if not isinstance(error, grpc.Call):
        return f"{target}: {error}", 1
    code = error.code()
    said = f"{target}: {code.name}: {error.details() or 'no details'}"
    return said, 2 if code == grpc.StatusCode.UNAVAILABLE else 1
