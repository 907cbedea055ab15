"""EpisodeStore: the one interface of every episode store, in-process, SQLite or remote.

A store keeps the episodes (himga.records.EpisodeTrace) of one namespace and finds the ones
that matter for a task (himga.episodes.ranking). Contracts every store keeps
(tests/episodes/test_contract.py checks them all):

- `record` stores a valid episode, replacing one of the same id; an invalid one is refused
  with a ValueError naming each field, and nothing of it is stored. `record_many` stores all or
  none, and refuses a batch holding one id twice (naming the repeat). Once either returns, the
  episodes are stored (a durable store: on disk). A timestamp is kept to the microsecond.
- `get` returns the episode as recorded (NotFoundError when absent); `delete` is idempotent.
- `list` returns the episodes passing every filter, newest first (timestamp, then id,
  descending), a page at a time, with an opaque token for the next page; a token it did not
  make is refused (ValueError naming page_token).
- `search` returns the best episodes for a task, best first, and a context string that never
  exceeds its token budget (a token counted as TOKEN_CHARS characters).
- `get` and `search` count as retrievals: each episode they return has its access_count raised
  by one and its last_accessed set to now, in the store and in the copy returned.
"""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Self

from himga.errors import InvalidArgument
from himga.records import EpisodeTrace, TaskContext

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
DEFAULT_SEARCH_LIMIT = 5
MAX_SEARCH_LIMIT = 100
DEFAULT_CONTEXT_TOKENS = 1000
TOKEN_CHARS = 4
"""A token is counted as this many characters (code points): the usual rule of thumb for
English text, and one any client can check without a tokenizer."""


@dataclass(frozen=True, slots=True)
class EpisodeFilter:
    """What ListEpisodes keeps: every field given ("" or None: any) must hold.

    `since` and `until` are aware datetimes, `until` later than `since` when both are given,
    as MessageFilter's `after` and `before` are: else InvalidArgument (a ValueError) naming the
    field, whichever store the filter is for. Times compare to the microsecond (a datetime's
    precision; the stores keep episodes' times to the microsecond too)."""

    task_id: str = ""
    agent: str = ""
    phase: str = ""
    outcome: str = ""
    since: datetime | None = None
    """At or after this time (aware)."""
    until: datetime | None = None
    """Before this time (aware)."""
    file: str = ""
    """A path the episode read, modified or names in its context, compared exactly."""

    def __post_init__(self) -> None:
        for name in ("since", "until"):
            moment = getattr(self, name)
            if moment is not None and (not isinstance(moment, datetime) or moment.tzinfo is None):
                raise InvalidArgument(name, "must be a datetime with a time zone")
        if self.since is not None and self.until is not None and self.until <= self.since:
            raise InvalidArgument("until", "must be later than since")


@dataclass(frozen=True, slots=True)
class EpisodePage:
    """One page of a listing, and the token of the next ("" on the last page)."""

    episodes: list[EpisodeTrace]
    next_page_token: str = ""


@dataclass(frozen=True, slots=True)
class EpisodeHit:
    """One episode found for a task, with its score (higher is better, within one answer)."""

    episode: EpisodeTrace
    score: float


@dataclass(frozen=True, slots=True)
class EpisodeSearch:
    """What `search` answers: the context for a prompt and the hits behind it, best first."""

    context: str
    hits: list[EpisodeHit] = field(default_factory=list)


def limit_problems(
    *, page_size: int = 0, limit: int = 0, max_context_tokens: int = 0
) -> list[tuple[str, str]]:
    """(field, rule) of each argument out of its range: what stores and the server refuse."""
    problems = []
    for name, value, most in (
        ("page_size", page_size, MAX_PAGE_SIZE),
        ("limit", limit, MAX_SEARCH_LIMIT),
    ):
        if not 0 <= value <= most:
            problems.append((name, f"must be 0 (the default) to {most}"))
    if max_context_tokens < 0:
        problems.append(("max_context_tokens", "must be 0 (the default) or more"))
    return problems


