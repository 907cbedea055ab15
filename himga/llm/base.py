"""The one interface the agent and the judge talk to a language model through (`LLMClient`),
and the base of the providers that reach one over an API (`ProviderClient`)."""

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from himga.llm.retry import RetryPolicy, call_with_retry

Role = Literal["system", "user", "assistant"]
ROLES: frozenset[str] = frozenset({"system", "user", "assistant"})


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of a chat prompt: `system` instructions, a `user` turn or an `assistant` one."""

    role: Role
    content: str

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"ChatMessage.role must be one of {sorted(ROLES)}, got {self.role!r}")
        if not isinstance(self.content, str):
            raise ValueError(
                f"ChatMessage.content must be a string, got {type(self.content).__name__}"
            )


@dataclass(frozen=True, slots=True)
class Reply:
    """What one provider call returned: the text and the tokens it cost."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Completion:
    """A model's answer to one prompt, and what getting it cost.

    `latency_seconds` spans every attempt (waits between retries included); `attempts` counts
    them. `cached` is true when the answer came from the disk cache (himga.llm.cache), which
    keeps the figures of the call that first paid for it."""

    text: str
    provider: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_seconds: float = 0.0
    attempts: int = 1
    cached: bool = False

    def usage(self) -> dict[str, object]:
        """Everything but the text, for a results file."""
        return {
            "provider": self.provider,
            "model": self.model,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "latency_seconds": round(self.latency_seconds, 6),
            "attempts": self.attempts,
            "cached": self.cached,
        }


class LLMClient(ABC):
    """What the agent and the judge call: a model that completes a chat prompt. Thread-safe: the
    evaluation calls it from several threads at once."""

    provider: str
    model: str

    def __repr__(self) -> str:
        return f"{type(self).__name__}(provider={self.provider!r}, model={self.model!r})"

    @abstractmethod
    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float | None = 0.0,
    ) -> Completion:
        """The model's reply to `messages`, at most `max_tokens` long. `temperature=None` sends
        none (the provider's default; some models accept no other)."""

    def cache_identity(self) -> dict[str, object]:
        """What, beside the prompt, decides the answer: the disk cache keys on it."""
        return {"provider": self.provider, "model": self.model}

    def close(self) -> None:
        """Release the connections the client holds."""
        return None


class ProviderClient(LLMClient):
    """A model behind a provider's API. A provider is one subclass implementing `_send`: one
    call, returning the reply, raising TransientLLMError for what is worth another try (rate
    limits, overload, 5xx, dropped connections). `complete` adds the retries
    (himga.llm.retry) and the timing, so every provider retries and reports alike."""

    def __init__(
        self,
        provider: str,
        model: str,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.provider = provider
        self.model = model
        self.retry = retry or RetryPolicy()
        # Where the waits between retries go; tests pass one that records them instead.
        self.sleep = sleep

    def check(self) -> None:
        """Fail now, with an LLMConfigError, if the key is rejected or the model unknown.
        `get_client` calls it before returning; the default checks nothing."""
        return None

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float | None = 0.0,
    ) -> Completion:
        if not messages:
            raise ValueError("messages: a prompt needs at least one message")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
        started = time.perf_counter()
        reply, attempts = call_with_retry(
            lambda: self._send(messages, max_tokens, temperature), self.retry, self.sleep
        )
        return Completion(
            text=reply.text,
            provider=self.provider,
            model=self.model,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            latency_seconds=time.perf_counter() - started,
            attempts=attempts,
        )

    @abstractmethod
    def _send(
        self, messages: Sequence[ChatMessage], max_tokens: int, temperature: float | None
    ) -> Reply:
        """One call to the provider; TransientLLMError when another try may succeed."""
