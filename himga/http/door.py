"""The HTTP door as the server builds it (himga.service.doors): the application over the core,
served on its own port."""

from himga.http.app import HttpApp
from himga.http.server import HttpServer, HttpTls
from himga.service.core.core import Core
from himga.service.doors import DoorConfig


def build(core: Core, config: DoorConfig) -> HttpServer:
    """The HTTP port (Connect, gRPC-Web, the OpenAPI document, the memory browser) over `core`,
    not started; answering the Host headers of loopback and of the address it is bound to
    (himga.http.hosts)."""
    assert config.http_address is not None
    host, port = config.http_address
    app = HttpApp(
        core,
        cors_origins=config.cors_origins,
        max_message_bytes=config.max_message_bytes,
        bound_host=host,
        allowed_hosts=config.allowed_hosts,
    )
    tls = config.tls
    http_tls = HttpTls(tls.cert, tls.key, tls.client_ca) if tls is not None else None
    return HttpServer(app, host, port, workers=config.max_workers, tls=http_tls)
