"""`himga mcp --target` in front of a server set up as the README's "Running it where others can
reach it" says: with tokens (`$HIMGA_TOKEN`) and mutual TLS (`--tls-ca`, `--tls-cert`,
`--tls-key`, as `himga export` and the Go client take them). Trusting another CA, each tool
call is a tool error, and nothing is stored."""

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from himga.service import RemoteMemory
from himga.service.credentials import ClientTls
from tests.certificates import Certificates, make_certificates
from tests.secured import secured_server


@pytest.fixture
def secured(certificates: Certificates, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A server with an auth file and mutual TLS: its target and a token of read and write."""
    with secured_server(certificates, tmp_path, ["*"], ["read", "write"], memory="keyword") as (
        _,
        port,
        token,
    ):
        yield f"127.0.0.1:{port}", token


def _remember_then_recall(target: str, token: str, ca: Path, certificates: Certificates) -> list:
    command = [
        sys.executable, "-m", "himga", "mcp", "--namespace", "agent", "--target", target,
        "--tls-ca", str(ca), "--tls-cert", str(certificates.client.cert),
        "--tls-key", str(certificates.client.key),
    ]  # fmt: skip
    parameters = StdioServerParameters(
        command=command[0], args=command[1:], env={**os.environ, "HIMGA_TOKEN": token}
    )

    async def main() -> list:
        async with Client(parameters) as client:
            said = await client.call_tool("remember", {"text": "The kayak is red."})
            found = await client.call_tool("recall", {"query": "what colour is the kayak"})
            return [said, found]

    return asyncio.run(main())


def test_tools_reach_a_server_with_tokens_and_mutual_tls(
    secured: tuple[str, str], certificates: Certificates
) -> None:
    target, token = secured
    said, found = _remember_then_recall(target, token, certificates.ca, certificates)
    assert not said.is_error and not found.is_error, (said.content, found.content)
    assert found.structured_content is not None
    assert "The kayak is red." in found.structured_content["context"]


def test_tools_trusting_another_ca_are_refused_and_store_nothing(
    secured: tuple[str, str], certificates: Certificates, tmp_path: Path
) -> None:
    target, token = secured
    other = make_certificates(tmp_path / "other")
    said, found = _remember_then_recall(target, token, other.ca, certificates)
    assert said.is_error and found.is_error
    tls = ClientTls(certificates.ca, certificates.client.cert, certificates.client.key)
    with RemoteMemory(target, "agent", token=token, tls=tls) as memory:
        assert memory.list().messages == []
