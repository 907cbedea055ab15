"""The retry policy's waits, and how long a provider's Retry-After asks for."""

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from himga.llm import LLMCallError, RetryPolicy, TransientLLMError
from himga.llm.http import is_retried, retry_after_seconds
from himga.llm.retry import call_with_retry


def test_waits_double_up_to_the_ceiling() -> None:
    policy = RetryPolicy(attempts=8, base_delay=1.0, max_delay=10.0)
    for failures, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (7, 10.0)]:
        waits = [policy.delay(failures) for _ in range(50)]
        assert all(ceiling / 2 <= w <= ceiling for w in waits)
        assert len(set(waits)) > 1  # jittered


def test_retry_after_is_a_floor_up_to_the_ceiling() -> None:
    policy = RetryPolicy(base_delay=0.01, max_delay=60.0)
    assert policy.delay(1, retry_after=30.0) == 30.0
    assert policy.delay(1, retry_after=0.0) <= 0.01
    assert policy.delay(1, retry_after=1e300) == 60.0  # never longer than max_delay


@pytest.mark.parametrize("asked", [61.0, 86_400.0, 1e300])
def test_a_retry_after_longer_than_the_ceiling_is_not_waited_for(asked: float) -> None:
    """The provider asks for more than this client waits: the call fails at once, saying so
    (as the OpenAI SDK does above its own bound), rather than sleeping for a day or forever."""
    tries: list[int] = []
    waits: list[float] = []

    def attempt() -> str:
        tries.append(1)
        raise TransientLLMError("openai answered HTTP 429: slow down", asked)

    policy = RetryPolicy(attempts=6, base_delay=1.0, max_delay=60.0)
    with pytest.raises(LLMCallError) as raised:
        call_with_retry(attempt, policy, waits.append)
    assert str(raised.value) == (
        f"not tried again: openai answered HTTP 429: slow down; it asks to wait {asked:g} s "
        "(Retry-After), longer than the 60 s this client waits at most (RetryPolicy.max_delay)"
    )
    assert tries == [1] and waits == []


@pytest.mark.parametrize("value", [float("inf"), float("nan"), -1.0])
def test_delays_must_be_finite_and_not_negative(value: float) -> None:
    with pytest.raises(ValueError, match="must be a finite number >= 0"):
        RetryPolicy(max_delay=value)
    with pytest.raises(ValueError, match="base_delay must be a finite number >= 0"):
        RetryPolicy(base_delay=value)


def test_a_transient_failure_is_tried_again_until_it_passes() -> None:
    outcomes: list[object] = [TransientLLMError("busy", 3.0), TransientLLMError("busy"), "ok"]
    waits: list[float] = []

    def attempt() -> str:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return str(outcome)

    policy = RetryPolicy(attempts=3, base_delay=0.001, max_delay=5.0)
    assert call_with_retry(attempt, policy, waits.append) == ("ok", 3)
    assert waits[0] == 3.0 and waits[1] <= 0.002


def test_other_errors_are_not_retried() -> None:
    calls: list[int] = []

    def attempt() -> str:
        calls.append(1)
        raise LLMCallError("refused")

    with pytest.raises(LLMCallError, match="refused"):
        call_with_retry(attempt, RetryPolicy(), lambda s: None)
    assert calls == [1]


def test_attempts_must_be_positive() -> None:
    with pytest.raises(ValueError, match="attempts"):
        RetryPolicy(attempts=0)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after": "12"}, 12.0),
        ({"retry-after-ms": "250", "retry-after": "12"}, 0.25),
        ({"retry-after": "soon"}, None),
        ({}, None),
        # only a finite number of seconds, not negative, is read; else the next header, or none
        ({"retry-after": "inf"}, None),
        ({"retry-after": "Infinity"}, None),
        ({"retry-after": "1e400"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "-5"}, None),
        ({"retry-after-ms": "nan", "retry-after": "3"}, 3.0),
        ({"retry-after-ms": "inf"}, None),
        ({"retry-after-ms": "-1", "retry-after": "2"}, 2.0),
        ({"retry-after": "0"}, 0.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),  # a date past: now
        ({"retry-after": "Wed, 99 Oct 2015 99:99:99 GMT"}, None),
    ],
)
def test_retry_after_headers(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after_seconds(headers) == seconds


def test_retry_after_as_a_date() -> None:
    later = datetime.now(UTC) + timedelta(seconds=30)
    seconds = retry_after_seconds({"retry-after": format_datetime(later, usegmt=True)})
    assert seconds is not None and 25 < seconds <= 30


def test_retry_after_as_a_date_without_a_zone_is_in_gmt() -> None:
    later = datetime.now(UTC) + timedelta(seconds=30)
    text = format_datetime(later, usegmt=True).replace("GMT", "-0000")
    seconds = retry_after_seconds({"retry-after": text})
    assert seconds is not None and 25 < seconds <= 30


@pytest.mark.parametrize(
    ("status", "retried"),
    [
        (408, True),
        (409, True),
        (429, True),
        (500, True),
        (529, True),
        (400, False),
        (401, False),
        (404, False),
        (422, False),
    ],
)
def test_which_statuses_are_retried(status: int, retried: bool) -> None:
    assert is_retried(status) is retried
