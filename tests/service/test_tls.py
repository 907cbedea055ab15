"""TLS and mutual TLS, with certificates the test makes: a client that trusts the server's CA
(and, for mutual TLS, holds a certificate of the CA the server names) is served; a plaintext
client, an expired certificate, or one from another CA, on either side, is not."""

import datetime
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from cryptography import x509

from himga.data.conversation import Message, Session
from himga.service import RemoteMemory, create_server, tokens
from himga.service.auth import AuthFile
from himga.service.credentials import ClientTls, ServerTls
from himga.service.errors import Unauthenticated
from tests.certificates import Certificates, Pair
from tests.server_process import start_listening

# Protection against a hang only: no test asserts how long a handshake takes.
HANG_SECONDS = 30


def serve(server: Pair, client_ca: Path | None = None, **options: object) -> tuple[object, str]:
    running, port = create_server(
        "127.0.0.1:0",
        memory="keyword",
        tls=ServerTls(server.cert, server.key, client_ca),
        **options,  # type: ignore[arg-type]
    )
    return running, f"127.0.0.1:{port}"


@pytest.fixture(scope="module")
def tls_server(certificates: Certificates) -> Iterator[str]:
    running, target = serve(certificates.server)
    yield target
    running.stop(None).wait()  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def mutual_server(certificates: Certificates) -> Iterator[str]:
    running, target = serve(certificates.server, certificates.ca)
    yield target
    running.stop(None).wait()  # type: ignore[attr-defined]


def round_trip(target: str, tls: ClientTls | None, token: str | None = None) -> list[str]:
    with RemoteMemory(target, "tls", tls=tls, token=token, timeout=HANG_SECONDS) as memory:
        memory.ingest(Message(role="u", content="over tls"), Session(session_id="s"))
        return [hit.content for hit in memory.search("tls")]


def refused(target: str, tls: ClientTls | None) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as caught:
        round_trip(target, tls)
    assert isinstance(caught.value, grpc.Call)
    return caught.value.code()


def test_a_client_trusting_the_ca_is_served(tls_server: str, certificates: Certificates) -> None:
    assert "over tls" in round_trip(tls_server, ClientTls(ca=certificates.ca))


def test_a_plaintext_client_is_refused(tls_server: str) -> None:
    assert refused(tls_server, None) == grpc.StatusCode.UNAVAILABLE


def test_a_server_certificate_from_another_ca_is_refused(certificates: Certificates) -> None:
    running, target = serve(certificates.server_from_other_ca)
    try:
        assert refused(target, ClientTls(ca=certificates.ca)) == grpc.StatusCode.UNAVAILABLE
    finally:
        running.stop(None).wait()  # type: ignore[attr-defined]


def moment(text: str) -> datetime.datetime:
    """A time as the refusals write it: "2026-12-01 20:51:09 UTC"."""
    return datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S UTC").replace(tzinfo=datetime.UTC)


def said_moment(message: str, before: str) -> datetime.datetime:
    found = re.search(before + r" (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC)", message)
    assert found is not None, message
    return moment(found.group(1))


def valid_between(pair: Pair) -> tuple[datetime.datetime, datetime.datetime]:
    cert = x509.load_pem_x509_certificate(pair.cert.read_bytes())
    return cert.not_valid_before_utc, cert.not_valid_after_utc


def test_an_expired_server_certificate_is_refused_at_start_up_saying_when(
    certificates: Certificates,
) -> None:
    with pytest.raises(ValueError, match="has expired") as refusal:
        serve(certificates.server_expired)
    message = str(refusal.value)
    assert str(certificates.server_expired.cert) in message
    assert said_moment(message, "valid until") == valid_between(certificates.server_expired)[1]


def test_a_server_certificate_not_valid_yet_is_refused_at_start_up_saying_when(
    certificates: Certificates,
) -> None:
    with pytest.raises(ValueError, match="is not valid yet") as refusal:
        serve(certificates.server_not_yet_valid)
    start = valid_between(certificates.server_not_yet_valid)[0]
    assert said_moment(str(refusal.value), "becomes valid on") == start


def test_a_key_of_another_certificate_is_refused_saying_so(certificates: Certificates) -> None:
    with pytest.raises(ValueError, match="does not match the certificate") as refusal:
        serve(Pair(certificates.server.cert, certificates.client.key))
    assert str(certificates.client.key) in str(refusal.value)


def test_the_check_reads_validity_as_the_certificate_holds_it(certificates: Certificates) -> None:
    """Both of X.509's time encodings (a UTCTime, and the GeneralizedTime of years past 2049),
    at each edge of the validity: a moment inside is good, one just outside is not."""
    for pair in (certificates.server, certificates.server_past_2050):
        start, end = valid_between(pair)
        tls = ServerTls(pair.cert, pair.key)
        tls.check(start)
        tls.check(end)
        with pytest.raises(ValueError, match="not valid yet"):
            tls.check(start - datetime.timedelta(seconds=1))
        with pytest.raises(ValueError, match="has expired"):
            tls.check(end + datetime.timedelta(seconds=1))
    assert valid_between(certificates.server_past_2050)[1].year == 2060


