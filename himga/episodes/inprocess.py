"""InProcessEpisodes: an episode store in process memory (nothing on disk), for tests, short
runs and agents that keep their episodes elsewhere.

Each episode is kept as its JSON text, so what a caller holds is always a copy; the listing
order is kept as a sorted list of positions.
"""

import bisect
import json
from datetime import datetime
from typing import TYPE_CHECKING

from himga.episodes.base import EpisodeFilter
from himga.episodes.features import Features
from himga.episodes.indexed import IndexedStore, Row
from himga.episodes.meaning import EpisodeOptions, Vector, embedder_of
from himga.episodes.paging import Position, passes, position
from himga.storage import commit
from himga.storage.place import Place
from himga.timeutil import to_utc_isoformat

if TYPE_CHECKING:
    from himga.embeddings import Embedder


class InProcessEpisodes(IndexedStore):
    """The episodes of one namespace, in this process."""

    def __init__(self, embedder: "Embedder | None" = None) -> None:
        super().__init__(embedder)
        self._rows: dict[str, str] = {}
        self._order: list[Position] = []  # every episode's position, ascending

    @classmethod
    def for_namespace(
        cls, namespace: str, place: Place, options: EpisodeOptions
    ) -> "InProcessEpisodes":
        """The registry's factory: every namespace starts empty, and none is kept."""
        return cls(embedder_of(options))

    def _write(
        self, rows: list[tuple[Row, Features]], recorded: int, vectors: dict[str, Vector]
    ) -> None:  # the vectors are kept in `_vectors` alone
        # Everything that can fail comes first: the texts, then whether the write is still
        # wanted, asked once, as a durable store asks just before COMMIT. What follows only
        # changes the dict and the list, so the call stores every row or none.
        texts = [(row["id"], json.dumps(row), _position(row)) for row, _ in rows]
        commit.still_wanted()
        for episode_id, text, at in texts:
            self._forget(episode_id)
            self._rows[episode_id] = text
            bisect.insort(self._order, at)

    def _read(self, ids: list[str]) -> dict[str, Row]:
        return {i: json.loads(self._rows[i]) for i in ids if i in self._rows}

    def _erase(self, episode_id: str) -> bool:
        commit.still_wanted()
        return self._forget(episode_id)

    def _forget(self, episode_id: str) -> bool:
        text = self._rows.pop(episode_id, None)
        if text is None:
            return False
        del self._order[bisect.bisect_left(self._order, _position(json.loads(text)))]
        return True

    def _touch(self, ids: list[str], when: datetime) -> None:
        for episode_id in ids:
            row = json.loads(self._rows[episode_id])
            row["access_count"] = row.get("access_count", 0) + 1
            row["last_accessed"] = to_utc_isoformat(when)
            self._rows[episode_id] = json.dumps(row)

    def _listed(self, filters: EpisodeFilter, start: Position | None, count: int) -> list[Row]:
        end = bisect.bisect_left(self._order, start) if start is not None else len(self._order)
        found: list[Row] = []
        for at in range(end - 1, -1, -1):  # newest first
            row = json.loads(self._rows[self._order[at][1]])
            if passes(row, filters):
                found.append(row)
                if len(found) == count:
                    break
        return found


def _position(row: Row) -> Position:
    return position(row)
