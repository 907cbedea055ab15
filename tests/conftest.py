"""Fixtures shared by the whole suite: a real memory server on 127.0.0.1, on a free port."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from himga.memory.registry import DEFAULT_MEMORY
from himga.service import create_server

# On CI, hypothesis draws the same examples every run, so a red build can be replayed and a
# green one is not luck; locally it explores new examples each run.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def server_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The data directory of the session's memory server."""
    return tmp_path_factory.mktemp("server-data")


@pytest.fixture(scope="session")
def memory_server(server_data_dir: Path) -> Iterator[str]:
    """The target ("127.0.0.1:PORT") of a memory server with the default memory, shared by the
    session; tests keep apart by using namespaces of their own."""
    server, port = create_server("127.0.0.1:0", memory=DEFAULT_MEMORY, data_dir=server_data_dir)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(None)
