"""IndexedStore: what every local episode store shares; each kind only says how it keeps rows.

The shared part checks episodes, works out their features, keeps the EpisodeIndex, ranks,
builds the context and counts accesses, so the in-process and SQLite stores behave alike down to
the scores. A kind implements five small methods over its rows (an episode's wire form): write
some (all or none), read some by id, erase one, count an access, and list in order.
"""

from __future__ import annotations

import builtins
import logging
import threading
import time
from abc import abstractmethod
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from himga import validation
from himga.episodes.base import (
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_PAGE_SIZE,
    DEFAULT_SEARCH_LIMIT,
    TOKEN_CHARS,
    EpisodeFilter,
    EpisodeHit,
    EpisodePage,
    EpisodeSearch,
    EpisodeStore,
    check_limits,
    repeated_ids,
)
from himga.episodes.context import build_context
from himga.episodes.features import Features, features, task_query
from himga.episodes.index import EpisodeIndex
from himga.episodes.meaning import DENSE_DEPTH, KEYWORD_DEPTH, EpisodeVectors, Vector, fuse
from himga.episodes.meaning import passage as passage_of
from himga.episodes.meaning import query as query_of
from himga.episodes.paging import Position, after, position, to_microseconds
from himga.episodes.paging import page_token as page_token_after
from himga.errors import NotFoundError
from himga.records import EpisodeTrace, InvalidRecordError, TaskContext
from himga.storage import exhaustion
from himga.timeutil import to_utc_isoformat

if TYPE_CHECKING:
    from himga.embeddings import Embedder

Row = dict[str, Any]
"""An episode in its wire form (EpisodeTrace.to_dict())."""

_log = logging.getLogger(__name__)
WARN_EVERY_SECONDS = 60.0
"""At most one warning this often about access counts skipped (each is counted)."""


class _Skipped:
    """The access counts this process could not write (the store could not write), counted."""

    def __init__(self) -> None:
        self.count = 0
        self._warned = -WARN_EVERY_SECONDS
        self._lock = threading.Lock()

    def add(self, count: int, error: BaseException) -> None:
        now = time.monotonic()
        with self._lock:
            self.count += count
            warn = now - self._warned >= WARN_EVERY_SECONDS
            if warn:
                self._warned = now
        if warn:
            _log.warning("episode access counts not written, the store cannot write: %s", error)


_skipped = _Skipped()


def skipped_access_counts() -> int:
    """How many episode accesses (GetEpisode, SearchEpisodes hits) this process answered
    without counting them, because the store could not write (a full disk)."""
    return _skipped.count


def _to_microseconds(row: Row) -> Row:
    """The row with its timestamp to the microsecond (a copy when that changes it)."""
    kept = to_microseconds(row["timestamp"])
    return row if kept == row["timestamp"] else {**row, "timestamp": kept}


