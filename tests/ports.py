"""A port on 127.0.0.1 that nothing listens on: for a server to be started on (a flag that
takes no 0), or for a client to find no server at."""

import socket


def free_port() -> int:
    """A port the system just gave out and took back (nothing listens on it now)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
