"""The seed's evaluation loop (its section 5.3), run as written, with every kind of memory.

A provider key and base URL in the environment point `get_client("anthropic")` at the local
stand-in server; `load_dataset("locomo")` reads HIMGA_LOCOMO_PATH, as the seed expects.
"""

import contextlib
import io
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from himga.eval import GroupMetrics
from himga.eval.scoring import ADVERSARIAL
from himga.memory import KeywordMemory, NullMemory, SQLiteKeywordMemory
from himga.memory.base import BaseMemory
from himga.memory.naive import SimpleKeywordMemory
from himga.service import RemoteMemory
from tests.llm.fake_server import API_KEY, FakeLLMServer

FIXTURE = Path(__file__).parents[1] / "fixtures" / "locomo" / "locomo-mini.json"

# The seed's code block, word for word.
SEED = """\
from himga.memory import NullMemory
from himga.agent import BaseAgent
from himga.llm import get_client
from himga.eval import run_eval, compute_metrics
from himga.eval.judge import batch_judge
from himga.data import load_dataset

# 替换为任意 BaseMemory 实现
memory = NullMemory()
llm    = get_client("anthropic")
agent  = BaseAgent(memory=memory, llm=llm)

samples = load_dataset("locomo")
results = run_eval(samples, agent=agent, show_progress=True)

judge_scores = batch_judge(results, llm=llm)
metrics = compute_metrics(results, judge_scores)
print(metrics["overall"])
"""


@pytest.fixture
def seed_env(llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> FakeLLMServer:
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", llm_server.url)
    monkeypatch.setenv("HIMGA_LOCOMO_PATH", str(FIXTURE))
    return llm_server


def run_seed(code: str, **names: object) -> dict[str, object]:
    scope: dict[str, object] = dict(names)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "seed-5.3", "exec"), scope)
    scope["printed"] = out.getvalue()
    return scope


def test_the_seed_example_runs_as_written(seed_env: FakeLLMServer) -> None:
    scope = run_seed(SEED)
    overall = scope["metrics"]["overall"]  # type: ignore[index]
    assert isinstance(overall, GroupMetrics)
    assert scope["printed"] == f"{overall}\n"
    results = scope["results"]
    questions = len(results)  # type: ignore[arg-type]
    answered = [c for c in seed_env.calls("/v1/messages") if "<memories>" in c.prompt()]
    judged = [c for c in seed_env.calls("/v1/messages") if '"label"' in c.prompt()]
    assert len(answered) == questions
    adversarial = sum(r.category == ADVERSARIAL for r in results)  # type: ignore[attr-defined]
    assert len(judged) == questions - adversarial
    # NullMemory recalls nothing, so the stand-in declines and the judge (always CORRECT) agrees
    assert overall.judge_accuracy == 1.0 and overall.judged == questions - adversarial
    assert scope["metrics"]["category 5"].f1 == 1.0  # type: ignore[index]


@contextlib.contextmanager
def in_process(memory: BaseMemory) -> Iterator[BaseMemory]:
    with memory:
        yield memory


MEMORIES: dict[str, Callable[[str, Path], contextlib.AbstractContextManager[BaseMemory]]] = {
    "null": lambda server, tmp: in_process(NullMemory()),
    "naive": lambda server, tmp: in_process(SimpleKeywordMemory()),
    "keyword": lambda server, tmp: in_process(KeywordMemory()),
    "sqlite": lambda server, tmp: in_process(SQLiteKeywordMemory(tmp / "memory.sqlite3")),
    "remote": lambda server, tmp: RemoteMemory(server, "seed-example"),
}


@pytest.mark.parametrize("kind", list(MEMORIES))
def test_the_seed_example_runs_with_every_memory(
    seed_env: FakeLLMServer, memory_server: str, tmp_path: Path, kind: str
) -> None:
    code = SEED.replace("memory = NullMemory()", "memory = MEMORY")
    assert code != SEED
    with MEMORIES[kind](memory_server, tmp_path) as memory:
        scope = run_seed(code, MEMORY=memory)
    results = scope["results"]
    prompts = [c.prompt() for c in seed_env.calls("/v1/messages") if "<memories>" in c.prompt()]
    assert len(prompts) == len(results)  # type: ignore[arg-type]
    for result in results:  # type: ignore[attr-defined]
        assert any(f"<memories>\n{result.context}\n</memories>" in p for p in prompts)
    recalled = sum(bool(r.context) for r in results)  # type: ignore[attr-defined]
    if kind == "null":
        assert recalled == 0
    else:
        assert recalled > len(results) // 2  # type: ignore[arg-type]
