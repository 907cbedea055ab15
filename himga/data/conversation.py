"""The conversation data himga's memories take in, and the evaluation data around it.

`Message` and `Session` are the models generated from schemas/v1 (message.json, session.json);
they are re-exported here, where the seed API imports them from. `Sample` and `QAPair` are the
evaluation harness's own records, not part of the wire contract.
"""

from dataclasses import dataclass, field

from himga_schema.message import Message
from himga_schema.session import Session

__all__ = ["Message", "QAPair", "Sample", "Session", "optional_text"]


def optional_text(value: object) -> str:
    """An optional string field of a Message or Session (`turn_id`, `date_str`) as a plain
    string: "" when it is absent (pydantic's MISSING), as hits and stores report it."""
    return value if isinstance(value, str) else ""


@dataclass(frozen=True, slots=True)
class QAPair:
    """One question of a benchmark about a conversation, with the turns that answer it."""

    question: str
    answer: str
    # turn_ids (LoCoMo dia_ids) of the messages that hold the answer
    evidence: list[str] = field(default_factory=list)
    # the dataset's own category number, kept raw (papers disagree on what the numbers mean);
    # 0 for datasets that do not number their categories
    category: int = 0
    # a name for the category: LoCoMo's numbers named as in CATEGORY_NAMES (himga.data.locomo),
    # LongMemEval's question_type as the file gives it
    category_name: str = ""
    # when the question is asked, as the dataset writes it ("" when it does not say)
    question_date: str = ""


@dataclass(frozen=True, slots=True)
class Sample:
    """One conversation of a benchmark: its sessions in order, and the questions about it."""

    sample_id: str
    sessions: list[Session]
    qa_pairs: list[QAPair] = field(default_factory=list)
