"""The conformance kit judges servers rightly: the reference server passes it with every memory
it knows (a storing one shows every capability, `null` none but the size limit), memories that
break a contract (and a server whose DeleteNamespace keeps episodes) fail exactly the checks of
that contract, a port of the other protocol is named rather than checked, and the Go NullMemory
server, which checks no request, gets the table its behaviour calls for."""

import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

import pytest

from himga.cli import main
from himga.conformance import CHECKS, CheckResult, run_checks, run_checks_http
from himga.conformance.checks import KINDS, OVERSIZED_BYTES
from himga.conformance.report import render
from himga.data.conversation import Message, Session
from himga.kinds import Keeps, Kind, NoOptions
from himga.memory import KeywordMemory
from himga.memory.base import BaseMemory, Hit
from himga.memory.filters import MessageFilter
from himga.memory.method import Method
from himga.memory.registry import memory_kind, memory_names, register, unregister
from himga.service import catalog
from himga.service.server import create_server
from himga.storage.postgres import Database
from tests.conftest import HTTP_PORTS
from tests.ports import free_port
from tests.server_process import LISTENING, Watched, start_listening

REPO = Path(__file__).resolve().parents[2]
REQUIRED = {c.name for c in CHECKS if c.kind == "required"}
CAPABILITIES = {c.name for c in CHECKS if c.kind == "capability"}
EPISODES = {c.name for c in CHECKS if c.kind == "episodes"}
# Every server here has a request limit under the kit's oversized request: gRPC's default
# (4 MiB, the Go server) or the reference server's (16 MiB).
SIZE_LIMIT = {"request-size-limit"}
# What a server that validates nothing fails: every check of a malformed request.
MALFORMED = {
    "batch-all-or-nothing",
    "error-empty-role",
    "error-info",
    "error-namespace-missing",
    "error-namespace-invalid",
    "error-message-missing",
    "error-session-missing",
    "error-limit",
    "error-memory-unknown",
    "delete-names-something",
    "page-token-checked",
}
# What a memory with only the seed's methods lacks: it refuses deletes, filters and listings
# (UNSUPPORTED, which keeps the contract), replaces nothing and has no times.
API_CAPABILITIES = {
    "replaces-by-id",
    "deletes-by-session-and-time",
    "deletes-stay-in-namespace",
    "filter-fills-the-limit",
    "lists-every-message-once",
    "message-times",
    "context-follows-limit",
}
_ROW = re.compile(
    r"^(\S+)\s+(required|capability|episodes)\s+(PASS|FAIL|NOT OFFERED)\b", re.MULTILINE
)


GRPC_ONLY = {c.name for c in CHECKS if "HTTP" not in c.transports}
"""The checks that are a promise of the gRPC port only (health)."""
TRANSPORTS = ["grpc", "http"]


def outcome(results: list[CheckResult]) -> tuple[set[str], set[str]]:
    """The names of the checks that passed and of those that failed (a check of a service, or
    a transport, the server does not offer is neither)."""
    return {r.check.name for r in results if r.passed}, {
        r.check.name for r in results if r.offered and not r.passed
    }


def checks_over(transport: str, target: str) -> list[CheckResult]:
    """The kit's results for the server at `target` over its gRPC port, or its HTTP port."""
    return run_checks(target) if transport == "grpc" else run_checks_http(HTTP_PORTS[target])


@contextmanager
def python_server(memory: str, data_dir: Path, **options: object) -> Iterator[str]:
    """The target of a server of `memory`, its HTTP port open too (HTTP_PORTS)."""
    server, port = create_server(
        "127.0.0.1:0",
        memory=memory,
        data_dir=data_dir,
        http_address=("127.0.0.1", 0),
        **options,
    )
    target = f"127.0.0.1:{port}"
    HTTP_PORTS[target] = f"http://127.0.0.1:{server.http_port}"
    try:
        yield target
    finally:
        HTTP_PORTS.pop(target)
        server.stop(None).wait()