def repeated_ids(documents: Iterable[dict[str, Any]]) -> builtins.list[tuple[int, int]]:
    """(index, index of the first holder) of each episode whose id one before it in the same
    batch has: a batch is stored together, so it cannot hold one episode twice."""
    first: dict[str, int] = {}
    found = []
    for i, row in enumerate(documents):
        held = first.setdefault(row["id"], i)
        if held != i:
            found.append((i, held))
    return found


def check_limits(**values: int) -> None:
    """ValueError naming each argument out of its range (see `limit_problems`)."""
    problems = limit_problems(**values)
    if problems:
        raise ValueError("; ".join(f"{name}: {rule}" for name, rule in problems))


class EpisodeStore(ABC):
    """The episodes of one namespace (see the module's text for the contracts)."""

    def record(self, episode: EpisodeTrace) -> None:
        """Store one episode (valid, else ValueError), replacing one of the same id."""
        self.record_many([episode])

    @abstractmethod
    def record_many(self, episodes: Iterable[EpisodeTrace]) -> int:
        """Store every episode, all or (when any is invalid, or repeats an id) none; return
        how many."""

    @abstractmethod
    def get(self, episode_id: str) -> EpisodeTrace:
        """The episode with `episode_id`, its access counted; NotFoundError if absent."""

    @abstractmethod
    def delete(self, episode_id: str) -> bool:
        """Forget the episode; whether it was stored."""

    @abstractmethod
    def list(
        self, filters: EpisodeFilter | None = None, page_size: int = 0, page_token: str = ""
    ) -> EpisodePage:
        """The episodes passing `filters`, newest first, `page_size` (0: DEFAULT_PAGE_SIZE)
        at most, from the page `page_token` names ("" for the first)."""

    @abstractmethod
    def search(
        self, task: TaskContext, query: str = "", limit: int = 0, max_context_tokens: int = 0
    ) -> EpisodeSearch:
        """The best `limit` (0: DEFAULT_SEARCH_LIMIT) episodes for `task` and free text
        `query`, with a context of at most `max_context_tokens` (0: DEFAULT_CONTEXT_TOKENS)."""

    # The same calls on episodes in their wire form (EpisodeTrace.to_dict()'s, as the schema
    # has it): what the server passes on, sparing a Python record per episode. A store that
    # keeps wire forms overrides them; these defaults go through the records.

    def record_documents(self, documents: builtins.list[dict[str, Any]]) -> int:
        """`record_many` of schema-valid wire forms, kept as they are (absent keys mean their
        defaults)."""
        return self.record_many(EpisodeTrace.from_dict(d) for d in documents)

    def get_document(self, episode_id: str) -> dict[str, Any]:
        """`get`, as a wire form."""
        return self.get(episode_id).to_dict()

    def list_documents(
        self, filters: EpisodeFilter | None = None, page_size: int = 0, page_token: str = ""
    ) -> tuple[builtins.list[dict[str, Any]], str]:
        """`list`, as wire forms and the next page's token."""
        page = self.list(filters, page_size, page_token)
        return [e.to_dict() for e in page.episodes], page.next_page_token

    def search_documents(
        self, task: TaskContext, query: str = "", limit: int = 0, max_context_tokens: int = 0
    ) -> tuple[str, builtins.list[tuple[dict[str, Any], float]]]:
        """`search`, as the context and (wire form, score) pairs."""
        found = self.search(task, query, limit, max_context_tokens)
        return found.context, [(hit.episode.to_dict(), hit.score) for hit in found.hits]

    @property
    def durable(self) -> bool:
        """Whether what the store holds outlives it (on disk, in a database): a durable store
        may be closed when idle and opened again; one in process memory may not."""
        return False

    def close(self) -> None:
        """Release what the store holds open; what a durable store stored stays stored."""
        return None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
