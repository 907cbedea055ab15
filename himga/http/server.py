"""`HttpServer`: the HTTP port (HTTP/1.1 and HTTP/2: in cleartext, or over TLS with the gRPC
port's certificate, negotiated by ALPN) on a thread of its own, from a socket bound before it
starts (so port 0 gives a known free port); the application answers on a pool of `workers`
threads (himga.http.threads). In cleartext, HTTP/1.1 is served by himga.http.h1 and HTTP/2 by
hypercorn, which serves both over TLS."""

import asyncio
import socket
import ssl
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from hypercorn.asyncio import serve
from hypercorn.config import Config

from himga.http.app import HttpApp
from himga.http.h1 import ANSWERS_FLUSH_SECONDS, Connections
from himga.http.threads import InThreads
from himga.service.auth import METHOD_RIGHTS


@dataclass(frozen=True, slots=True)
class HttpTls:
    """The certificate chain and key the port serves TLS with; with `client_ca`, every client
    must present a certificate that CA signed (mutual TLS), or the handshake fails."""

    cert: Path
    key: Path
    client_ca: Path | None = None


class HttpServer:
    """Serves `app` on `host:port` until `stop()`, `workers` requests at a time (the rest wait
    their turn, as the gRPC port's do); over TLS only when `tls` is given."""

    def __init__(
        self, app: HttpApp, host: str, port: int, *, workers: int = 8, tls: HttpTls | None = None
    ) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((host.strip("[]"), port))
        self._socket.listen(512)
        self._socket.set_inheritable(True)
        self.port: int = self._socket.getsockname()[1]
        config = Config()
        config.bind = [f"fd://{self._socket.fileno()}"]
        config.accesslog = None
        config.errorlog = None
        config.graceful_timeout = ANSWERS_FLUSH_SECONDS  # as long as HTTP/1.1's answers get
        if tls is not None:
            config.certfile = str(tls.cert)
            config.keyfile = str(tls.key)
            if tls.client_ca is not None:
                config.ca_certs = str(tls.client_ca)
                config.verify_mode = ssl.CERT_REQUIRED
            config.create_ssl_context()  # an unreadable file fails now, at start-up
        self._config = config
        self._tls = tls
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="himga-http")
        writes = frozenset(m for m, right in METHOD_RIGHTS.items() if right in ("write", "admin"))
        self._app = InThreads(
            app,
            self._pool,
            app.max_body_bytes,
            app.core.refusals.refused,
            writes=writes,
            max_message_bytes=app.max_message_bytes,
        )
        self._loop = asyncio.new_event_loop()
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="himga-http", daemon=True)

    def start(self) -> "HttpServer":
        self._thread.start()
        self._ready.wait()
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._stopping = asyncio.Event()
        self._loop.call_soon(self._ready.set)
        stopping = self._stopping
        if self._tls is None:
            self._loop.run_until_complete(self._serve_cleartext(stopping))
        else:
            self._loop.run_until_complete(
                serve(self._app, self._config, shutdown_trigger=stopping.wait, mode="asgi")
            )
        self._loop.close()

    async def _serve_cleartext(self, stopping: asyncio.Event) -> None:
        """HTTP/1.1 by himga.http.h1, HTTP/2 (prior knowledge) handed from it to hypercorn."""
        connections = Connections(self._app, self._config, self._loop)
        listening = await self._loop.create_server(
            connections.protocol, sock=self._socket, backlog=512
        )
        try:
            await stopping.wait()
        finally:
            listening.close()
            await connections.close()

    def stop(self) -> None:
        """Stop serving; returns when the port is closed."""
        if self._stopping is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stopping.set)
            self._thread.join()
            self._socket.detach()  # the server closed the descriptor; never close a reused one
        else:
            self._socket.close()
        self._pool.shutdown(wait=True)