def test_every_check_has_a_kind_and_a_unique_name() -> None:
    names = [c.name for c in CHECKS]
    assert len(names) == len(set(names))
    assert REQUIRED and CAPABILITIES and EPISODES
    assert set(names) == REQUIRED | CAPABILITIES | EPISODES
    assert MALFORMED <= REQUIRED
    assert API_CAPABILITIES <= CAPABILITIES


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    "memory", [m for m in memory_names() if memory_kind(m).keeps is not Keeps.NOTHING]
)
def test_storing_memories_pass_every_check(
    memory: str, transport: str, tmp_path: Path, server_of: Callable[[str], str]
) -> None:
    if memory_kind(memory).keeps is Keeps.DATABASE:  # the session's server over PostgreSQL
        target = server_of(memory)
        results = checks_over(transport, target)
    else:
        with python_server(memory, tmp_path) as target:
            results = checks_over(transport, target)
    assert outcome(results)[1] == set(), render(target, results)
    offered = {c.name for c in CHECKS} - (GRPC_ONLY if transport == "http" else set())
    assert outcome(results)[0] == offered, render(target, results)


FAILED_WRITE_CHECKS = {
    "failed-write-unlisted",
    "failed-write-after-delete-unlisted",
    "failed-episode-write-unlisted",
}


def test_failed_write_checks_a_server_answering_in_time_says_they_held_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that answers every write the failed-write checks mean to fail within its
    deadline (here a deadline of 30 s rather than 1 ms) gives those checks nothing to hold it
    to: each tries FAILED_WRITE_TRIES writes, passes, and its row says it was not exercised."""
    from himga.conformance import episodes, namespaces
    from himga.conformance.runner import run_check
    from himga.conformance.wire import connect

    monkeypatch.setattr(namespaces, "FAILED_WRITE_DEADLINE", 30.0)
    monkeypatch.setattr(episodes, "FAILED_WRITE_DEADLINE", 30.0)
    tried: list[str] = []
    fresh = namespaces.until_a_write_fails

    def counted(attempt: Callable[[], bool]) -> None:
        def noted() -> bool:
            tried.append("write")
            return attempt()

        fresh(noted)

    monkeypatch.setattr(namespaces, "until_a_write_fails", counted)
    monkeypatch.setattr(episodes, "until_a_write_fails", counted)
    checks = [c for c in CHECKS if c.name in FAILED_WRITE_CHECKS]
    assert {c.name for c in checks} == FAILED_WRITE_CHECKS
    with python_server("sqlite", tmp_path) as target, connect(target, 10.0, None) as wire:
        results = [run_check(wire, c) for c in checks]
    assert len(tried) == len(checks) * namespaces.FAILED_WRITE_TRIES
    table = render(target, results)
    for result in results:
        assert result.passed and not result.left, table
        assert result.detail.startswith("not exercised: each of 5 writes was answered"), table
    assert table.count("within its 30000 ms deadline") == len(checks)


@pytest.mark.parametrize(
    "memory",
    [m for m in memory_names() if memory_kind(m).keeps is Keeps.DATA_DIRECTORY_OR_DATABASE],
)
def test_memories_kept_where_the_server_keeps_them_pass_over_a_database_too(
    memory: str, database: Database
) -> None:
    server, port = create_server("127.0.0.1:0", memory=memory, database=database)
    target = f"127.0.0.1:{port}"
    try:
        results = run_checks(target)
    finally:
        server.stop(None).wait()
    assert outcome(results)[1] == set(), render(target, results)


def test_null_memory_keeps_the_contract_without_capabilities(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with python_server("null", tmp_path) as target:
        code = main(["conformance", "--target", target])
    table = capsys.readouterr().out
    rows = {name: (kind, result) for name, kind, result in _ROW.findall(table)}
    assert code == 0, table
    # The null memory stores no messages; its server still keeps episodes.
    passed = {n for n, (_, result) in rows.items() if result == "PASS"}
    assert passed == REQUIRED | SIZE_LIMIT | EPISODES
    assert {n for n, (_, result) in rows.items() if result == "FAIL"} == CAPABILITIES - SIZE_LIMIT
    assert {n: kind for n, (kind, _) in rows.items()} == {c.name: c.kind for c in CHECKS}


def test_a_server_without_a_limit_under_the_request_lacks_only_that_capability(
    tmp_path: Path,
) -> None:
    with python_server("null", tmp_path, max_message_bytes=OVERSIZED_BYTES * 2) as target:
        results = run_checks(target)
    assert outcome(results)[1] == CAPABILITIES, render(target, results)


class _ListMemory(BaseMemory):
    """A small storing memory for breaking on purpose: finds messages sharing a word with the
    query, most shared words first."""

    def __init__(self) -> None:
        self.items: list[tuple[Message, Session]] = []

    def ingest(self, message: Message, session: Session) -> None:
        self.items.append((message, session))

    def retrieve(self, query: str) -> str:
        return "\n".join(hit.content for hit in self.search(query))

    def reset(self) -> None:
        self.items = []

    def search(self, query: str, limit: int = 10) -> list[Hit]:
        words = set(re.findall(r"\w+", query.lower()))
        hits = []
        for message, session in self.items:
            score = len(words & set(re.findall(r"\w+", message.content.lower())))
            if score:
                turn_id = message.turn_id if isinstance(message.turn_id, str) else ""
                date = session.date_str if isinstance(session.date_str, str) else ""
                hits.append(
                    Hit(turn_id, session.session_id, message.role, message.content, date, score)
                )
        return sorted(hits, key=lambda h: -h.score)[:limit]

    @classmethod
    def for_namespace(cls, namespace: str, data_dir: Path | None, options: NoOptions) -> BaseMemory:
        return cls()


class _ResetForgetsNothing(_ListMemory):
    def reset(self) -> None:
        pass


class _OneStoreForAll(_ListMemory):
    """Every namespace's memory is the same object: namespaces are not isolated."""

    shared: _ListMemory | None = None

    @classmethod
    def for_namespace(cls, namespace: str, data_dir: Path | None, options: NoOptions) -> BaseMemory:
        if cls.shared is None:
            cls.shared = _ListMemory()
        return cls.shared


