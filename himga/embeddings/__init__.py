"""himga.embeddings: embedding models, texts in and unit-length float32 vectors out.

    embedder = open_embedder("e5-small-v2")  # a catalog model from the cache
    embedder = open_embedder("path/to/model")  # a directory: model.onnx, tokenizer.json, card.json
    embedder = open_embedder("openai:MODEL@http://127.0.0.1:8081/v1")  # an embeddings server
    vectors = embedder.embed_passages(["Caroline: I went to an LGBTQ support group."])
    query = embedder.embed_queries(["Where did Caroline go?"])[0]

Kinds: `onnx` (himga.embeddings.onnx: local weights, onnxruntime) and `openai`
(himga.embeddings.endpoint: an OpenAI-compatible endpoint). A new kind is one `Embedder`
subclass and one line in `open_embedder`. The catalog (`himga models fetch NAME`) is
himga.embeddings.catalog; the cache, himga.embeddings.cache.
"""

import functools
import os
from pathlib import Path

from himga.embeddings.base import Embedder, ModelError
from himga.embeddings.catalog import CATALOG, DEFAULT_MODEL

__all__ = ["CATALOG", "DEFAULT_MODEL", "Embedder", "ModelError", "open_embedder", "shared_embedder"]


def open_embedder(spec: "str | os.PathLike[str]") -> Embedder:
    """The model `spec` names: a catalog name (`e5-small-v2`, `all-minilm-l6-v2`) from the
    model cache, a model directory, or `openai:MODEL[@BASE_URL][#query=PREFIX&passage=PREFIX]`
    (himga.embeddings.endpoint). ModelError naming the file that is missing or differs, or the
    command that fetches the model."""
    if isinstance(spec, str) and spec.startswith("openai:"):
        from himga.embeddings.endpoint import OpenAIEmbedder, parse_spec

        named = parse_spec(spec)
        return OpenAIEmbedder(
            named.model,
            base_url=named.base_url,
            query_prefix=named.query_prefix,
            passage_prefix=named.passage_prefix,
        )
    from himga.embeddings.onnx import OnnxEmbedder

    if isinstance(spec, str) and spec in CATALOG:
        from himga.embeddings.cache import cached, fetch_command

        return OnnxEmbedder(cached(spec), remedy=f"run `{fetch_command(spec)} --force`")
    directory = Path(spec).expanduser()
    if not directory.is_dir():
        raise ModelError(
            f"embedding model {str(spec)!r}: not a catalog name ({', '.join(sorted(CATALOG))}), "
            "not a model directory, and not openai:MODEL@BASE_URL"
        )
    return OnnxEmbedder(directory)


@functools.cache
def shared_embedder(spec: str) -> Embedder:
    """`open_embedder(spec)`, loaded once a process: every store of a server (each namespace's
    memory and episodes) shares one model. A model that fails to open is tried again next
    time (nothing is cached but a loaded model)."""
    return open_embedder(spec)
