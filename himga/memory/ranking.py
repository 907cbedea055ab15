"""The retrieval method both keyword memories share: what a turn is indexed with, and BM25.

A turn is indexed with two fields: its own terms, and the terms of its neighbours (up to
NEAR_TURNS turns before and after it in the same session) at NEAR_WEIGHT. Questions about a
conversation often use the words of the turn that prompted an answer, or of the reply to it;
on the LoCoMo dev conversations this lifts recall@10 from about 0.60 to 0.75.

A turn said by someone the query names counts (1 + SPEAKER_BOOST) times its score: questions
about a conversation name the person they ask about, and on the LoCoMo dev conversations 94% of
evidence turns are said by a person their question names (against about half of all turns).
Doubling adds about 0.03 to recall@10 on each dev conversation. A speaker is named when all the
terms of their name are among the query's terms.

Scores are SQLite FTS5's `bm25()` with column weights (OWN_WEIGHT, NEAR_WEIGHT), which the
in-process memory computes itself with the same formula:

    score = sum over query terms t of  idf(t) * f * (K1 + 1) / (f + K1 * (1 - B + B * dl / avgdl))

where f is the weighted count of t in the turn's two fields, dl the turn's total number of terms
(both fields, and one speaker token), avgdl the mean of dl, and
idf(t) = ln((N - n + 0.5) / (n + 0.5)), n being the number of turns holding t in either field
(floored at 1e-6, as FTS5 does, for very common terms).
"""

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Self

from himga.data.schema import Message, Session
from himga.memory.base import Hit
from himga.memory.text import terms

NEAR_TURNS = 2
OWN_WEIGHT = 1.0
NEAR_WEIGHT = 0.5
SPEAKER_BOOST = 1.0
K1 = 1.2  # FTS5's fixed BM25 parameters
B = 0.75
_MIN_IDF = 1e-6


def near_terms(session_terms: Sequence[Sequence[str]], index: int) -> list[str]:
    """The neighbour field of turn `index` of a session whose turns' terms are `session_terms`.

    Earlier turns first, then later ones, nearest first: the same order every time it is built,
    which the SQLite store relies on to remove a row's old index entries.
    """
    near: list[str] = []
    for distance in range(NEAR_TURNS, 0, -1):
        if index - distance >= 0:
            near.extend(session_terms[index - distance])
    for distance in range(1, NEAR_TURNS + 1):
        if index + distance < len(session_terms):
            near.extend(session_terms[index + distance])
    return near


def idf(rows: int, rows_with_term: int) -> float:
    """FTS5's inverse document frequency of a term held by `rows_with_term` of `rows` turns."""
    value = math.log((rows - rows_with_term + 0.5) / (rows_with_term + 0.5))
    return value if value > 0 else _MIN_IDF


def term_score(term_idf: float, frequency: float, length: int, average_length: float) -> float:
    """One term's share of a turn's BM25 score (`frequency` already weighted by field)."""
    norm = K1 * (1 - B + B * length / average_length)
    return term_idf * frequency * (K1 + 1) / (frequency + norm)


@lru_cache(maxsize=4096)
def speaker_key(role: str) -> str:
    """A speaker's name as the terms a query must hold to name them ("" if it has none)."""
    return " ".join(terms(role))


def is_named(key: str, query: Collection[str]) -> bool:
    """Whether a query with terms `query` names the speaker whose key is `key`."""
    return bool(key) and all(term in query for term in key.split(" "))


@dataclass(slots=True)
class Turn:
    """A message as both keyword memories index it: what its hits report, its own terms, and
    its speaker's key."""

    session_id: str
    turn_id: str
    role: str
    content: str
    date_str: str
    terms: list[str]
    speaker: str

    @classmethod
    def of(cls, message: Message, session: Session) -> Self:
        """The turn of `message`, said in `session` (absent optional strings become "")."""
        return cls(
            session_id=session.session_id,
            turn_id=_text(message.turn_id),
            role=message.role,
            content=message.content,
            date_str=_text(session.date_str),
            terms=terms(message.content),
            speaker=speaker_key(message.role),
        )

    def hit(self, score: float) -> Hit:
        """This turn as a hit scoring `score`."""
        return Hit(self.turn_id, self.session_id, self.role, self.content, self.date_str, score)


def _text(value: object) -> str:
    """An optional model string (MISSING when absent) as a plain string."""
    return value if isinstance(value, str) else ""
