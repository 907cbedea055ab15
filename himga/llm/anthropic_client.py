"""The "anthropic" provider: Claude through Anthropic's official SDK (the `llm` extra).

The key comes from `api_key=` or, as the SDK resolves it, from ANTHROPIC_API_KEY (or
ANTHROPIC_AUTH_TOKEN, or an Anthropic profile). System messages become the request's `system`
field; the reply is the text of the answer's text blocks. The Messages API of SDK 2.x takes no
temperature, so `temperature` is not sent: Claude answers at its default.
"""

import time
from collections.abc import Callable, Sequence

import anthropic
from anthropic.types import AssistantMessageParam, MessageParam, UserMessageParam

from himga.llm.base import ChatMessage, ProviderClient, Reply
from himga.llm.errors import LLMCallError, LLMConfigError, TransientLLMError
from himga.llm.http import status_error
from himga.llm.retry import RetryPolicy, call_with_retry

DEFAULT_MODEL = "claude-haiku-4-5"
DEFAULT_TIMEOUT = 60.0


class AnthropicClient(ProviderClient):
    """Claude models through the Messages API."""

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__("anthropic", model or DEFAULT_MODEL, retry, sleep)
        try:
            self._sdk = anthropic.Anthropic(
                api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
            )
        except anthropic.CredentialsError as error:
            raise LLMConfigError(
                f"anthropic: no API key; set ANTHROPIC_API_KEY or pass api_key=... ({error})"
            ) from None
        sdk = self._sdk
        if sdk.api_key is None and sdk.auth_token is None and sdk.credentials is None:
            raise LLMConfigError("anthropic: no API key; set ANTHROPIC_API_KEY or pass api_key=...")

    def check(self) -> None:
        """Ask the API for the model: an unknown model or a rejected key is an LLMConfigError."""
        try:
            call_with_retry(self._retrieve_model, self.retry, self.sleep)
        except anthropic.NotFoundError:
            raise LLMConfigError(
                f"anthropic: no model {self.model!r} (see https://docs.anthropic.com/en/docs/"
                "about-claude/models)"
            ) from None
        except (anthropic.AuthenticationError, anthropic.PermissionDeniedError) as error:
            raise LLMConfigError(
                f"anthropic rejected the API key (HTTP {error.status_code}); check "
                "ANTHROPIC_API_KEY"
            ) from None
        except LLMCallError as error:
            raise LLMConfigError(
                f"anthropic at {self._sdk.base_url}: cannot ask for model {self.model!r}: {error}"
            ) from None

    def cache_identity(self) -> dict[str, object]:
        return {**super().cache_identity(), "base_url": str(self._sdk.base_url)}

    def close(self) -> None:
        self._sdk.close()

    def _retrieve_model(self) -> None:
        try:
            self._sdk.models.retrieve(self.model)
        except anthropic.APIStatusError as error:
            if error.status_code in (401, 403, 404):
                raise  # check() words these
            raise _translated(error) from error
        except anthropic.APIConnectionError as error:
            raise _translated(error) from error

    def _send(
        self, messages: Sequence[ChatMessage], max_tokens: int, temperature: float | None
    ) -> Reply:
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        turns: list[MessageParam] = []
        for m in messages:
            if m.role == "user":
                turns.append(UserMessageParam(role="user", content=m.content))
            elif m.role == "assistant":
                turns.append(AssistantMessageParam(role="assistant", content=m.content))
        if not turns:
            raise ValueError("messages: Anthropic needs at least one user message")
        try:
            answer = self._sdk.messages.create(
                model=self.model,
                max_tokens=max_tokens,
                messages=turns,
                system=system if system else anthropic.omit,
            )
        except anthropic.APIError as error:
            raise _translated(error) from error
        text = "".join(block.text for block in answer.content if block.type == "text")
        return Reply(text, answer.usage.input_tokens, answer.usage.output_tokens)


def _translated(error: anthropic.APIError) -> Exception:
    """The himga error for an SDK error: retried for a dropped connection, a timeout, 429, 5xx."""
    if isinstance(error, anthropic.APIStatusError):
        return status_error("anthropic", error.status_code, error.response.headers, error.message)
    if isinstance(error, anthropic.APIConnectionError):
        return TransientLLMError(f"anthropic: {error.message}")
    return LLMCallError(f"anthropic: {error.message}")
