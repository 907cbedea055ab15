"""Every kind of error keeps its kind across the wire: raised inside a real server, it reaches
RemoteMemory as the same class with the same message, told apart by its ErrorInfo reason."""

import importlib
import pkgutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

import himga
from himga.data.conversation import Message, Session
from himga.data.errors import DatasetError
from himga.errors import (
    DamagedStoreError,
    DatabaseUnavailable,
    HimgaError,
    IncompatibleStoreError,
    InvalidArgument,
    ModelError,
    ModelUnreachable,
    NotFoundError,
    SchemaError,
    UnknownTypeError,
    Unsupported,
)
from himga.kinds import Keeps, Kind, NoOptions
from himga.llm.errors import (
    AnswerCacheError,
    LLMCallError,
    LLMConfigError,
    LLMError,
    TransientLLMError,
)
from himga.mcp.stores import NoAnswer
from himga.memory import registry
from himga.memory.base import BaseMemory
from himga.memory.commit import CallerGone
from himga.records.record import InvalidRecordError
from himga.service import RemoteMemory, create_server
from himga.service.errors import (
    ERROR_DOMAIN,
    ERROR_KINDS,
    DeadlinePassed,
    FieldViolation,
    InvalidRequest,
    MemoryMismatch,
    PermissionDenied,
    ResourceExhausted,
    ServerStopping,
    StoreUnavailable,
    Unauthenticated,
    reason_of,
)

RAISING = "test-raising"

# One example of each kind a server sends; a kind added to ERROR_KINDS without one fails below.
EXAMPLES: dict[type[Exception], Exception] = {
    InvalidRequest: InvalidRequest([FieldViolation("message.role", "required")]),
    MemoryMismatch: MemoryMismatch("namespace 'n' holds memory 'keyword', not 'sqlite'"),
    IncompatibleStoreError: IncompatibleStoreError("store written by a newer himga"),
    NotFoundError: NotFoundError("no episode 'ep-1' in this namespace"),
    Unauthenticated: Unauthenticated("this server needs a token"),
    PermissionDenied: PermissionDenied("the token does not grant 'write' on namespace 'n'"),
    CallerGone: CallerGone("the call ended before it committed"),
    ServerStopping: ServerStopping("the server is stopping"),
    ResourceExhausted: ResourceExhausted("the server has no file descriptors left"),
    StoreUnavailable: StoreUnavailable("the store cannot write (no space left on device)"),
    Unsupported: Unsupported("RaisingMemory cannot filter what it recalls"),
}
# Errors raised where no server is involved (validation, loading data, building records,
# calling a language model).
LOCAL_ONLY = {SchemaError, UnknownTypeError, DatasetError, InvalidRecordError}
LOCAL_ONLY |= {LLMError, LLMConfigError, LLMCallError, TransientLLMError, AnswerCacheError}
LOCAL_ONLY |= {NoAnswer}  # himga mcp --target's: a server's call that failed without a reason
# A store's damaged file is the operator's to restore, not the caller's to fix: INTERNAL, as an
# unexpected error is, the file named in the server's log only.
AS_INTERNAL = {DamagedStoreError}
# A database that cannot be reached, and an embeddings endpoint that does not answer, travel as
# a store that cannot write; a model that cannot be used at all as what the server cannot do;
# a write past its deadline as a caller gone (with the code DEADLINE_EXCEEDED, not CANCELLED).
# (A memory's error about one argument is the request error: InvalidRequest is InvalidArgument.)
SENT_AS: dict[type[Exception], type[Exception]] = {
    DatabaseUnavailable: StoreUnavailable,
    ModelUnreachable: StoreUnavailable,
    ModelError: Unsupported,
    DeadlinePassed: CallerGone,
}
SENT_EXAMPLES: dict[type[Exception], Exception] = {
    DatabaseUnavailable: DatabaseUnavailable("the database is unavailable (connection refused)"),
    ModelUnreachable: ModelUnreachable("embeddings endpoint http://10.0.0.7:8081/v1: HTTP 503"),
    ModelError: ModelError("model 'e5' is not in the model cache (/srv/models/e5): run `fetch`"),
    DeadlinePassed: DeadlinePassed("the call's deadline passed before its write committed"),
}


class RaisingMemory(BaseMemory):
    """Raises, on ingest, the example error whose class is named by the message's content."""

    @classmethod
    def for_namespace(
        cls, namespace: str, data_dir: Path | None, options: NoOptions
    ) -> "RaisingMemory":
        return cls()

    def ingest(self, message: Message, session: Session) -> None:
        if message.content == "unexpected":
            raise KeyError("a bug")
        if message.content == "damaged":
            raise DamagedStoreError("/srv/himga/data/sqlite/n.sqlite3: not a readable store")
        if message.content == "one bad argument":
            raise InvalidArgument("page_token", "not a token of this listing")
        examples = {**EXAMPLES, **SENT_EXAMPLES}
        raise next(e for c, e in examples.items() if c.__name__ == message.content)

    def retrieve(self, query: str) -> str:
        return ""

    def reset(self) -> None:
        return None


