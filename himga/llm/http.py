"""What a provider's HTTP error means here: which statuses are worth another try, and how long
the provider asked to wait (Retry-After)."""

import math
import time
from collections.abc import Mapping
from datetime import UTC
from email.utils import parsedate_to_datetime

from himga.llm.errors import LLMCallError, LLMError, TransientLLMError

# Request timeout, conflict (Anthropic and OpenAI ask for a retry), too early, rate limited; and
# every 5xx (Anthropic's 529 "overloaded" included).
RETRIED_STATUSES = frozenset({408, 409, 425, 429})


def is_retried(status: int) -> bool:
    """Whether a call that got HTTP `status` is tried again."""
    return status in RETRIED_STATUSES or status >= 500


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """How long the response asks the client to wait: `retry-after-ms` (both providers send it),
    else `retry-after` in seconds or as an HTTP date (a date already past: 0); None when absent
    or unreadable. Only a finite number of seconds, not negative, is read: `inf`, `nan`, `-5`
    and a date that is no date are unreadable, and the retries wait as they would without."""
    milliseconds = _seconds(headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # `-0000`: an HTTP date is in GMT, whatever it says
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - time.time())


def _seconds(text: str | None) -> float | None:
    """`text` as a finite, non-negative number; None for anything else."""
    if text is None:
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def status_error(provider: str, status: int, headers: Mapping[str, str], message: str) -> LLMError:
    """The error for an HTTP error answer: TransientLLMError (retried) or LLMCallError."""
    text = f"{provider} answered HTTP {status}: {message}"
    if is_retried(status):
        return TransientLLMError(text, retry_after_seconds(headers))
    return LLMCallError(text)
