"""A model other than the default for the hybrid memory's tests: the default's weights under
another id, so that a store it wrote holds "another model's" vectors."""

import numpy as np
import pytest

from himga.embeddings import Embedder
from himga.memory import hybrid
from himga.memory.hybrid_options import HybridOptions

OTHER_MODEL = "other-model"


class Renamed(Embedder):
    """`inner` under the id `model_id`."""

    def __init__(self, inner: Embedder, model_id: str) -> None:
        self._inner = inner
        self.model_id = model_id
        self.dimension = inner.dimension
        self.max_tokens = inner.max_tokens
        self.query_prefix, self.passage_prefix = inner.query_prefix, inner.passage_prefix
        self.in_process = inner.in_process

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self._inner._embed(texts)


def use_other_model(monkeypatch: pytest.MonkeyPatch) -> str:
    """Make OTHER_MODEL open as the default model renamed "other-model:0"; its name."""
    loaded = hybrid.embedder_of
    other = Renamed(loaded(HybridOptions().embedding_model), f"{OTHER_MODEL}:0")
    monkeypatch.setattr(
        hybrid, "embedder_of", lambda spec: other if spec == OTHER_MODEL else loaded(spec)
    )
    return OTHER_MODEL
