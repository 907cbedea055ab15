"""TLS and mutual TLS, with certificates the test makes: a client that trusts the server's CA
(and, for mutual TLS, holds a certificate of the CA the server names) is served; a plaintext
client, an expired certificate, or one from another CA, on either side, is not."""

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from himga.data.conversation import Message, Session
from himga.service import RemoteMemory, create_server, tokens
from himga.service.auth import AuthFile
from himga.service.credentials import ClientTls, ServerTls
from himga.service.errors import Unauthenticated
from tests.certificates import Certificates, Pair, make_certificates
from tests.server_process import start_listening

# Protection against a hang only: no test asserts how long a handshake takes.
HANG_SECONDS = 30


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("certificates"))


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


def test_an_expired_server_certificate_is_refused(certificates: Certificates) -> None:
    running, target = serve(certificates.server_expired)
    try:
        assert refused(target, ClientTls(ca=certificates.ca)) == grpc.StatusCode.UNAVAILABLE
    finally:
        running.stop(None).wait()  # type: ignore[attr-defined]


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
