"""The retrieval method every keyword memory shares: BM25 over each turn and its neighbours.

A turn is scored as if it were one document holding its own terms and, at NEAR_WEIGHT, the terms
of its neighbours (up to NEAR_TURNS turns before and after it in the same session). Questions
about a conversation often use the words of the turn that prompted an answer, or of the reply
to it; on the LoCoMo dev conversations this lifts recall@10 (README, Figures: `make
eval-retrieval`).

The stores index each turn's own terms only. The neighbour window is applied here, at query
time, from the postings of the query's terms (himga.memory.postings) and where each turn sits
in its session (himga.memory.windows): a store's ingest writes each term once, and a new turn
changes no earlier turn's postings. A filter is applied in C too, to each turn scored (a
Selection), so the statistics stay those of every turn stored and `limit` is filled from the
turns it allows. A question in natural language touches tens of thousands
of postings in a large store, so `rank` runs in C (himga/memory/_ranking.c), without the
interpreter's lock, computing each score in the order this definition sums it.

    score = sum over query terms t of  idf(t) * f * (K1 + 1) / (f + K1 * (1 - B + B * dl / avgdl))

where f is the count of t in the turn plus NEAR_WEIGHT times its count in the neighbours, dl the
number of terms in the turn and its neighbours (the turn's "window length"), avgdl the mean of
dl, and idf(t) = ln(1 + (N - n + 0.5) / (n + 0.5)) over the N turns, n of which have t in their
window (Lucene's form, always positive). A window holds five turns, so a term said in a tenth of
the turns is in about half of the windows, where the classic form ln((N - n + 0.5) / (n + 0.5))
falls to zero (SQLite FTS5 floors it at 1e-6) and the term stops counting. Lucene's form adds
to recall@10 on each LoCoMo dev conversation (README: the alternatives tried).

Every store numbers turns in the order their ids were first stored (a correction keeps its
turn's number), and ties go to the earlier turn.

A turn said by someone the query names counts (1 + SPEAKER_BOOST) times its score: questions
about a conversation name the person they ask about, and on the LoCoMo dev conversations most
evidence turns are said by a person their question names (far more than of all turns).
Doubling adds to recall@10 on each dev conversation (README: the alternatives tried). A speaker
is named when all the terms of their name are among the query's terms.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Self

from himga.data.conversation import Message, Session, optional_text
from himga.memory import _ranking
from himga.memory.base import message_id
from himga.memory.method import (
    DEFAULT_METHOD,
    K1,
    NEAR_TURNS,
    NEAR_WEIGHT,
    OWN_WEIGHT,
    SPEAKER_BOOST,
    B,
    Method,
)
from himga.memory.text import TERMS, terms, terms_of
from himga.memory.times import micros, session_time, stated

# Written into each store: one indexed by another method is indexed again from its text when it
# opens (himga.memory.sqlite_schema, himga.memory.postgres).
METHOD = (
    f"terms: {TERMS}; window: {NEAR_TURNS} turns at {NEAR_WEIGHT}, "
    f"scored at query time; BM25 k1 {K1} b {B}, idf ln(1 + ...); speaker x{1 + SPEAKER_BOOST}"
)


def rank(
    postings: Sequence[array[int]],
    before: array[int],
    after: array[int],
    lengths: array[int],
    speakers: array[int],
    named: bytes,
    turns: int,
    total_length: int,
    limit: int,
    method: Method = DEFAULT_METHOD,
    allowed: Selection | None = None,
    cells: array[int] | None = None,
) -> list[tuple[int, float]]:
    """The best `limit` turns as (turn number, score), best first, ties to the earlier turn.

    Turns are numbered from 0 and every argument but `postings` is indexed by turn number (a
    number may hold no turn: a deleted turn's is a hole no posting or link names): `postings`
    holds, for each distinct query term, the number of each turn holding it, once per
    occurrence, ascending (array("i")); `before` and `after` the turn just before and just
    after each turn in its session (-1 for none), and their length is the count of numbers;
    `lengths` each turn's window length; `speakers` the number of each turn's speaker; `named`
    one byte a speaker number, non-zero for the speakers the query names; `turns` and
    `total_length` the number of turns stored and the sum of their window lengths, windows
    being `method.near_turns` turns each side.

    With `allowed`, only the turns it selects are returned, so `limit` is filled from them; the
    statistics (idf, average length) stay those of every turn stored, so an allowed turn scores
    exactly what it scores without a filter.

    `cells`: each turn number's cell (himga.memory._ranking.cells of these columns), which a
    large store's ranking reads in place of the columns (4 bytes a turn for 16); they must
    agree with the columns, as Windows keeps them.

    Computed in C (himga.memory._ranking), without the interpreter's lock, in the same order of
    operations as the definition above; tests/memory/test_ranking.py holds it to that.
    """
    return _ranking.rank(
        postings,
        before,
        after,
        lengths,
        speakers,
        named,
        turns,
        total_length,
        limit,
        method.near_turns,
        OWN_WEIGHT,
        method.near_weight,
        method.k1,
        method.b,
        method.speaker_boost,
        None if allowed is None else allowed.checks,
        None if allowed is None else allowed.times,
        cells,
    )


@dataclass(frozen=True, slots=True)
class Selection:
    """A filter as the C core applies it to each turn it scores: a turn is selected when, for
    each (column, mask) of `checks`, mask[column[turn]] is non-zero (a value outside the mask
    is not), and, with `times` (a column of times, low, high), low <= its time < high."""

    checks: tuple[tuple[array[int], bytes], ...] = ()
    times: tuple[array[int], int, int] | None = None


def idf(rows: int, rows_with_term: int) -> float:
    """The inverse document frequency of a term in the windows of `rows_with_term` of `rows`."""
    return math.log(1 + (rows - rows_with_term + 0.5) / (rows_with_term + 0.5))


@lru_cache(maxsize=4096)
def speaker_key(role: str) -> str:
    """A speaker's name as the terms a query must hold to name them ("" if it has none)."""
    return " ".join(terms(role))


def is_named(key: str, query: Collection[str]) -> bool:
    """Whether a query with terms `query` names the speaker whose key is `key`."""
    return bool(key) and all(term in query for term in key.split(" "))


@dataclass(slots=True)
class Turns:
    """A batch of messages as the keyword memories store them, column by column: what their
    hits report, their own terms, their speakers' keys, their times and metadata. Each column is
    read in one pass and zipped straight into a store's insert, with no object a message in
    between.

    Each id is there once: as if the items were stored one after the other, the last item with
    an id is what is stored, at the place of the first (`item_ids` keeps every item's id, in
    the order of the items)."""

    session_ids: list[str]
    turn_ids: list[str]
    roles: list[str]
    contents: list[str]
    date_strs: list[str]
    terms: list[list[str]]
    speakers: list[str]
    timestamps: list[datetime | None]
    session_timestamps: list[datetime | None]
    times: list[int | None]
    metadata: list[Mapping[str, str]]
    item_ids: list[str]

    @classmethod
    def of(cls, items: Iterable[tuple[Message, Session]]) -> Self:
        """The turns of `items`, each a message and the session it was said in (absent optional
        strings become "", absent times None)."""
        pairs = list(items)
        item_ids = [message_id(message) for message, _ in pairs]
        ids = item_ids
        if len(set(item_ids)) != len(item_ids):
            place: dict[str, int] = {}
            chosen: list[int] = []
            for index, id_ in enumerate(item_ids):
                if id_ in place:
                    chosen[place[id_]] = index
                else:
                    place[id_] = len(chosen)
                    chosen.append(index)
            pairs = [pairs[index] for index in chosen]
            ids = [item_ids[index] for index in chosen]
        messages = [message for message, _ in pairs]
        sessions = [session for _, session in pairs]
        roles = [message.role for message in messages]
        contents = [message.content for message in messages]
        timestamps = [stated(message.timestamp) for message in messages]
        session_times = _session_times(sessions)
        return cls(
            session_ids=[session.session_id for session in sessions],
            turn_ids=ids,
            roles=roles,
            contents=contents,
            date_strs=[optional_text(session.date_str) for session in sessions],
            terms=terms_of(contents),
            speakers=list(map(speaker_key, roles)),
            timestamps=timestamps,
            session_timestamps=[stated(session.timestamp) for session in sessions],
            times=[
                micros(own) if own is not None else of_session
                for own, of_session in zip(timestamps, session_times, strict=True)
            ],
            metadata=[message.metadata for message in messages],
            item_ids=item_ids,
        )

    def __len__(self) -> int:
        return len(self.session_ids)


def _session_times(sessions: Sequence[Session]) -> list[int | None]:
    """The time of each session (himga.memory.times), read once per distinct session."""
    known: dict[tuple[str, object, object], int | None] = {}
    found = []
    for session in sessions:
        key = (session.session_id, session.date_str, session.timestamp)
        if key not in known:
            moment = session_time(session)
            known[key] = None if moment is None else micros(moment)
        found.append(known[key])
    return found