class _EmptyQueryAnswers(_ListMemory):
    """Answers an empty query with everything it holds."""

    def search(self, query: str, limit: int = 10) -> list[Hit]:
        if query:
            return super().search(query, limit)
        return [Hit("", s.session_id, m.role, m.content, "", 0.0) for m, s in self.items][:limit]


class _IgnoresFilters(KeywordMemory):
    """Takes a filter and searches as if it had none."""

    def search(
        self, query: str, limit: int = 10, *, filter: MessageFilter | None = None
    ) -> list[Hit]:
        return super().search(query, limit)


class _DeletesNothing(KeywordMemory):
    """Answers a delete with a count, and forgets nothing."""

    def delete(self, ids: Iterable[str] = (), *, filter: MessageFilter | None = None) -> int:
        return len(list(ids)) or 1


class _FilteredDeleteForgetsAll(KeywordMemory):
    """A Delete with a filter forgets the whole namespace, answering the count it matched."""

    def delete(self, ids: Iterable[str] = (), *, filter: MessageFilter | None = None) -> int:
        deleted = super().delete(ids, filter=filter)
        if filter is not None:
            super().reset()
        return deleted


class _IdsOutrankTheFilter(KeywordMemory):
    """A Delete naming ids deletes them, whether they match its filter or not."""

    def delete(self, ids: Iterable[str] = (), *, filter: MessageFilter | None = None) -> int:
        ids = list(ids)
        return super().delete(ids) if ids else super().delete(filter=filter)


class _ReachesEveryNamespace(KeywordMemory):
    """Keeps every memory it made (one a namespace), for its subclasses to forget in all."""

    made: ClassVar[list[KeywordMemory]]

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.made = []  # each broken kind its own

    @classmethod
    def for_namespace(cls, namespace: str, place: Path | None, options: Method) -> KeywordMemory:
        memory = super().for_namespace(namespace, place, options)
        cls.made.append(memory)
        return memory


