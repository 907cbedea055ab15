"""The LongMemEval loader, on a small file written in LongMemEval's published layout."""

import json
from pathlib import Path

import pytest

from himga.data import DatasetError, Sample, load_dataset
from himga.data.longmemeval import load_longmemeval

FIXTURE = Path(__file__).parents[1] / "fixtures" / "longmemeval" / "longmemeval-mini.json"


@pytest.fixture(scope="module")
def samples() -> list[Sample]:
    return load_longmemeval(FIXTURE)


def test_each_question_is_a_sample_with_its_own_history(samples: list[Sample]) -> None:
    assert [s.sample_id for s in samples] == ["mini-q1", "mini-q2_abs"]
    first = samples[0]
    assert [s.session_id for s in first.sessions] == ["sharegpt_x1", "answer_a1"]
    assert first.sessions[1].date_str == "2023/05/22 (Mon) 18:05"
    messages = first.sessions[1].messages
    assert [(m.role, m.turn_id) for m in messages] == [
        ("user", "answer_a1_1"),
        ("assistant", "answer_a1_2"),
        ("user", "answer_a1_3"),
    ]
    assert messages[0].content == "I just adopted a greyhound from the shelter!"


def test_the_question_keeps_its_type_date_and_evidence_turns(samples: list[Sample]) -> None:
    [qa] = samples[0].qa_pairs
    assert qa.question == "What breed is the dog I adopted?"
    assert qa.answer == "A greyhound"
    assert (qa.category, qa.category_name) == (0, "single-session-user")
    assert qa.question_date == "2023/06/01 (Thu) 10:00"
    assert qa.evidence == ["answer_a1_1"]


def test_sessions_are_put_in_time_order_and_numeric_answers_read_as_text(
    samples: list[Sample],
) -> None:
    second = samples[1]
    # the file lists answer_b2 (10 June) before answer_b1 (4 June)
    assert [s.session_id for s in second.sessions] == ["answer_b1", "answer_b2"]
    [qa] = second.qa_pairs
    assert qa.answer == "6"
    assert qa.evidence == ["answer_b2_1", "answer_b1_1"]


def test_load_dataset_knows_longmemeval(monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(load_dataset("longmemeval", FIXTURE)) == 2
    monkeypatch.setenv("HIMGA_LONGMEMEVAL_PATH", str(FIXTURE))
    assert len(load_dataset("longmemeval")) == 2


def _broken(tmp_path: Path, change: str) -> Path:
    data = json.loads(FIXTURE.read_text())
    first = data[0]
    if change == "no question":
        del first["question"]
    elif change == "dates short":
        first["haystack_dates"] = first["haystack_dates"][:1]
    elif change == "turn without role":
        del first["haystack_sessions"][1][2]["role"]
    elif change == "answer null":
        first["answer"] = None
    elif change == "has_answer text":
        first["haystack_sessions"][0][0]["has_answer"] = "yes"
    elif change == "session not a list":
        first["haystack_sessions"][0] = "turns"
    elif change == "question id twice":
        data[1]["question_id"] = first["question_id"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("no question", r"\[0\]\.question: must be a non-empty string"),
        ("dates short", "must be as long as each other, got 2, 1 and 2"),
        ("turn without role", r"\[0\]\.haystack_sessions\[1\]\[2\]\.role: must be a non-empty"),
        ("answer null", r"\[0\]\.answer: must be a string or a number, got null"),
        ("has_answer text", r"haystack_sessions\[0\]\[0\]\.has_answer: must be a boolean"),
        ("session not a list", r"haystack_sessions\[0\]: must be an array of turns"),
        (
            "question id twice",
            r"\[1\]\.question_id: 'mini-q1' is the question_id of \[0\] too; each question "
            "needs its own",
        ),
    ],
)
def test_bad_files_name_the_field(tmp_path: Path, change: str, message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        load_longmemeval(_broken(tmp_path, change))


def test_a_file_that_is_not_an_array(tmp_path: Path) -> None:
    path = tmp_path / "object.json"
    path.write_text("{}")
    with pytest.raises(DatasetError, match="a JSON array of questions, got an object"):
        load_longmemeval(path)


def test_a_session_repeated_in_a_haystack_is_kept(tmp_path: Path) -> None:
    """A few longmemeval_s histories hold one session twice, under two dates: both are read."""
    data = json.loads(FIXTURE.read_text())
    first = data[0]
    for key in ("haystack_session_ids", "haystack_dates", "haystack_sessions"):
        first[key].append(first[key][0])
    first["haystack_dates"][-1] = "2023/05/30 (Tue) 09:00"
    path = tmp_path / "repeated.json"
    path.write_text(json.dumps(data))
    sessions = load_longmemeval(path)[0].sessions
    assert [s.session_id for s in sessions] == first["haystack_session_ids"]


def test_a_file_nested_too_deeply_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(
        DatasetError, match=f"^{path}: its arrays and objects are nested too deeply"
    ):
        load_longmemeval(path)
