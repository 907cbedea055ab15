"""The memory records of the seed: its examples, construction, create(), from_dict's forms."""

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from himga import validation
from himga.errors import SchemaError
from himga.records import (
    ActionEntry,
    EpisodeTrace,
    ErrorEntry,
    InvalidRecordError,
    TaskContext,
)


def test_seed_example_episode_trace() -> None:
    # The seed's first example, verbatim but for the import.
    from himga.records import ActionEntry, EpisodeTrace, ErrorEntry

    trace = EpisodeTrace.create(
        task_id="task-42", agent="code-agent", goal="实现 API 限流中间件", phase="ACT"
    )

    trace.action_log.append(
        ActionEntry(
            tool="write_file",
            input="middleware/rate_limit.py",
            output="created",
            timestamp=12,
        )
    )

    trace.errors_encountered.append(
        ErrorEntry(
            error_type="test_failure",
            message="429 assertion mismatch",
            resolution="update expected response schema",
        )
    )

    errors = trace.validate()
    if errors:
        raise ValueError("; ".join(errors))

    payload = trace.to_dict()  # 可直接写入 JSON

    # What the example relies on: the payload is the wire form, valid, and JSON as it is.
    assert validation.validate(payload, "EpisodeTrace") == []
    assert json.loads(json.dumps(payload)) == payload
    context = {"goal": "实现 API 限流中间件", "phase": "ACT", "files_involved": []}
    assert payload["context"] == context
    assert payload["action_log"] == [
        {"t": 12, "action": "write_file", "target": "middleware/rate_limit.py", "result": "created"}
    ]
    assert payload["errors_encountered"] == [
        {
            "type": "test_failure",
            "message": "429 assertion mismatch",
            "resolution": "update expected response schema",
        }
    ]


def test_seed_example_task_context(capsys: pytest.CaptureFixture[str]) -> None:
    # The seed's second example, verbatim but for the import.
    from himga.records import TaskContext

    ctx = TaskContext(
        goal="修复鉴权回归",
        phase="VERIFY",
        files=["auth/service.py", "tests/test_auth.py"],
        constraints=["不得修改对外 API", "需保持向后兼容"],
    )

    if ctx.validate():
        print("context invalid")

    ctx_json = ctx.to_dict()
    restored = TaskContext.from_dict(ctx_json)

    assert capsys.readouterr().out == ""
    assert ctx_json == {
        "goal": "修复鉴权回归",
        "phase": "VERIFY",
        "files_involved": ["auth/service.py", "tests/test_auth.py"],
        "constraints": ["不得修改对外 API", "需保持向后兼容"],
    }
    assert restored == ctx
    assert restored.files == ["auth/service.py", "tests/test_auth.py"]


def _valid_trace() -> EpisodeTrace:
    return EpisodeTrace(
        id="ep-1",
        task_id="task-1",
        timestamp=datetime(2024, 5, 8, 13, 56, tzinfo=UTC),
        duration_seconds=3,
        agent="coder",
        phase="ACT",
        goal="fix it",
    )


# Each seed failure condition, set on an otherwise valid trace, and the seed's message for it.
SEED_FAILURES: list[tuple[str, Any, str]] = [
    ("id", "", "EpisodeTrace.id is required"),
    ("task_id", "", "EpisodeTrace.task_id is required"),
    ("agent", "", "EpisodeTrace.agent is required"),
    ("goal", "", "EpisodeTrace.goal is required"),
    ("phase", "PLAN", "EpisodeTrace.phase must be one of: REASON, ACT, REFLECT, VERIFY"),
    ("outcome", "done", "EpisodeTrace.outcome must be one of: success, failure, partial"),
    ("duration_seconds", -1, "EpisodeTrace.duration_seconds must be non-negative"),
    ("tokens_used", -5, "EpisodeTrace.tokens_used must be non-negative"),
    ("access_count", -1, "EpisodeTrace.access_count must be non-negative"),
    ("importance", 1.5, "EpisodeTrace.importance must be between 0.0 and 1.0"),
    ("importance", -0.1, "EpisodeTrace.importance must be between 0.0 and 1.0"),
]


