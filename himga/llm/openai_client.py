"""The "openai" provider: OpenAI's Chat Completions API through its official SDK (the `llm`
extra), and every local server that speaks it (vLLM, llama.cpp's server, Ollama) via `base_url`.

The key comes from `api_key=` or OPENAI_API_KEY. A local server needs none: with a `base_url`
(or OPENAI_BASE_URL) and no key, the placeholder "EMPTY" is sent. Without a model, the OpenAI
API gets DEFAULT_MODEL and a local server the one model it lists (naming one is needed when it
lists several). `max_completion_tokens` limits the answer on the OpenAI API; local servers get
the older `max_tokens`, which all of them read.
"""

import os
import time
from collections.abc import Callable, Sequence

import openai
from openai.types.chat import ChatCompletionMessageParam

from himga.llm.base import ChatMessage, ProviderClient, Reply
from himga.llm.errors import LLMCallError, LLMConfigError, TransientLLMError
from himga.llm.http import status_error
from himga.llm.retry import RetryPolicy, call_with_retry

# The reader and judge model of the mem0 paper's LoCoMo evaluation.
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_TIMEOUT = 60.0
LOCAL_SERVER_KEY = "EMPTY"


class OpenAIClient(ProviderClient):
    """Chat models through the Chat Completions API, at OpenAI or at `base_url`."""

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
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.local = base_url is not None
        api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
        if api_key is None:
            if not self.local:
                raise LLMConfigError(
                    "openai: no API key; set OPENAI_API_KEY or pass api_key=..., or pass "
                    "base_url=... for a local server that needs none"
                )
            api_key = LOCAL_SERVER_KEY
        super().__init__("openai", model or ("" if self.local else DEFAULT_MODEL), retry, sleep)
        self._sdk = openai.OpenAI(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )

    def check(self) -> None:
        """List the server's models: an unknown model or a rejected key is an LLMConfigError.
        A local server that lists exactly one model lends it when none was named."""
        try:
            served, _ = call_with_retry(self._list_models, self.retry, self.sleep)
        except (openai.AuthenticationError, openai.PermissionDeniedError) as error:
            raise LLMConfigError(
                f"openai at {self._sdk.base_url} rejected the API key (HTTP {error.status_code}); "
                "check OPENAI_API_KEY"
            ) from None
        except LLMCallError as error:
            raise LLMConfigError(
                f"openai at {self._sdk.base_url}: cannot list the models: {error}"
            ) from None
        if not self.model:
            if len(served) != 1:
                raise LLMConfigError(
                    f"openai at {self._sdk.base_url}: name the model (openai:MODEL or "
                    f"model=...); it serves {_listing(served)}"
                )
            self.model = served[0]
        elif self.model not in served:
            raise LLMConfigError(
                f"openai at {self._sdk.base_url}: no model {self.model!r}; it serves "
                f"{_listing(served)}"
            )

    def cache_identity(self) -> dict[str, object]:
        return {**super().cache_identity(), "base_url": str(self._sdk.base_url)}

    def close(self) -> None:
        self._sdk.close()

    def _list_models(self) -> list[str]:
        try:
            return [model.id for model in self._sdk.models.list()]
        except openai.APIStatusError as error:
            if error.status_code in (401, 403):
                raise  # check() words these
            raise _translated(error) from error
        except openai.APIConnectionError as error:
            raise _translated(error) from error

    def _send(
        self, messages: Sequence[ChatMessage], max_tokens: int, temperature: float | None
    ) -> Reply:
        if not self.model:
            raise LLMConfigError("openai: no model named; call check() or pass model=...")
        turns: list[ChatCompletionMessageParam] = []
        for m in messages:
            if m.role == "system":
                turns.append({"role": "system", "content": m.content})
            elif m.role == "assistant":
                turns.append({"role": "assistant", "content": m.content})
            else:
                turns.append({"role": "user", "content": m.content})
        try:
            answer = self._sdk.chat.completions.create(
                model=self.model,
                messages=turns,
                temperature=openai.omit if temperature is None else temperature,
                max_tokens=max_tokens if self.local else openai.omit,
                max_completion_tokens=openai.omit if self.local else max_tokens,
            )
        except openai.APIError as error:
            raise _translated(error) from error
        if not answer.choices:
            raise LLMCallError(f"openai: the answer of {self.model!r} has no choices")
        text = answer.choices[0].message.content or ""
        usage = answer.usage
        if usage is None:
            return Reply(text)
        return Reply(text, usage.prompt_tokens, usage.completion_tokens)


def _listing(served: list[str]) -> str:
    if not served:
        return "no models"
    shown = ", ".join(served[:20])
    return f"{shown}, ... ({len(served)} in all)" if len(served) > 20 else shown


def _translated(error: openai.APIError) -> Exception:
    """The himga error for an SDK error: retried for a dropped connection, a timeout, 429, 5xx."""
    if isinstance(error, openai.APIStatusError):
        return status_error("openai", error.status_code, error.response.headers, error.message)
    if isinstance(error, openai.APIConnectionError):
        return TransientLLMError(f"openai: {error.message}")
    return LLMCallError(f"openai: {error.message}")
