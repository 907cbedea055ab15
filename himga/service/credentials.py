"""TLS for the server: its certificate and key (and the CA its clients' certificates must come
from, for mutual TLS). A client's (`ClientTls`) is himga.client.channels', named here too.

Files are PEM. A file that cannot be read is a ValueError naming it, raised before the server
binds.
"""

from dataclasses import dataclass
from pathlib import Path

import grpc

from himga.client.channels import ClientTls, aio_channel, channel, read_pem

__all__ = ["ClientTls", "ServerTls", "aio_channel", "channel"]


@dataclass(frozen=True, slots=True)
class ServerTls:
    """The server's certificate chain and key; with `client_ca`, every client must present a
    certificate that CA signed (mutual TLS), or the handshake fails."""

    cert: Path
    key: Path
    client_ca: Path | None = None

    def credentials(self) -> grpc.ServerCredentials:
        cert = read_pem(self.cert, "TLS certificate")
        key = read_pem(self.key, "TLS key")
        assert cert is not None and key is not None
        client_ca = read_pem(self.client_ca, "client CA")
        return grpc.ssl_server_credentials(
            [(key, cert)],
            root_certificates=client_ca,
            require_client_auth=client_ca is not None,
        )