@pytest.fixture(scope="module")
def raising_server() -> Iterator[str]:
    registry.register(
        RAISING, Kind(__name__, "RaisingMemory.for_namespace", Keeps.PROCESS, shared=False)
    )
    server, port = create_server("127.0.0.1:0", memory=RAISING)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(None).wait()
        registry.unregister(RAISING)


def test_every_kind_has_an_example_and_a_reason_of_its_own() -> None:
    assert set(EXAMPLES) == set(ERROR_KINDS)
    reasons = [kind.reason for kind in ERROR_KINDS.values()]
    assert len(set(reasons)) == len(reasons) and all(reasons)


@pytest.mark.filterwarnings("ignore:himga.* is deprecated:DeprecationWarning")
def test_every_himga_error_is_sent_as_a_kind_or_is_local_only() -> None:
    for module in pkgutil.walk_packages(himga.__path__, "himga."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    found: set[type] = set()
    todo: list[type] = [HimgaError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("himga."):
                found.add(sub)
                todo.append(sub)
    assert found == set(ERROR_KINDS) | LOCAL_ONLY | set(SENT_AS) | AS_INTERNAL


def test_a_lost_database_reaches_the_client_as_a_store_that_cannot_write(
    raising_server: str,
) -> None:
    message = Message(role="agent", content="DatabaseUnavailable")
    with (
        RemoteMemory(raising_server, f"kinds-{uuid.uuid4().hex}") as memory,
        pytest.raises(StoreUnavailable, match="database is unavailable"),
    ):
        memory.ingest(message, Session(session_id="s"))


@pytest.mark.parametrize("kind", SENT_AS, ids=lambda kind: kind.__name__)
def test_an_error_sent_as_another_kind_reaches_the_client_as_that_kind_and_no_more(
    kind: type[Exception], raising_server: str
) -> None:
    assert set(SENT_EXAMPLES) == set(SENT_AS)
    message = Message(role="agent", content=kind.__name__)
    with (
        RemoteMemory(raising_server, f"kinds-{uuid.uuid4().hex}") as memory,
        pytest.raises(HimgaError) as caught,
    ):
        memory.ingest(message, Session(session_id="s"))
    assert type(caught.value) is SENT_AS[kind]
    assert "10.0.0.7" not in str(caught.value) and "/srv/models" not in str(caught.value)


def test_an_argument_error_reaches_the_client_as_a_request_error_naming_the_field(
    raising_server: str,
) -> None:
    message = Message(role="agent", content="one bad argument")
    with (
        RemoteMemory(raising_server, f"kinds-{uuid.uuid4().hex}") as memory,
        pytest.raises(InvalidArgument) as caught,
    ):
        memory.ingest(message, Session(session_id="s"))
    assert InvalidRequest is InvalidArgument
    assert caught.value.violations == [FieldViolation("page_token", "not a token of this listing")]
    assert reason_of(caught.value.__cause__) == "INVALID_REQUEST"  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", EXAMPLES, ids=lambda kind: kind.__name__)
def test_a_kind_raised_in_the_server_is_the_same_class_in_the_client(
    kind: type[Exception], raising_server: str
) -> None:
    message = Message(role="agent", content=kind.__name__)
    with (
        RemoteMemory(raising_server, f"kinds-{uuid.uuid4().hex}") as memory,
        pytest.raises(HimgaError) as caught,
    ):
        memory.ingest(message, Session(session_id="s"))
    assert type(caught.value) is kind
    assert str(caught.value) == str(EXAMPLES[kind])
    if isinstance(caught.value, InvalidRequest):
        assert caught.value.violations == EXAMPLES[InvalidRequest].violations  # type: ignore[attr-defined]
    cause = caught.value.__cause__
    assert isinstance(cause, grpc.Call)
    assert cause.code() == ERROR_KINDS[kind].code
    assert reason_of(cause) == ERROR_KINDS[kind].reason


@pytest.mark.parametrize(("said", "detail"), [("unexpected", "a bug"), ("damaged", "/srv/himga")])
def test_an_unexpected_error_is_internal_with_its_reason_and_no_detail(
    raising_server: str, said: str, detail: str, caplog: pytest.LogCaptureFixture
) -> None:
    message = Message(role="agent", content=said)
    with (
        RemoteMemory(raising_server, "kinds-unexpected") as memory,
        pytest.raises(grpc.RpcError) as caught,
    ):
        memory.ingest(message, Session(session_id="s"))
    assert isinstance(caught.value, grpc.Call)
    assert caught.value.code() == grpc.StatusCode.INTERNAL
    assert reason_of(caught.value) == "INTERNAL"
    assert detail not in (caught.value.details() or "")
    assert detail in caplog.text  # the log says what happened
    assert ERROR_DOMAIN == "himga.dev"  # the domain the proto documents