class _ResetForgetsEveryNamespace(_ReachesEveryNamespace):
    """A Reset of one namespace resets every namespace."""

    def reset(self) -> None:
        for memory in self.made:
            KeywordMemory.reset(memory)


class _DeleteForgetsInEveryNamespace(_ReachesEveryNamespace):
    """A Delete in one namespace deletes what it names in every namespace."""

    def delete(self, ids: Iterable[str] = (), *, filter: MessageFilter | None = None) -> int:
        ids = list(ids)
        others = [memory for memory in self.made if memory is not self]
        for memory in others:
            KeywordMemory.delete(memory, ids, filter=filter)
        return super().delete(ids, filter=filter)


class _DeleteNamespaceForgetsEvery(_ReachesEveryNamespace):
    """Closing one namespace's memory (DeleteNamespace does) resets every namespace."""

    def close(self) -> None:
        for memory in self.made:
            KeywordMemory.reset(memory)


class _CutsIdsAtNul(KeywordMemory):
    """Reads an id only up to a NUL when it deletes (as SQLite's json_each did)."""

    def delete(self, ids: Iterable[str] = (), *, filter: MessageFilter | None = None) -> int:
        return super().delete([i.split("\x00")[0] for i in ids], filter=filter)


@pytest.mark.parametrize(
    ("memory", "failing"),
    [
        (_ListMemory, API_CAPABILITIES),
        (_CutsIdsAtNul, {"ids-exact"}),
        (_ResetForgetsNothing, {"reset-forgets", "reset-then-new"} | API_CAPABILITIES),
        (_OneStoreForAll, {"namespaces-isolated", "isolation-keeps-data"} | API_CAPABILITIES),
        (_EmptyQueryAnswers, {"empty-query"} | API_CAPABILITIES),
        (_IgnoresFilters, {"filter-never-ignored", "filter-fills-the-limit"}),
        (_FilteredDeleteForgetsAll, {"filter-never-ignored", "deletes-by-session-and-time"}),
        (_IdsOutrankTheFilter, {"filter-never-ignored"}),
        (_ResetForgetsEveryNamespace, {"namespaces-isolated", "isolation-keeps-data"}),
        (_DeleteForgetsInEveryNamespace, {"namespaces-isolated", "deletes-stay-in-namespace"}),
        (_DeleteNamespaceForgetsEvery, {"namespaces-isolated"}),
        (
            _DeletesNothing,
            {
                "filter-never-ignored",
                "deleted-never-returns",
                "deletes-by-session-and-time",
                "lists-every-message-once",
                "ids-exact",
            },
        ),
    ],
    ids=lambda v: v.__name__.strip("_") if isinstance(v, type) else None,
)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_broken_memory_fails_exactly_its_checks(
    memory: type[BaseMemory], failing: set[str], transport: str, tmp_path: Path
) -> None:
    name = f"test-{memory.__name__.strip('_').lower()}"
    options = Method if issubclass(memory, KeywordMemory) else NoOptions  # the kind's options
    factory = f"{memory.__name__}.for_namespace"
    register(name, Kind(__name__, factory, Keeps.PROCESS, shared=False, options=options))
    try:
        with python_server(name, tmp_path) as target:
            results = checks_over(transport, target)
    finally:
        unregister(name)
    assert outcome(results)[1] == failing, render(target, results)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_episodes_kept_after_delete_namespace_fail_their_check(
    transport: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server whose DeleteNamespace forgets a namespace's messages but keeps its episodes
    (here the reference server, its episode files put back once it has removed them)."""
    forget = catalog._directory_forget

    def keeps_episodes(data_dir: Path, namespace: str) -> None:
        kept = {path: path.read_bytes() for path in (data_dir / "episodes").glob("*")}
        forget(data_dir, namespace)
        for path, held in kept.items():
            if not path.exists():
                path.write_bytes(held)

    monkeypatch.setattr(catalog, "_directory_forget", keeps_episodes)
    with python_server("sqlite", tmp_path) as target:
        results = checks_over(transport, target)
    assert outcome(results)[1] == {"episode-namespace-deleted"}, render(target, results)


@contextmanager
def listening(command: list[str]) -> Iterator[str]:
    """Run a server command until the block ends; its HOST:PORT, from the line "listening on
    HOST:PORT" it writes to stderr once ready (as `himga serve` and the Go server do)."""
    process, target = start_listening(command)
    try:
        assert process.stderr is not None
        # Keep reading what it says later, so that a full pipe never blocks it.
        threading.Thread(target=process.stderr.read, daemon=True).start()
        yield target
    finally:
        process.terminate()
        process.wait()


def conformance(target: str, *options: str) -> tuple[int, str]:
    """`himga conformance --target TARGET` as a user runs it: the exit code and the table."""
    command = [sys.executable, "-m", "himga", "conformance", "--target", target, *options]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    return completed.returncode, completed.stdout + completed.stderr


def test_himga_serve_conforms_over_both_ports(tmp_path: Path) -> None:
    serve = [sys.executable, "-m", "himga", "serve", "--port", "0", "--data-dir", str(tmp_path)]
    server = Watched([*serve, "--http-port", "0"])
    try:
        url = re.search(r"on (http://\S+:\d+)/", server.wait_for(r"on http://")).group(1)  # type: ignore[union-attr]
        target = LISTENING.search(server.wait_for(LISTENING)).group(1)  # type: ignore[union-attr]
        code, said = conformance(target, "--http", url)
        assert server.stop() == 0, server.log
    finally:
        server.kill()
    assert code == 0, said
    grpc_table, http_table = said.split(f"Conformance of {url}")
    for where, table in ((target, grpc_table), (url, http_table)):
        assert f"{where} conforms to the MemoryService and EpisodeService contract" in table
    assert {name for name, _, result in _ROW.findall(grpc_table) if result == "PASS"} == {
        c.name for c in CHECKS
    }
    rows = {name: result for name, _, result in _ROW.findall(http_table)}
    assert {n for n, result in rows.items() if result == "PASS"} == {
        c.name for c in CHECKS
    } - GRPC_ONLY
    assert {n for n, result in rows.items() if result == "NOT OFFERED"} == GRPC_ONLY
    assert "could not delete" not in said
    # The kit removed what it wrote: no namespace, no file of one, is left on the server.
    assert [p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()] == []


def test_a_server_with_an_auth_file_conforms_with_a_token_and_only_with_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    auth_file = tmp_path / "auth.json"
    new_token = ["auth", "new-token", "--auth-file", str(auth_file), "--namespace"]
    assert main([*new_token, "conformance.*", "--rights", "read,write,admin"]) == 0
    token = capsys.readouterr().out.strip()
    serve = [sys.executable, "-m", "himga", "serve", "--port", "0", "--data-dir", str(tmp_path)]
    with listening([*serve, "--auth-file", str(auth_file)]) as target:
        code, table = conformance(target, "--token", token)
        assert code == 0, table
        code, table = conformance(target)
        assert code == 1, table
    rows = {name: result for name, _, result in _ROW.findall(table)}
    # Only what needs no token passes: health, and the size limit gRPC applies before any check.
    passed = {n for n, result in rows.items() if result == "PASS"}
    assert passed == {"health", "oversized-request"} | SIZE_LIMIT, table
    assert "UNAUTHENTICATED" in table


@pytest.fixture
def go_null_server(tmp_path: Path) -> Iterator[str]:
    """HOST:PORT of the Go NullMemory server (examples/go/nullserver), built and started here."""
    binary = tmp_path / "nullserver"
    build = subprocess.run(
        ["go", "build", "-buildvcs=false", "-o", str(binary), "./examples/go/nullserver"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    with listening([str(binary), "-addr", "127.0.0.1:0"]) as target:
        yield target


def test_go_null_server_gets_the_table_its_behaviour_calls_for(go_null_server: str) -> None:
    """It does not offer EpisodeService: the episode checks show so, and count neither way."""
    code, table = conformance(go_null_server)
    rows = {name: result for name, _, result in _ROW.findall(table)}
    assert code == 1, table
    assert {n for n, result in rows.items() if result == "PASS"} == (
        REQUIRED - MALFORMED
    ) | SIZE_LIMIT, table
    assert {n for n, result in rows.items() if result == "FAIL"} == MALFORMED | (
        CAPABILITIES - SIZE_LIMIT
    ), table
    assert {n for n, result in rows.items() if result == "NOT OFFERED"} == EPISODES, table
    assert f"{go_null_server} does NOT conform to the MemoryService contract" in table
    assert f"episodes: 0 passed, 0 failed, {len(EPISODES)} not offered" in table


def test_a_server_without_episodes_can_conform() -> None:
    """Not offering EpisodeService is no failure: the verdict rests on the checks run."""
    from himga.conformance.checks import CheckResult as Result

    results = [Result(c, c.kind != "episodes", "", c.kind != "episodes") for c in CHECKS]
    table = render("host:1", results)
    assert "host:1 conforms to the MemoryService contract" in table
    assert "it does not offer EpisodeService" in table
    failed = [Result(c, c.kind != "episodes", "seen", True) for c in CHECKS]
    assert "host:1 does NOT conform" in render("host:1", failed)


def test_no_server_at_the_target_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    assert main(["conformance", "--target", f"127.0.0.1:{port}", "--timeout", "0.5"]) == 2
    assert "no gRPC server answers" in capsys.readouterr().err


def test_a_port_of_the_other_kind_is_named_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A gRPC port given as --http, or an HTTP port as --target: one line saying what answers
    there and which option takes it, and exit 2, as when no server answers."""
    with python_server("null", tmp_path) as target:
        url = HTTP_PORTS[target]
        assert main(["conformance", "--http", f"http://{target}"]) == 2
        said = capsys.readouterr()
        assert said.out == "" and said.err.count("\n") == 1, said
        assert f"no HTTP server answers HTTP/1.1 at http://{target}: an HTTP/2-only" in said.err
        assert f"give a gRPC port as --target {target}" in said.err
        assert main(["conformance", "--target", url.removeprefix("http://")]) == 2
        said = capsys.readouterr()
        assert said.out == "" and said.err.count("\n") == 1, said
        assert "answering a gRPC call with HTTP status 404 and no gRPC status" in said.err
        assert f"give an HTTP port as --http {url}" in said.err


def test_the_kit_talks_only_through_the_wire() -> None:
    """It judges other servers, so it must not lean on the reference implementation."""
    probe = (
        "import sys, himga.conformance, himga.conformance.report, himga.cli.conformance\n"
        "print(sorted(m for m in sys.modules if m.startswith(('himga.service', 'himga.memory', "
        "'himga.data'))))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip() == "[]"


def test_the_table_lists_the_required_contract_before_the_capabilities() -> None:
    kinds = [check.kind for check in CHECKS]
    assert set(kinds) == set(KINDS)
    assert kinds == sorted(kinds, key=KINDS.index)


def test_an_http_port_that_refuses_the_kits_host_is_named_and_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A port that answers 421 (a Host it does not serve, as himga's HTTP door answers a name
    it is not told of): one line saying so and how to call it, not a table of failed checks."""
    import http.server
    import threading

    class Misdirected(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self.send_response(421)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            return None

    server = http.server.HTTPServer(("127.0.0.1", 0), Misdirected)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        assert main(["conformance", "--http", url]) == 2
        said = capsys.readouterr()
        assert said.out == "" and said.err.count("\n") == 1, said
        assert "(421 Misdirected Request): call it by a name it answers" in said.err
    finally:
        server.shutdown()
        server.server_close()
