"""TLS for the server: its certificate and key (and the CA its clients' certificates must come
from, for mutual TLS). A client's (`ClientTls`) is himga.client.channels', named here too.

Files are PEM. A file that cannot be read, a certificate outside its validity (expired, or not
valid yet) and a key that is not the certificate's are each a ValueError saying so, raised
before the server binds (`ServerTls.check`; gRPC itself would start with an expired certificate,
and would answer a key of another certificate with "Failed to bind").
"""

import ssl
from dataclasses import dataclass
from datetime import UTC, datetime
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

    def check(self, now: datetime | None = None) -> None:
        """Refuse, as a ValueError that says which and why, a certificate of the chain that is
        not valid at `now` (default: now) and a key that does not belong to the certificate."""
        cert = read_pem(self.cert, "TLS certificate")
        read_pem(self.key, "TLS key")
        assert cert is not None
        _check_validity(cert, self.cert, now or datetime.now(UTC))
        _check_pair(self.cert, self.key)

    def credentials(self) -> grpc.ServerCredentials:
        """The gRPC server credentials, once `check` has found the files good."""
        self.check()
        cert = read_pem(self.cert, "TLS certificate")
        key = read_pem(self.key, "TLS key")
        assert cert is not None and key is not None
        client_ca = read_pem(self.client_ca, "client CA")
        return grpc.ssl_server_credentials(
            [(key, cert)],
            root_certificates=client_ca,
            require_client_auth=client_ca is not None,
        )


_BEGIN = b"-----BEGIN CERTIFICATE-----"
_END = b"-----END CERTIFICATE-----"


def _check_validity(chain: bytes, path: Path, now: datetime) -> None:
    blocks = [b.split(_END, 1)[0] for b in chain.split(_BEGIN)[1:]]
    if not blocks:
        raise ValueError(f"the TLS certificate {path} holds no PEM certificate")
    for number, block in enumerate(blocks, 1):
        which = "" if number == 1 else f" (certificate {number} of its chain)"
        pem = (_BEGIN + block + _END).decode("ascii", "replace")
        try:
            start, end = _validity(ssl.PEM_cert_to_DER_cert(pem))
        except ValueError as error:
            raise ValueError(f"cannot read the TLS certificate {path}{which}: {error}") from None
        if now < start:
            raise ValueError(
                f"the TLS certificate {path}{which} is not valid yet: it becomes valid on "
                f"{_moment(start)} (now {_moment(now)}); check the clock, or use another"
            )
        if now > end:
            raise ValueError(
                f"the TLS certificate {path}{which} has expired: it was valid until "
                f"{_moment(end)} (now {_moment(now)}); renew it"
            )


def _check_pair(cert_path: Path, key_path: Path) -> None:
    """Load the pair as OpenSSL serves it: a key of another certificate is named so."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert_path, key_path, password=_no_password)
    except _Encrypted:
        raise ValueError(
            f"the TLS key {key_path} is encrypted: give it without a passphrase"
        ) from None
    except ssl.SSLError as error:
        if "KEY_VALUES_MISMATCH" in str(error):
            raise ValueError(
                f"the TLS key {key_path} does not match the certificate {cert_path}: "
                "it is the key of another certificate"
            ) from None
        raise ValueError(
            f"the TLS key {key_path} or the certificate {cert_path} cannot be used: "
            f"{error.reason or error} (a PEM certificate chain and a PEM private key are needed)"
        ) from None


class _Encrypted(Exception):
    pass


def _no_password() -> bytes:
    raise _Encrypted


def _moment(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _validity(der: bytes) -> tuple[datetime, datetime]:
    """notBefore and notAfter of a DER certificate (RFC 5280 4.1: Certificate ->
    tbsCertificate -> [version], serialNumber, signature, issuer, validity)."""
    certificate = _inside(der, 0, 0x30)
    tbs = _inside(certificate, 0, 0x30)
    at = 0
    if tbs[:1] == b"\xa0":  # the explicit version
        at = _skip(tbs, at)
    for _ in range(3):  # serialNumber, signature, issuer
        at = _skip(tbs, at)
    validity = _inside(tbs, at, 0x30)
    return _time(validity, 0), _time(validity, _skip(validity, 0))


def _header(der: bytes, at: int) -> tuple[int, int, int]:
    """(tag, where the content starts, its length) of the element at `at`."""
    if at + 2 > len(der):
        raise ValueError("the certificate is cut short")
    tag, length, at = der[at], der[at + 1], at + 2
    if length & 0x80:
        count = length & 0x7F
        if count == 0 or count > 4 or at + count > len(der):
            raise ValueError("the certificate has a malformed length")
        length, at = int.from_bytes(der[at : at + count], "big"), at + count
    if at + length > len(der):
        raise ValueError("the certificate is cut short")
    return tag, at, length


def _inside(der: bytes, at: int, tag: int) -> bytes:
    found, start, length = _header(der, at)
    if found != tag:
        raise ValueError("the certificate is not laid out as X.509 says")
    return der[start : start + length]


def _skip(der: bytes, at: int) -> int:
    _, start, length = _header(der, at)
    return start + length


def _time(der: bytes, at: int) -> datetime:
    tag, start, length = _header(der, at)
    text = der[start : start + length].decode("ascii", "replace")
    layouts = {0x17: "%y%m%d%H%M%SZ", 0x18: "%Y%m%d%H%M%SZ"}  # UTCTime, GeneralizedTime
    if tag not in layouts:
        raise ValueError("the certificate's validity is not a time")
    try:
        moment = datetime.strptime(text, layouts[tag]).replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"the certificate's validity {text!r} is not a time") from None
    if tag == 0x17 and moment.year >= 2050:  # RFC 5280: UTCTime's YY 50 to 99 are 19YY
        moment = moment.replace(year=moment.year - 100)
    return moment
