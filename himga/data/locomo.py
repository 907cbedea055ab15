"""The LoCoMo loader: the public `locomo10.json` layout read into `Sample`s.

The file is a JSON array of samples `{sample_id, conversation, qa, ...}`. `conversation` holds
`session_N` (a list of turns `{speaker, dia_id, text, [img_url, blip_caption]}`) beside
`session_N_date_time`; each `qa` item has `question`, `answer` (or `adversarial_answer` for
category 5), `evidence` (dia_ids) and `category` (an integer, kept raw).

A sample_id names one sample of the file and a dia_id one turn of its sample: a file that uses
either twice is refused, naming both places (`locomo10.json` repeats neither).
"""

import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from himga.data.conversation import Message, QAPair, Sample, Session
from himga.data.errors import DatasetError
from himga.data.fields import each_once, kind, read_json, require_object, require_string

# LoCoMo's question categories by number, as the himga research code names them. Papers
# disagree on this mapping (some call 1 multi-hop and 3 open-domain); the number is kept too.
CATEGORY_NAMES = {
    1: "single_hop",
    2: "temporal",
    3: "multi_hop",
    4: "open_domain",
    5: "adversarial",
}

_SESSION_KEY = re.compile(r"session_(\d+)")
# A dia_id such as `D8:6`. Evidence entries are searched for every such id, so that malformed
# entries like "D8:6; D9:17" or "D 8 : 6" still yield their turns; leading zeros are dropped.
_DIA_ID = re.compile(r"D\s*(\d+)\s*:\s*(\d+)")


def load_locomo(path: str | Path) -> list[Sample]:
    """Every sample of the LoCoMo file at `path`, in file order; DatasetError when it cannot."""
    path = Path(path)
    raw = read_json(path, "LoCoMo")
    if not isinstance(raw, list):
        raise DatasetError(f"{path}: a LoCoMo file is a JSON array of samples, got {kind(raw)}")
    return each_once(path, raw, _sample, "sample_id", lambda sample: sample.sample_id, "sample")


def parse_evidence(entries: object) -> list[str]:
    """The dia_ids found in a QA item's `evidence`, in order and without repeats.

    Entries that hold no dia_id (or are not strings) are skipped rather than failing the load.
    """
    if not isinstance(entries, list):
        return []
    found: list[str] = []
    for entry in entries:
        if not isinstance(entry, str):
            continue
        for session, turn in _DIA_ID.findall(entry):
            turn_id = f"D{int(session)}:{int(turn)}"
            if turn_id not in found:
                found.append(turn_id)
    return found


def render_turn(turn: dict[str, Any]) -> str:
    """A turn's text; an image turn reads `[Image: <blip_caption>] <text>`."""
    text = turn.get("text", "")
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        return f"[Image: {caption.strip()}] {text}".rstrip()
    return str(text)


def _sample(item: object, where: str) -> Sample:
    obj = require_object(item, where)
    sample_id = require_string(obj, "sample_id", where)
    conversation = require_object(obj.get("conversation"), f"{where}.conversation")
    qa = obj.get("qa", [])
    if not isinstance(qa, list):
        raise DatasetError(f"{where}.qa: must be an array of questions, got {kind(qa)}")
    return Sample(
        sample_id=sample_id,
        sessions=_sessions(conversation, f"{where}.conversation"),
        qa_pairs=[_qa_pair(q, f"{where}.qa[{i}]") for i, q in enumerate(qa)],
    )


def _sessions(conversation: dict[str, Any], where: str) -> list[Session]:
    numbered = sorted(
        (int(match.group(1)), key)
        for key in conversation
        if (match := _SESSION_KEY.fullmatch(key)) is not None
    )
    sessions = []
    turn_of: dict[str, str] = {}  # dia_id -> where the first turn with it is
    for number, key in numbered:
        turns = conversation[key]
        if not isinstance(turns, list):
            raise DatasetError(f"{where}.{key}: must be an array of turns, got {kind(turns)}")
        messages = [_message(turn, f"{where}.{key}[{i}]") for i, turn in enumerate(turns)]
        for index, message in enumerate(messages):
            dia_id = str(message.turn_id)
            first = turn_of.setdefault(dia_id, f"{key}[{index}]")
            if first != f"{key}[{index}]":
                raise DatasetError(
                    f"{where}.{key}[{index}].dia_id: {dia_id!r} is the dia_id of {first} too; "
                    "a dia_id names one turn (the evidence cites it, and a memory keeps one "
                    "message under it)"
                )
        date = conversation.get(f"session_{number}_date_time")
        try:
            if isinstance(date, str):
                sessions.append(Session(session_id=key, messages=messages, date_str=date))
            else:
                sessions.append(Session(session_id=key, messages=messages))
        except ValidationError as error:  # pragma: no cover - the messages were checked above
            raise DatasetError(f"{where}.{key}: {error}") from None
    return sessions


def _message(turn: object, where: str) -> Message:
    obj = require_object(turn, where)
    speaker = require_string(obj, "speaker", where)
    dia_id = require_string(obj, "dia_id", where)
    text = obj.get("text", "")
    if not isinstance(text, str):
        raise DatasetError(f"{where}.text: must be a string, got {kind(text)}")
    return Message(role=speaker, content=render_turn(obj), turn_id=dia_id)


def _qa_pair(item: object, where: str) -> QAPair:
    obj = require_object(item, where)
    question = require_string(obj, "question", where)
    category = obj.get("category")
    if not isinstance(category, int) or isinstance(category, bool):
        raise DatasetError(f"{where}.category: must be an integer, got {kind(category)}")
    answer = obj.get("answer", obj.get("adversarial_answer", ""))
    return QAPair(
        question=question,
        answer="" if answer is None else str(answer),
        evidence=parse_evidence(obj.get("evidence", [])),
        category=category,
        category_name=CATEGORY_NAMES.get(category, ""),
    )
