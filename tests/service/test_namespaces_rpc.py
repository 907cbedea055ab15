"""ListNamespaces and DeleteNamespace over real servers: on a data directory, in process and over
PostgreSQL; what a token may see; what a delete leaves (nothing: messages, episodes, receipts,
files)."""

import asyncio
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.data.conversation import Message, Session
from himga.service import AsyncRemoteMemory, RemoteMemory, convert, create_server, tokens
from himga.service.auth import AuthFile
from himga.service.errors import InvalidRequest, field_violations, reason_of
from himga.storage.postgres import Database
from tests.episodes.helpers import episode

SESSION = Session(session_id="s1")


def _server(**options: Any) -> Iterator[str]:
    server, port = create_server("127.0.0.1:0", **options)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(None).wait()


@pytest.fixture(scope="module", params=["data-dir", "in-process", "postgres"])
def target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    if request.param == "data-dir":
        yield from _server(data_dir=tmp_path_factory.mktemp("namespaces-data"))
    elif request.param == "in-process":
        yield from _server(memory="keyword", episodes="inprocess")
    else:
        database: Database = request.getfixturevalue("database")
        yield from _server(database=database)


def fresh(tag: str = "") -> str:
    return f"ns-rpc{tag}.{uuid.uuid4().hex[:12]}"


def every(memory: RemoteMemory, prefix: str, page_size: int = 100) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    token = ""
    while True:
        page = memory.list_namespaces(prefix=prefix, page_size=page_size, page_token=token)
        found += [(info.name, info.memory) for info in page.namespaces]
        token = page.next_page_token
        if not token:
            return found


def record(target: str, namespace: str, request_id: str = "") -> None:
    with grpc.insecure_channel(target) as channel:
        stub = memory_pb2_grpc.EpisodeServiceStub(channel)
        stub.RecordEpisode(
            pb.RecordEpisodeRequest(
                namespace=namespace,
                episode=convert.episode_to_proto(episode(1)),
                request_id=request_id,
            ),
            timeout=30,
        )


def episodes_of(target: str, namespace: str) -> int:
    with grpc.insecure_channel(target) as channel:
        stub = memory_pb2_grpc.EpisodeServiceStub(channel)
        answer = stub.ListEpisodes(pb.ListEpisodesRequest(namespace=namespace), timeout=30)
        return len(answer.episodes)


def test_namespaces_are_listed_in_name_order_page_by_page_under_a_prefix(target: str) -> None:
    prefix = fresh("-list") + "."
    names = [f"{prefix}{n}" for n in ("b", "a", "c:1", "c-2", "d")]
    for name in names[:4]:
        with RemoteMemory(target, name) as memory:
            memory.ingest(Message(role="user", content=f"hello {name}"), SESSION)
    record(target, names[4])  # a namespace holding episodes only
    with RemoteMemory(target, names[0]) as memory:
        wanted = sorted(names, key=lambda n: n.encode())
        for size in (1, 2, 3, 100):
            listed = every(memory, prefix, size)
            assert [name for name, _ in listed] == wanted, size
        kinds = dict(every(memory, prefix))
        assert kinds[names[4]] == ""  # episodes only
        assert all(kinds[name] for name in names[:4])  # the memory each was opened with
        assert every(memory, prefix + "c") == [
            (n, kinds[n]) for n in wanted if n.startswith(prefix + "c")
        ]
        assert every(memory, fresh("-none")) == []


def test_reads_of_an_unknown_namespace_do_not_make_it_listed(target: str) -> None:
    name = fresh("-read")
    with RemoteMemory(target, name) as memory:
        assert memory.retrieve("anything") == ""
        assert memory.list(page_size=10).messages == []
        assert every(memory, name) == []


def test_a_deleted_namespace_holds_nothing_and_is_listed_no_more(target: str) -> None:
    name = fresh("-delete")
    with RemoteMemory(target, name) as memory:
        memory.store([(Message(role="user", content="keep the red key", turn_id="t1"), SESSION)])
        memory.delete(["nothing"], request_id="r1")  # a receipt, answered with 0
        record(target, name, request_id="e1")
        assert [n for n, _ in every(memory, name)] == [name]

        assert memory.delete_namespace() is True
        assert every(memory, name) == []
        assert memory.retrieve("red key") == ""
        assert memory.list(page_size=10).messages == []
        assert memory.delete_namespace() is False  # deleting what is not held succeeds
        assert episodes_of(target, name) == 0

        # Receipts went too: the same request ids are new requests now.
        memory.store([(Message(role="user", content="a red key again", turn_id="t2"), SESSION)])
        assert memory.delete(["t2"], request_id="r1") == 1
        record(target, name, request_id="e1")
        assert episodes_of(target, name) == 1
        assert "red key" not in memory.retrieve("red key")


def test_a_deleted_namespace_opens_anew_with_another_memory(tmp_path: Path) -> None:
    for target in _server(data_dir=tmp_path):
        name = fresh("-reopen")
        with RemoteMemory(target, name, memory="sqlite") as memory:
            memory.ingest(Message(role="user", content="hello"), SESSION)
            assert memory.delete_namespace()
        with RemoteMemory(target, name, memory="keyword") as memory:
            memory.ingest(Message(role="user", content="hello again"), SESSION)
            assert every(memory, name) == [(name, "keyword")]
        # Every file of the namespace went with it, in every folder of the data directory.
        with RemoteMemory(target, name) as memory:
            memory.delete_namespace()
    assert [p for p in tmp_path.rglob("*") if p.is_file() and "reopen" in p.name] == []


