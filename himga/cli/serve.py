"""`himga serve`: run the memory server until SIGTERM or SIGINT, then stop gracefully."""

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from himga.episodes.registry import DEFAULT_STORE, store_names
from himga.memory.registry import DEFAULT_MEMORY, memory_names

GRACE_SECONDS = 5.0
"""How long in-flight calls may run on after a stop signal."""

_log = logging.getLogger("himga.serve")


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the memory server (gRPC MemoryService and EpisodeService, health, reflection)",
        description="Run the himga memory server until SIGTERM or SIGINT; in-flight calls "
        "finish before it exits. Logs to stderr, including 'listening on HOST:PORT' once ready.",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: %(default)s)"
    )
    parser.add_argument(
        "--port",
        type=_port,
        default=50051,
        help="port to bind; 0 picks a free one (default: %(default)s)",
    )
    parser.add_argument(
        "--memory",
        default=DEFAULT_MEMORY,
        choices=memory_names(),
        help="memory of namespaces whose calls name none (default: %(default)s)",
    )
    parser.add_argument(
        "--episodes",
        default=DEFAULT_STORE,
        choices=store_names(),
        help="where namespaces keep their episodes (default: %(default)s)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="directory where durable memories keep their files (default: none, keep nothing)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from himga.service.server import create_server

    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        _log.info("%s received", signal.Signals(signum).name)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)

    data_dir: Path | None = args.data_dir
    if data_dir is not None:
        data_dir.mkdir(parents=True, exist_ok=True)
    host = f"[{args.host}]" if ":" in args.host else args.host
    try:
        server, port = create_server(
            f"{host}:{args.port}", memory=args.memory, episodes=args.episodes, data_dir=data_dir
        )
    except RuntimeError as error:  # grpc cannot bind the address
        _log.error("cannot listen on %s:%s: %s", host, args.port, error)
        return 1
    if data_dir is None:
        _log.warning("no --data-dir: memories keep nothing on disk and forget all at exit")
    _log.info(
        "listening on %s:%d (memory %s, episodes %s, data dir %s)",
        host,
        port,
        args.memory,
        args.episodes,
        data_dir or "none",
    )
    while not stop.wait(0.5):
        pass
    stopped = server.stop(GRACE_SECONDS)
    _log.info("stopping: no new calls; calls in flight have %.0f s to finish", GRACE_SECONDS)
    stopped.wait()
    _log.info("stopped")
    return 0


def _port(text: str) -> int:
    port = int(text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0 to 65535, not {port}")
    return port
