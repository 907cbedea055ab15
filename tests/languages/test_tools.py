"""Reflection-driven tools work against `himga serve` with nothing but reflection: grpcurl
(reflection v1) lists every service and describes every method, and calls one; ghz loads a
method by reflection alone and calls it. Both are pinned in go.mod's tool directives and
built here from the Go module cache."""

import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from himga.service import tokens
from tests.languages.commands import run
from tests.server_process import start_listening


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if shutil.which("go") is None:
        pytest.fail("Go is not installed (go.mod names the version)")
    out = tmp_path_factory.mktemp("tools")
    built = {}
    for name, package in [
        ("grpcurl", "github.com/fullstorydev/grpcurl/cmd/grpcurl"),
        ("ghz", "github.com/bojand/ghz/cmd/ghz"),
    ]:
        run(["go", "build", "-o", str(out / name), package])
        built[name] = out / name
    return built


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A server with an auth file, and a token granting everything on `tools-*`."""
    directory = tmp_path_factory.mktemp("tools-server")
    held = tokens.Tokens()
    token, _ = held.new(["tools-*"], tokens.RIGHTS)
    tokens.save(directory / "auth.json", held)
    process, target = start_listening(
        [
            sys.executable, "-m", "himga", "serve", "--port", "0", "--memory", "keyword",
            "--auth-file", str(directory / "auth.json"),
        ]
    )  # fmt: skip
    try:
        yield target, token
    finally:
        process.kill()
        process.wait()


def test_grpcurl_describes_every_method_by_reflection(
    tools: dict[str, Path], server: tuple[str, str]
) -> None:
    target, _ = server
    grpcurl = str(tools["grpcurl"])
    services = run([grpcurl, "-plaintext", target, "list"]).split()
    assert {
        "himga.memory.v1.MemoryService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
    } <= set(services)
    described = 0
    for service in services:
        text = run([grpcurl, "-plaintext", target, "describe", service])
        for method in re.findall(r"rpc (\w+) \(", text):
            output = run([grpcurl, "-plaintext", target, "describe", f"{service}.{method}"])
            assert f"{service}.{method} is a method" in output, output
            described += 1
    assert described >= 9
    # The proto's comments come with the descriptors.
    output = run([grpcurl, "-plaintext", target, "describe", "himga.memory.v1.RetrieveRequest"])
    assert "// At most this many hits" in output, output


def test_grpcurl_calls_with_a_token(tools: dict[str, Path], server: tuple[str, str]) -> None:
    target, token = server
    request = '{"namespace": "tools-a", "message": {"role": "u", "content": "plum"}, ' + (
        '"session": {"session_id": "s"}}'
    )
    ingest = "himga.memory.v1.MemoryService/Ingest"
    grpcurl = str(tools["grpcurl"])
    run(
        [
            grpcurl,
            "-plaintext",
            "-H",
            f"authorization: Bearer {token}",
            "-d",
            request,
            target,
            ingest,
        ]
    )
    # grpcurl exits 64 + the status code: UNAUTHENTICATED is 16.
    refused = run([grpcurl, "-plaintext", "-d", request, target, ingest], status=64 + 16)
    assert "Unauthenticated" in refused and "UNAUTHENTICATED" in refused, refused


def test_ghz_calls_a_method_known_by_reflection_alone(
    tools: dict[str, Path], server: tuple[str, str]
) -> None:
    target, token = server
    output = run(
        [
            str(tools["ghz"]), "--insecure", "--call", "himga.memory.v1.MemoryService.Retrieve",
            "--metadata", f'{{"authorization": "Bearer {token}"}}',
            "-d", '{"namespace": "tools-a", "query": "plum"}', "-n", "200", "-c", "4", target,
        ]
    )  # fmt: skip
    assert re.search(r"Count:\s+200\b", output), output
    assert re.search(r"\[OK\]\s+200 responses", output), output
