"""Bytes that are not the request a method takes: INVALID_ARGUMENT (reason INVALID_REQUEST),
one log line without a traceback, rate-limited; the server answers the next good call."""

import logging

import grpc
import pytest
from himga_proto.memory.v1 import memory_pb2 as pb

from himga.service.core.refusals import RateLimitedLog
from himga.status import reason_of
from tests.service.conftest import ingest_request

METHODS = ["Ingest", "IngestBatch", "Retrieve", "Reset"]
# A field 1 (namespace) of wire type 2 whose length runs past the end; a string that is not
# UTF-8; a group that never ends.
BAD = [b"\x0a\xff\x01", b"\x0a\x02\xff\xfe", b"\x0b"]


def raw_call(target: str, method: str, data: bytes) -> grpc.Call:
    with grpc.insecure_channel(target) as channel:
        call = channel.unary_unary(f"/himga.memory.v1.MemoryService/{method}")
        with pytest.raises(grpc.RpcError) as caught:
            call(data, timeout=30)
    assert isinstance(caught.value, grpc.Call)
    return caught.value


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("data", BAD, ids=["truncated", "not-utf-8", "open-group"])
def test_undecodable_requests_are_invalid_argument(
    listing_server: str, method: str, data: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        error = raw_call(listing_server, method, data)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert reason_of(error) == "INVALID_REQUEST"
    assert "does not decode" in (error.details() or "")
    lines = [r.getMessage() for r in caplog.records if "(decoding)" in r.getMessage()]
    assert len(lines) <= 1 and all("\n" not in line for line in lines)
    assert not any(r.exc_info for r in caplog.records)


def test_the_next_good_call_answers(listing_server: str, stub: object) -> None:
    for data in BAD:
        raw_call(listing_server, "Ingest", data)
    stub.Ingest(ingest_request("after-bad", "fine"))  # type: ignore[attr-defined]
    hits = stub.Retrieve(pb.RetrieveRequest(namespace="after-bad", query="fine")).hits  # type: ignore[attr-defined]
    assert [hit.content for hit in hits] == ["fine"]


def test_repeated_bad_requests_are_logged_a_few_at_a_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = RateLimitedLog("decoding", burst=3, period=3600)
    with caplog.at_level(logging.WARNING, logger="himga.refusals"):
        for number in range(10):
            log.warning("bad request %d", number)
    assert [r.getMessage() for r in caplog.records] == [f"bad request {n}" for n in range(3)]


def test_a_quiet_period_reports_how_many_were_left_out(caplog: pytest.LogCaptureFixture) -> None:
    log = RateLimitedLog("decoding", burst=1, period=0)
    with caplog.at_level(logging.WARNING, logger="himga.refusals"):
        log.warning("first")
        log.warning("second")
    assert [r.getMessage() for r in caplog.records] == ["first", "second"]
    now = [0.0]
    log = RateLimitedLog("decoding", burst=1, period=3600, clock=lambda: now[0])
    log.warning("one")
    log.warning("two")
    now[0] += 3600  # the period has passed
    with caplog.at_level(logging.WARNING, logger="himga.refusals"):
        caplog.clear()
        log.warning("three")
    assert [r.getMessage() for r in caplog.records] == [
        "1 more decoding refusals were not logged (at most 1 lines a 3600 s)",
        "three",
    ]
