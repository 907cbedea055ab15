"""Certificates the TLS tests make for themselves: a CA, a server certificate for 127.0.0.1 and
localhost (good, expired, not valid yet, valid past 2050), client certificates (good, expired,
from another CA), written as PEM files."""

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_DAY = datetime.timedelta(days=1)
Valid = tuple[datetime.datetime, datetime.datetime] | None  # (not before, not after)


@dataclass(frozen=True)
class Pair:
    """A certificate and its key, as PEM files."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class Certificates:
    """Everything the TLS tests use, under one directory."""

    ca: Path  # the CA both the server's and the good clients' certificates come from
    other_ca: Path  # a CA nobody here trusts
    server: Pair
    server_expired: Pair
    server_not_yet_valid: Pair
    server_past_2050: Pair  # valid until 2060: its end is a GeneralizedTime, not a UTCTime
    server_from_other_ca: Pair
    client: Pair
    client_expired: Pair
    client_from_other_ca: Pair


class _Authority:
    def __init__(self, name: str) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(self.name)
            .issuer_name(self.name)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _DAY)
            .not_valid_after(now + 30 * _DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self.key, hashes.SHA256())
        )

    def issue(
        self, name: str, *, server: bool, expired: bool = False, valid: Valid = None
    ) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        start, end = (now - 30 * _DAY, now - _DAY) if expired else (now - _DAY, now + 30 * _DAY)
        if valid is not None:
            start, end = valid
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(self.name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
        )
        if server:
            names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM), key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )


def make_certificates(directory: Path) -> Certificates:
    """Make every certificate into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, other = _Authority("himga test CA"), _Authority("another CA")
    now = datetime.datetime.now(datetime.UTC)
    later, in_2060 = now + 30 * _DAY, datetime.datetime(2060, 1, 1, tzinfo=datetime.UTC)

    def write_ca(name: str, authority: _Authority) -> Path:
        path = directory / f"{name}.pem"
        path.write_bytes(authority.cert.public_bytes(serialization.Encoding.PEM))
        return path

    def pair(
        name: str,
        authority: _Authority,
        *,
        server: bool,
        expired: bool = False,
        valid: Valid = None,
    ) -> Pair:
        cert, key = authority.issue(name, server=server, expired=expired, valid=valid)
        (directory / f"{name}.pem").write_bytes(cert)
        (directory / f"{name}-key.pem").write_bytes(key)
        (directory / f"{name}-key.pem").chmod(0o600)
        return Pair(directory / f"{name}.pem", directory / f"{name}-key.pem")

    return Certificates(
        ca=write_ca("ca", ca),
        other_ca=write_ca("other-ca", other),
        server=pair("server", ca, server=True),
        server_expired=pair("server-expired", ca, server=True, expired=True),
        server_not_yet_valid=pair("server-later", ca, server=True, valid=(now + _DAY, later)),
        server_past_2050=pair("server-2060", ca, server=True, valid=(now - _DAY, in_2060)),
        server_from_other_ca=pair("server-other", other, server=True),
        client=pair("client", ca, server=False),
        client_expired=pair("client-expired", ca, server=False, expired=True),
        client_from_other_ca=pair("client-other", other, server=False),
    )
