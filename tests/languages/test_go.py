"""The Go side, run from pytest: `go test` runs the conformance vectors through a Go validator,
and the Go client test and example run against the session's real memory server (the
`memory_server` fixture of tests/conftest.py). Go (the version go.mod names) is a prerequisite;
its modules come from the Go module proxy, locked by go.sum."""

import re
import shutil
from pathlib import Path

import pytest

from tests.languages.commands import run

# `go test -v` result lines: "--- PASS: TestName (0.01s)".
_RESULT = re.compile(r"^\s*--- (PASS|FAIL|SKIP): (\S+)", re.MULTILINE)


def go(*args: str, env: dict[str, str] | None = None, status: int = 0) -> str:
    """Run `go ARGS` in the repository; fail the test with its output unless it exits with
    `status` (`go run` exits 1 for any failure of the program it runs)."""
    if shutil.which("go") is None:
        pytest.fail("Go is not installed (go.mod names the version)")
    return run(["go", *args], env, status)


def go_test(package: str, at_least: int, env: dict[str, str] | None = None) -> None:
    """`go test -v` of one package: every test passes, none is skipped, and at least `at_least`
    ran (a package whose tests stopped being found fails, a new test needs no edit here)."""
    output = go("test", "-count=1", "-v", package, env=env)
    results = [result for result, name in _RESULT.findall(output) if "/" not in name]
    assert len(results) >= at_least, output
    assert set(results) == {"PASS"}, output


def test_go_validator_agrees_with_the_vectors_and_the_protojson_of_go_messages(
    locomo_file: Path,
) -> None:
    go_test("./tests/go/schemas", 3, {"HIMGA_LOCOMO_PATH": str(locomo_file)})


def test_go_locomo_reader_reads_as_the_python_loader_does() -> None:
    go_test("./tests/go/locomo", 3)


def test_go_client_keeps_a_locomo_conversation_in_the_server(
    locomo_file: Path, memory_server: str
) -> None:
    env = {"HIMGA_TARGET": memory_server, "HIMGA_LOCOMO_PATH": str(locomo_file)}
    go_test("./tests/go/client", 3, env)


def test_go_client_example_runs(locomo_file: Path, memory_server: str) -> None:
    output = go(
        "run",
        "./examples/go/client",
        "-target",
        memory_server,
        "-locomo",
        str(locomo_file),
        "-namespace",
        "go-example-test",
        "-questions",
        "2",
    )
    assert re.search(
        r"^stored \d+ messages of \S+ in namespace \"go-example-test\"$", output, re.MULTILINE
    ), output
    assert output.count("\nQ: ") == 3, output  # two questions, then the first in one session
    assert re.search(r"^Q: .* \(in session_1 only\)$", output, re.MULTILINE), output
    assert re.search(
        r"^deleted [1-9]\d* messages of session_1; 0 hits left there$", output, re.M
    ), output
    assert 'reset namespace "go-example-test"' in output, output


def test_go_agent_records_episodes_and_finds_them_for_the_next_task(memory_server: str) -> None:
    go_test("./tests/go/episodes", 3, {"HIMGA_TARGET": memory_server})


def test_go_agent_example_runs(memory_server: str) -> None:
    output = go(
        "run", "./examples/go/agent", "-target", memory_server, "-namespace", "go-agent-test"
    )
    assert "recorded episode ep-" in output, output
    assert re.search(r"^found ep-\S+-task-login-redirect \(score ", output, re.MULTILINE), output
    assert "clear the stale session key on logout" in output, output


def test_go_validate_example_names_the_field_and_the_rule(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(
        '{"$schema": "https://himga.dev/schemas/v1/message.json", "role": "user", "content": "hi"}'
    )
    bad = tmp_path / "bad.json"
    bad.write_text('{"role": "", "content": "hi", "mood": "fine"}')
    assert f"{good}: valid" in go("run", "./examples/go/validate", str(good)).splitlines()
    output = go("run", "./examples/go/validate", "-type", "message", str(bad), status=1)
    assert f"{bad}: invalid" in output, output
    assert re.search(r"at '/role': minLength", output), output
    assert "additional properties 'mood' not allowed" in output, output


def test_go_decodes_the_http_json_counts_into_ints(tmp_path: Path) -> None:
    from himga.service import create_server

    server, _ = create_server("127.0.0.1:0", data_dir=tmp_path, http_address=("127.0.0.1", 0))
    try:
        go_test("./tests/go/httpjson", 2, {"HIMGA_HTTP": f"http://127.0.0.1:{server.http_port}"})
    finally:
        server.stop(None).wait()
