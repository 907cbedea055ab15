"""The answer cache: a prompt asked again, in this run or the next, is not paid for twice."""

import os
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from himga.llm import (
    AnswerCacheError,
    CachedClient,
    ChatMessage,
    LLMCallError,
    default_cache_path,
    get_client,
)
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


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("where", ["default", "given"])
def test_the_cache_is_private_whatever_the_umask(
    llm_server: FakeLLMServer, llm_env: Path, tmp_path: Path, widest_umask: None, where: str
) -> None:
    """It holds whole prompts, memories included: 0600 (its -wal and -shm too), in directories
    made 0700, as every file himga writes."""
    path = default_cache_path() if where == "default" else tmp_path / "a" / "b" / "answers.db"
    options = {} if where == "default" else {"cache": path}
    llm = get_client(
        "anthropic", "claude-test", api_key=API_KEY, base_url=llm_server.url, **options
    )
    try:
        llm.complete(PROMPT)
        assert path.exists()
        files = [path, *path.parent.glob(path.name + "-*")]
        assert len(files) == 3  # the database, its -wal and -shm
        assert {file.name: mode(file) for file in files} == {file.name: 0o600 for file in files}
        top = llm_env if where == "default" else tmp_path / "a"
        for folder in (path.parent, top):
            assert mode(folder) == 0o700
    finally:
        llm.close()


def test_a_cache_an_earlier_himga_left_readable_is_made_private(
    llm_server: FakeLLMServer, tmp_path: Path, widest_umask: None
) -> None:
    path = tmp_path / "answers.db"
    sqlite3.connect(path).close()  # as an earlier himga made it: 0666 less the umask
    os.chmod(path, 0o644)
    llm = get_client(
        "anthropic", "claude-test", api_key=API_KEY, base_url=llm_server.url, cache=path
    )
    try:
        llm.complete(PROMPT)
        assert mode(path) == 0o600
    finally:
        llm.close()


def _a_directory(tmp_path: Path) -> Path:
    (tmp_path / "answers").mkdir()
    return tmp_path / "answers"


def _not_sqlite(tmp_path: Path) -> Path:
    (tmp_path / "answers").write_text("not a database " * 100)
    return tmp_path / "answers"


def _under_a_file(tmp_path: Path) -> Path:
    (tmp_path / "file").write_text("")
    return tmp_path / "file" / "answers"


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (_a_directory, "it is a directory"),
        (_not_sqlite, "file is not a database"),
        (_under_a_file, "Not a directory"),
    ],
)
def test_a_cache_that_cannot_be_opened_is_one_clear_error(
    llm_server: FakeLLMServer, tmp_path: Path, make: Callable[[Path], Path], reason: str
) -> None:
    path = make(tmp_path)
    with pytest.raises(
        AnswerCacheError, match=f"{path}: cannot open it as the answer cache: {reason}"
    ):
        get_client("anthropic", "claude-test", api_key=API_KEY, base_url=llm_server.url, cache=path)
