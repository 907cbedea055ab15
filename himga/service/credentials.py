"""TLS for both ends: the server's certificate and key (and the CA its clients' certificates
must come from, for mutual TLS), and a client's trust roots (and its own certificate).

Files are PEM. A file that cannot be read is a ValueError naming it, raised before the server
binds or the client connects.
"""

from dataclasses import dataclass
from pathlib import Path

import grpc


def _read(path: Path | None, what: str) -> bytes | None:
    if path is None:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise ValueError(f"cannot read the {what} {path}: {error.strerror or error}") from None


@dataclass(frozen=True, slots=True)
class ServerTls:
    """The server's certificate chain and key; with `client_ca`, every client must present a
    certificate that CA signed (mutual TLS), or the handshake fails."""

    cert: Path
    key: Path
    client_ca: Path | None = None

    def credentials(self) -> grpc.ServerCredentials:
        cert = _read(self.cert, "TLS certificate")
        key = _read(self.key, "TLS key")
        assert cert is not None and key is not None
        client_ca = _read(self.client_ca, "client CA")
        return grpc.ssl_server_credentials(
            [(key, cert)],
            root_certificates=client_ca,
            require_client_auth=client_ca is not None,
        )


@dataclass(frozen=True, slots=True)
class ClientTls:
    """What a client trusts (`ca`: None for the system's roots) and, for mutual TLS, its own
    certificate and key. `server_name` overrides the name the server's certificate must carry
    (by default, the host of the target)."""

    ca: Path | None = None
    cert: Path | None = None
    key: Path | None = None
    server_name: str | None = None

    def credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=_read(self.ca, "CA certificate"),
            private_key=_read(self.key, "TLS key"),
            certificate_chain=_read(self.cert, "TLS certificate"),
        )

    def options(self) -> list[tuple[str, str]]:
        if self.server_name is None:
            return []
        return [("grpc.ssl_target_name_override", self.server_name)]


def channel(
    target: str,
    tls: ClientTls | None,
    options: list[tuple[str, object]] | None = None,
) -> grpc.Channel:
    """A channel to `target`: TLS when `tls` is given, plaintext otherwise."""
    if tls is None:
        return grpc.insecure_channel(target, options=options or [])
    return grpc.secure_channel(
        target, tls.credentials(), options=[*(options or []), *tls.options()]
    )


def aio_channel(
    target: str,
    tls: ClientTls | None,
    options: list[tuple[str, object]] | None = None,
) -> grpc.aio.Channel:
    """As `channel`, for asyncio (grpc.aio): TLS when `tls` is given, plaintext otherwise."""
    if tls is None:
        return grpc.aio.insecure_channel(target, options=options or [])
    return grpc.aio.secure_channel(
        target, tls.credentials(), options=[*(options or []), *tls.options()]
    )