@pytest.mark.parametrize(("field", "value", "message"), SEED_FAILURES)
def test_validate_words_each_failure_as_the_seed(field: str, value: Any, message: str) -> None:
    trace = _valid_trace()
    assert trace.validate() == []
    setattr(trace, field, value)
    assert trace.validate() == [message]
    assert not validation.is_valid(trace.to_dict(), "EpisodeTrace")


def test_validate_reports_every_problem_at_once_nested_ones_by_place() -> None:
    trace = EpisodeTrace(timestamp=datetime(2024, 1, 1, tzinfo=UTC), phase="PLAN", importance=2)
    trace.action_log.append(ActionEntry(tool="read_file"))
    trace.action_log.append(ActionEntry(tool="", timestamp=-3))
    trace.errors_encountered.append(ErrorEntry(error_type="x", message="m"))
    trace.errors_encountered.append(ErrorEntry(error_type="", message=""))
    assert trace.validate() == [
        "EpisodeTrace.id is required",
        "EpisodeTrace.task_id is required",
        "EpisodeTrace.agent is required",
        "EpisodeTrace.goal is required",
        "EpisodeTrace.phase must be one of: REASON, ACT, REFLECT, VERIFY",
        "action_log[1]: ActionEntry.timestamp must be non-negative",
        "action_log[1]: ActionEntry.tool is required",
        "errors_encountered[1]: ErrorEntry.error_type is required",
        "errors_encountered[1]: ErrorEntry.message is required",
        "EpisodeTrace.importance must be between 0.0 and 1.0",
    ]


def test_check_returns_a_valid_record_and_raises_every_problem_of_an_invalid_one() -> None:
    trace = _valid_trace()
    assert trace.check() is trace
    trace.id, trace.importance = "", 2.0
    with pytest.raises(InvalidRecordError) as raised:
        trace.check().to_dict()
    assert isinstance(raised.value, ValueError)
    assert (
        raised.value.problems
        == trace.validate()
        == [
            "EpisodeTrace.id is required",
            "EpisodeTrace.importance must be between 0.0 and 1.0",
        ]
    )
    assert str(raised.value) == "; ".join(raised.value.problems)


def test_validate_never_raises_on_values_of_the_wrong_kind() -> None:
    trace = _valid_trace()
    trace.files_read = ["a.py", {"not", "json"}]  # type: ignore[list-item]
    trace.tokens_used = "many"  # type: ignore[assignment]
    trace.action_log.append("read a file")  # type: ignore[arg-type]
    trace.timestamp = "yesterday"  # type: ignore[assignment]
    problems = trace.validate()
    assert "EpisodeTrace.files_read[1] must be JSON data (a string, ...)" in problems
    assert any(p.startswith("EpisodeTrace.tokens_used must be of type integer") for p in problems)
    assert any(p.startswith("EpisodeTrace.action_log[0] must be of type object") for p in problems)
    assert any(p.startswith("EpisodeTrace.timestamp must be a valid date-time") for p in problems)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (ActionEntry(tool=""), "ActionEntry.tool is required"),
        (ActionEntry(tool="t", timestamp=-1), "ActionEntry.timestamp must be non-negative"),
        (ErrorEntry(error_type="", message="m"), "ErrorEntry.error_type is required"),
        (ErrorEntry(error_type="e", message=""), "ErrorEntry.message is required"),
        (TaskContext(goal=""), "TaskContext.goal is required"),
        (
            TaskContext(goal="g", phase="act"),
            "TaskContext.phase must be one of: REASON, ACT, REFLECT, VERIFY",
        ),
    ],
)
def test_entries_and_contexts_validate_as_the_seed(record: Any, message: str) -> None:
    assert record.validate() == [message]


