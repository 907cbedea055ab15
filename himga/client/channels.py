"""How a client reaches a server: its TLS (`ClientTls`: what it trusts and, for mutual TLS, its
own certificate), the channel (blocking or asyncio) and what every call carries (the token).

Files are PEM. A file that cannot be read is a ValueError naming it, raised before the client
connects.
"""

from dataclasses import dataclass
from pathlib import Path

import grpc


def read_pem(path: Path | None, what: str) -> bytes | None:
    """The bytes of the PEM file at `path` (None: None); a ValueError naming it and `what` it
    holds when it cannot be read."""
    if path is None:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise ValueError(f"cannot read the {what} {path}: {error.strerror or error}") from None


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
            root_certificates=read_pem(self.ca, "CA certificate"),
            private_key=read_pem(self.key, "TLS key"),
            certificate_chain=read_pem(self.cert, "TLS certificate"),
        )

    def options(self) -> list[tuple[str, str]]:
        if self.server_name is None:
            return []
        return [("grpc.ssl_target_name_override", self.server_name)]


def channel_options(max_message_bytes: int) -> list[tuple[str, object]]:
    """The options of a client's channel: messages up to `max_message_bytes` both ways."""
    return [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
    ]


def bearer(token: str | None) -> list[tuple[str, str]] | None:
    """The metadata that carries `token` with every call (None: no token)."""
    return [("authorization", f"Bearer {token}")] if token is not None else None


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
