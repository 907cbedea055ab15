"""The answer cache: a prompt asked again, in this run or the next, is not paid for twice."""

from pathlib import Path

import pytest

from himga.llm import CachedClient, ChatMessage, LLMCallError, default_cache_path, get_client
from tests.llm.fake_server import API_KEY, FakeLLMServer

PROMPT = [ChatMessage("user", "What did Ada adopt?")]


def cached(server: FakeLLMServer, model: str = "claude-test") -> CachedClient:
    llm = get_client("anthropic", model, api_key=API_KEY, base_url=server.url)
    assert isinstance(llm, CachedClient)
    return llm


def test_the_same_prompt_is_answered_from_the_cache(llm_server: FakeLLMServer) -> None:
    llm_server.reply = lambda prompt: "a greyhound"
    llm = cached(llm_server)
    first = llm.complete(PROMPT)
    second = llm.complete(PROMPT)
    assert len(llm_server.calls("/v1/messages")) == 1
    assert (first.cached, second.cached) == (False, True)
    assert second.text == "a greyhound"
    # the cached answer keeps what the paid call cost
    assert (second.input_tokens, second.output_tokens) == (first.input_tokens, first.output_tokens)


def test_a_rerun_pays_nothing_again(llm_server: FakeLLMServer, llm_env: Path) -> None:
    cached(llm_server).complete(PROMPT)
    # a new process would make a new client over the same file
    rerun = cached(llm_server)
    assert rerun.path == llm_env / "llm-answers.sqlite3" == default_cache_path()
    assert rerun.complete(PROMPT).cached
    assert len(llm_server.calls("/v1/messages")) == 1


def test_another_prompt_model_or_limit_is_another_answer(llm_server: FakeLLMServer) -> None:
    llm = cached(llm_server)
    llm.complete(PROMPT)
    llm.complete([ChatMessage("user", "What did Bruno repair?")])
    llm.complete(PROMPT, max_tokens=10)
    cached(llm_server, "claude-haiku-4-5").complete(PROMPT)
    assert len(llm_server.calls("/v1/messages")) == 4
    assert llm.cached_answers() == 4


def test_a_failed_call_is_not_kept(llm_server: FakeLLMServer) -> None:
    llm = cached(llm_server)
    llm_server.fail_next(400)
    with pytest.raises(LLMCallError):
        llm.complete(PROMPT)
    assert llm.cached_answers() == 0
    assert not llm.complete(PROMPT).cached


def test_no_cache_asks_every_time(llm_server: FakeLLMServer) -> None:
    llm = get_client(
        "anthropic", "claude-test", api_key=API_KEY, base_url=llm_server.url, cache=False
    )
    llm.complete(PROMPT)
    llm.complete(PROMPT)
    assert len(llm_server.calls("/v1/messages")) == 2
