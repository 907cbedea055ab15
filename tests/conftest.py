"""Fixtures shared by the whole suite: a real memory server on 127.0.0.1, on a free port, one
over a PostgreSQL server of the tests' own (tests/postgres_cluster.py), and a stand-in for the
LLM providers' APIs."""

import os

# The PostgreSQL tests start PostgreSQL's programs while gRPC's threads run; gRPC's fork
# handlers then warn, and once crashed the child between fork and exec. No test forks a
# process that goes on using gRPC, so they are turned off (before gRPC is loaded).
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from himga.episodes.registry import store_kind
from himga.kinds import Keeps
from himga.memory.registry import DEFAULT_MEMORY, memory_kind, memory_names
from himga.service import create_server
from himga.storage.place import Place
from himga.storage.postgres import Database
from tests import postgres_cluster
from tests.certificates import Certificates, make_certificates
from tests.llm.fake_server import FakeLLMServer, running

# On CI, hypothesis draws the same examples every run, so a red build can be replayed and a
# green one is not luck; locally it explores new examples each run.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture
def widest_umask() -> Iterator[None]:
    """Umask 000 for the test: the modes of what himga writes must come from himga, not from a
    umask that narrows them."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


@pytest.fixture(scope="session")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    """The TLS tests' certificates (tests/certificates.py), made once."""
    return make_certificates(tmp_path_factory.mktemp("certificates"))


@pytest.fixture(scope="session")
def server_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The data directory of the session's memory server."""
    return tmp_path_factory.mktemp("server-data")


SESSION_OPEN_NAMESPACES = 16
"""The session servers' bound on open namespaces: far below a served one's, so that the suite's
thousands of namespaces keep few files open and every test runs beside namespaces closing."""


@pytest.fixture(scope="session")
def memory_server(server_data_dir: Path) -> Iterator[str]:
    """The target ("127.0.0.1:PORT") of a memory server with the default memory, shared by the
    session; tests keep apart by using namespaces of their own."""
    server, port = create_server(
        "127.0.0.1:0",
        memory=DEFAULT_MEMORY,
        data_dir=server_data_dir,
        http_address=("127.0.0.1", 0),
        max_open_namespaces=SESSION_OPEN_NAMESPACES,
    )
    HTTP_PORTS[f"127.0.0.1:{port}"] = f"http://127.0.0.1:{server.http_port}"
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(None)


@pytest.fixture(scope="session")
def postgres() -> Iterator[postgres_cluster.Postgres]:
    """A PostgreSQL server of the session's own (no fsync: nothing here survives a crash)."""
    with postgres_cluster.primary(fsync=False) as server:
        yield server


@pytest.fixture(scope="session")
def database(postgres: postgres_cluster.Postgres) -> Iterator[Database]:
    """A pool on the session's PostgreSQL, its schema migrated; tests keep apart by namespace."""
    with Database(postgres.url) as opened:
        yield opened


@pytest.fixture(scope="session")
def postgres_memory_server(database: Database) -> Iterator[str]:
    """The target of a memory server over the session's database (memory and episodes in
    PostgreSQL), shared by the session."""
    server, port = create_server(
        "127.0.0.1:0",
        database=database,
        http_address=("127.0.0.1", 0),
        max_open_namespaces=SESSION_OPEN_NAMESPACES,
    )
    HTTP_PORTS[f"127.0.0.1:{port}"] = f"http://127.0.0.1:{server.http_port}"
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(None).wait()


def in_database(kind: str) -> bool:
    """Whether the memory (else the episode store) called `kind` declares that it keeps its
    namespaces in a database."""
    declared = memory_kind(kind) if kind in memory_names() else store_kind(kind)
    return declared.keeps is Keeps.DATABASE


@pytest.fixture
def place_of(request: pytest.FixtureRequest, tmp_path: Path) -> "Callable[[str], Place]":
    """Where a memory or episode store of a kind keeps a namespace in these tests: the
    session's database for those that keep namespaces in one, else a fresh data directory."""

    def place(kind: str) -> Place:
        if in_database(kind):
            database: Database = request.getfixturevalue("database")
            return database
        return tmp_path

    return place


HTTP_PORTS: dict[str, str] = {}
"""The HTTP port (a base URL) of each session server, by its gRPC target."""


@pytest.fixture
def server_of(request: pytest.FixtureRequest) -> "Callable[[str], str]":
    """The session's server that offers a memory or episode store of a kind."""
    return lambda kind: request.getfixturevalue(
        "postgres_memory_server" if in_database(kind) else "memory_server"
    )


@pytest.fixture
def llm_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No provider key, base URL or profile from the environment, and the answer cache in a
    fresh directory (returned): tests never reach a real provider or share answers."""
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path / "anthropic-config"))
    monkeypatch.setenv("HIMGA_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def llm_server(llm_env: Path) -> Iterator[FakeLLMServer]:
    """A local server speaking the part of the Anthropic and OpenAI APIs himga uses
    (tests/llm/fake_server.py), recording every request."""
    with running() as server:
        yield server
