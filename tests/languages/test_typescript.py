"""The TypeScript side, run from pytest: tsc builds tests/typescript (type-checking the generated
code, the example and the tests together), then Node's test runner runs the conformance vectors
and the client against a real memory server. Needs Node.js 20; installs the pinned npm packages
first when needed (scripts/node-modules.sh), as the generator does."""

import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from himga.data.locomo import load_locomo
from tests.languages.commands import REPO, run

NODE_MODULES = REPO / "node_modules"
TSC = NODE_MODULES / ".bin" / "tsc"
# The closing counts of Node's TAP reporter, such as "# pass 198".
_TAP_COUNT = re.compile(r"^# (tests|pass|fail|cancelled|skipped|todo) (\d+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def build() -> Iterator[Path]:
    """The tests, the example and the generated code compiled to JavaScript, in a folder of
    its own under build/ (inside the repository, so that imports find node_modules)."""
    if shutil.which("node") is None:
        pytest.fail("Node.js (20 or later) is not installed")
    run(["bash", "scripts/node-modules.sh"])
    (REPO / "build").mkdir(exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix="typescript-", dir=REPO / "build"))
    try:
        run([str(TSC), "-p", "tests/typescript", "--outDir", str(out)])
        yield out
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _node_test(script: Path, env: dict[str, str] | None = None) -> dict[str, int]:
    """Run one compiled test file with `node --test`; it must pass with nothing skipped."""
    output = run(["node", "--test", "--test-reporter=tap", str(script)], env)
    counts = {name: int(count) for name, count in _TAP_COUNT.findall(output)}
    assert counts.get("pass", 0) > 0 and counts["pass"] == counts.get("tests"), output
    assert counts["fail"] == counts["cancelled"] == counts["skipped"] == counts["todo"] == 0, output
    return counts


def test_ajv_gives_every_conformance_vector_its_verdict(build: Path) -> None:
    counts = _node_test(build / "tests" / "typescript" / "conformance.test.js")
    vectors = sum(
        len(group["tests"])
        for path in (REPO / "schemas" / "conformance").rglob("*.json")
        if isinstance(data := json.loads(path.read_text(encoding="utf-8")), list)
        for group in data
    )
    # one Node test per vector, plus the two about the files themselves
    assert counts["pass"] == vectors + 2


def test_schema_documents_are_protojson_in_typescript(build: Path) -> None:
    _node_test(build / "tests" / "typescript" / "proto_json.test.js")


def test_typescript_client_against_the_server(
    locomo_file: Path, build: Path, memory_server: str, tmp_path: Path
) -> None:
    sample = load_locomo(locomo_file)[0]
    conversation = {
        "sample_id": sample.sample_id,
        "sessions": [session.model_dump(mode="json") for session in sample.sessions],
        "questions": [
            {"question": qa.question, "evidence": qa.evidence, "category": qa.category}
            for qa in sample.qa_pairs
        ],
    }
    path = tmp_path / "conversation.json"
    path.write_text(json.dumps(conversation), encoding="utf-8")
    _node_test(
        build / "tests" / "typescript" / "client.test.js",
        {"HIMGA_TARGET": memory_server, "HIMGA_CONVERSATION_PATH": str(path)},
    )


def test_typescript_episodes_against_the_server(build: Path, memory_server: str) -> None:
    counts = _node_test(
        build / "tests" / "typescript" / "episodes.test.js", {"HIMGA_TARGET": memory_server}
    )
    assert counts["pass"] >= 3


def test_typescript_agent_example_runs(build: Path, memory_server: str) -> None:
    output = run(["node", str(build / "examples" / "typescript" / "agent.js"), memory_server])
    assert "recorded episode ep-2025-03-01-ts-cache" in output
    assert "found ep-2025-03-01-ts-cache (score " in output
    assert "put the currency in the cache key" in output


def test_typescript_example_runs(build: Path, memory_server: str) -> None:
    output = run(["node", str(build / "examples" / "typescript" / "main.js"), memory_server])
    assert "stored 3 messages in example-typescript: D1:1, D1:2, D2:1" in output
    assert "D1:2 Melanie: That sounds great! I painted a sunrise" in output  # recalled
    assert "in s2: D2:1 Caroline: Your sunrise painting" in output  # the filtered recall
    assert "in s2: D1:" not in output
    assert "deleted 1 message of s2; 0 hits left there" in output
    assert "items[0].message.role" in output  # the refused batch names the empty role


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The HTTP origin of a server with an auth file, and a token granting everything."""
    from himga.service import create_server, tokens
    from himga.service.auth import AuthFile

    folder = tmp_path_factory.mktemp("openapi-ts")
    held = tokens.Tokens()
    token, _ = held.new(["*"], tokens.RIGHTS)
    tokens.save(folder / "auth.json", held)
    server, _ = create_server(
        "127.0.0.1:0",
        data_dir=folder / "data",
        auth=AuthFile(folder / "auth.json"),
        http_address=("127.0.0.1", 0),
    )
    try:
        yield f"http://127.0.0.1:{server.http_port}", token
    finally:
        server.stop(None).wait()


def test_a_client_typed_by_openapi_typescript_calls_the_server(
    build: Path, http_server: tuple[str, str]
) -> None:
    origin, token = http_server
    counts = _node_test(
        build / "tests" / "typescript" / "openapi.test.js",
        {"HIMGA_HTTP": origin, "HIMGA_TOKEN": token},
    )
    assert counts["pass"] >= 2


def test_typescript_reads_date_times_as_the_http_port_does(
    build: Path, http_server: tuple[str, str]
) -> None:
    origin, token = http_server
    counts = _node_test(
        build / "tests" / "typescript" / "timestamps.test.js",
        {"HIMGA_HTTP": origin, "HIMGA_TOKEN": token},
    )
    assert counts["pass"] == 11
