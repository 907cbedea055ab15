"""What every embedding model is to its callers: texts in, unit-length float32 vectors out.

A kind of model is one subclass of `Embedder` that sets `model_id`, `dimension` and
`max_tokens` and implements `_embed` (the prefixed texts to their raw vectors); the checks of
the texts and the normalising are written here, once.
"""

import abc
from collections.abc import Sequence

import numpy as np

from himga.errors import InvalidArgument, ModelError, unicode_problem


class Embedder(abc.ABC):
    """One embedding model, ready to embed.

    `model_id` names the model: a directory's card name and its weights' SHA-256 (a card
    holding a catalog model's weights under its name must use them as the catalog does; a card
    that changes how its own weights are used takes a new name), or an endpoint's model name.
    A store keeps it beside every vector and refuses to mix vectors of two ids. `max_tokens` is
    the model's window: a longer text is truncated to its first `max_tokens` tokens (the
    model's special tokens included), never split. Texts must be non-empty (a caller skips an
    empty text: it has no vector). Embedding a text gives the same vector whichever texts it is
    embedded with."""

    model_id: str
    dimension: int
    max_tokens: int
    query_prefix: str = ""
    passage_prefix: str = ""
    in_process: bool = False
    """Whether the model runs in this process, a query's vector made in milliseconds (not an
    endpoint's, which may take a round trip of any length): a hybrid search then waits for it
    holding the memory's read lock, its vectors' scan begun the moment the vector is made
    (himga.memory.beside.QueryVector)."""

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """The vectors of texts to be found (messages, episodes): (len(texts), dimension)."""
        return self._vectors(texts, self.passage_prefix)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """The vectors of texts that search (questions)."""
        return self._vectors(texts, self.query_prefix)

    def close(self) -> None:  # noqa: B027 (a kind without resources keeps this)
        """Release what the model holds (a session, a connection)."""

    def __enter__(self) -> "Embedder":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @abc.abstractmethod
    def _embed(self, texts: list[str]) -> np.ndarray:
        """The raw vectors (n, dimension) of `texts`, prefixes already added."""

    def _vectors(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed a sequence of texts, not one string")
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise InvalidArgument(f"texts[{index}]", f"must be a string, not {type(text)}")
            if not text.strip():
                raise InvalidArgument(
                    f"texts[{index}]", "must not be empty: an empty text has no vector"
                )
            problem = unicode_problem(text)
            if problem is not None:
                raise InvalidArgument(f"texts[{index}]", problem)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        raw = np.asarray(self._embed([prefix + text for text in texts]), dtype=np.float32)
        if raw.shape != (len(texts), self.dimension):
            raise ModelError(
                f"{self.model_id}: answered vectors of shape {raw.shape}, expected "
                f"({len(texts)}, {self.dimension})"
            )
        # A vector with no direction (all zeros, or a NaN or infinity in it) cannot be made unit
        # length: the model's fault, refused before anything is stored.
        broken = ~np.isfinite(raw).all(axis=1) | ~raw.any(axis=1)
        if broken.any():
            index = int(np.argmax(broken))
            raise ModelError(
                f"{self.model_id}: answered a vector of zeros or of a NaN or infinity for "
                f"texts[{index}]"
            )
        return unit_rows(raw)


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """`vectors` with each row scaled to length 1 (a zero row stays zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    scaled: np.ndarray = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return scaled
