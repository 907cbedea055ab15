"""himga.llm: the language models the agent answers with and the judge grades with.

`get_client(provider, model=None, **options)` gives an `LLMClient`: "anthropic" and "openai"
through their official SDKs (`pip install 'himga-memory[llm]'`; "openai" also reaches local servers
by `base_url`), or "extractive", a reader that needs no model. Every client has
`complete(messages) -> Completion` (the text, tokens, latency, attempts).
"""

from himga.llm.base import ChatMessage, Completion, LLMClient, ProviderClient, Reply
from himga.llm.cache import CachedClient, default_cache_path
from himga.llm.errors import (
    AnswerCacheError,
    LLMCallError,
    LLMConfigError,
    LLMError,
    TransientLLMError,
)
from himga.llm.extractive import ExtractiveReader
from himga.llm.providers import get_client, parse_spec, provider_names
from himga.llm.qa_prompt import NOT_MENTIONED, qa_messages, read_qa_prompt
from himga.llm.retry import RetryPolicy

__all__ = [
    "NOT_MENTIONED",
    "AnswerCacheError",
    "CachedClient",
    "ChatMessage",
    "Completion",
    "ExtractiveReader",
    "LLMCallError",
    "LLMClient",
    "LLMConfigError",
    "LLMError",
    "ProviderClient",
    "Reply",
    "RetryPolicy",
    "TransientLLMError",
    "default_cache_path",
    "get_client",
    "parse_spec",
    "provider_names",
    "qa_messages",
    "read_qa_prompt",
]