def test_a_certificate_later_in_the_chain_is_checked_too(
    certificates: Certificates, tmp_path: Path
) -> None:
    chain = tmp_path / "chain.pem"
    chain.write_bytes(
        certificates.server.cert.read_bytes() + certificates.client_expired.cert.read_bytes()
    )
    with pytest.raises(ValueError, match=r"\(certificate 2 of its chain\) has expired"):
        ServerTls(chain, certificates.server.key).check()


@pytest.mark.parametrize(
    ("cert", "key", "said"),
    [
        ("key", "key", "holds no PEM certificate"),
        ("cert", "cert", "cannot be used"),
        ("missing", "key", "cannot read the TLS certificate"),
        ("cert", "missing", "cannot read the TLS key"),
    ],
)
def test_files_that_are_not_a_certificate_and_its_key_are_named(
    certificates: Certificates, tmp_path: Path, cert: str, key: str, said: str
) -> None:
    files = {
        "cert": certificates.server.cert,
        "key": certificates.server.key,
        "missing": tmp_path / "missing.pem",
    }
    with pytest.raises(ValueError, match=said):
        ServerTls(files[cert], files[key]).check()


@pytest.mark.parametrize(
    ("pair", "said"),
    [
        ("server_expired", "has expired: it was valid until"),
        ("server_not_yet_valid", "is not valid yet: it becomes valid on"),
        ("mismatched", "does not match the certificate"),
    ],
)
def test_serve_refuses_a_certificate_it_cannot_serve_saying_why(
    certificates: Certificates, pair: str, said: str
) -> None:
    chosen = (
        Pair(certificates.server.cert, certificates.client.key)
        if pair == "mismatched"
        else getattr(certificates, pair)
    )
    completed = subprocess.run(
        [
            sys.executable, "-m", "himga", "serve", "--port", "0", "--http-port", "0",
            "--memory", "null", "--tls-cert", str(chosen.cert), "--tls-key", str(chosen.key),
        ],
        capture_output=True, text=True, check=False, timeout=HANG_SECONDS,
    )  # fmt: skip
    assert completed.returncode == 2
    assert said in completed.stderr
    assert "Failed to bind" not in completed.stderr
    assert "listening on" not in completed.stderr


def test_mutual_tls_serves_a_client_with_a_certificate_of_the_ca(
    mutual_server: str, certificates: Certificates
) -> None:
    tls = ClientTls(ca=certificates.ca, cert=certificates.client.cert, key=certificates.client.key)
    assert "over tls" in round_trip(mutual_server, tls)


@pytest.mark.parametrize("client", [None, "client_expired", "client_from_other_ca"])
def test_mutual_tls_refuses_no_expired_or_foreign_client_certificate(
    mutual_server: str, certificates: Certificates, client: str | None
) -> None:
    pair: Pair | None = getattr(certificates, client) if client else None
    tls = ClientTls(
        ca=certificates.ca,
        cert=pair.cert if pair else None,
        key=pair.key if pair else None,
    )
    assert refused(mutual_server, tls) == grpc.StatusCode.UNAVAILABLE


def test_a_token_travels_over_tls(certificates: Certificates, tmp_path: Path) -> None:
    held = tokens.Tokens()
    token, _ = held.new(["tls"], ["read", "write"])
    tokens.save(tmp_path / "auth.json", held)
    running, target = serve(certificates.server, auth=AuthFile(tmp_path / "auth.json"))
    try:
        assert "over tls" in round_trip(target, ClientTls(ca=certificates.ca), token)
        with pytest.raises(Unauthenticated):
            round_trip(target, ClientTls(ca=certificates.ca))
    finally:
        running.stop(None).wait()  # type: ignore[attr-defined]


def test_serve_with_mutual_tls(certificates: Certificates) -> None:
    process, target = start_listening(
        [
            sys.executable, "-m", "himga", "serve", "--port", "0", "--memory", "keyword",
            "--tls-cert", str(certificates.server.cert), "--tls-key", str(certificates.server.key),
            "--tls-client-ca", str(certificates.ca),
        ]
    )  # fmt: skip
    try:
        tls = ClientTls(
            ca=certificates.ca, cert=certificates.client.cert, key=certificates.client.key
        )
        assert "over tls" in round_trip(target, tls)
        assert refused(target, ClientTls(ca=certificates.ca)) == grpc.StatusCode.UNAVAILABLE
    finally:
        process.terminate()
        assert process.wait(HANG_SECONDS) == 0


def test_serve_refuses_half_a_tls_configuration(certificates: Certificates) -> None:
    completed = subprocess.run(
        [
            sys.executable, "-m", "himga", "serve", "--port", "0", "--memory", "null",
            "--tls-cert", str(certificates.server.cert),
        ],
        capture_output=True, text=True, check=False, timeout=HANG_SECONDS,
    )  # fmt: skip
    assert completed.returncode == 2
    assert "--tls-cert and --tls-key go together" in completed.stderr
