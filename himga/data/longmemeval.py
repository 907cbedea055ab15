"""The LongMemEval loader: its published JSON layout read into `Sample`s, one per question.

LongMemEval (Wu et al., ICLR 2025; github.com/xiaowu0162/LongMemEval, README "Dataset Format")
ships `longmemeval_s.json`, `longmemeval_m.json` and `longmemeval_oracle.json`, each a JSON array
of 500 instances:

- `question_id`; ids ending in `_abs` are abstention questions (about something never said)
- `question_type`: single-session-user, single-session-assistant, single-session-preference,
  temporal-reasoning, knowledge-update or multi-session
- `question`, `answer` (a string, sometimes a number), `question_date`
- `haystack_session_ids`, `haystack_dates` (`2023/05/20 (Sat) 02:21`) and `haystack_sessions`,
  three parallel arrays; a session is a list of turns `{role: user|assistant, content}`, and a
  turn that holds evidence has `has_answer: true`
- `answer_session_ids`: the evidence sessions

Each instance has its own chat history, so each becomes one Sample (`sample_id` = question_id)
holding one QAPair. A turn's `turn_id` is `<session id>_<n>`, n counting from 1, as LongMemEval's
own retrieval code names turns; the evidence is the turns marked `has_answer`. The QAPair's
`category` is 0 (LongMemEval does not number its types) and `category_name` the question_type.
Sessions are ingested in time order: the `_s` and `_m` files list them so, the oracle file not.

A file that uses a question_id twice is refused, naming both places. A haystack may hold one
session twice (a few `longmemeval_s` histories do: the same turns under two dates). Both are
kept; a memory, which keeps one message under an id, keeps the copy ingested last.
"""

from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from himga.data.conversation import Message, QAPair, Sample, Session
from himga.data.errors import DatasetError
from himga.data.fields import (
    each_once,
    kind,
    read_json,
    require_list,
    require_object,
    require_string,
)

DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"


def load_longmemeval(path: str | Path) -> list[Sample]:
    """Every instance of the LongMemEval file at `path` as a Sample, in file order."""
    path = Path(path)
    raw = read_json(path, "LongMemEval")
    if not isinstance(raw, list):
        raise DatasetError(
            f"{path}: a LongMemEval file is a JSON array of questions, got {kind(raw)}"
        )
    return each_once(path, raw, _sample, "question_id", lambda sample: sample.sample_id, "question")


def _sample(item: object, where: str) -> Sample:
    obj = require_object(item, where)
    question_id = require_string(obj, "question_id", where)
    question_type = require_string(obj, "question_type", where)
    question = require_string(obj, "question", where)
    answer = obj.get("answer")
    if isinstance(answer, bool) or not isinstance(answer, str | int | float):
        raise DatasetError(f"{where}.answer: must be a string or a number, got {kind(answer)}")
    question_date = obj.get("question_date", "")
    if not isinstance(question_date, str):
        raise DatasetError(f"{where}.question_date: must be a string, got {kind(question_date)}")
    ids = _strings(obj, "haystack_session_ids", where)
    dates = _strings(obj, "haystack_dates", where)
    sessions = require_list(obj.get("haystack_sessions"), f"{where}.haystack_sessions", "sessions")
    if not len(ids) == len(dates) == len(sessions):
        raise DatasetError(
            f"{where}: haystack_session_ids, haystack_dates and haystack_sessions must be as "
            f"long as each other, got {len(ids)}, {len(dates)} and {len(sessions)}"
        )
    built: list[Session] = []
    evidence: list[str] = []
    for index, (session_id, date, turns) in enumerate(zip(ids, dates, sessions, strict=True)):
        at = f"{where}.haystack_sessions[{index}]"
        messages = []
        for number, turn in enumerate(require_list(turns, at, "turns"), start=1):
            message, is_evidence = _message(turn, f"{at}[{number - 1}]", f"{session_id}_{number}")
            messages.append(message)
            if is_evidence:
                evidence.append(f"{session_id}_{number}")
        try:
            built.append(Session(session_id=session_id, messages=messages, date_str=date))
        except ValidationError as error:  # pragma: no cover - the messages were checked above
            raise DatasetError(f"{at}: {error}") from None
    qa = QAPair(
        question=question,
        answer=str(answer),
        evidence=evidence,
        category=0,
        category_name=question_type,
        question_date=question_date,
    )
    return Sample(sample_id=question_id, sessions=_in_time_order(built), qa_pairs=[qa])


def _message(turn: object, where: str, turn_id: str) -> tuple[Message, bool]:
    obj = require_object(turn, where)
    role = require_string(obj, "role", where)
    content = obj.get("content")
    if not isinstance(content, str):
        raise DatasetError(f"{where}.content: must be a string, got {kind(content)}")
    has_answer = obj.get("has_answer", False)
    if not isinstance(has_answer, bool):
        raise DatasetError(f"{where}.has_answer: must be a boolean, got {kind(has_answer)}")
    return Message(role=role, content=content, turn_id=turn_id), has_answer


def _strings(obj: dict[str, Any], key: str, where: str) -> list[str]:
    values = require_list(obj.get(key), f"{where}.{key}", "strings")
    for index, value in enumerate(values):
        if not isinstance(value, str) or not value:
            raise DatasetError(
                f"{where}.{key}[{index}]: must be a non-empty string, got {kind(value)}"
            )
    return values


def _in_time_order(sessions: list[Session]) -> list[Session]:
    """`sessions` sorted by date (stable), or as they are if any date is not in DATE_FORMAT."""
    try:
        keys = [datetime.strptime(str(s.date_str), DATE_FORMAT) for s in sessions]
    except ValueError:
        return sessions
    order = sorted(range(len(sessions)), key=keys.__getitem__)
    return [sessions[i] for i in order]
