"""`himga eval`: the loop from the command line, with the extractive reader and with models."""

import json
from pathlib import Path

import pytest

from himga.cli import main
from tests.llm.fake_server import API_KEY, FakeLLMServer
from tests.ports import free_port

FIXTURE = Path(__file__).parents[1] / "fixtures" / "locomo" / "locomo-mini.json"
LME = Path(__file__).parents[1] / "fixtures" / "longmemeval" / "longmemeval-mini.json"
QUESTIONS = sum(len(s["qa"]) for s in json.loads(FIXTURE.read_text()))


def rows(out: str) -> dict[str, list[str]]:
    """The table's rows by group name: n, then the figures."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("group"))
    cells = len(lines[start].split()) - 1
    return {" ".join(line.split()[:-cells]): line.split()[-cells:] for line in lines[start + 1 :]}


def test_the_extractive_reader_needs_no_key(
    llm_env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "results.jsonl"
    argv = ["eval", "--dataset", str(FIXTURE), "--memory", "keyword", "--llm", "extractive"]
    assert main([*argv, "--out", str(out_file)]) == 0
    out, err = capsys.readouterr()
    assert "answers: extractive:best-sentence; judge: none" in out
    table = rows(out)
    assert table["overall"][0] == str(QUESTIONS - int(table["category 5"][0]))
    assert table["all"][0] == str(QUESTIONS)
    assert "eval KeywordMemory extractive:best-sentence" in err  # the progress bar
    records = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert len(records) == QUESTIONS
    first = records[0]
    assert first["memory"] == "keyword" and first["judge"] is None
    assert set(first) >= {
        "question",
        "category",
        "answer",
        "prediction",
        "evidence",
        "context",
        "call",
        "f1",
        "bleu1",
    }


def test_memories_side_by_side(llm_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "eval",
        "--dataset",
        str(FIXTURE),
        "--memory",
        "null,keyword",
        "--llm",
        "extractive",
        "--no-progress",
    ]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    header = out.splitlines()[3]
    assert header.split() == ["null", "keyword"]
    null_f1, keyword_f1 = float(rows(out)["overall"][1]), float(rows(out)["overall"][3])
    assert keyword_f1 > null_f1
    assert "model calls" not in err  # the extractive reader costs nothing worth reporting


def test_models_answer_and_judge_and_a_rerun_pays_nothing(
    llm_server: FakeLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    argv = [
        "eval",
        "--dataset",
        str(FIXTURE),
        "--memory",
        "sqlite",
        "--no-progress",
        "--llm",
        "anthropic:claude-test",
        "--base-url",
        llm_server.url,
        "--judge",
        "openai:gpt-test",
        "--judge-base-url",
        llm_server.url + "/v1",
        "--out",
        str(tmp_path / "results.jsonl"),
    ]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    answers = llm_server.calls("/v1/messages")
    judged = llm_server.calls("/v1/chat/completions")
    assert len(answers) == QUESTIONS
    assert 0 < len(judged) < QUESTIONS  # category 5 is not judged
    assert "judge: openai:gpt-test" in out
    assert rows(out)["overall"][-1] == "1.000"  # the stand-in judge says CORRECT
    records = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert sum(r["judge"] is not None for r in records) == len(judged)
    assert f"{QUESTIONS + len(judged)} model calls, 0 from the cache" in err
    assert main(argv) == 0
    _, err = capsys.readouterr()
    assert len(llm_server.calls("/v1/messages")) == QUESTIONS
    assert len(llm_server.calls("/v1/chat/completions")) == len(judged)
    assert "from the cache; paid 0 input and 0 output tokens" in err


def test_a_server_in_any_language_can_be_evaluated(
    llm_env: Path, memory_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "remote.jsonl"
    argv = [
        "eval",
        "--dataset",
        str(FIXTURE),
        "--target",
        memory_server,
        "--memory",
        "keyword",
        "--llm",
        "extractive",
        "--no-progress",
        "--out",
        str(out_file),
    ]
    assert main(argv) == 0
    records = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert len(records) == QUESTIONS
    assert sum(bool(r["context"]) for r in records) > QUESTIONS // 2


def test_longmemeval_files_run_too(llm_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "eval",
        "--benchmark",
        "longmemeval",
        "--dataset",
        str(LME),
        "--memory",
        "keyword",
        "--llm",
        "extractive",
        "--no-progress",
    ]
    assert main(argv) == 0
    table = rows(capsys.readouterr().out)
    assert table["single-session-user"][0] == "1" and table["temporal-reasoning"][0] == "1"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--memory", "nope", "--llm", "extractive"], "unknown memory 'nope'"),
        (["--llm", "gemini"], "unknown LLM provider 'gemini'"),
        (["--llm", "anthropic:claude-test"], "ANTHROPIC_API_KEY"),
        (["--llm", "extractive", "--judge", "extractive"], "the extractive reader cannot judge"),
        (["--llm", "extractive", "--dataset", "/nonexistent.json"], "no such LoCoMo file"),
        (["--memory", "postgres", "--llm", "extractive"], "keeps its namespaces in a database"),
        (["--llm", "extractive", "--token", "t"], "--token: only with --target"),
    ],
)
def test_errors_are_clear_and_come_first(
    llm_env: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main(["eval", "--dataset", str(FIXTURE), "--no-progress", *args]) == 2
    out, err = capsys.readouterr()
    assert message in err
    assert out == ""


def test_an_unknown_model_is_refused_before_any_question(
    llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    argv = [
        "eval",
        "--dataset",
        str(FIXTURE),
        "--llm",
        "anthropic:claude-nope",
        "--base-url",
        llm_server.url,
    ]
    assert main(argv) == 2
    assert "no model 'claude-nope'" in capsys.readouterr().err
    assert llm_server.calls("/v1/messages") == []


def test_a_server_that_asks_for_a_token_is_evaluated_with_it(
    llm_env: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from himga.service import create_server, tokens
    from himga.service.auth import AuthFile

    held = tokens.Tokens()
    token, _ = held.new(["himga-eval-*"], ["read", "write", "admin"])  # it resets its namespaces
    tokens.save(tmp_path / "auth.json", held)
    server, port = create_server("127.0.0.1:0", auth=AuthFile(tmp_path / "auth.json"))
    argv = ["eval", "--dataset", str(FIXTURE), "--target", f"127.0.0.1:{port}"]
    argv += ["--memory", "keyword", "--llm", "extractive", "--no-progress"]
    try:
        assert main(argv) == 1  # no token: the server's refusal, in one line
        err = capsys.readouterr().err
        assert err.startswith("himga eval: error: ") and "token" in err and "Traceback" not in err
        monkeypatch.setenv("HIMGA_TOKEN", token)
        assert main(argv) == 0
    finally:
        server.stop(None).wait()


def test_a_target_where_no_server_listens_is_one_line_and_exit_2(
    llm_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    argv = ["eval", "--dataset", str(FIXTURE), "--target", f"127.0.0.1:{port}"]
    assert main([*argv, "--llm", "extractive", "--no-progress"]) == 2
    (said,) = capsys.readouterr().err.splitlines()
    assert said.startswith(f"himga eval: error: 127.0.0.1:{port}: UNAVAILABLE: ")


@pytest.mark.parametrize("given", [True, False])
def test_a_cache_that_cannot_be_opened_is_one_line_and_exit_2(
    llm_server: FakeLLMServer,
    llm_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    given: bool,
) -> None:
    """A directory where the cache file should be: before, a sqlite3 traceback."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    folder = tmp_path / "folder"
    (folder if given else llm_env / "llm-answers.sqlite3").mkdir(parents=True)
    argv = ["eval", "--dataset", str(FIXTURE), "--no-progress", "--memory", "keyword"]
    argv += ["--llm", "anthropic:claude-test", "--base-url", llm_server.url]
    assert main([*argv, *(["--cache", str(folder)] if given else [])]) == 2
    out, err = capsys.readouterr()
    if given:
        said = f"--cache {folder}: cannot open it as the answer cache: it is a directory"
    else:
        said = f"the answer cache {llm_env / 'llm-answers.sqlite3'} cannot be opened: it is a "
    assert err.startswith(f"himga eval: error: {said}") and len(err.splitlines()) == 1
    assert out == "" and llm_server.calls("/v1/messages") == []
