"""A Python client generated from the served OpenAPI document by openapi-python-client (pinned
in the dev extra) types `namespace` as required, imports, and calls a server with an auth file
over HTTP with its bearer token; an episode's counts come back as ints."""

import importlib
import inspect
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from himga.service import create_server, tokens
from himga.service.auth import AuthFile

PACKAGE = "himga_openapi_client"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    folder = tmp_path_factory.mktemp("openapi-python")
    held = tokens.Tokens()
    token, _ = held.new(["openapi-*"], tokens.RIGHTS)
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


@pytest.fixture(scope="module")
def client_package(
    served: tuple[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ModuleType]:
    """The client generated from the document the server serves, imported."""
    folder = tmp_path_factory.mktemp("openapi-python-client")
    with urllib.request.urlopen(served[0] + "/openapi.json") as answer:
        (folder / "openapi.json").write_bytes(answer.read())
    generator = Path(sys.executable).with_name("openapi-python-client")
    command = [str(generator), "generate", "--path", "openapi.json", "--meta", "none"]
    done = subprocess.run(
        [*command, "--output-path", PACKAGE],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(folder))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def _module(name: str) -> Any:
    return importlib.import_module(f"{PACKAGE}.{name}")


def test_namespace_is_a_required_argument(client_package: ModuleType) -> None:
    models = _module("models")
    for request in ("RetrieveRequest", "IngestRequest", "GetEpisodeRequest"):
        parameters = inspect.signature(getattr(models, request)).parameters
        assert parameters["namespace"].default is inspect.Parameter.empty, request
    assert inspect.signature(models.RetrieveRequest).parameters["query"].default is not (
        inspect.Parameter.empty
    )
    with pytest.raises(TypeError):
        models.RetrieveRequest(query="plums")  # type: ignore[call-arg]


def test_the_generated_client_calls_the_server(
    client_package: ModuleType, served: tuple[str, str]
) -> None:
    origin, token = served
    models = _module("models")
    client = client_package.AuthenticatedClient(base_url=origin, token=token)
    ingest = _module("api.memory_service.memory_service_ingest")
    retrieve = _module("api.memory_service.memory_service_retrieve")
    message = models.Message(role="user", content="I planted a plum tree", turn_id="p1")
    request = models.IngestRequest(
        namespace="openapi-py", message=message, session=models.Session(session_id="s1")
    )
    stored = ingest.sync(client=client, body=request)
    assert stored.id == "p1"
    found = retrieve.sync(
        client=client, body=models.RetrieveRequest(namespace="openapi-py", query="plum", limit=1)
    )
    assert [hit.turn_id for hit in found.hits] == ["p1"]
    assert "plum tree" in found.context

    refused = retrieve.sync_detailed(
        client=client_package.Client(base_url=origin),
        body=models.RetrieveRequest(namespace="openapi-py", query="plum"),
    )
    assert refused.status_code == 401  # no token: the bearer scheme is needed


def test_counts_come_back_as_ints(client_package: ModuleType, served: tuple[str, str]) -> None:
    origin, token = served
    models = _module("models")
    client = client_package.AuthenticatedClient(base_url=origin, token=token)
    record = _module("api.episode_service.episode_service_record_episode")
    get = _module("api.episode_service.episode_service_get_episode")
    episode = models.EpisodeTrace.from_dict(
        {
            "id": "ep-openapi-py",
            "task_id": "t1",
            "timestamp": "2025-03-01T09:00:00Z",
            "duration_seconds": 60,
            "agent": "py",
            "context": {"goal": "count things", "phase": "ACT", "files_involved": []},
            "action_log": [{"t": 5, "action": "edit_file", "target": "a.py", "result": "ok"}],
            "tokens_used": 1234,
        }
    )
    record.sync(
        client=client, body=models.RecordEpisodeRequest(namespace="openapi-py", episode=episode)
    )
    got = get.sync(
        client=client, body=models.GetEpisodeRequest(namespace="openapi-py", id="ep-openapi-py")
    ).episode
    counts = (got.access_count, got.tokens_used, got.duration_seconds, got.action_log[0].t)
    assert counts == (1, 1234, 60, 5)
    assert all(type(count) is int for count in counts)
