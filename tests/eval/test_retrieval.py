"""recall@k: the arithmetic on a scripted memory, then the whole command on the shipped fixture."""

from pathlib import Path

import pytest

from himga.cli import main
from himga.data import Message, QAPair, Sample, Session, load_dataset
from himga.eval import evaluate_retrieval
from himga.memory.base import BaseMemory, Hit
from himga.memory.keyword import KeywordMemory

FIXTURE = Path(__file__).parents[1] / "fixtures" / "locomo" / "locomo-mini.json"


class Scripted(BaseMemory):
    """Answers each question with the turn ids a script gives, best first."""

    def __init__(self, script: dict[str, list[str]]) -> None:
        self.script = script
        self.ingested = 0

    def ingest(self, message: Message, session: Session) -> None:
        self.ingested += 1

    def retrieve(self, query: str) -> str:
        return ""

    def reset(self) -> None:
        pass

    def search(self, query: str, limit: int = 10) -> list[Hit]:
        ids = self.script.get(query, [])[:limit]
        return [Hit(i, "s", "r", "c", "", 1.0) for i in ids]


def _sample(*qa: QAPair) -> Sample:
    session = Session(
        session_id="s1",
        messages=[Message(role="A", content=f"turn {i}", turn_id=f"D1:{i}") for i in range(1, 6)],
    )
    return Sample(sample_id="x", sessions=[session], qa_pairs=list(qa))


def test_recall_counts_fraction_any_and_all() -> None:
    sample = _sample(
        QAPair("two found at 1 and 3", "a", ["D1:1", "D1:2"], 1),
        QAPair("none found", "a", ["D1:5"], 1),
        QAPair("adversarial", "a", ["D1:4"], 5),
        QAPair("no evidence", "a", [], 2),
    )
    memory = Scripted({"two found at 1 and 3": ["D1:1", "D1:3", "D1:2"], "adversarial": ["D1:4"]})
    report = evaluate_retrieval([sample], lambda ns, d: memory, ks=[1, 3])
    assert memory.ingested == 5
    at1, at3 = report.recall("overall", 1), report.recall("overall", 3)
    # question 1: half its evidence at k=1, all at k=3; question 2: nothing
    assert (at1.mean_fraction, at1.any_found, at1.all_found) == (0.25, 0.5, 0.0)
    assert (at3.mean_fraction, at3.any_found, at3.all_found) == (0.5, 0.5, 0.5)
    # category 5 is reported on its own and kept out of the overall figure
    assert report.questions("overall") == 2
    assert report.recall("category 5", 1).mean_fraction == 1.0
    assert report.skipped_without_evidence == 1
    assert report.ordered_groups() == ["overall", "category 1", "category 5"]


def test_k_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        evaluate_retrieval([], lambda ns, d: Scripted({}), ks=[0, 5])


def test_each_sample_gets_a_fresh_memory() -> None:
    made: list[str] = []

    def factory(namespace: str, data_dir: Path | None) -> BaseMemory:
        made.append(namespace)
        return KeywordMemory()

    samples = load_dataset("locomo", FIXTURE)
    report = evaluate_retrieval(samples, factory, ks=[50])
    assert made == ["eval-retrieval-mini-1", "eval-retrieval-mini-2"]
    # every evidence turn of the fixture shares a word with its question
    assert report.recall("overall", 50).all_found == 1.0


def test_command_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["eval-retrieval", "--dataset", str(FIXTURE), "--memory", "keyword", "--k", "1,5"])
    out, err = capsys.readouterr()
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("memory: keyword")
    assert any(line.split()[:2] == ["overall", "5"] for line in lines)
    assert any(line.startswith("category 5") for line in lines)
    assert "@1" in out and "@5" in out and "@10" not in out
    assert "eval-retrieval keyword" in err  # the progress bar, on stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--memory", "nope"], "unknown memory 'nope'"),
        (["--dataset", "/nonexistent/locomo.json"], "no such LoCoMo file"),
        (["--memory", "postgres"], "keeps its namespaces in a database, which only a server"),
    ],
)
def test_command_errors_are_clear(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    argv = ["eval-retrieval", "--dataset", str(FIXTURE), "--no-progress", *args]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_bad_k_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["eval-retrieval", "--dataset", str(FIXTURE), "--k", "5,zero"])
    assert "not a list of integers" in capsys.readouterr().err
