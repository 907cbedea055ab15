"""Delete and the episode writes retried with the same request_id answer as the first did and
change nothing more; the same id with another request is INVALID_ARGUMENT; an episode write
whose caller has gone is rolled back. (Ingest's own are in test_honest_statuses.)"""

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc

from himga.data.conversation import Message, Session
from himga.episodes.base import EpisodeStore
from himga.episodes.registry import open_store
from himga.memory import commit
from himga.service import convert, create_server
from himga.service.client import RemoteMemory
from himga.service.receipts import digest
from himga.service.remote_episodes import RemoteEpisodes
from himga.status import field_violations
from tests.episodes.helpers import episode
from tests.service.conftest import ingest_request


@pytest.fixture(params=[("sqlite", "sqlite"), ("keyword", "inprocess")], ids=["sqlite", "memory"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A server whose memory and episode store are durable, or both in process."""
    memory, episodes = request.param
    server, port = create_server("127.0.0.1:0", memory=memory, episodes=episodes, data_dir=tmp_path)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(None).wait()


def contents(stub: memory_pb2_grpc.MemoryServiceStub, namespace: str) -> list[str]:
    page = stub.ListMessages(pb.ListMessagesRequest(namespace=namespace))
    return sorted(m.message.content for m in page.messages)


def of_session(namespace: str, request_id: str) -> pb.DeleteRequest:
    return pb.DeleteRequest(
        namespace=namespace,
        filter=pb.MessageFilter(session_ids=["s1"]),
        request_id=request_id,
    )


def test_a_retried_delete_answers_as_the_first_and_deletes_nothing_more(target: str) -> None:
    with grpc.insecure_channel(target) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        for word in ("fig", "plum"):
            stub.Ingest(ingest_request("n", word, message=pb.Message(role="u", content=word)))
        assert stub.Delete(of_session("n", "d-1")).deleted == 2
        stub.Ingest(ingest_request("n", "pear", message=pb.Message(role="u", content="pear")))
        assert stub.Delete(of_session("n", "d-1")).deleted == 2
        assert contents(stub, "n") == ["pear"]
        # Another delete under the same id is refused, and deletes nothing.
        with pytest.raises(grpc.RpcError) as caught:
            stub.Delete(pb.DeleteRequest(namespace="n", ids=["x"], request_id="d-1"))
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert [v.field for v in field_violations(caught.value)] == ["request_id"]
        # Without an id, the same delete sent again deletes what matches now.
        assert stub.Delete(of_session("n", "")).deleted == 1
        assert contents(stub, "n") == []


def test_a_delete_receipt_is_kept_across_a_restart(tmp_path: Path) -> None:
    answers = []
    for word in ("kiwi", "lime"):
        server, port = create_server("127.0.0.1:0", memory="sqlite", data_dir=tmp_path)
        try:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = memory_pb2_grpc.MemoryServiceStub(channel)
                stub.Ingest(ingest_request("n", word, message=pb.Message(role="u", content=word)))
                answers.append(stub.Delete(of_session("n", "d-9")).deleted)
                left = contents(stub, "n")
        finally:
            server.stop(None).wait()
    assert answers == [1, 1]
    assert left == ["lime"]


def test_retried_episode_writes_answer_as_the_first_and_change_nothing_more(target: str) -> None:
    with grpc.insecure_channel(target) as channel:
        stub = memory_pb2_grpc.EpisodeServiceStub(channel)

        def record(request_id: str, *numbers: int) -> int:
            request = pb.RecordEpisodesRequest(
                namespace="n",
                episodes=[convert.episode_to_proto(episode(n)) for n in numbers],
                request_id=request_id,
            )
            return int(stub.RecordEpisodes(request).recorded)

        def delete(request_id: str, number: int) -> bool:
            request = pb.DeleteEpisodeRequest(
                namespace="n", id=episode(number).id, request_id=request_id
            )
            return bool(stub.DeleteEpisode(request).deleted)

        def listed() -> list[str]:
            page = stub.ListEpisodes(pb.ListEpisodesRequest(namespace="n"))
            return sorted(e.id for e in page.episodes)

        assert record("r-1", 1, 2) == 2
        assert delete("", 1)
        assert record("r-1", 1, 2) == 2  # answered from the receipt: episode 1 stays deleted
        assert listed() == [episode(2).id]
        assert delete("d-1", 2)
        assert record("", 2) == 1
        assert delete("d-1", 2)  # answered as the first: episode 2, recorded again, stays
        assert listed() == [episode(2).id]
        with pytest.raises(grpc.RpcError) as caught:
            record("r-1", 3)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert [v.field for v in field_violations(caught.value)] == ["request_id"]
        assert listed() == [episode(2).id]


def test_remote_clients_send_the_request_id(target: str) -> None:
    memory = RemoteMemory(target, namespace="remote")
    episodes = RemoteEpisodes(target, namespace="remote")
    try:
        memory.ingest_many((Message(role="u", content=w), Session(session_id="s")) for w in "ab")
        chosen = memory.list().messages[0].id
        assert memory.delete([chosen], request_id="d-1") == 1
        assert memory.delete([chosen], request_id="d-1") == 1
        with pytest.raises(Exception, match="request_id"):
            memory.delete(["other"], request_id="d-1")
        episodes.record(episode(1), request_id="r-1")
        episodes.delete(episode(1).id)
        episodes.record(episode(1), request_id="r-1")  # recorded once: it stays deleted
        assert episodes.list().episodes == []
        assert episodes.record_many([episode(2)], request_id="r-2") == 1
        assert episodes.delete(episode(2).id, request_id="d-2")
        episodes.record(episode(2))
        assert episodes.delete(episode(2).id, request_id="d-2")
        assert [e.id for e in episodes.list().episodes] == [episode(2).id]
    finally:
        memory.close()
        episodes.close()


def gone() -> None:
    raise commit.CallerGone("the caller went away")


@pytest.mark.parametrize("kind", ["sqlite", "inprocess"])
def test_an_episode_write_whose_caller_has_gone_is_rolled_back(kind: str, tmp_path: Path) -> None:
    store: EpisodeStore = open_store(kind, "n", tmp_path)
    try:
        store.record_many([episode(1)])
        with commit.committing(commit.Terms(gone)):
            with pytest.raises(commit.CallerGone):
                store.record_many([episode(2), episode(3)])
            with pytest.raises(commit.CallerGone):
                store.record(episode(4))
            with pytest.raises(commit.CallerGone):
                store.delete(episode(1).id)
        assert [e.id for e in store.list().episodes] == [episode(1).id]
    finally:
        store.close()


def test_requests_of_other_kinds_have_other_digests() -> None:
    # Without their request ids both serialize to the same bytes, yet are different writes.
    batch = pb.IngestBatchRequest(namespace="m", request_id="same")
    delete = pb.DeleteRequest(namespace="m", request_id="same")
    assert pb.IngestBatchRequest(namespace="m").SerializeToString() == (
        pb.DeleteRequest(namespace="m").SerializeToString()
    )
    assert digest(batch) != digest(delete)
    assert digest(delete) == digest(pb.DeleteRequest(namespace="m", request_id="other"))