def test_an_empty_phase_is_allowed_a_wrong_one_is_not() -> None:
    assert TaskContext(goal="g", phase="").validate() == []
    trace = _valid_trace()
    trace.phase = ""
    assert trace.validate() == []
    assert trace.to_dict()["context"]["phase"] == ""


def test_lists_are_mutable_fields_assignable_and_to_dict_sees_both() -> None:
    trace = _valid_trace()
    trace.files_read.append("a.py")
    trace.files_modified += ["b.py", "a.py"]
    trace.goal = "another goal"
    trace.phase = "VERIFY"
    trace.importance = 0.9
    trace.last_accessed = datetime(2024, 5, 9, 10, 0, tzinfo=timezone(timedelta(hours=2)))
    document = trace.to_dict()
    assert document["context"] == {
        "goal": "another goal",
        "phase": "VERIFY",
        "files_involved": ["a.py", "b.py"],
    }
    assert document["importance"] == 0.9
    assert document["last_accessed"] == "2024-05-09T08:00:00Z"
    assert trace.validate() == []


def test_new_records_do_not_share_their_lists() -> None:
    first, second = _valid_trace(), _valid_trace()
    first.action_log.append(ActionEntry(tool="t"))
    first.files_read.append("x")
    assert second.action_log == [] and second.files_read == []


def test_files_involved_keeps_first_seen_order_without_repeats() -> None:
    trace = _valid_trace()
    trace.files_read = ["z.py", "a.py", "z.py", "m.py"]
    trace.files_modified = ["m.py", "b.py", "a.py"]
    assert trace.files_involved == ["z.py", "a.py", "m.py", "b.py"]
    assert trace.to_dict()["context"]["files_involved"] == ["z.py", "a.py", "m.py", "b.py"]


def test_last_accessed_is_absent_until_set_and_git_commit_null() -> None:
    document = _valid_trace().to_dict()
    assert "last_accessed" not in document
    assert document["git_commit"] is None
    assert _valid_trace().last_accessed is None


def test_create_makes_a_dated_id_a_utc_timestamp_and_the_defaults() -> None:
    before = datetime.now(UTC)
    trace = EpisodeTrace.create(task_id="task-1", agent="coder", goal="g")
    after = datetime.now(UTC)
    match = re.fullmatch(r"ep-(\d{4}-\d{2}-\d{2})-([0-9a-f]{8})", trace.id)
    assert match is not None
    assert match.group(1) in {before.strftime("%Y-%m-%d"), after.strftime("%Y-%m-%d")}
    assert trace.timestamp.tzinfo is not None and trace.timestamp.utcoffset() == timedelta(0)
    assert before <= trace.timestamp <= after
    assert match.group(1) == trace.timestamp.strftime("%Y-%m-%d")
    assert (trace.phase, trace.outcome, trace.importance) == ("ACT", "success", 0.5)
    assert (trace.duration_seconds, trace.tokens_used, trace.access_count) == (0, 0, 0)
    assert trace.action_log == [] and trace.errors_encountered == []
    assert trace.validate() == []
    assert trace.to_dict()["timestamp"].endswith("Z")


def test_create_takes_a_phase_and_an_id_prefix_and_makes_distinct_ids() -> None:
    trace = EpisodeTrace.create("t", "a", "g", phase="REFLECT", id_prefix="run")
    assert trace.phase == "REFLECT"
    assert re.fullmatch(r"run-\d{4}-\d{2}-\d{2}-[0-9a-f]{8}", trace.id)
    assert len({EpisodeTrace.create("t", "a", "g").id for _ in range(50)}) == 50


def test_valid_phases_and_outcomes_are_the_schema_enums() -> None:
    assert EpisodeTrace.VALID_PHASES == ["REASON", "ACT", "REFLECT", "VERIFY"]
    assert TaskContext.VALID_PHASES == EpisodeTrace.VALID_PHASES
    assert EpisodeTrace.VALID_OUTCOMES == ["success", "failure", "partial"]
    phase_schema = validation.schema_for("Phase")
    assert [*EpisodeTrace.VALID_PHASES, ""] == phase_schema["enum"]


