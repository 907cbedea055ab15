"""The anthropic and openai clients: the real SDKs against the local stand-in server."""

import sys
from pathlib import Path

import pytest

from himga.llm import (
    ChatMessage,
    LLMCallError,
    LLMClient,
    LLMConfigError,
    RetryPolicy,
    get_client,
    parse_spec,
)
from tests.llm.fake_server import API_KEY, FakeLLMServer

PROMPT = [ChatMessage("system", "Be brief."), ChatMessage("user", "What did Ada adopt?")]
FAST = RetryPolicy(attempts=4, base_delay=0.001, max_delay=0.002)


def client(server: FakeLLMServer, provider: str, **options: object) -> LLMClient:
    base = server.url if provider == "anthropic" else server.url + "/v1"
    model = "claude-test" if provider == "anthropic" else "gpt-test"
    settings: dict[str, object] = {"api_key": API_KEY, "base_url": base, "retry": FAST}
    settings.update(options)
    return get_client(provider, model, cache=False, **settings)


def test_anthropic_sends_the_prompt_and_reports_the_tokens(llm_server: FakeLLMServer) -> None:
    llm_server.reply = lambda prompt: "a greyhound"
    completion = client(llm_server, "anthropic").complete(PROMPT, max_tokens=50)
    [call] = llm_server.calls("/v1/messages")
    assert call.body["system"] == "Be brief."
    assert call.body["messages"] == [{"role": "user", "content": "What did Ada adopt?"}]
    assert (call.body["model"], call.body["max_tokens"]) == ("claude-test", 50)
    assert call.headers["authorization"] == f"Bearer {API_KEY}"
    assert completion.text == "a greyhound"
    assert (completion.input_tokens, completion.output_tokens) == (6, 2)
    assert (completion.provider, completion.model, completion.attempts) == (
        "anthropic",
        "claude-test",
        1,
    )


def test_openai_sends_the_prompt_to_a_local_server(llm_server: FakeLLMServer) -> None:
    llm_server.reply = lambda prompt: "a greyhound"
    completion = client(llm_server, "openai").complete(PROMPT, max_tokens=50, temperature=0.0)
    [call] = llm_server.calls("/v1/chat/completions")
    assert call.body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What did Ada adopt?"},
    ]
    # a local server is sent the max_tokens every OpenAI-compatible server reads
    assert (call.body["model"], call.body["max_tokens"], call.body["temperature"]) == (
        "gpt-test",
        50,
        0.0,
    )
    assert "max_completion_tokens" not in call.body
    assert completion.text == "a greyhound"
    assert (completion.input_tokens, completion.output_tokens) == (6, 2)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("status", [429, 500, 503, 529])
def test_rate_limits_and_server_errors_are_retried(
    llm_server: FakeLLMServer, provider: str, status: int
) -> None:
    waits: list[float] = []
    llm = client(llm_server, provider, sleep=waits.append)
    llm_server.fail_next(status, times=2)
    completion = llm.complete(PROMPT)
    posts = [r for r in llm_server.requests if r.method == "POST"]
    assert len(posts) == 3
    assert completion.attempts == 3
    assert len(waits) == 2


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_retry_waits_as_long_as_retry_after_says(
    llm_server: FakeLLMServer, provider: str
) -> None:
    waits: list[float] = []
    patient = RetryPolicy(attempts=4, base_delay=0.001, max_delay=10.0)
    llm = client(llm_server, provider, sleep=waits.append, retry=patient)
    llm_server.fail_next(429, retry_after="7")
    llm_server.fail_next(429, retry_after_ms="2500")
    llm.complete(PROMPT)
    assert waits == [7.0, 2.5]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize(
    "header",
    [{"retry_after": "inf"}, {"retry_after": "nan"}, {"retry_after_ms": "-3"}],
)
def test_a_retry_after_that_is_no_wait_is_ignored(
    llm_server: FakeLLMServer, provider: str, header: dict[str, str]
) -> None:
    """Before, `Retry-After: inf` made the client sleep forever (an OverflowError)."""
    waits: list[float] = []
    llm = client(llm_server, provider, sleep=waits.append)
    llm_server.fail_next(503, **header)
    assert llm.complete(PROMPT).attempts == 2
    assert len(waits) == 1 and 0 <= waits[0] <= FAST.max_delay


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_retry_after_longer_than_the_client_waits_fails_at_once(
    llm_server: FakeLLMServer, provider: str
) -> None:
    waits: list[float] = []
    llm = client(llm_server, provider, sleep=waits.append)  # FAST: waits 0.002 s at most
    llm_server.fail_next(429, retry_after="86400")
    with pytest.raises(LLMCallError, match=r"not tried again: .*HTTP 429.*it asks to wait 86400 s"):
        llm.complete(PROMPT)
    assert waits == []
    assert len([r for r in llm_server.requests if r.method == "POST"]) == 1


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_retries_end_with_a_clear_error(llm_server: FakeLLMServer, provider: str) -> None:
    llm = client(llm_server, provider, sleep=lambda seconds: None)
    llm_server.fail_next(503, times=FAST.attempts)
    with pytest.raises(LLMCallError, match=f"gave up after {FAST.attempts} attempts.*HTTP 503"):
        llm.complete(PROMPT)
    assert len([r for r in llm_server.requests if r.method == "POST"]) == FAST.attempts


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_bad_request_is_not_retried(llm_server: FakeLLMServer, provider: str) -> None:
    llm = client(llm_server, provider, sleep=lambda seconds: None)
    llm_server.fail_next(400)
    with pytest.raises(LLMCallError, match="HTTP 400"):
        llm.complete(PROMPT)
    assert len([r for r in llm_server.requests if r.method == "POST"]) == 1


