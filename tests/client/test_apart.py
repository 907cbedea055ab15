"""The clients stand apart from the server: importing himga.client loads nothing of the server,
and every path the clients were imported by before still gives the same classes."""

import importlib
import json
import subprocess
import sys

import pytest

# What serves, stores or checks calls: none of it is a client's business. (grpc itself imports
# the top of grpc_health and grpc_reflection, when installed; their servicers are the server's.)
_SERVICE = (
    "server servicer episodes namespaces episode_stores interceptors auth lifecycle receipts "
    "resources metrics reflection credentials decoding fairness tokens database_tokens"
)
SERVER_SIDE = (
    *(f"himga.service.{name}" for name in _SERVICE.split(" ")),
    *(f"himga.memory.{name}" for name in ("sqlite", "keyword", "naive", "postgres", "null")),
    *(f"himga.episodes.{name}" for name in ("sqlite", "postgres", "inprocess", "indexed")),
    "himga.storage.files",
    "himga.storage.postgres",
    "himga.core",
    "himga.http",
    "himga.mcp",
    "grpc_health.v1",
    "grpc_reflection.v1alpha",
)


def loaded_after(statement: str) -> list[str]:
    """The modules a fresh interpreter holds after running `statement`."""
    script = f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    return loaded


def server_side(loaded: list[str]) -> list[str]:
    return [m for m in loaded if any(m == s or m.startswith(s + ".") for s in SERVER_SIDE)]


@pytest.mark.parametrize(
    "statement",
    [
        "import himga.client",
        "from himga.client import RemoteMemory, AsyncRemoteMemory, RemoteEpisodes, ClientTls",
        "from himga.service import RemoteMemory",
    ],
)
def test_importing_the_clients_loads_nothing_of_the_server(statement: str) -> None:
    loaded = loaded_after(statement)
    assert "himga.client.memory" in loaded  # the check sees the clients being imported
    assert server_side(loaded) == []


def test_the_check_sees_the_server_when_it_is_imported() -> None:
    """The same check, on an import that does load the server, finds it: it can fail."""
    found = server_side(loaded_after("from himga.service import create_server"))
    assert "himga.service.server" in found
    assert "himga.service.servicer" in found


def test_the_limits_are_one_module_both_sides_read() -> None:
    from himga import limits
    from himga.client import MAX_MESSAGE_BYTES
    from himga.service import server

    assert server.MAX_MESSAGE_BYTES == MAX_MESSAGE_BYTES == limits.MAX_MESSAGE_BYTES
    assert "himga.limits" in loaded_after("import himga.client")


@pytest.mark.parametrize(
    ("old", "name", "new"),
    [
        ("himga.service", "RemoteMemory", "himga.client"),
        ("himga.service", "AsyncRemoteMemory", "himga.client"),
        ("himga.service", "RemoteEpisodes", "himga.client"),
        ("himga.service", "ClientTls", "himga.client"),
        ("himga.service", "InvalidRequest", "himga.client"),
        ("himga.service.client", "RemoteMemory", "himga.client"),
        ("himga.service.async_client", "AsyncRemoteMemory", "himga.client"),
        ("himga.service.remote_episodes", "RemoteEpisodes", "himga.client"),
        ("himga.service.credentials", "ClientTls", "himga.client"),
        ("himga.service.credentials", "channel", "himga.client.channels"),
        ("himga.service.memory_calls", "MemoryCalls", "himga.client.calls"),
        ("himga.service.memory_calls", "bearer", "himga.client.channels"),
        ("himga.service.namespaces", "namespace_violations", "himga.service.names"),
    ],
)
def test_the_old_import_paths_give_the_same_things(old: str, name: str, new: str) -> None:
    assert getattr(importlib.import_module(old), name) is getattr(
        importlib.import_module(new), name
    )


def test_an_unknown_name_of_the_service_package_is_an_attribute_error() -> None:
    import himga.service

    with pytest.raises(AttributeError, match="RemoteMemoir"):
        himga.service.RemoteMemoir  # noqa: B018
