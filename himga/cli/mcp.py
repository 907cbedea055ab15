"""`himga mcp`: the memory as tools for a model, over the Model Context Protocol: on stdio (what
desktop agents and coding assistants launch), or streamable HTTP with `--http-port`. Its stores
are embedded (a data directory, the same stores `himga serve` keeps), or a running server's with
`--target`. Needs the `mcp` extra: `pip install 'himga-memory[mcp]'`.

It answers `initialize` first and opens its stores on the first tool call: nothing of the stores
(the registries, the records, the validators) is imported before, so a host that starts it
waits only for the SDK. The memory and store names are checked against the registries only
when given."""

import argparse
import logging
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import himga
from himga.cli._remote import add_remote_arguments, remote_arguments


class _Names:
    """The names a registry knows, read from it only when a name given must be checked (or the
    help lists them): argparse `choices` that import nothing until then."""

    def __init__(self, names: Callable[[], list[str]]) -> None:
        self._names = names

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())


def _memory_names() -> list[str]:
    from himga.memory.registry import memory_names

    return memory_names()


def _store_names() -> list[str]:
    from himga.episodes.registry import store_names

    return store_names()


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
        choices=_Names(_memory_names),
        metavar="MEMORY",  # argparse would list the choices, importing the registry, to build it
        help="the memory kind, as `himga serve --memory` takes it (embedded: the default memory; "
        "remote: the server's)",
    )
    parser.add_argument(
        "--episodes",
        choices=_Names(_store_names),
        metavar="STORE",
        help="embedded episode store kind, as `himga serve --episodes` takes it (default: the "
        "default store)",
    )
    parser.add_argument(
        "--embedding-model",
        metavar="NAME|DIR",
        help="embedded --memory hybrid: the embedding model, as `himga serve --embedding-model` "
        "takes it (default: e5-small-v2)",
    )
    parser.add_argument(
        "--memory-option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="embedded: an option of the memory (repeatable), as `himga serve --memory-option` "
        "takes it",
    )
    parser.add_argument(
        "--target", metavar="HOST:PORT", help="use the stores of a running `himga serve` instead"
    )
    add_remote_arguments(parser)
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
    if args.target is not None and args.data_dir is not None:
        log.error("--target and --data-dir are exclusive: the server keeps its own files")
        return 2
    try:
        reach = remote_arguments(args)
    except ValueError as error:
        log.error("%s", error)
        return 2
    memory_options: dict[str, Any] = {}
    if args.embedding_model is not None or args.memory_option:
        if args.target is not None:
            log.error("--embedding-model and --memory-option are the server's own with --target")
            return 2
        from himga.errors import InvalidArgument
        from himga.memory.registry import DEFAULT_MEMORY, command_options

        kind = args.memory or DEFAULT_MEMORY
        try:  # checked before the protocol starts; the model itself loads on the first call
            memory_options[kind] = command_options(kind, args.memory_option, args.embedding_model)
        except InvalidArgument as error:
            log.error("--memory-option (memory %s): %s", kind, error.whole())
            return 2
    wire: tuple[Any, Any] | None = None
    if args.http_port is None:
        try:
            wire = _answer_initialize(args.target is not None or args.data_dir is not None)
        except ImportError as error:
            log.error("%s: the mcp extra is not installed: %s", error, himga.install_hint("mcp"))
            return 2
    try:
        import anyio

        from himga.mcp import server, stores
    except ImportError as error:
        log.error("%s: the mcp extra is not installed: %s", error, himga.install_hint("mcp"))
        return 2
    if args.target is not None:
        target = args.target

        def make() -> stores.Stores:
            return stores.remote(target, reach["token"], reach["tls"])

        memory = args.memory or ""  # the server's default unless named

    else:

        def make() -> stores.Stores:
            return stores.embedded(args.data_dir, args.memory, args.episodes, memory_options)

        memory = ""  # the embedded default, which --memory sets

    held = stores.Opening(make, kept=args.target is not None or args.data_dir is not None)
    where = args.target or args.data_dir or "memory only (nothing kept)"
    log.info("namespace %s, stores: %s (opened on the first tool call)", args.namespace, where)
    app = server.create(held, args.namespace, memory)
    try:
        if wire is not None:
            anyio.run(server.serve_stdio, app, *wire)
        else:
            anyio.run(server.serve_http, app, args.http_host, args.http_port)
    except KeyboardInterrupt:
        pass
    finally:
        held.close()
    return 0


def _answer_initialize(kept: bool) -> tuple[Any, Any]:
    """Take stdio from the process (fd 0 then reads nothing, fd 1 writes to stderr, so stray
    output of a library misses the wire), answer its first message when it is `initialize`
    (himga.mcp.handshake), before the SDK is imported; the stdin and stdout the SDK is to
    serve, text line by line, that first message first."""
    import io

    from himga.mcp import handshake

    wire_in = os.fdopen(os.dup(0), "rb", buffering=0)
    wire_out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    reader = io.TextIOWrapper(io.BufferedReader(wire_in), encoding="utf-8", errors="replace")
    writer = io.TextIOWrapper(wire_out, encoding="utf-8", write_through=True)
    first = reader.readline()
    request = handshake.initialize_request(first.encode("utf-8"))
    if request is None:
        return handshake.Replay(first, reader), writer
    sent = handshake.answer(request, "himga", himga.__version__, handshake.instructions(kept))
    wire_out.write(sent)
    return handshake.Replay(first, reader), handshake.DropAnswer(writer, request["id"], sent)
