"""The errors himga.llm raises: a client that cannot be made (or its answer cache opened), a call
that failed for good, and the transient failures a provider reports so that they are retried."""

from pathlib import Path

from himga.errors import HimgaError


class LLMError(HimgaError):
    """Base of the errors of himga.llm."""


class LLMConfigError(LLMError, ValueError):
    """A client that cannot be made or used as asked: an unknown provider or option, its SDK not
    installed, no API key, a key the provider rejects, a model it does not serve. Raised by
    `get_client` before any work starts; the message says what to do."""


class AnswerCacheError(LLMConfigError):
    """The answer cache's file cannot be opened or made (`path`; `reason`: why)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: cannot open it as the answer cache: {reason}")
        self.path = path
        self.reason = reason


class LLMCallError(LLMError, RuntimeError):
    """A call that failed for good: the provider refused the request, or every retry failed."""


class TransientLLMError(LLMError):
    """A failure another try may cure (rate limit, overload, a 5xx, a dropped connection).

    Providers raise it from one attempt; the retry loop waits and tries again, at least
    `retry_after` seconds when the provider said how long (a Retry-After header)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
