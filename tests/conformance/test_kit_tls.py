"""The kit checks a server set up as the README's "Running it where others can reach it" says:
tokens and mutual TLS on both ports, reached with `--tls-ca`, `--tls-cert` and `--tls-key` (as
every client takes them) and `--http https://...`. A kit whose TLS does not match the port's
(plaintext against TLS, TLS against plaintext, another CA, no client certificate for a mutual
TLS server) says so in one line and exits 2, as when no server answers, at once rather than
after its timeout."""

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from _pytest.capture import CaptureResult

from himga.cli import main
from himga.conformance import CHECKS
from himga.service import create_server
from tests.certificates import Certificates
from tests.conformance.test_kit import _ROW, GRPC_ONLY
from tests.secured import secured_server

SLOW = 60.0
"""The kit's timeout in the mismatch tests: each must be told long before it."""


@dataclass(frozen=True)
class Ports:
    """A server's gRPC port (HOST:PORT) and HTTP port (a URL)."""

    target: str
    url: str


@pytest.fixture
def secured(certificates: Certificates, tmp_path: Path) -> Iterator[tuple[Ports, str]]:
    """A server as `himga serve --auth-file --tls-cert --tls-key --tls-client-ca --http-port`
    starts one: both ports TLS only, mutual, and a token needed. Its ports and a token of
    what the kit needs (read, write and admin on `conformance.*`)."""
    with secured_server(
        certificates,
        tmp_path,
        ["conformance.*"],
        ["read", "write", "admin"],
        memory="sqlite",
        data_dir=tmp_path / "data",
        http_address=("127.0.0.1", 0),
    ) as (server, port, token):
        yield Ports(f"127.0.0.1:{port}", f"https://127.0.0.1:{server.http_port}"), token


@pytest.fixture
def plaintext(tmp_path: Path) -> Iterator[Ports]:
    """A server without TLS (nor tokens), both ports open."""
    server, port = create_server(
        "127.0.0.1:0", memory="null", data_dir=tmp_path / "plain", http_address=("127.0.0.1", 0)
    )
    try:
        yield Ports(f"127.0.0.1:{port}", f"http://127.0.0.1:{server.http_port}")
    finally:
        server.stop(None).wait()


def tls_flags(certificates: Certificates, ca: Path | None = None, mutual: bool = True) -> list[str]:
    client = [
        "--tls-cert",
        str(certificates.client.cert),
        "--tls-key",
        str(certificates.client.key),
    ]
    return ["--tls-ca", str(ca or certificates.ca), *(client if mutual else [])]