class IndexedStore(EpisodeStore):
    """An episode store over rows, with the shared index and ranking. Thread-safe. With an
    `embedder`, episodes are ranked by meaning too (himga.episodes.meaning): each recorded
    episode's vector is written with it, and `_vectors` holds them."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self._lock = threading.RLock()
        self._index = EpisodeIndex()
        self._embedder = embedder
        self._vectors = EpisodeVectors(embedder.dimension if embedder else 0)

    # --- what each kind implements -------------------------------------------------------

    @abstractmethod
    def _write(
        self, rows: builtins.list[tuple[Row, Features]], recorded: int, vectors: dict[str, Vector]
    ) -> None:
        """Store the rows (replacing those of the same ids, and their vectors) and `vectors`
        (episode id -> its vector, of the embedder's model; none without one): all, or on any
        error none; and only while the write is still wanted (himga.storage.commit),
        `recorded` being what the call answers."""

    @abstractmethod
    def _read(self, ids: builtins.list[str]) -> dict[str, Row]:
        """The rows of those of `ids` that are stored."""

    @abstractmethod
    def _erase(self, episode_id: str) -> bool:
        """Forget a row; whether it was stored."""

    @abstractmethod
    def _touch(self, ids: builtins.list[str], when: datetime) -> None:
        """Count an access of each of `ids` (stored) at `when`."""

    @abstractmethod
    def _listed(
        self, filters: EpisodeFilter, start: Position | None, count: int
    ) -> builtins.list[Row]:
        """At most `count` rows passing `filters`, newest first, after `start` if given."""

    @contextmanager
    def _call(self, *, write: bool = False) -> Iterator[None]:
        """One call of the store (`write`: one that records or deletes): holds the lock (a kind
        may also read in others' writes, and hold its store's own lock for a write)."""
        with self._lock:
            yield

    # --- the interface, on wire forms ---------------------------------------------------

    def record_documents(self, documents: builtins.list[Row]) -> int:
        """Store wire forms (all, or none when any is invalid against the schema, or repeats
        the id of one before it: an InvalidRecordError, a ValueError, names each broken rule by
        its JSON path). A timestamp is kept to the microsecond (paging.to_microseconds)."""
        problems = [
            f"episode {i}: {error}"
            for i, row in enumerate(documents)
            if not validation.is_valid(row, "EpisodeTrace")
            for error in validation.validate(row, "EpisodeTrace")
        ]
        if not problems:
            problems = [
                f"episode {i}: $.id: repeats the id of episode {held}"
                for i, held in repeated_ids(documents)
            ]
        if problems:
            raise InvalidRecordError(problems)
        rows = {row["id"]: (row, features(row)) for row in map(_to_microseconds, documents)}
        if not rows:
            return 0
        vectors = self._embedded([row for row, _ in rows.values()])  # before the lock: slow
        with self._call(write=True):
            self._write(builtins.list(rows.values()), len(documents), vectors)
            for _, found in rows.values():
                self._index.add(found)
            for episode_id in rows:
                self._vectors.remove(episode_id)
            if vectors:
                self._vectors.add(builtins.list(vectors), np.stack(builtins.list(vectors.values())))
        return len(documents)

    def _embedded(self, rows: builtins.list[Row]) -> dict[str, Vector]:
        """The vectors of the rows whose text is not empty (none without an embedder)."""
        if self._embedder is None:
            return {}
        texts = {row["id"]: text for row in rows if (text := passage_of(row)).strip()}
        if not texts:
            return {}
        found = self._embedder.embed_passages(builtins.list(texts.values()))
        return dict(zip(texts, found, strict=True))

    def get_document(self, episode_id: str) -> Row:
        with self._call():
            row = self._read([episode_id]).get(episode_id)
            if row is None:
                raise NotFoundError(f"no episode {episode_id!r} in this namespace")
            return self._accessed([_to_microseconds(row)])[0]

    def list_documents(
        self, filters: EpisodeFilter | None = None, page_size: int = 0, page_token: str = ""
    ) -> tuple[builtins.list[Row], str]:
        check_limits(page_size=page_size)
        filters = filters or EpisodeFilter()
        start = after(page_token, filters)
        size = page_size or DEFAULT_PAGE_SIZE
        with self._call():
            # Kept to the microsecond since the times were: an earlier himga kept nanoseconds,
            # which the filters and the order never saw.
            rows = [_to_microseconds(row) for row in self._listed(filters, start, size + 1)]
        token = page_token_after(position(rows[size - 1]), filters) if len(rows) > size else ""
        return rows[:size], token

    def search_documents(
        self, task: TaskContext, query: str = "", limit: int = 0, max_context_tokens: int = 0
    ) -> tuple[str, builtins.list[tuple[Row, float]]]:
        check_limits(limit=limit, max_context_tokens=max_context_tokens)
        wanted = task_query(task.check(), query)
        budget = (max_context_tokens or DEFAULT_CONTEXT_TOKENS) * TOKEN_CHARS
        limit = limit or DEFAULT_SEARCH_LIMIT
        text = query_of(task, query)
        meant = (
            self._embedder.embed_queries([text])[0]
            if self._embedder is not None and text.strip()
            else None
        )
        with self._call():
            if meant is None:
                best = self._index.best(wanted, limit)
            else:
                keyword = self._index.best(wanted, max(limit, KEYWORD_DEPTH))
                best = fuse(keyword, self._vectors.nearest(meant, DENSE_DEPTH), limit)
            rows = self._read([episode_id for episode_id, _ in best])
            found = self._accessed([_to_microseconds(rows[episode_id]) for episode_id, _ in best])
        scored = [(row, score) for row, (_, score) in zip(found, best, strict=True)]
        return build_context(found, wanted, budget), scored

    def _accessed(self, rows: builtins.list[Row]) -> builtins.list[Row]:
        """The rows, their access counted now, in the store and in the rows returned. A count
        the store cannot write now (a full disk) is skipped, and counted: the read answers."""
        if rows:
            when = datetime.now(UTC)
            try:
                self._touch([row["id"] for row in rows], when)
            except Exception as error:
                if not exhaustion.cannot_write(error):
                    raise
                _skipped.add(len(rows), error)
                return rows
            for row in rows:
                row["access_count"] = row.get("access_count", 0) + 1
                row["last_accessed"] = to_utc_isoformat(when)
        return rows

    # --- the interface, on records --------------------------------------------------------

    def record_many(self, episodes: Iterable[EpisodeTrace]) -> int:
        return self.record_documents([episode.check().to_dict() for episode in episodes])

    def get(self, episode_id: str) -> EpisodeTrace:
        return EpisodeTrace.from_dict(self.get_document(episode_id))

    def delete(self, episode_id: str) -> bool:
        with self._call(write=True):
            erased = self._erase(episode_id)
            self._index.remove(episode_id)
            self._vectors.remove(episode_id)
            return erased

    def list(
        self, filters: EpisodeFilter | None = None, page_size: int = 0, page_token: str = ""
    ) -> EpisodePage:
        rows, token = self.list_documents(filters, page_size, page_token)
        return EpisodePage([EpisodeTrace.from_dict(row) for row in rows], token)

    def search(
        self, task: TaskContext, query: str = "", limit: int = 0, max_context_tokens: int = 0
    ) -> EpisodeSearch:
        context, scored = self.search_documents(task, query, limit, max_context_tokens)
        hits = [EpisodeHit(EpisodeTrace.from_dict(row), score) for row, score in scored]
        return EpisodeSearch(context, hits)