def test_construction_refuses_an_unknown_field() -> None:
    with pytest.raises(TypeError, match="no field colour"):
        ActionEntry(tool="t", colour="red")


# -- from_dict: the canonical form and every legacy form -------------------------------------

CANONICAL: dict[str, Any] = {
    "id": "ep-1",
    "task_id": "task-1",
    "timestamp": "2024-05-08T13:56:00Z",
    "duration_seconds": 7,
    "agent": "coder",
    "context": {"goal": "fix it", "phase": "REFLECT", "files_involved": ["a.py"]},
    "action_log": [{"t": 1, "action": "read_file", "target": "a.py", "result": "ok"}],
    "outcome": "partial",
    "errors_encountered": [{"type": "boom", "message": "it broke", "resolution": ""}],
    "artifacts_produced": ["a.py"],
    "git_commit": "abc123",
    "tokens_used": 10,
    "files_read": ["a.py"],
    "files_modified": [],
    "importance": 0.25,
    "access_count": 2,
    "last_accessed": "2024-05-09T00:00:00Z",
}


def _legacy(**changes: Any) -> dict[str, Any]:
    document = json.loads(json.dumps(CANONICAL))
    for key, value in changes.items():
        if value is None:
            document.pop(key)
        else:
            document[key] = value
    return document


LEGACY_FORMS = {
    "phase and goal at the top level": _legacy(
        context={"files_involved": ["a.py"]}, phase="REFLECT", goal="fix it"
    ),
    "no context at all": _legacy(context=None, phase="REFLECT", goal="fix it"),
    "context wins over the top level": _legacy(phase="ACT", goal="other"),
    "long ActionEntry and ErrorEntry keys": _legacy(
        action_log=[{"timestamp": 1, "tool": "read_file", "input": "a.py", "output": "ok"}],
        errors_encountered=[{"error_type": "boom", "message": "it broke", "resolution": ""}],
    ),
    "timestamps as datetimes": _legacy(
        timestamp=datetime(2024, 5, 8, 13, 56, tzinfo=UTC),
        last_accessed=datetime(2024, 5, 9, tzinfo=UTC),
    ),
    "timestamps with +00:00": _legacy(
        timestamp="2024-05-08T13:56:00+00:00", last_accessed="2024-05-09T00:00:00+00:00"
    ),
    "timestamps with other offsets": _legacy(
        timestamp="2024-05-08T15:56:00+02:00",
        last_accessed=datetime(2024, 5, 8, 19, 0, tzinfo=timezone(timedelta(hours=-5))),
    ),
    "naive timestamps, taken as UTC": _legacy(
        timestamp="2024-05-08T13:56:00", last_accessed=datetime(2024, 5, 9)
    ),
    "files only in context.files_involved": _legacy(files_read=None),
}


@pytest.mark.parametrize("document", LEGACY_FORMS.values(), ids=LEGACY_FORMS.keys())
def test_from_dict_reads_each_legacy_form_as_the_canonical_one(document: dict[str, Any]) -> None:
    assert EpisodeTrace.from_dict(document).to_dict() == CANONICAL


def test_from_dict_reads_the_canonical_form_back_unchanged() -> None:
    trace = EpisodeTrace.from_dict(CANONICAL)
    assert trace.to_dict() == CANONICAL
    assert (trace.phase, trace.goal) == ("REFLECT", "fix it")
    assert trace.timestamp == datetime(2024, 5, 8, 13, 56, tzinfo=UTC)
    assert isinstance(trace.action_log[0], ActionEntry) and trace.action_log[0].tool == "read_file"
    assert isinstance(trace.errors_encountered[0], ErrorEntry)


def test_from_dict_without_a_timestamp_means_now_in_utc() -> None:
    before = datetime.now(UTC)
    trace = EpisodeTrace.from_dict(_legacy(timestamp=None))
    assert before <= trace.timestamp <= datetime.now(UTC)
    assert trace.timestamp.utcoffset() == timedelta(0)


