"""What a provider's HTTP error means here: which statuses are worth another try, and how long
the provider asked to wait (Retry-After)."""

import time
from collections.abc import Mapping
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
    else `retry-after` in seconds or as an HTTP date; None when absent or unreadable."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def status_error(provider: str, status: int, headers: Mapping[str, str], message: str) -> LLMError:
    """The error for an HTTP error answer: TransientLLMError (retried) or LLMCallError."""
    text = f"{provider} answered HTTP {status}: {message}"
    if is_retried(status):
        return TransientLLMError(text, retry_after_seconds(headers))
    return LLMCallError(text)
