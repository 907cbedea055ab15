"""Retries with exponential backoff, one policy for every provider.

The SDKs' own retries are turned off (`max_retries=0`) so that a provider's transient errors
(TransientLLMError) all go through this one loop: the n-th wait is drawn uniformly from
[d/2, d] with d = base_delay * 2**(n-1), capped at max_delay (the jitter keeps concurrent calls
that failed together from retrying together), and never shorter than the Retry-After the
provider sent.
"""

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
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("RetryPolicy delays must not be negative")

    def delay(self, failures: int, retry_after: float | None = None) -> float:
        """Seconds to wait after the `failures`-th failed attempt."""
        ceiling = min(self.max_delay, self.base_delay * 2 ** (failures - 1))
        wait = random.uniform(ceiling / 2, ceiling)
        if retry_after is not None and retry_after > wait:
            wait = retry_after
        return wait


def call_with_retry(
    attempt: Callable[[], T], policy: RetryPolicy, sleep: Callable[[float], None]
) -> tuple[T, int]:
    """`attempt()`'s result and how many tries it took; TransientLLMError is retried, and once
    the tries are spent becomes an LLMCallError naming the last failure."""
    for tries in range(1, policy.attempts + 1):
        try:
            return attempt(), tries
        except TransientLLMError as error:
            if tries == policy.attempts:
                raise LLMCallError(
                    f"gave up after {tries} attempt{'s' if tries > 1 else ''}: {error}"
                ) from error
            sleep(policy.delay(tries, error.retry_after))
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises
