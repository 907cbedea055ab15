"""A MemoryService client written as a non-Python client would be: only the generated stub,
grpc and the standard google.rpc error details; no himga. Run by test_stub_only.py with the
server's target as its argument; exits 0 when every check passes."""

import sys
import uuid

import grpc
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status
from himga_proto.memory.v1 import memory_pb2 as pb
from himga_proto.memory.v1 import memory_pb2_grpc


def main(target: str) -> None:
    namespace = f"stub-only-{uuid.uuid4().hex}"
    session = pb.Session(session_id="s1", date_str="1:56 pm on 8 May, 2023")
    with grpc.insecure_channel(target) as channel:
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
        assert health.status == health_pb2.HealthCheckResponse.SERVING, health

        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        stub.Ingest(
            pb.IngestRequest(
                namespace=namespace,
                message=pb.Message(role="Caroline", content="I adopted a dog", turn_id="D1:1"),
                session=session,
            )
        )
        items = [
            pb.IngestItem(
                message=pb.Message(role="Melanie", content=f"my dog number {i}"), session=session
            )
            for i in range(3)
        ]
        assert (
            stub.IngestBatch(pb.IngestBatchRequest(namespace=namespace, items=items)).ingested == 3
        )

        answer = stub.Retrieve(pb.RetrieveRequest(namespace=namespace, query="dog", limit=2))
        assert len(answer.hits) == 2, answer
        first = answer.hits[0]
        assert (first.turn_id, first.session_id, first.role, first.content, first.date_str) == (
            "D1:1",
            "s1",
            "Caroline",
            "I adopted a dog",
            "1:56 pm on 8 May, 2023",
        ), first
        assert "I adopted a dog" in answer.context

        try:
            stub.Ingest(
                pb.IngestRequest(
                    namespace=namespace, message=pb.Message(content="x"), session=session
                )
            )
            raise AssertionError("an empty role was accepted")
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
            status = rpc_status.from_call(error)
            assert status is not None, error
            info, bad_request = error_details_pb2.ErrorInfo(), error_details_pb2.BadRequest()
            assert any(d.Unpack(info) for d in status.details), status
            assert (info.domain, info.reason) == ("himga.dev", "INVALID_REQUEST"), info
            assert any(d.Unpack(bad_request) for d in status.details), status
            assert [v.field for v in bad_request.field_violations] == ["message.role"], bad_request

        stub.Reset(pb.ResetRequest(namespace=namespace))
        assert stub.Retrieve(pb.RetrieveRequest(namespace=namespace, query="dog")).hits == []

    loaded = sorted(name for name in sys.modules if name == "himga" or name.startswith("himga."))
    assert not loaded, f"the client imported himga: {loaded}"


if __name__ == "__main__":
    main(sys.argv[1])
    print("stub-only client: all checks passed")
