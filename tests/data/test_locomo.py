"""The LoCoMo loader, on the small LoCoMo-shaped fixture the project ships."""

import json
from pathlib import Path

import pytest
from pydantic import MISSING

from himga.data import DatasetError, Sample, load_dataset
from himga.data.locomo import CATEGORY_NAMES, load_locomo, parse_evidence

FIXTURE = Path(__file__).parents[1] / "fixtures" / "locomo" / "locomo-mini.json"


@pytest.fixture(scope="module")
def samples() -> list[Sample]:
    return load_locomo(FIXTURE)


def test_samples_and_sessions_in_order(samples: list[Sample]) -> None:
    assert [s.sample_id for s in samples] == ["mini-1", "mini-2"]
    first = samples[0]
    # session_10 comes after session_2: sessions are ordered by number, not by name
    assert [s.session_id for s in first.sessions] == ["session_1", "session_2", "session_10"]
    assert first.sessions[0].date_str == "9:15 am on 3 March, 2023"
    assert [m.turn_id for m in first.sessions[0].messages] == ["D1:1", "D1:2", "D1:3", "D1:4"]
    assert first.sessions[0].messages[0].role == "Ada"


def test_a_session_without_date_has_none(samples: list[Sample]) -> None:
    session = samples[1].sessions[0]
    assert session.date_str is MISSING


def test_image_turns_carry_their_caption(samples: list[Sample]) -> None:
    with_text = samples[0].sessions[1].messages[0]
    assert with_text.content == (
        "[Image: a photo of a small white boat on a lake] "
        "We launched the sailboat on the lake yesterday."
    )
    caption_only = samples[0].sessions[2].messages[1]
    assert caption_only.content == "[Image: a photo of a blue ceramic mug]"


def test_questions_keep_answer_evidence_and_raw_category(samples: list[Sample]) -> None:
    qa = samples[0].qa_pairs
    assert (qa[0].question, qa[0].answer, qa[0].evidence, qa[0].category) == (
        "What breed of dog did Ada adopt?",
        "A greyhound",
        ["D1:1"],
        1,
    )
    assert qa[2].answer == "2023"  # a number in the file, a string here
    assert qa[2].evidence == ["D2:3", "D2:4"]  # "D2:3; D2:4" in the file
    assert qa[3].evidence == ["D10:1"]  # "D 10 : 01" is the same turn; junk entries dropped
    assert (qa[4].answer, qa[4].category) == ("Pepper", 5)  # adversarial_answer
    assert qa[5].evidence == []


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        (["D8:6; D9:17"], ["D8:6", "D9:17"]),
        (["D8:6", "D8:6"], ["D8:6"]),
        (["D30:05"], ["D30:5"]),
        (["D:11:26", "", None, 3, "nothing"], []),
        ("D1:1", []),  # not a list
        (None, []),
    ],
)
def test_parse_evidence_never_fails(entries: object, expected: list[str]) -> None:
    assert parse_evidence(entries) == expected


def test_load_dataset_by_name_and_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(load_dataset("locomo", FIXTURE)) == 2
    monkeypatch.setenv("HIMGA_LOCOMO_PATH", str(FIXTURE))
    assert [s.sample_id for s in load_dataset("locomo")] == ["mini-1", "mini-2"]


def test_unknown_dataset_lists_the_known_ones() -> None:
    with pytest.raises(DatasetError, match=r"unknown dataset 'longmem'.*known datasets: locomo"):
        load_dataset("longmem", FIXTURE)


def test_no_path_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HIMGA_LOCOMO_PATH", raising=False)
    with pytest.raises(DatasetError, match="HIMGA_LOCOMO_PATH"):
        load_dataset("locomo")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such LoCoMo file"):
        load_dataset("locomo", tmp_path / "absent.json")


TURN = {"speaker": "A", "dia_id": "D1:1", "text": "hi"}


def _sample(**changes: object) -> dict[str, object]:
    sample: dict[str, object] = {
        "sample_id": "x",
        "conversation": {"session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}]},
        "qa": [{"question": "q?", "answer": "a", "evidence": ["D1:1"], "category": 1}],
    }
    sample.update(changes)
    return sample


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        (json.dumps({"sample_id": "x"}), "a JSON array of samples, got an object"),
        (json.dumps([_sample(sample_id="")]), r"\[0\]\.sample_id: must be a non-empty string"),
        (json.dumps([_sample(conversation=[])]), r"\[0\]\.conversation: must be an object"),
        (
            json.dumps([_sample(conversation={"session_1": [{"dia_id": "D1:1", "text": "x"}]})]),
            r"\[0\]\.conversation\.session_1\[0\]\.speaker: must be a non-empty string",
        ),
        (
            json.dumps([_sample(conversation={"session_1": {"speaker": "A"}})]),
            r"session_1: must be an array of turns",
        ),
        (
            json.dumps([_sample(qa=[{"question": "q?", "answer": "a", "category": "1"}])]),
            r"\[0\]\.qa\[0\]\.category: must be an integer, got a string",
        ),
        (json.dumps([_sample(qa=[{"answer": "a", "category": 1}])]), r"qa\[0\]\.question"),
        (
            json.dumps([_sample(), _sample(sample_id="y"), _sample()]),
            r": \[2\]\.sample_id: 'x' is the sample_id of \[0\] too; each sample needs its own",
        ),
        (
            json.dumps([_sample(conversation={"session_1": [TURN, {**TURN, "text": "again"}]})]),
            r": \[0\]\.conversation\.session_1\[1\]\.dia_id: 'D1:1' is the dia_id of "
            r"session_1\[0\] too; a dia_id names one turn",
        ),
        (
            json.dumps([_sample(conversation={"session_1": [TURN], "session_2": [TURN, TURN]})]),
            r"session_2\[0\]\.dia_id: 'D1:1' is the dia_id of session_1\[0\] too",
        ),
        ("[" * 100_000 + "]" * 100_000, r": its arrays and objects are nested too deeply to read"),
    ],
)
def test_malformed_files_get_a_clear_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DatasetError, match=message):
        load_locomo(path)


def test_categories_keep_their_number_and_get_a_name(samples: list[Sample]) -> None:
    pairs = [qa for sample in samples for qa in sample.qa_pairs]
    names = {qa.category: qa.category_name for qa in pairs}
    assert names[5] == "adversarial"
    assert all(names[c] == CATEGORY_NAMES[c] for c in names)
    assert all(qa.question_date == "" for qa in pairs)
