"""The HTTP port of a server with TLS speaks TLS only, with the gRPC port's certificate (HTTP/1.1
and HTTP/2 by ALPN), and asks for a client certificate when the gRPC port does: a token sent
over it is never in cleartext."""

import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from himga.service import create_server
from himga.service.credentials import ServerTls
from tests.certificates import Certificates

RETRIEVE = "/himga.memory.v1.MemoryService/Retrieve"
HANG_SECONDS = 30  # protection against a hang only


@pytest.fixture(scope="module", params=[False, True], ids=["tls", "mutual-tls"])
def https_port(request: pytest.FixtureRequest, certificates: Certificates) -> Iterator[int]:
    """The HTTP port of a server with TLS (mutual TLS for the second parameter)."""
    client_ca = certificates.ca if request.param else None
    server, _ = create_server(
        "127.0.0.1:0",
        memory="keyword",
        tls=ServerTls(certificates.server.cert, certificates.server.key, client_ca),
        http_address=("127.0.0.1", 0),
    )
    assert server.http_port is not None
    yield server.http_port
    server.stop(None).wait()


def client_context(ca: Path, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        context.load_cert_chain(str(cert), str(key))
    return context


def retrieve(url: str, verify: ssl.SSLContext | bool, *, http2: bool = False) -> httpx2.Response:
    with httpx2.Client(verify=verify, http2=http2, timeout=HANG_SECONDS) as client:
        return client.post(url + RETRIEVE, json={"namespace": "tls", "query": "anything"})


@pytest.mark.parametrize("http2", [False, True], ids=["http1.1", "http2"])
def test_a_client_trusting_the_ca_is_served(
    https_port: int, certificates: Certificates, http2: bool
) -> None:
    client = certificates.client
    answer = retrieve(
        f"https://127.0.0.1:{https_port}",
        client_context(certificates.ca, client.cert, client.key),
        http2=http2,
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["hits"] == []
    assert answer.http_version == ("HTTP/2" if http2 else "HTTP/1.1")


def test_cleartext_is_not_served(https_port: int) -> None:
    with pytest.raises(httpx2.HTTPError):
        retrieve(f"http://127.0.0.1:{https_port}", False)


def test_a_server_is_not_trusted_without_its_ca(
    https_port: int, certificates: Certificates
) -> None:
    with pytest.raises(httpx2.ConnectError):
        retrieve(f"https://127.0.0.1:{https_port}", client_context(certificates.other_ca))


def test_mutual_tls_refuses_a_client_without_a_certificate(certificates: Certificates) -> None:
    server, _ = create_server(
        "127.0.0.1:0",
        memory="keyword",
        tls=ServerTls(certificates.server.cert, certificates.server.key, certificates.ca),
        http_address=("127.0.0.1", 0),
    )
    try:
        with pytest.raises(httpx2.HTTPError):
            retrieve(f"https://127.0.0.1:{server.http_port}", client_context(certificates.ca))
    finally:
        server.stop(None).wait()