def test_a_long_name_is_listed_and_deleted_on_a_data_directory(tmp_path: Path) -> None:
    name = "long." + "x" * 85 + "." + uuid.uuid4().hex
    for target in _server(data_dir=tmp_path):
        with RemoteMemory(target, name) as memory:
            memory.ingest(Message(role="user", content="hello"), SESSION)
        record(target, name)
        with RemoteMemory(target, name) as memory:
            assert [n for n, _ in every(memory, "long.")] == [name]
            assert memory.delete_namespace()
            assert every(memory, "long.") == []
    assert [p for p in tmp_path.rglob("*") if p.is_file() and p.name.startswith("long.")] == []


def test_a_namespace_is_listed_after_a_restart(tmp_path: Path) -> None:
    name = fresh("-restart")
    for target in _server(data_dir=tmp_path):
        with RemoteMemory(target, name) as memory:
            memory.ingest(Message(role="user", content="hello"), SESSION)
    for target in _server(data_dir=tmp_path):
        with RemoteMemory(target, name) as memory:
            assert every(memory, name) == [(name, "sqlite")]


def test_bad_paging_requests_name_the_field(target: str) -> None:
    with grpc.insecure_channel(target) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        for request, field in [
            (pb.ListNamespacesRequest(page_size=1001), "page_size"),
            (pb.ListNamespacesRequest(page_token="not a token"), "page_token"),
            (pb.DeleteNamespaceRequest(namespace="no spaces allowed"), "namespace"),
            (pb.DeleteNamespaceRequest(), "namespace"),
        ]:
            with pytest.raises(grpc.RpcError) as caught:
                stub.ListNamespaces(request, timeout=30) if isinstance(
                    request, pb.ListNamespacesRequest
                ) else stub.DeleteNamespace(request, timeout=30)
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert reason_of(caught.value) == "INVALID_REQUEST"
            assert [v.field for v in field_violations(caught.value)] == [field]
    with RemoteMemory(target, fresh()) as memory:
        memory.ingest(Message(role="user", content="hello"), SESSION)
        first = memory.list_namespaces(prefix="ns-rpc", page_size=1)
        assert first.next_page_token
        with pytest.raises(InvalidRequest, match="page_token"):
            memory.list_namespaces(prefix="ns-rpc.", page_token=first.next_page_token)


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    auth_file = tmp_path_factory.mktemp("namespaces-auth") / "auth.json"
    held = tokens.Tokens()
    made = {
        "all": held.new(["*"], tokens.RIGHTS)[0],
        "team": held.new(["team-a.*", "shared"], ["read", "write"])[0],
        "writer": held.new(["*"], ["write"])[0],
        "team-admin": held.new(["team-a.*"], ["admin"])[0],
    }
    tokens.save(auth_file, held)
    data = tmp_path_factory.mktemp("namespaces-auth-data")
    for target in _server(data_dir=data, auth=AuthFile(auth_file)):
        yield target, made


def test_a_token_lists_only_the_namespaces_it_may_read(
    guarded: tuple[str, dict[str, str]],
) -> None:
    target, made = guarded
    names = ["team-a.1", "team-a.2", "team-b.1", "shared", "other"]
    for name in names:
        with RemoteMemory(target, name, token=made["all"]) as memory:
            memory.ingest(Message(role="user", content="hello"), SESSION)
    with RemoteMemory(target, "team-a.1", token=made["team"]) as memory:
        assert [n for n, _ in every(memory, "")] == ["shared", "team-a.1", "team-a.2"]
        # Pages stay full however many namespaces the token cannot see lie between.
        page = memory.list_namespaces(page_size=2)
        assert [n.name for n in page.namespaces] == ["shared", "team-a.1"]
        assert [n for n, _ in every(memory, "", 1)] == ["shared", "team-a.1", "team-a.2"]
    with RemoteMemory(target, "other", token=made["all"]) as memory:
        assert [n for n, _ in every(memory, "")] == sorted(names)
    with (
        RemoteMemory(target, "other", token=made["writer"]) as memory,
        pytest.raises(PermissionError),
    ):
        memory.list_namespaces()


def test_deleting_a_namespace_needs_admin_on_it(guarded: tuple[str, dict[str, str]]) -> None:
    target, made = guarded
    for name in ("team-a.gone", "team-b.kept"):
        with RemoteMemory(target, name, token=made["all"]) as memory:
            memory.ingest(Message(role="user", content="hello"), SESSION)
    refusals: list[Callable[[], object]] = [
        RemoteMemory(target, "team-a.gone", token=made["team"]).delete_namespace,
        RemoteMemory(target, "team-b.kept", token=made["team-admin"]).delete_namespace,
    ]
    for refused in refusals:
        with pytest.raises(PermissionError):
            refused()
    with RemoteMemory(target, "team-a.gone", token=made["team-admin"]) as memory:
        assert memory.delete_namespace() is True
    with RemoteMemory(target, "team-a.gone", token=made["all"]) as memory:
        listed = [n for n, _ in every(memory, "team-")]
        assert "team-a.gone" not in listed and "team-b.kept" in listed


def test_the_asyncio_client_lists_and_deletes_namespaces(target: str) -> None:
    name = fresh("-async")

    async def run() -> tuple[list[str], bool, list[str]]:
        async with AsyncRemoteMemory(target, name) as memory:
            await memory.ingest(Message(role="user", content="hello"), SESSION)
            before = [info.name for info in (await memory.list_namespaces(prefix=name)).namespaces]
            deleted = await memory.delete_namespace()
            after = [info.name for info in (await memory.list_namespaces(prefix=name)).namespaces]
            return before, deleted, after

    assert asyncio.run(run()) == ([name], True, [])
