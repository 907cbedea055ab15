"""The retrieval method both keyword memories share: BM25 over each turn and its neighbours.

A turn is scored as if it were one document holding its own terms and, at NEAR_WEIGHT, the terms
of its neighbours (up to NEAR_TURNS turns before and after it in the same session). Questions
about a conversation often use the words of the turn that prompted an answer, or of the reply
to it; on the LoCoMo dev conversations this lifts recall@10 from about 0.60 to 0.78.

The stores index each turn's own terms only. The neighbour window is applied here, at query
time, from the postings of the query's terms and where each turn sits in its session
(himga.memory.windows): a store's ingest writes each term once, and a new turn changes no
earlier turn's postings.

    score = sum over query terms t of  idf(t) * f * (K1 + 1) / (f + K1 * (1 - B + B * dl / avgdl))

where f is the count of t in the turn plus NEAR_WEIGHT times its count in the neighbours, dl the
number of terms in the turn and its neighbours (the turn's "window length"), avgdl the mean of
dl, and idf(t) = ln(1 + (N - n + 0.5) / (n + 0.5)) over the N turns, n of which have t in their
window (Lucene's form, always positive). A window holds five turns, so a term said in a tenth of
the turns is in about half of the windows, where the classic form ln((N - n + 0.5) / (n + 0.5))
falls to zero (SQLite FTS5 floors it at 1e-6) and the term stops counting. Lucene's form adds
0.017 to recall@10 on the LoCoMo dev conversations, on each of the three.

Both stores number turns in the order their ids were first stored (a correction keeps its
turn's number), and ties go to the earlier turn.

A turn said by someone the query names counts (1 + SPEAKER_BOOST) times its score: questions
about a conversation name the person they ask about, and on the LoCoMo dev conversations 94% of
evidence turns are said by a person their question names (against about half of all turns).
Doubling adds about 0.03 to recall@10 on each dev conversation. A speaker is named when all the
terms of their name are among the query's terms.
"""

import heapq
import math
from collections.abc import Callable, Collection, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Self

from himga.data.conversation import Message, Session, optional_text
from himga.memory.base import message_id
from himga.memory.text import STEMMER, terms, terms_of
from himga.memory.times import micros, session_time, stated

NEAR_TURNS = 2
OWN_WEIGHT = 1.0
NEAR_WEIGHT = 0.5
SPEAKER_BOOST = 1.0
K1 = 1.2
B = 0.75

# Written into each SQLite database: one indexed by another method is refused, not misread.
METHOD = (
    f"terms: {STEMMER} stems, stopwords; window: {NEAR_TURNS} turns at {NEAR_WEIGHT}, "
    f"scored at query time; BM25 k1 {K1} b {B}, idf ln(1 + ...); speaker x{1 + SPEAKER_BOOST}"
)


def rank(
    postings: Sequence[Mapping[int, int]],
    windows: Mapping[int, Sequence[int]],
    lengths: Mapping[int, int] | Sequence[int],
    turns: int,
    total_length: int,
    boosted: Container[int],
    limit: int,
    allowed: Callable[[int], bool] | None = None,
) -> list[tuple[int, float]]:
    """The best `limit` turns as (turn number, score), best first, ties to the earlier turn.

    `postings` holds, for each distinct query term, {turn number: count of the term in that
    turn's own terms}; `windows` the turns within NEAR_TURNS of each of those turns in its
    session, itself included; `lengths` every such turn's window length; `turns` and
    `total_length` the number of turns stored and the sum of their window lengths; `boosted`
    the turns said by a speaker the query names.

    With `allowed`, only the turns it allows are scored and returned, so `limit` is filled
    from them; the statistics (idf, average length) stay those of every turn stored, so an
    allowed turn scores exactly what it scores without a filter.
    """
    average = total_length / turns if total_length > 0 else 1.0
    every_term: list[dict[int, float]] = []
    for posting in postings:
        weighted: dict[int, float] = {}
        for turn, count in posting.items():
            for other in windows[turn]:
                share = count * (OWN_WEIGHT if other == turn else NEAR_WEIGHT)
                weighted[other] = weighted.get(other, 0.0) + share
        every_term.append(weighted)
    kept: set[int] | None = None
    if allowed is not None:
        kept = set(filter(allowed, set().union(*every_term)))
    scores: dict[int, float] = {}
    norms: dict[int, float] = {}
    for weighted in every_term:
        term_idf = idf(turns, len(weighted))
        scored: Iterable[tuple[int, float]] = weighted.items()
        if kept is not None:
            scored = [(turn, frequency) for turn, frequency in scored if turn in kept]
        for turn, frequency in scored:
            norm = norms.get(turn)
            if norm is None:
                norm = norms[turn] = K1 * (1 - B + B * lengths[turn] / average)
            score = term_idf * frequency * (K1 + 1) / (frequency + norm)
            scores[turn] = scores.get(turn, 0.0) + score
    for turn in scores:
        if turn in boosted:
            scores[turn] *= 1 + SPEAKER_BOOST
    return heapq.nsmallest(limit, scores.items(), key=lambda item: (-item[1], item[0]))


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
    """A batch of messages as both keyword memories store them, column by column: what their
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
