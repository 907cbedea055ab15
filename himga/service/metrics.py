"""Prometheus metrics of a server, on a port of their own (`himga serve --metrics-port`, off by
default), from a registry of their own (so several servers in one process keep apart):

  himga_calls_total{method, code}       calls ended, by full method name and status code
  himga_call_seconds{method}            how long calls took (a histogram)
  himga_auth_failures_total{reason}     calls refused by auth: Unauthenticated, PermissionDenied
  himga_refusals_total{kind}            calls refused before their handler ran, by kind: auth,
                                        decoding, limits (himga.service.core.refusals)
  himga_open_namespaces                 namespaces open now
  himga_store_bytes                     bytes of the files in the data directory
"""

import os
import threading
from collections.abc import Callable
from pathlib import Path
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server


class Metrics:
    """The metrics of one server; the core (himga.service.core) tells it of every call of himga's
    services, whatever door it came through."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.calls = Counter(
            "himga_calls",
            "Calls ended, by method and status code.",
            ["method", "code"],
            registry=self.registry,
        )
        self.seconds = Histogram(
            "himga_call_seconds",
            "Seconds a call took, by method.",
            ["method"],
            registry=self.registry,
        )
        self.auth_failures = Counter(
            "himga_auth_failures",
            "Calls refused by auth, by reason.",
            ["reason"],
            registry=self.registry,
        )
        self.refusals = Counter(
            "himga_refusals",
            "Calls refused before their handler ran, by kind.",
            ["kind"],
            registry=self.registry,
        )
        self.open_namespaces = Gauge(
            "himga_open_namespaces", "Namespaces open now.", registry=self.registry
        )
        self.store_bytes = Gauge(
            "himga_store_bytes", "Bytes of the files in the data directory.", registry=self.registry
        )
        self._http: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    def watch(self, open_namespaces: Callable[[], int], data_dir: Path | None) -> None:
        """Read the gauges from the server's namespaces and data directory at each scrape."""
        self.open_namespaces.set_function(lambda: float(open_namespaces()))
        self.store_bytes.set_function(lambda: float(_bytes_under(data_dir)))

    def auth_failed(self, reason: str) -> None:
        self.auth_failures.labels(reason).inc()

    def refused(self, kind: str) -> None:
        self.refusals.labels(kind).inc()

    def ended(self, method: str, code: str, seconds: float) -> None:
        """Count a call of `method` ended with status `code` ("OK", "INVALID_ARGUMENT")."""
        self.seconds.labels(method).observe(seconds)
        self.calls.labels(method, code).inc()

    def serve(self, address: str, port: int) -> int:
        """Serve /metrics over HTTP on `address`:`port` (0: a free one); the port."""
        self._http, self._thread = start_http_server(port, address, registry=self.registry)
        return int(self._http.server_port)

    def stop(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()


def _bytes_under(directory: Path | None) -> int:
    if directory is None:
        return 0
    total = 0
    for root, _, files in os.walk(directory):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except OSError:
                continue  # removed while walking
    return total
