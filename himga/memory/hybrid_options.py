"""HybridOptions: the options of the `hybrid` memory (himga.memory.hybrid), in a module of its
own so that the registry can name them without loading the model's runtime."""

from dataclasses import dataclass

from himga.embeddings import DEFAULT_MODEL
from himga.errors import InvalidArgument
from himga.memory.fusion import Fusion
from himga.memory.graph import GraphOptions
from himga.memory.sketch import SketchOptions

_GRAPH = GraphOptions()
_SKETCH = SketchOptions()


@dataclass(frozen=True)
class HybridOptions(Fusion):
    """The fusion's parameters (himga.memory.fusion.Fusion, whose text defines them) and
    `embedding_model`, the model that embeds every passage and query: a catalog name from the
    model cache, a model directory, or an embeddings endpoint (himga.embeddings.open_embedder).
    `himga serve --embedding-model` sets it. `graph_threshold`, `graph_connectivity`,
    `graph_expansion_add`, `graph_expansion_search` and `graph_fetch`: when and how the vector
    index keeps an approximate graph (himga.memory.graph.GraphOptions, whose text says what
    each is and how the defaults were measured). `sketch_threshold`, `sketch_fetch` and
    `sketch_per_hit`: when and how it keeps 4-bit sketches of the vectors, whose scan proposes a
    search's candidates, and `sketch_coarse`, the rows the scan's 2-bit first stage keeps at
    least (himga.memory.sketch.SketchOptions, likewise; `sketch_threshold` 0: every search
    exact; `sketch_coarse` 0: no first stage). The graph, when it is on, is searched instead."""

    embedding_model: str = DEFAULT_MODEL
    graph_threshold: int = _GRAPH.threshold
    graph_connectivity: int = _GRAPH.connectivity
    graph_expansion_add: int = _GRAPH.expansion_add
    graph_expansion_search: int = _GRAPH.expansion_search
    graph_fetch: int = _GRAPH.fetch
    sketch_threshold: int = _SKETCH.threshold
    sketch_fetch: int = _SKETCH.fetch
    sketch_per_hit: int = _SKETCH.per_hit
    sketch_coarse: int = _SKETCH.coarse

    def __post_init__(self) -> None:
        checks = getattr(Fusion, "__post_init__", None)
        if checks is not None:
            checks(self)
        if not self.embedding_model.strip():
            raise InvalidArgument("embedding_model", "must name a model or a model directory")
        for name, options in (("graph", self.graph), ("sketch", self.sketch)):
            try:
                options()
            except InvalidArgument as error:
                raise InvalidArgument(f"{name}_{error.field}", error.rule) from None

    def graph(self) -> GraphOptions:
        """The vector index's graph options."""
        return GraphOptions(
            threshold=self.graph_threshold,
            connectivity=self.graph_connectivity,
            expansion_add=self.graph_expansion_add,
            expansion_search=self.graph_expansion_search,
            fetch=self.graph_fetch,
        )

    def sketch(self) -> SketchOptions:
        """The vector index's sketch options."""
        return SketchOptions(
            threshold=self.sketch_threshold,
            fetch=self.sketch_fetch,
            per_hit=self.sketch_per_hit,
            coarse=self.sketch_coarse,
        )

    def prepare(self) -> None:
        """Load the model now, as a server does at start-up: a missing or corrupt model is
        himga.embeddings.ModelError naming the file, or the command that fetches it."""
        from himga.memory.hybrid import embedder_of

        embedder_of(self.embedding_model)
