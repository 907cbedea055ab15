"""Retries with exponential backoff, one policy for every provider.

The SDKs' own retries are turned off (`max_retries=0`) so that a provider's transient errors
(TransientLLMError) all go through this one loop: the n-th wait is drawn uniformly from
[d/2, d] with d = base_delay * 2**(n-1), capped at max_delay (the jitter keeps concurrent calls
that failed together from retrying together), and never shorter than the Retry-After the
provider sent.

No wait is longer than max_delay. A provider that asks for more (a Retry-After above it) is not
tried again: the call fails at once with an LLMCallError saying how long it asked for and the
bound, as the OpenAI SDK does above its own bound. Trying sooner than asked would only be
refused again, and a run given up is resumed from the answer cache later.
"""

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from himga.llm.errors import LLMCallError, TransientLLMError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently a call is retried. `attempts` counts the first try."""

    attempts: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"RetryPolicy.attempts must be at least 1, got {self.attempts}")
        for name in ("base_delay", "max_delay"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"RetryPolicy.{name} must be a finite number >= 0, got {value}")

    def delay(self, failures: int, retry_after: float | None = None) -> float:
        """Seconds to wait after the `failures`-th failed attempt: at least `retry_after` (the
        provider's Retry-After), at most max_delay."""
        ceiling = min(self.max_delay, self.base_delay * 2 ** min(failures - 1, 1000))
        wait = random.uniform(ceiling / 2, ceiling)
        if retry_after is not None and retry_after > wait:
            wait = min(retry_after, self.max_delay)
        return wait


def call_with_retry(
    attempt: Callable[[], T], policy: RetryPolicy, sleep: Callable[[float], None]
) -> tuple[T, int]:
    """`attempt()`'s result and how many tries it took; TransientLLMError is retried, and once
    the tries are spent, or when it asks for a longer wait than `policy.max_delay`, becomes an
    LLMCallError naming the last failure."""
    for tries in range(1, policy.attempts + 1):
        try:
            return attempt(), tries
        except TransientLLMError as error:
            if tries == policy.attempts:
                raise LLMCallError(
                    f"gave up after {tries} attempt{'s' if tries > 1 else ''}: {error}"
                ) from error
            asked = error.retry_after
            if asked is not None and asked > policy.max_delay:
                raise LLMCallError(
                    f"not tried again: {error}; it asks to wait {asked:g} s (Retry-After), "
                    f"longer than the {policy.max_delay:g} s this client waits at most "
                    "(RetryPolicy.max_delay)"
                ) from error
            sleep(policy.delay(tries, asked))
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises
