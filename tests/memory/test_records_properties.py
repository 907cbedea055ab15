"""Properties of the records over random data (hypothesis).

validate() agrees with the JSON Schema on to_dict()'s output for random records, valid ones
and ones broken in a few fields; valid records survive to_dict, JSON and from_dict unchanged.
"""

import copy
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from himga import validation
from himga.records import ActionEntry, EpisodeTrace, ErrorEntry, TaskContext

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- valid values, field by field ---------------------------------------------------------------

WORDS = st.text(min_size=1, max_size=8)
TEXTS = st.text(max_size=8)
PATHS = st.lists(TEXTS, max_size=4)
NATURALS = st.integers(0, 2**53 - 1)
ZONES = st.sampled_from([None, UTC, timezone(timedelta(hours=5, minutes=30))])
# Years 2 to 9998, so that every instant also has a UTC form (see test_records_time.py).
DATETIMES = st.datetimes(datetime(2, 1, 1), datetime(9998, 12, 31), timezones=ZONES) | st.just(
    "2024-05-08T13:56:00Z"
)
PHASES = st.sampled_from([*EpisodeTrace.VALID_PHASES, ""])

VALID_ACTION = {"tool": WORDS, "input": TEXTS, "output": TEXTS, "timestamp": NATURALS}
VALID_ERROR = {"error_type": WORDS, "message": WORDS, "resolution": TEXTS}
VALID_CONTEXT = {"goal": WORDS, "phase": PHASES, "files": PATHS, "constraints": PATHS}
VALID_TRACE = {
    "id": WORDS,
    "task_id": WORDS,
    "timestamp": DATETIMES,
    "duration_seconds": NATURALS,
    "agent": WORDS,
    "goal": WORDS,
    "phase": PHASES,
    "outcome": st.sampled_from(EpisodeTrace.VALID_OUTCOMES),
    "artifacts_produced": PATHS,
    "git_commit": st.none() | WORDS,
    "tokens_used": NATURALS,
    "files_read": PATHS,
    "files_modified": PATHS,
    "importance": st.floats(0.0, 1.0) | st.sampled_from([0, 1]),
    "access_count": NATURALS,
    "last_accessed": st.none() | DATETIMES,
}

# -- what a broken field gets: near misses of every rule, and any JSON value at all ------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=4,
)
# Values just past some rule of some field (or just inside it), tried on every field.
NEAR_MISS_VALUES: list[Any] = [
    *("", -1, -0.5, 0.5, 1.5, 2.0, 3, True, None, {}, ["a", 1], "act", "PLAN", "done"),
    *("not a date", "2024-05-08T13:56:00Z", "2024-05-08T13:56:00+02:00", "2024-05-08T13:56:00"),
    "2024-02-30T00:00:00Z",
]
# Copied per draw: `{}` and `["a", 1]` are mutable, and a test that edits what it drew must not
# change what later examples draw.
WILD = st.sampled_from(NEAR_MISS_VALUES).map(copy.deepcopy) | JSON_VALUES


@st.composite
def record_with(
    draw: st.DrawFn, cls: type[Any], valid: dict[str, st.SearchStrategy[Any]], broken: set[str]
) -> Any:
    """A record of `cls` whose fields are valid but for those `broken`, which get anything."""
    return cls(**{name: draw(WILD if name in broken else s) for name, s in valid.items()})


@st.composite
def partly_broken(
    draw: st.DrawFn, cls: type[Any], valid: dict[str, st.SearchStrategy[Any]], least: int = 0
) -> Any:
    """A record of `cls` with `least` to 3 of its fields broken."""
    broken = draw(st.sets(st.sampled_from(sorted(valid)), min_size=least, max_size=3))
    return draw(record_with(cls, valid, broken))


ACTIONS = partly_broken(ActionEntry, VALID_ACTION)
ERRORS = partly_broken(ErrorEntry, VALID_ERROR)
CONTEXTS = partly_broken(TaskContext, VALID_CONTEXT)
ENTRY_LISTS = {
    "action_log": (ActionEntry, VALID_ACTION),
    "errors_encountered": (ErrorEntry, VALID_ERROR),
}


@st.composite
def traces(draw: st.DrawFn) -> EpisodeTrace:
    """An episode with a few broken spots (its fields, or one entry of a list), often none or
    one, so that a single broken rule decides the verdict; entries are appended as users do."""
    spots = draw(st.sets(st.sampled_from([*sorted(VALID_TRACE), *ENTRY_LISTS]), max_size=3))
    event(f"EpisodeTrace: {len(spots)} spots broken")
    trace = draw(record_with(EpisodeTrace, VALID_TRACE, spots - set(ENTRY_LISTS)))
    for name, (cls, valid) in ENTRY_LISTS.items():
        entries = draw(st.lists(record_with(cls, valid, set()), max_size=3))
        if name in spots:
            bad = draw(partly_broken(cls, valid, least=1) | WILD)
            entries.insert(draw(st.integers(0, len(entries))), bad)
        getattr(trace, name).extend(entries)
    return trace


def _agrees(record: Any, type_name: str) -> None:
    """validate() passes the record exactly when the schema passes its to_dict()."""
    problems = record.validate()
    assert all(isinstance(p, str) and p for p in problems)
    document = record.to_dict()
    verdict = problems == []
    assert verdict == validation.is_valid(document, type_name), problems
    assert verdict == (validation.validate(document, type_name) == []), problems
    if verdict:  # what validate() passes is JSON as it stands
        assert json.loads(json.dumps(document)) == document


@SETTINGS
@given(traces())
def test_validate_agrees_with_the_schema_on_to_dict(trace: EpisodeTrace) -> None:
    event(f"EpisodeTrace: {'valid' if trace.validate() == [] else 'invalid'}")
    _agrees(trace, "EpisodeTrace")


@SETTINGS
@given(st.one_of(CONTEXTS, ACTIONS, ERRORS))
def test_validate_agrees_with_the_schema_for_the_small_records(record: Any) -> None:
    event(f"{type(record).__name__}: {'valid' if record.validate() == [] else 'invalid'}")
    _agrees(record, type(record).__name__)


# One valid record of each class, as keyword arguments, for breaking one field at a time.
EXAMPLES: dict[type[Any], dict[str, Any]] = {
    ActionEntry: {"tool": "read_file", "input": "a.py", "output": "ok", "timestamp": 3},
    ErrorEntry: {"error_type": "test_failure", "message": "boom", "resolution": ""},
    TaskContext: {"goal": "g", "phase": "ACT", "files": ["a.py"], "constraints": []},
    EpisodeTrace: {
        "id": "ep-1",
        "task_id": "task-1",
        "timestamp": datetime(2024, 5, 8, 13, 56, tzinfo=UTC),
        "duration_seconds": 5,
        "agent": "coder",
        "goal": "g",
        "phase": "VERIFY",
        "outcome": "failure",
        "artifacts_produced": ["b.py"],
        "git_commit": "abc",
        "tokens_used": 10,
        "files_read": ["a.py"],
        "files_modified": ["b.py"],
        "importance": 0.5,
        "access_count": 1,
        "last_accessed": datetime(2024, 5, 9, tzinfo=UTC),
        "action_log": [ActionEntry(tool="read_file")],
        "errors_encountered": [],
    },
}
# Each field of each record, set to each near miss.
SINGLE_BREAKS = [
    pytest.param(cls, name, value, id=f"{cls.__name__}.{name}={value!r}")
    for cls, example in EXAMPLES.items()
    for name in example
    for value in NEAR_MISS_VALUES
]


def test_the_examples_and_strategies_cover_every_field() -> None:
    for cls, valid in [(ActionEntry, VALID_ACTION), (TaskContext, VALID_CONTEXT)]:
        assert set(EXAMPLES[cls]) == set(valid) == set(cls.model_fields) - {"field_schema"}
    flat = set(EpisodeTrace.model_fields) - {"field_schema", "context"} | {"phase", "goal"}
    assert set(EXAMPLES[EpisodeTrace]) == set(VALID_TRACE) | set(ENTRY_LISTS) == flat
    assert (
        set(EXAMPLES[ErrorEntry])
        == set(VALID_ERROR)
        == set(ErrorEntry.model_fields) - {"field_schema"}
    )


