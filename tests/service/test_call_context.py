"""The CallContext every door fills: its deadline is read when asked, not when the call came,
and a caller that hung up is gone at once."""

import time

from himga.service.core.context import CallContext, deadline_after


def test_the_remaining_time_is_read_live() -> None:
    context = CallContext("/m", deadline=deadline_after(0.05))
    first = context.time_remaining()
    assert first is not None and 0 < first <= 0.05
    assert context.is_active()
    time.sleep(0.06)
    later = context.time_remaining()
    assert later is not None and later <= 0
    assert not context.is_active()


def test_without_a_deadline_the_caller_waits_until_it_hangs_up() -> None:
    there = [True]
    context = CallContext("/m", active=lambda: there[0])
    assert context.time_remaining() is None and context.is_active()
    there[0] = False
    assert not context.is_active()


def test_the_identity_is_anonymous_until_a_grant_is_checked() -> None:
    assert CallContext("/m").identity == "anonymous"
