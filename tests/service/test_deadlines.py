"""A write whose deadline passed is told apart from one whose caller went: both roll back and
travel as CALLER_GONE, the first with the code DEADLINE_EXCEEDED (what the caller's library
reports), the second with CANCELLED; a stopping server's SERVER_STOPPING comes first."""

import time

import grpc
import pytest

from himga.memory.commit import CallerGone
from himga.service.core.context import CallContext
from himga.service.errors import (
    DeadlinePassed,
    ServerStopping,
    describe,
    error_kind,
)
from himga.service.lifecycle import Calls

METHOD = "/himga.memory.v1.MemoryService/Ingest"


def gone() -> bool:
    return False


def test_a_passed_deadline_is_deadline_passed() -> None:
    context = CallContext(METHOD, deadline=time.monotonic())
    with pytest.raises(DeadlinePassed, match="deadline"):
        Calls().still_wanted(context)


def test_a_passed_deadline_counts_even_when_the_caller_has_gone_too() -> None:
    # gRPC's context turns inactive at its deadline: the deadline says why.
    context = CallContext(METHOD, deadline=time.monotonic() - 1, active=gone)
    with pytest.raises(DeadlinePassed):
        Calls().still_wanted(context)


@pytest.mark.parametrize("deadline", [None, 3600.0])
def test_a_caller_gone_before_its_deadline_is_caller_gone(deadline: float | None) -> None:
    ahead = None if deadline is None else time.monotonic() + deadline
    with pytest.raises(CallerGone) as caught:
        Calls().still_wanted(CallContext(METHOD, deadline=ahead, active=gone))
    assert type(caught.value) is CallerGone


def test_a_wanted_write_may_commit() -> None:
    Calls().still_wanted(CallContext(METHOD, deadline=time.monotonic() + 3600))
    Calls().still_wanted(CallContext(METHOD))


def test_an_abandoned_write_is_server_stopping_whatever_its_deadline() -> None:
    calls = Calls()
    calls.abandon()
    with pytest.raises(ServerStopping):
        calls.still_wanted(CallContext(METHOD, deadline=time.monotonic() - 1))


def test_deadline_passed_travels_as_caller_gone_with_deadline_exceeded() -> None:
    deadline = describe(DeadlinePassed("the call's deadline passed"))
    assert (deadline.kind.code, deadline.kind.reason) == (
        grpc.StatusCode.DEADLINE_EXCEEDED,
        "CALLER_GONE",
    )
    assert deadline.message == "the call's deadline passed"
    gone_kind = error_kind(CallerGone("the caller hung up"))
    assert (gone_kind.code, gone_kind.reason) == (grpc.StatusCode.CANCELLED, "CALLER_GONE")
