"""`himga mcp`: the memory as tools for a model, over the Model Context Protocol: on stdio (what
desktop agents and coding assistants launch), or streamable HTTP with `--http-port`. Its stores
are embedded (a data directory, the same stores `himga serve` keeps), or a running server's with
`--target`. Needs the `mcp` extra: `pip install 'himga-memory[mcp]'`."""

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

import himga
from himga.episodes.registry import DEFAULT_STORE, store_names
from himga.memory.registry import DEFAULT_MEMORY, memory_names

TOKEN_VARIABLE = "HIMGA_TOKEN"


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "mcp",
        help="serve the memory as MCP tools (stdio, or streamable HTTP with --http-port)",
        description="Serve remember, recall, forget, record_episode and find_episodes as Model "
        "Context Protocol tools, over stdio unless --http-port is given. Logs to stderr.",
    )
    parser.add_argument(
        "--namespace", default="default", help="the namespace the tools use (default: %(default)s)"
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="embedded stores: the directory they keep their files in (default: none, keep "
        "nothing)",
    )
    parser.add_argument(
        "--memory",
        choices=memory_names(),
        help=f"the memory (embedded default: {DEFAULT_MEMORY}; remote: the server's)",
    )
    parser.add_argument(
        "--episodes",
        default=DEFAULT_STORE,
        choices=store_names(),
        help="embedded episode store (default: %(default)s)",
    )
    parser.add_argument(
        "--target", metavar="HOST:PORT", help="use the stores of a running `himga serve` instead"
    )
    parser.add_argument(
        "--token",
        help=f"the token for --target (default: ${TOKEN_VARIABLE}; avoid putting it in "
        "argument lists others can read)",
    )
    parser.add_argument(
        "--http-port",
        type=int,
        metavar="PORT",
        help="serve streamable HTTP at http://--http-host:PORT/mcp instead of stdio (0: a free "
        "port)",
    )
    parser.add_argument(
        "--http-host", default="127.0.0.1", help="address for --http-port (default: %(default)s)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        stream=sys.stderr,  # stdout carries the protocol on stdio
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    log = logging.getLogger("himga.mcp")
    try:
        import anyio

        from himga.mcp import server, stores
    except ImportError as error:
        log.error("%s: the mcp extra is not installed: %s", error, himga.install_hint("mcp"))
        return 2
    if args.target is not None and args.data_dir is not None:
        log.error("--target and --data-dir are exclusive: the server keeps its own files")
        return 2
    try:
        if args.target is not None:
            token = args.token or os.environ.get(TOKEN_VARIABLE)
            held = stores.remote(args.target, args.namespace, args.memory or "", token)
        else:
            held = stores.embedded(
                args.namespace, args.data_dir, args.memory or DEFAULT_MEMORY, args.episodes
            )
    except ValueError as error:
        log.error("%s", error)
        return 2
    where = args.target or args.data_dir or "memory only (nothing kept)"
    log.info("namespace %s, stores: %s", args.namespace, where)
    app = server.create(held)
    try:
        if args.http_port is None:
            anyio.run(server.serve_stdio, app)
        else:
            anyio.run(server.serve_http, app, args.http_host, args.http_port)
    except KeyboardInterrupt:
        pass
    finally:
        held.close()
    return 0