def test_from_dict_keeps_broken_values_for_validate_as_the_seed() -> None:
    trace = EpisodeTrace.from_dict({"importance": 3, "context": {"phase": "PLAN"}})
    assert "EpisodeTrace.importance must be between 0.0 and 1.0" in trace.validate()
    assert "EpisodeTrace.id is required" in trace.validate()
    assert ActionEntry.from_dict({}).validate() == ["ActionEntry.tool is required"]


def test_from_dict_takes_both_names_of_a_field_when_they_agree() -> None:
    entry = ActionEntry.from_dict({"action": "read_file", "tool": "read_file"})
    assert entry.to_dict()["action"] == "read_file"


@pytest.mark.parametrize("key", ["files", "files_involved"])
def test_task_context_reads_files_or_files_involved(key: str) -> None:
    context = TaskContext.from_dict({"goal": "g", "phase": "ACT", key: ["a.py"]})
    assert context.files == ["a.py"]
    assert context.to_dict() == {
        "goal": "g",
        "phase": "ACT",
        "files_involved": ["a.py"],
        "constraints": [],
    }


GARBAGE: dict[str, tuple[type[Any], Any, str]] = {
    "a number for the record": (EpisodeTrace, 42, r"^\$: must be an object"),
    "a list for the record": (TaskContext, ["goal"], r"^\$: must be an object"),
    "a number where an object belongs": (EpisodeTrace, _legacy(context=5), r"^\$\.context: "),
    "null where an object belongs": (EpisodeTrace, {**CANONICAL, "context": None}, r"^\$\.context"),
    "both names of a field, disagreeing": (
        ActionEntry,
        {"action": "read_file", "tool": "write_file"},
        r"^\$\.action: and 'tool' \(its Python name\) disagree",
    ),
    "a timestamp that is no date": (EpisodeTrace, _legacy(timestamp="soon"), r"^\$\.timestamp: "),
    "a date that does not exist": (
        EpisodeTrace,
        _legacy(timestamp="2023-02-29T00:00:00Z"),
        r"^\$\.timestamp: not a valid date-time",
    ),
    "a number for a timestamp": (EpisodeTrace, _legacy(timestamp=1715176560), r"^\$\.timestamp"),
    "a list where a string belongs": (EpisodeTrace, _legacy(agent=["a"]), r"^\$\.agent: "),
    "a string where a list belongs": (EpisodeTrace, _legacy(files_read="a.py"), r"^\$\.files_read"),
    "a number in an action log": (EpisodeTrace, _legacy(action_log=[7]), r"\$\.action_log\[0\]: "),
    "a wrong type inside an entry": (
        EpisodeTrace,
        _legacy(action_log=[{"action": "x", "t": "soon"}]),
        r"^\$\.action_log\[0\]\.t: ",
    ),
    "a last_accessed that is no date": (
        EpisodeTrace,
        _legacy(last_accessed="later"),
        r"^\$\.last_accessed: ",
    ),
    "an unknown key": (TaskContext, {"goal": "g", "colour": "red"}, r"^\$\.colour: "),
    "a set, which JSON cannot hold": (TaskContext, {"goal": "g", "files": {"a"}}, r"\$\.files"),
    "a string for an entry's number": (ActionEntry, {"action": "x", "t": "1"}, r"^\$\.t: "),
    "a number for an error's message": (ErrorEntry, {"type": "x", "message": 1}, r"\$\.message"),
}


@pytest.mark.parametrize(("cls", "data", "where"), GARBAGE.values(), ids=GARBAGE.keys())
def test_from_dict_refuses_garbage_with_one_value_error_naming_the_field(
    cls: type[Any], data: Any, where: str
) -> None:
    with pytest.raises(ValueError) as raised:
        cls.from_dict(data)
    assert isinstance(raised.value, SchemaError)
    assert re.search(where, str(raised.value)), str(raised.value)
