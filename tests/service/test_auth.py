"""Tokens and rights: every method has a right in one table, a server with an auth file refuses
calls without a token it knows (UNAUTHENTICATED) or without the right (PERMISSION_DENIED), the
same way whether the namespace exists or not, and keeps health and reflection open."""

import importlib
import pkgutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import himga_proto
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.service import tokens
from himga.service.auth import METHOD_RIGHTS, OPEN, Auth, AuthFile
from himga.service.errors import PermissionDenied, Unauthenticated
from himga.service.server import create_server
from himga.status import reason_of
from tests.service.conftest import ingest_request

# The naming rule the table follows (the words): a method's right by its name's start.
CONVENTION = {
    "read": ("Retrieve", "List", "Get", "Search"),
    "write": ("Ingest", "Record", "Delete"),
    "admin": ("Reset",),
}


def served_methods() -> set[str]:
    """Every method of every service in himga's proto files, plus health and reflection."""
    found = set()
    modules = [
        importlib.import_module(m.name)
        for m in pkgutil.walk_packages(himga_proto.__path__, "himga_proto.")
        if m.name.endswith("_pb2")
    ]
    for module in [*modules, health_pb2, reflection_pb2]:
        for service in module.DESCRIPTOR.services_by_name.values():
            found |= {f"/{service.full_name}/{method.name}" for method in service.methods}
    found.add("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo")
    return found


def test_every_method_of_every_service_has_a_right() -> None:
    missing = sorted(served_methods() - set(METHOD_RIGHTS))
    assert missing == [], "give each a right in himga.service.auth.METHOD_RIGHTS"


def test_the_table_follows_the_naming_rule() -> None:
    for method, right in METHOD_RIGHTS.items():
        name = method.rsplit("/", 1)[1]
        if method.startswith("/himga."):
            assert right is not OPEN, method
            assert name.startswith(CONVENTION[right]), (method, right)
        else:
            assert right is OPEN, method


def test_a_method_missing_from_the_table_is_refused_even_with_every_right(
    tmp_path: Path,
) -> None:
    held = tokens.Tokens()
    token, _ = held.new(["*"], tokens.RIGHTS)
    tokens.save(tmp_path / "auth.json", held)
    auth = Auth(AuthFile(tmp_path / "auth.json"))
    with pytest.raises(PermissionDenied, match="allows no one"):
        auth.caller("/himga.memory.v1.MemoryService/Forget", token)
    with pytest.raises(Unauthenticated):
        auth.caller("/himga.memory.v1.MemoryService/Forget", None)
    assert auth.caller("/himga.memory.v1.MemoryService/Retrieve", token) is not None


@pytest.fixture(scope="module")
def auth_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("auth") / "auth.json"


@pytest.fixture(scope="module")
def issued(auth_file: Path) -> dict[str, str]:
    """Tokens by what they grant, written to the auth file."""
    held = tokens.Tokens()
    made = {
        "reader": held.new(["team-*"], ["read"])[0],
        "writer": held.new(["team-a"], ["read", "write"])[0],
        "admin": held.new(["*"], ["admin"])[0],
        "revoked": held.new(["*"], tokens.RIGHTS)[0],
    }
    held.revoke(next(g.id for g in held.grants.values() if made["revoked"].split(".")[1] == g.id))
    tokens.save(auth_file, held)
    return made


@pytest.fixture(scope="module")
def target(
    auth_file: Path, issued: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    data = tmp_path_factory.mktemp("auth-data")
    server, port = create_server(
        "127.0.0.1:0", memory="sqlite", data_dir=data, auth=AuthFile(auth_file)
    )
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(None).wait()


def call(target: str, method: str, request: Any, token: str | None) -> Any:
    metadata = [("authorization", f"Bearer {token}")] if token is not None else None
    with grpc.insecure_channel(target) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        return getattr(stub, method)(request, metadata=metadata, timeout=30)


def refusal(target: str, method: str, request: Any, token: str | None) -> grpc.Call:
    with pytest.raises(grpc.RpcError) as caught:
        call(target, method, request, token)
    assert isinstance(caught.value, grpc.Call)
    return caught.value


@pytest.mark.parametrize("token", [None, "himga.00000000.nope", "not even a token", "revoked"])
def test_no_or_an_unknown_token_is_unauthenticated(
    target: str, issued: dict[str, str], token: str | None
) -> None:
    sent = issued.get(token or "", token)
    error = refusal(target, "Retrieve", pb.RetrieveRequest(namespace="team-a", query="x"), sent)
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    assert reason_of(error) == "UNAUTHENTICATED"
    assert "authorization: Bearer TOKEN" in (error.details() or "")


def test_rights_are_granted_per_namespace_pattern(target: str, issued: dict[str, str]) -> None:
    call(target, "Ingest", ingest_request("team-a", "the plums are ripe"), issued["writer"])
    hits = call(
        target, "Retrieve", pb.RetrieveRequest(namespace="team-a", query="plums"), issued["reader"]
    ).hits
    assert [hit.content for hit in hits] == ["the plums are ripe"]
    call(target, "Reset", pb.ResetRequest(namespace="team-a"), issued["admin"])


@pytest.mark.parametrize(
    ("who", "method", "request_"),
    [
        ("reader", "Ingest", ingest_request("team-a", "x")),
        ("reader", "Retrieve", pb.RetrieveRequest(namespace="other", query="x")),
        ("writer", "Ingest", ingest_request("team-b", "x")),
        ("writer", "Reset", pb.ResetRequest(namespace="team-a")),
        ("admin", "Retrieve", pb.RetrieveRequest(namespace="team-a", query="x")),
    ],
)
def test_a_right_not_granted_is_permission_denied(
    target: str, issued: dict[str, str], who: str, method: str, request_: Any
) -> None:
    error = refusal(target, method, request_, issued[who])
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert reason_of(error) == "PERMISSION_DENIED"


def test_a_refusal_does_not_tell_whether_the_namespace_exists(
    target: str, issued: dict[str, str]
) -> None:
    call(target, "Ingest", ingest_request("team-a", "exists"), issued["writer"])
    answers = []
    for namespace in ("team-a", "team-never-made"):
        request = ingest_request(namespace, "x")
        for token in (None, issued["reader"]):
            error = refusal(target, "Ingest", request, token)
            answers.append((error.code(), error.details().replace(namespace, "NS")))
    assert answers[:2] == answers[2:]


def test_health_and_reflection_need_no_token(target: str) -> None:
    with grpc.insecure_channel(target) as channel:
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
        assert health.status == health_pb2.HealthCheckResponse.SERVING
        services = set(ProtoReflectionDescriptorDatabase(channel).get_services())
    assert "himga.memory.v1.MemoryService" in services


def test_the_file_keeps_hashes_only_and_is_private(auth_file: Path, issued: dict[str, str]) -> None:
    text = auth_file.read_text(encoding="utf-8")
    for token in issued.values():
        assert token.split(".")[2] not in text
    assert stat.S_IMODE(auth_file.stat().st_mode) == 0o600


def test_client_errors_are_the_classes_the_server_raised(
    target: str, issued: dict[str, str]
) -> None:
    from himga.data.conversation import Message, Session
    from himga.service import RemoteMemory

    with RemoteMemory(target, "team-a", token=None) as anonymous, pytest.raises(Unauthenticated):
        anonymous.retrieve("x")
    with (
        RemoteMemory(target, "team-a", token=issued["reader"]) as reader,
        pytest.raises(PermissionDenied),
    ):
        reader.ingest(Message(role="u", content="x"), Session(session_id="s"))
