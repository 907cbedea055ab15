"""The real embedding model for tests that check meaning: the default catalog model from the
model cache (`make setup` fetches it), loaded once a process. Not there: the test fails with
the command that fetches it (a missing model is a broken setup, not a reason to skip)."""

import functools

from himga.embeddings import DEFAULT_MODEL, Embedder, ModelError
from himga.embeddings.cache import fetch_command, models_dir
from himga.embeddings.onnx import OnnxEmbedder

# Read when the tests are collected, before any test points HIMGA_MODELS elsewhere.
_CACHE = models_dir()


@functools.cache
def default_embedder() -> Embedder:
    directory = _CACHE / DEFAULT_MODEL
    if not directory.is_dir():
        raise ModelError(
            f"the tests need {DEFAULT_MODEL} in {_CACHE}: run `make model` "
            f"(`{fetch_command(DEFAULT_MODEL)}`)"
        )
    return OnnxEmbedder(directory, remedy=f"run `{fetch_command(DEFAULT_MODEL)} --force`")
