"""Episodes ranked by meaning too: the option naming an embedding model, the text an episode
and a task are embedded as, the vectors of a namespace's episodes, and how their ranking joins
the keyword one.

With `embedding_model` set (a catalog name, a model directory or `openai:MODEL@URL`:
himga.embeddings), every episode recorded gets the vector of `passage(row)` (its goal and the
errors it met), stored with the episode and deleted with it, and a search embeds
`query(task, text)`. The two rankings are fused by weighted reciprocal rank:

    score = 1 / (K + keyword rank) + DENSE_WEIGHT / (K + meaning rank)

over the keyword ranking's best KEYWORD_DEPTH and the DENSE_DEPTH episodes nearest by meaning
whose cosine stands out from the namespace's: at least Z_MIN standard deviations above the mean
cosine of the query with every stored episode (with fewer than MIN_STATS episodes, the nearest
one alone). So an episode that shares no word with the task but means the same is found, and
one that shares neither words nor meaning is not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from himga.errors import InvalidArgument

if TYPE_CHECKING:
    from himga.embeddings import Embedder
    from himga.records import TaskContext

K = 10
DENSE_WEIGHT = 0.5
KEYWORD_DEPTH = 50
DENSE_DEPTH = 20
Z_MIN = 1.5
MIN_STATS = 8

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class EpisodeOptions:
    """The options every episode store takes. `embedding_model`: the model episodes are
    ranked by meaning with (empty: by words and files alone)."""

    embedding_model: str = ""

    def __post_init__(self) -> None:
        if self.embedding_model != self.embedding_model.strip():
            raise InvalidArgument("embedding_model", "must not begin or end with spaces")


def embedder_of(options: Any) -> Embedder | None:
    """The model `options` name, loaded (once a process), or None."""
    from himga.embeddings import shared_embedder

    spec = getattr(options, "embedding_model", "")
    return shared_embedder(spec) if spec else None


def passage(row: dict[str, Any]) -> str:
    """The text an episode (its wire form) is embedded as: its goal, then the errors it met
    with how each was resolved."""
    parts = [row["context"]["goal"].strip()]
    for error in row.get("errors_encountered", []):
        said = f"{error['type']}: {error['message']}".strip()
        if error.get("resolution"):
            said += f" (resolved: {error['resolution']})"
        parts.append(said)
    return ". ".join(part for part in parts if part)


def query(task: TaskContext, text: str = "") -> str:
    """The text a search is embedded as: the task's goal and the free text."""
    return " ".join(part for part in (task.goal.strip(), text.strip()) if part)


class EpisodeVectors:
    """The vectors of a namespace's episodes, one row each, for exact cosines. Not
    thread-safe: the stores lock."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self._ids: list[str | None] = []
        self._row: dict[str, int] = {}
        self._matrix = np.zeros((0, dimension), dtype=np.float32)
        self._alive = np.zeros(0, dtype=np.bool_)

    def __len__(self) -> int:
        return len(self._row)

    def __contains__(self, episode_id: object) -> bool:
        return episode_id in self._row

    def add(self, ids: Sequence[str], vectors: Vector) -> None:
        """Keep each id's vector, replacing an earlier one."""
        for episode_id in ids:
            self.remove(episode_id)
        start = len(self._ids)
        needed = start + len(ids)
        if needed > len(self._matrix):
            grown = max(needed, 2 * len(self._matrix), 64)
            matrix = np.zeros((grown, self.dimension), dtype=np.float32)
            matrix[:start] = self._matrix[:start]
            alive = np.zeros(grown, dtype=np.bool_)
            alive[:start] = self._alive[:start]
            self._matrix, self._alive = matrix, alive
        self._matrix[start:needed] = vectors
        self._alive[start:needed] = True
        for offset, episode_id in enumerate(ids):
            self._ids.append(episode_id)
            self._row[episode_id] = start + offset

    def remove(self, episode_id: str) -> None:
        row = self._row.pop(episode_id, None)
        if row is None:
            return
        self._ids[row] = None
        self._alive[row] = False
        if len(self._ids) - len(self._row) > max(1000, len(self._row)):
            self._compact()

    def nearest(self, vector: Vector, depth: int) -> list[tuple[str, float]]:
        """The episodes nearest `vector` that stand out from the rest (the module's rule), as
        (id, cosine), nearest first, at most `depth`."""
        used = len(self._ids)
        if not self._row or depth <= 0:
            return []
        cosines = self._matrix[:used] @ vector
        alive = self._alive[:used]
        live = cosines[alive]
        rows = np.flatnonzero(alive)
        if len(live) >= MIN_STATS:
            cut = float(live.mean() + Z_MIN * live.std())
            keep = live >= cut
            rows, live = rows[keep], live[keep]
            count = min(depth, len(live))
        else:
            count = 1
        if not len(live):
            return []
        best = np.argsort(-live, kind="stable")[:count]
        return [(str(self._ids[rows[i]]), float(live[i])) for i in best]

    def _compact(self) -> None:
        used = len(self._ids)
        keep = self._alive[:used]
        living = [episode_id for episode_id in self._ids if episode_id is not None]
        self._matrix = self._matrix[:used][keep].copy()
        self._alive = np.ones(len(living), dtype=np.bool_)
        self._ids = list(living)
        self._row = {episode_id: row for row, episode_id in enumerate(living)}


def fuse(
    keyword: Sequence[tuple[str, float]], meaning: Sequence[tuple[str, float]], limit: int
) -> list[tuple[str, float]]:
    """The two rankings' episodes by weighted reciprocal rank, best first, at most `limit`
    (ties: the keyword ranking's order, then the meaning ranking's)."""
    scores: dict[str, float] = {}
    for rank, (episode_id, _) in enumerate(keyword[:KEYWORD_DEPTH]):
        scores[episode_id] = scores.get(episode_id, 0.0) + 1.0 / (K + rank + 1)
    for rank, (episode_id, _) in enumerate(meaning[:DENSE_DEPTH]):
        scores[episode_id] = scores.get(episode_id, 0.0) + DENSE_WEIGHT / (K + rank + 1)
    order = {episode_id: at for at, episode_id in enumerate(scores)}
    ranked = sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))
    return ranked[:limit]