@pytest.mark.parametrize(
    ("provider", "variable"), [("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY")]
)
def test_a_missing_key_fails_before_any_request(
    llm_server: FakeLLMServer, provider: str, variable: str
) -> None:
    with pytest.raises(LLMConfigError, match=variable):
        get_client(provider)
    assert llm_server.requests == []


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_the_key_comes_from_the_environment(
    llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    monkeypatch.setenv(f"{provider.upper()}_API_KEY", API_KEY)
    llm = client(llm_server, provider, api_key=None)
    llm.complete(PROMPT)
    assert llm_server.requests[-1].headers["authorization"] == f"Bearer {API_KEY}"


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_rejected_key_fails_in_get_client(llm_server: FakeLLMServer, provider: str) -> None:
    with pytest.raises(LLMConfigError, match="rejected the API key"):
        client(llm_server, provider, api_key="wrong")
    assert not [r for r in llm_server.requests if r.method == "POST"]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_an_unknown_model_fails_in_get_client(llm_server: FakeLLMServer, provider: str) -> None:
    base = llm_server.url if provider == "anthropic" else llm_server.url + "/v1"
    with pytest.raises(LLMConfigError, match="no model 'no-such-model'"):
        get_client(provider, "no-such-model", api_key=API_KEY, base_url=base, cache=False)
    assert not [r for r in llm_server.requests if r.method == "POST"]


def test_an_unreachable_server_is_a_config_error(llm_env: Path) -> None:
    with pytest.raises(LLMConfigError, match="cannot list the models"):
        get_client(
            "openai",
            "m",
            base_url="http://127.0.0.1:9/v1",
            retry=RetryPolicy(attempts=2, base_delay=0.001),
            cache=False,
        )


def test_a_local_server_needs_no_key_and_lends_its_only_model(llm_server: FakeLLMServer) -> None:
    llm_server.accept_any_key = True
    llm_server.models = ["llama-local"]
    llm = get_client("openai", base_url=llm_server.url + "/v1", cache=False)
    assert llm.model == "llama-local"
    llm.complete(PROMPT)
    assert llm_server.requests[-1].headers["authorization"] == "Bearer EMPTY"
    assert llm_server.requests[-1].body["model"] == "llama-local"


def test_a_local_server_with_several_models_needs_one_named(llm_server: FakeLLMServer) -> None:
    llm_server.accept_any_key = True
    with pytest.raises(LLMConfigError, match=r"name the model.*claude-test, claude-haiku-4-5"):
        get_client("openai", base_url=llm_server.url + "/v1", cache=False)


def test_the_default_anthropic_model_is_checked(llm_server: FakeLLMServer) -> None:
    llm = get_client("anthropic", api_key=API_KEY, base_url=llm_server.url, cache=False)
    assert llm.model == "claude-haiku-4-5"
    assert llm_server.requests[0].path == "/v1/models/claude-haiku-4-5"


@pytest.mark.parametrize(
    ("provider", "options", "message"),
    [
        ("gemini", {}, "unknown LLM provider 'gemini'; known providers: anthropic, extractive"),
        ("openai", {"base_uri": "x"}, "takes no option base_uri; it takes api_key, base_url"),
        ("extractive", {"base_url": "x"}, "the extractive reader takes no model and no options"),
    ],
)
def test_bad_arguments_are_named(
    llm_env: Path, provider: str, options: dict[str, object], message: str
) -> None:
    with pytest.raises(LLMConfigError, match=message):
        get_client(provider, **options)


@pytest.mark.parametrize(("provider", "sdk"), [("anthropic", "anthropic"), ("openai", "openai")])
def test_a_missing_sdk_says_how_to_install_it(
    llm_env: Path, monkeypatch: pytest.MonkeyPatch, provider: str, sdk: str
) -> None:
    monkeypatch.setitem(sys.modules, sdk, None)  # makes `import <sdk>` fail
    monkeypatch.delitem(sys.modules, f"himga.llm.{provider}_client", raising=False)
    with pytest.raises(
        LLMConfigError, match=rf"needs its SDK \({sdk}\): pip install 'himga-memory\[llm\]'"
    ):
        get_client(provider, api_key=API_KEY)


def test_a_spec_names_provider_and_model() -> None:
    assert parse_spec("anthropic:claude-x") == ("anthropic", "claude-x")
    assert parse_spec("openai:org/model:7b") == ("openai", "org/model:7b")
    assert parse_spec("extractive") == ("extractive", None)
    with pytest.raises(LLMConfigError, match="PROVIDER"):
        parse_spec(":model")
