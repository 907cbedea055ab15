"""`himga export --target` and `himga import --target` reach a server set up as the README's
"Running it where others can reach it" says: with tokens (from `$HIMGA_TOKEN`, or `--token`) and
TLS, mutual here (`--tls-ca`, `--tls-cert`, `--tls-key`, as the Go client's flags). Without the
token, or trusting another CA, they are refused, and say so."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from himga.cli import main
from himga.data import Message, Session
from himga.service import RemoteMemory
from himga.service.credentials import ClientTls
from tests.certificates import Certificates
from tests.secured import secured_server


@pytest.fixture
def secured(certificates: Certificates, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A server with an auth file and mutual TLS: its target and a token of read and write on
    `moved-*`."""
    with secured_server(
        certificates, tmp_path, ["moved-*"], ["read", "write"], memory="keyword"
    ) as (_, port, token):
        yield f"127.0.0.1:{port}", token


def tls_flags(certificates: Certificates, ca: Path | None = None) -> list[str]:
    return [
        "--tls-ca", str(ca or certificates.ca),
        "--tls-cert", str(certificates.client.cert),
        "--tls-key", str(certificates.client.key),
    ]  # fmt: skip


def test_export_and_import_carry_the_token_and_tls(
    secured: tuple[str, str],
    certificates: Certificates,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target, token = secured
    tls = ClientTls(certificates.ca, certificates.client.cert, certificates.client.key)
    with RemoteMemory(target, "moved-a", token=token, tls=tls) as memory:
        memory.ingest(
            Message(role="Ada", content="over tls", turn_id="t1"), Session(session_id="s")
        )
    dump = tmp_path / "dump.jsonl"
    place = ["--target", target, *tls_flags(certificates)]

    monkeypatch.delenv("HIMGA_TOKEN", raising=False)
    assert main(["export", *place, "--namespace", "moved-a", "-o", str(dump)]) == 1
    assert "himga export" in capsys.readouterr().err  # no token: refused, and said

    monkeypatch.setenv("HIMGA_TOKEN", token)
    assert main(["export", *place, "--namespace", "moved-a", "-o", str(dump)]) == 0
    (line,) = dump.read_text("utf-8").splitlines()
    assert [m["content"] for m in json.loads(line)["messages"]] == ["over tls"]
    assert main(["import", *place, "--namespace", "moved-b", str(dump)]) == 0

    monkeypatch.delenv("HIMGA_TOKEN")
    again = tmp_path / "again.jsonl"
    given = [*place, "--token", token, "--namespace", "moved-b", "-o", str(again)]
    assert main(["export", *given]) == 0
    assert again.read_bytes() == dump.read_bytes()
    capsys.readouterr()


def test_import_without_the_token_stores_nothing_and_says_so(
    secured: tuple[str, str],
    certificates: Certificates,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target, token = secured
    dump = tmp_path / "dump.jsonl"
    dump.write_text(json.dumps({"session_id": "s", "messages": [{"role": "a", "content": "c"}]}))
    monkeypatch.delenv("HIMGA_TOKEN", raising=False)
    place = ["--target", target, *tls_flags(certificates), "--namespace", "moved-c"]
    assert main(["import", *place, str(dump)]) == 1
    assert "himga import" in capsys.readouterr().err
    tls = ClientTls(certificates.ca, certificates.client.cert, certificates.client.key)
    with RemoteMemory(target, "moved-c", token=token, tls=tls) as memory:
        assert memory.list().messages == []


def test_a_server_of_another_ca_is_not_reached(
    secured: tuple[str, str],
    certificates: Certificates,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target, token = secured
    monkeypatch.setenv("HIMGA_TOKEN", token)
    flags = tls_flags(certificates, ca=certificates.other_ca)
    assert main(["export", "--target", target, *flags, "--namespace", "moved-a"]) == 2
    assert "himga export" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (["--tls-cert", "c.pem", "--tls-key", "k.pem"], "--tls-cert needs --tls-ca"),
        (["--tls-ca", "ca.pem", "--tls-cert", "c.pem"], "--tls-cert and --tls-key go together"),
        (["--tls-ca", "/no/such/ca.pem"], "cannot read the CA certificate /no/such/ca.pem"),
    ],
)
@pytest.mark.parametrize("command", ["export", "import"])
def test_a_tls_option_missing_or_unreadable_is_named(
    command: str, given: list[str], said: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    dump = tmp_path / "dump.jsonl"
    dump.write_text(json.dumps({"session_id": "s", "messages": [{"role": "a", "content": "c"}]}))
    extra = [str(dump)] if command == "import" else []
    code = main([command, "--target", "127.0.0.1:1", "--namespace", "n", *given, *extra])
    assert code == 2  # an argument is wrong
    assert said in capsys.readouterr().err


@pytest.mark.parametrize("command", ["export", "import"])
def test_a_token_or_tls_without_a_server_is_refused(
    command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    dump = tmp_path / "dump.jsonl"
    dump.write_text("")
    extra = [str(dump)] if command == "import" else []
    given = ["--data-dir", str(tmp_path / "d"), "--namespace", "n", "--tls-ca", "ca.pem"]
    assert main([command, *given, *extra]) == 2
    assert "--tls-ca: only with --target" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()
