"""`get_client`: a language model client by provider name, checked before any work starts.

| provider     | class                                   | key                                 |
|--------------|-----------------------------------------|-------------------------------------|
| `anthropic`  | himga.llm.anthropic_client.AnthropicClient | ANTHROPIC_API_KEY                 |
| `openai`     | himga.llm.openai_client.OpenAIClient     | OPENAI_API_KEY (none for base_url) |
| `extractive` | himga.llm.extractive.ExtractiveReader    | none: no model                      |

Provider classes are imported on first use, so the SDKs (the `llm` extra) are needed only by
those who use them. A new provider is one ProviderClient subclass and one line in PROVIDERS.
"""

import importlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import himga
from himga.llm.base import LLMClient, ProviderClient
from himga.llm.cache import CachedClient, default_cache_path
from himga.llm.errors import AnswerCacheError, LLMConfigError
from himga.llm.extractive import ExtractiveReader

# name -> (module, class): the class is called as cls(model, **options).
PROVIDERS: dict[str, tuple[str, str]] = {
    "anthropic": ("himga.llm.anthropic_client", "AnthropicClient"),
    "openai": ("himga.llm.openai_client", "OpenAIClient"),
}
EXTRACTIVE = "extractive"


def provider_names() -> list[str]:
    """Every name `get_client` takes, sorted."""
    return sorted([*PROVIDERS, EXTRACTIVE])


def get_client(
    provider: str,
    model: str | None = None,
    *,
    cache: bool | str | Path = True,
    check: bool = True,
    **options: Any,
) -> LLMClient:
    """The client of `provider` for `model` (None: the provider's default).

    `options` go to the provider's class: `api_key`, `base_url` (a local server speaking the
    OpenAI API: vLLM, llama.cpp, Ollama), `timeout`, `retry` (a RetryPolicy). `check` asks the
    provider for the model first, so a missing or rejected key and an unknown model fail here,
    as an LLMConfigError, rather than on the first question (`check=False` skips it, for a proxy
    that serves no models endpoint). Answers are cached on disk (`cache`:
    True for himga.llm.cache.default_cache_path(), a path, or False; a file that cannot be
    opened as the cache is an AnswerCacheError, an LLMConfigError); the extractive reader,
    which costs nothing, is never cached.
    """
    if provider == EXTRACTIVE:
        if model not in (None, "", "best-sentence") or options:
            raise LLMConfigError(
                "the extractive reader takes no model and no options, got "
                f"model={model!r} and {sorted(options) or 'no options'}"
            )
        return ExtractiveReader()
    try:
        module_name, class_name = PROVIDERS[provider]
    except KeyError:
        raise LLMConfigError(
            f"unknown LLM provider {provider!r}; known providers: {', '.join(provider_names())}"
        ) from None
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise LLMConfigError(
            f"the {provider} provider needs its SDK ({error.name}): {himga.install_hint('llm')}"
        ) from None
    cls: Callable[..., ProviderClient] = getattr(module, class_name)
    accepted = set(inspect.signature(cls).parameters) - {"model"}
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise LLMConfigError(
            f"the {provider} provider takes no option {', '.join(unknown)}; it takes "
            f"{', '.join(sorted(accepted))}"
        )
    client = cls(model, **options)
    if check:
        client.check()
    if cache is False:
        return client
    path = default_cache_path() if cache is True else Path(cache)
    try:
        return CachedClient(client, path)
    except AnswerCacheError:
        client.close()
        raise


def parse_spec(spec: str) -> tuple[str, str | None]:
    """`provider[:model]` (as the command line writes it) as (provider, model or None)."""
    provider, _, model = spec.partition(":")
    if not provider:
        raise LLMConfigError(f"an LLM is named as PROVIDER[:MODEL], got {spec!r}")
    return provider, model or None