def test_the_kit_checks_both_ports_over_mutual_tls_with_a_token(
    secured: tuple[Ports, str],
    certificates: Certificates,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ports, token = secured
    monkeypatch.setenv("HIMGA_TOKEN", token)  # the default of --token, as for every client
    given = ["--target", ports.target, "--http", ports.url, *tls_flags(certificates)]
    code = main(["conformance", *given])
    said = capsys.readouterr()
    assert code == 0, said.out + said.err
    assert said.err == ""
    grpc_table, http_table = said.out.split(f"Conformance of {ports.url}")
    for where, table in ((ports.target, grpc_table), (ports.url, http_table)):
        assert f"{where} conforms to the MemoryService and EpisodeService contract" in table
    assert {name for name, _, result in _ROW.findall(grpc_table) if result == "PASS"} == {
        c.name for c in CHECKS
    }, grpc_table
    rows = {name: result for name, _, result in _ROW.findall(http_table)}
    assert {n for n, result in rows.items() if result == "PASS"} == {
        c.name for c in CHECKS
    } - GRPC_ONLY, http_table
    assert "could not delete" not in said.out


def test_the_token_goes_over_tls_too(
    secured: tuple[Ports, str],
    certificates: Certificates,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without the token, the TLS connection is made and the calls are refused: checks fail
    (exit 1), saying UNAUTHENTICATED; the TLS is not what is blamed."""
    ports, _ = secured
    monkeypatch.delenv("HIMGA_TOKEN", raising=False)
    code = main(["conformance", "--http", ports.url, *tls_flags(certificates)])
    said = capsys.readouterr()
    assert code == 1, said.out + said.err
    assert "UNAUTHENTICATED" in said.out and said.err == ""


def _one_line(code: int, said: CaptureResult[str], *expected: str) -> None:
    assert code == 2, said
    assert said.out == "" and said.err.count("\n") == 1, said
    assert said.err.startswith("himga conformance: "), said
    assert "Traceback" not in said.err
    for words in expected:
        assert words in said.err, said.err


@pytest.mark.parametrize("port", ["grpc", "http"])
def test_a_plaintext_kit_at_a_tls_port_is_told_to_give_tls(
    port: str, secured: tuple[Ports, str], capsys: pytest.CaptureFixture[str]
) -> None:
    ports, token = secured
    plain_url = ports.url.replace("https://", "http://")
    where = ["--target", ports.target] if port == "grpc" else ["--http", plain_url]
    started = time.monotonic()
    code = main(["conformance", *where, "--token", token, "--timeout", str(SLOW)])
    assert time.monotonic() - started < SLOW / 2
    said = capsys.readouterr()
    if port == "grpc":
        _one_line(code, said, f"no plaintext gRPC server answers at {ports.target}: a TLS server")
    else:
        _one_line(code, said, f"no plaintext HTTP server answers at {plain_url}: a TLS server does")
        assert f"--http {ports.url}" in said.err
    assert "--tls-ca PEM" in said.err


@pytest.mark.parametrize("port", ["grpc", "http"])
def test_a_tls_kit_at_a_plaintext_port_is_told_it_is_plaintext(
    port: str, plaintext: Ports, certificates: Certificates, capsys: pytest.CaptureFixture[str]
) -> None:
    tls_url = plaintext.url.replace("http://", "https://")
    where = ["--target", plaintext.target] if port == "grpc" else ["--http", tls_url]
    started = time.monotonic()
    code = main(["conformance", *where, *tls_flags(certificates), "--timeout", str(SLOW)])
    assert time.monotonic() - started < SLOW / 2
    said = capsys.readouterr()
    _one_line(
        code, said, f"no TLS server answers at {plaintext.target if port == 'grpc' else tls_url}"
    )
    if port == "grpc":
        assert "drop --tls-ca, --tls-cert and --tls-key for a plaintext port" in said.err
    else:
        assert f"--http {plaintext.url}" in said.err


@pytest.mark.parametrize("port", ["grpc", "http"])
def test_a_server_certificate_of_another_ca_is_named(
    port: str,
    secured: tuple[Ports, str],
    certificates: Certificates,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ports, token = secured
    where = ["--target", ports.target] if port == "grpc" else ["--http", ports.url]
    flags = tls_flags(certificates, ca=certificates.other_ca)
    started = time.monotonic()
    code = main(["conformance", *where, *flags, "--token", token, "--timeout", str(SLOW)])
    assert time.monotonic() - started < SLOW / 2
    _one_line(
        code,
        capsys.readouterr(),
        f"the TLS server at {ports.target if port == 'grpc' else ports.url} has a certificate "
        "the kit does not trust",
        f"give --tls-ca PEM, the CA that signed it (trusted: --tls-ca {certificates.other_ca})",
    )


@pytest.mark.parametrize("port", ["grpc", "http"])
def test_a_mutual_tls_server_refusing_the_kit_without_a_certificate_is_named(
    port: str,
    secured: tuple[Ports, str],
    certificates: Certificates,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ports, token = secured
    where = ["--target", ports.target] if port == "grpc" else ["--http", ports.url]
    flags = tls_flags(certificates, mutual=False)
    code = main(["conformance", *where, *flags, "--token", token, "--timeout", str(SLOW)])
    _one_line(
        code,
        capsys.readouterr(),
        "refused the kit's handshake, with no client certificate",
        "give --tls-cert PEM --tls-key PEM",
    )


def test_a_tls_port_of_the_other_kind_is_named(
    secured: tuple[Ports, str], certificates: Certificates, capsys: pytest.CaptureFixture[str]
) -> None:
    """As over plaintext (test_kit.py): the gRPC port given as --http, the HTTP port as
    --target, each named, the option that takes it said."""
    ports, token = secured
    flags = [*tls_flags(certificates), "--token", token]
    grpc_as_http = f"https://{ports.target}"
    _one_line(
        main(["conformance", "--http", grpc_as_http, *flags]),
        capsys.readouterr(),
        f"no HTTP server answers HTTP/1.1 at {grpc_as_http}: an HTTP/2-only server does",
        f"give a gRPC port as --target {ports.target}",
    )
    http_as_grpc = ports.url.removeprefix("https://")
    _one_line(
        main(["conformance", "--target", http_as_grpc, *flags]),
        capsys.readouterr(),
        "answering a gRPC call with HTTP status 404 and no gRPC status",
        f"give an HTTP port as --http {ports.url}",
    )


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (
            ["--target", "127.0.0.1:1", "--tls-cert", "c.pem", "--tls-key", "k.pem"],
            "needs --tls-ca",
        ),
        (["--tls-ca", "ca.pem"], "give --target HOST:PORT, --http URL, or both"),
        (
            ["--target", "127.0.0.1:1", "--http", "http://127.0.0.1:2", "--tls-ca", "{ca}"],
            "--http http://127.0.0.1:2: a plaintext URL, with --tls-ca given",
        ),
        (
            ["--target", "127.0.0.1:1", "--tls-ca", "/no/such/ca.pem"],
            "cannot read the CA certificate /no/such/ca.pem",
        ),
        (
            ["--http", "https://127.0.0.1:1", "--tls-ca", "/no/such/ca.pem"],
            "cannot read the CA certificate /no/such/ca.pem",
        ),
    ],
)
def test_tls_options_amiss_are_named_before_any_check(
    given: list[str], said: str, certificates: Certificates, capsys: pytest.CaptureFixture[str]
) -> None:
    given = [each.format(ca=certificates.ca) for each in given]  # a CA file that reads
    _one_line(main(["conformance", *given, "--timeout", "1"]), capsys.readouterr(), said)
