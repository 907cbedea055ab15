"""Go and TypeScript clients against a server with an auth file and mutual TLS (certificates
and tokens made here): tests/go/secure, tests/typescript/secure.test.ts, and the agent examples
of both languages given a token and the TLS files."""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from himga.service import tokens
from tests.certificates import make_certificates
from tests.languages.commands import run
from tests.languages.test_go import go, go_test
from tests.languages.test_typescript import _node_test, build  # noqa: F401 (a fixture)
from tests.server_process import start_listening


@pytest.fixture(scope="module")
def secure_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment the secure tests read, with a server started for them."""
    directory = tmp_path_factory.mktemp("secure")
    made = make_certificates(directory / "certificates")
    held = tokens.Tokens()
    # The TypeScript agent example keeps its episodes in example-typescript-agent.
    writer, _ = held.new(["go-*", "ts-*", "example-typescript-agent"], ["read", "write"])
    reader, _ = held.new(["go-*", "ts-*"], ["read"])
    tokens.save(directory / "auth.json", held)
    process, target = start_listening(
        [
            sys.executable, "-m", "himga", "serve", "--port", "0", "--memory", "keyword",
            "--auth-file", str(directory / "auth.json"),
            "--tls-cert", str(made.server.cert), "--tls-key", str(made.server.key),
            "--tls-client-ca", str(made.ca),
        ]
    )  # fmt: skip
    try:
        yield {
            "HIMGA_TARGET": target,
            "HIMGA_TOKEN": writer,
            "HIMGA_READ_TOKEN": reader,
            "HIMGA_TLS_CA": str(made.ca),
            "HIMGA_TLS_OTHER_CA": str(made.other_ca),
            "HIMGA_TLS_CERT": str(made.client.cert),
            "HIMGA_TLS_KEY": str(made.client.key),
            "HIMGA_TLS_EXPIRED_CERT": str(made.client_expired.cert),
            "HIMGA_TLS_EXPIRED_KEY": str(made.client_expired.key),
            "HIMGA_TLS_OTHER_CERT": str(made.client_from_other_ca.cert),
            "HIMGA_TLS_OTHER_KEY": str(made.client_from_other_ca.key),
        }
    finally:
        process.kill()
        process.wait()


def test_go_client_with_a_token_and_mutual_tls(secure_env: dict[str, str]) -> None:
    go_test("./tests/go/secure", 7, secure_env)


def test_typescript_client_with_a_token_and_mutual_tls(
    secure_env: dict[str, str],
    build: Path,  # noqa: F811
) -> None:
    counts = _node_test(build / "tests" / "typescript" / "secure.test.js", secure_env)
    assert counts["pass"] == 9


def _go_agent(env: dict[str, str], *flags: str, status: int = 0) -> str:
    return go(
        "run", "./examples/go/agent", "-target", env["HIMGA_TARGET"],
        "-namespace", "go-agent-secure", *flags, env={"HIMGA_TOKEN": ""}, status=status,
    )  # fmt: skip


def test_go_agent_example_with_a_token_and_mutual_tls(secure_env: dict[str, str]) -> None:
    tls = [
        "-tls-ca", secure_env["HIMGA_TLS_CA"],
        "-tls-cert", secure_env["HIMGA_TLS_CERT"], "-tls-key", secure_env["HIMGA_TLS_KEY"],
    ]  # fmt: skip
    output = _go_agent(secure_env, "-token", secure_env["HIMGA_TOKEN"], *tls)
    assert "recorded episode ep-" in output, output
    assert "clear the stale session key on logout" in output, output
    refused = _go_agent(secure_env, *tls, status=1)
    assert "the server refused the token (pass -token" in refused, refused
    assert "Unauthenticated" in refused, refused


def test_typescript_agent_example_with_a_token_and_mutual_tls(
    secure_env: dict[str, str],
    build: Path,  # noqa: F811
) -> None:
    script = build / "examples" / "typescript" / "agent.js"
    output = run(["node", str(script), secure_env["HIMGA_TARGET"]], secure_env)
    assert "recorded episode ep-2025-03-01-ts-cache" in output, output
    assert "put the currency in the cache key" in output, output