@pytest.mark.parametrize(("cls", "name", "value"), SINGLE_BREAKS)
def test_validate_agrees_with_the_schema_on_each_near_miss_of_each_field(
    cls: type[Any], name: str, value: Any
) -> None:
    assert cls(**copy.deepcopy(EXAMPLES[cls])).validate() == []
    record = cls(**{**copy.deepcopy(EXAMPLES[cls]), name: value})
    _agrees(record, cls.__name__)
    if cls in (ActionEntry, ErrorEntry):  # and the same entry inside an episode
        trace = EpisodeTrace(**copy.deepcopy(EXAMPLES[EpisodeTrace]))
        getattr(trace, "action_log" if cls is ActionEntry else "errors_encountered").append(record)
        _agrees(trace, "EpisodeTrace")


# -- valid records round-trip -------------------------------------------------------------------


def _valid(cls: type[Any], fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries(fields).map(lambda kwargs: cls(**kwargs))


@st.composite
def valid_traces(draw: st.DrawFn) -> EpisodeTrace:
    trace: EpisodeTrace = draw(_valid(EpisodeTrace, VALID_TRACE))
    trace.action_log.extend(draw(st.lists(_valid(ActionEntry, VALID_ACTION), max_size=3)))
    trace.errors_encountered.extend(draw(st.lists(_valid(ErrorEntry, VALID_ERROR), max_size=3)))
    return trace


VALID_RECORDS = st.one_of(
    valid_traces(),
    _valid(TaskContext, VALID_CONTEXT),
    _valid(ActionEntry, VALID_ACTION),
    _valid(ErrorEntry, VALID_ERROR),
)


@SETTINGS
@given(VALID_RECORDS)
def test_a_valid_record_round_trips_through_to_dict_json_and_from_dict(record: Any) -> None:
    assert record.validate() == []
    document = record.to_dict()
    assert type(record).from_dict(document).to_dict() == document
    assert type(record).from_dict(json.loads(json.dumps(document))).to_dict() == document


PLAIN_ENTRIES = [{}, {"action": "x"}, {"action": "x", "colour": 1}, {"tool": "x"}, {"t": -1}]
PLAIN_ENTRIES += [{"type": "t", "message": "m"}, {"type": "t"}, {"error_type": "t", "message": "m"}]


@pytest.mark.parametrize("entry", PLAIN_ENTRIES, ids=repr)
@pytest.mark.parametrize("where", ["action_log", "errors_encountered"])
def test_validate_agrees_with_the_schema_on_plain_dicts_appended_as_entries(
    where: str, entry: dict[str, Any]
) -> None:
    trace = EpisodeTrace(**copy.deepcopy(EXAMPLES[EpisodeTrace]))
    getattr(trace, where).append(entry)
    _agrees(trace, "EpisodeTrace")


RECORD_CLASSES = [EpisodeTrace, TaskContext, ActionEntry, ErrorEntry]


@st.composite
def mangled_documents(draw: st.DrawFn) -> tuple[type[Any], Any]:
    """A valid record's wire form with a few values (at any depth) replaced by anything."""
    cls = draw(st.sampled_from(RECORD_CLASSES))
    document: Any = cls(**copy.deepcopy(EXAMPLES[cls])).to_dict()
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.integers(0, 5)) == 0:
            document[draw(st.text(max_size=4))] = draw(WILD)  # an unknown key, maybe
            continue
        node = document
        while True:
            key = draw(st.sampled_from(list(node) if isinstance(node, dict) else range(len(node))))
            child = node[key]
            if isinstance(child, dict | list) and child and draw(st.booleans()):
                node = child
                continue
            node[key] = draw(WILD)
            break
    return cls, document


@SETTINGS
@given(mangled_documents())
def test_from_dict_either_reads_a_record_or_raises_one_value_error(case: Any) -> None:
    cls, document = case
    try:
        record = cls.from_dict(document)
    except ValueError as error:
        event("refused")
        assert str(error).startswith("$")  # names the place, as a JSON path
        return
    event("read")
    # What it read has the record's shape; its value rules are left to validate().
    assert isinstance(record.validate(), list)
    assert json.loads(json.dumps(record.to_dict())) == record.to_dict()
