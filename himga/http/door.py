"""The HTTP door as the server builds it (himga.service.doors): the application over the core,
served on its own port."""

from himga.http.app import HttpApp
from himga.http.server import HttpServer, HttpTls
from himga.service.core.core import Core
from himga.service.doors import DoorConfig


def build(core: Core, config: DoorConfig) -> HttpServer:
    """The HTTP port (Connect, gRPC-Web, the OpenAPI document, the memory browser) over `core`,
    not started."""
    assert config.http_address is not None
    app = HttpApp(
        core, cors_origins=config.cors_origins, max_message_bytes=config.max_message_bytes
    )
    tls = config.tls
    http_tls = HttpTls(tls.cert, tls.key, tls.client_ca) if tls is not None else None
    return HttpServer(app, *config.http_address, workers=config.max_workers, tls=http_tls)
