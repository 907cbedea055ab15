"""HybridOptions: the options of the `hybrid` memory (himga.memory.hybrid), in a module of its
own so that the registry can name them without loading the model's runtime."""

from dataclasses import dataclass

from himga.embeddings import DEFAULT_MODEL
from himga.errors import InvalidArgument
from himga.memory.fusion import Fusion


@dataclass(frozen=True)
class HybridOptions(Fusion):
    """The fusion's parameters (himga.memory.fusion.Fusion, whose text defines them) and
    `embedding_model`, the model that embeds every passage and query: a catalog name from the
    model cache, a model directory, or an embeddings endpoint (himga.embeddings.open_embedder).
    `himga serve --embedding-model` sets it."""

    embedding_model: str = DEFAULT_MODEL

    def __post_init__(self) -> None:
        checks = getattr(Fusion, "__post_init__", None)
        if checks is not None:
            checks(self)
        if not self.embedding_model.strip():
            raise InvalidArgument("embedding_model", "must name a model or a model directory")

    def prepare(self) -> None:
        """Load the model now, as a server does at start-up: a missing or corrupt model is
        himga.embeddings.ModelError naming the file, or the command that fetches it."""
        from himga.memory.hybrid import embedder_of

        embedder_of(self.embedding_model)
