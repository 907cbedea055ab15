"""The `hybrid` memory: the keyword method's ranked list and a local embedding model's nearest
turns, fused (himga.memory.fusion), over the same durable stores as the keyword kinds.

It is the keyword memories' skeleton (himga.memory.indexed) with one more thing derived from
each turn: the vector of its passage (`fusion.passage(role, content)`) as the namespace's
embedding model (himga.embeddings) makes it. A turn whose text is empty (or blank) gets no
vector and is still found by its words.

- Writing: a batch's passages are embedded before the memory's lock is taken
  (`_turns_of`), then written in the same transaction as the messages, so a write is
  acknowledged only when its vectors are stored; a correction is embedded again, a delete
  takes the vector out with the message, a reset every vector.
- Holding: each memory keeps its namespace's vectors in process (himga.memory.vectors'
  VectorIndex, keyed by turn number) beside the postings, windows and facets, and keeps them
  current as it keeps those: rows others appended bring their vectors, turns others replaced
  (the change log) are read again, turns deleted leave (`HybridIndex`).
- Searching: the query is embedded once, on a thread of himga.memory.beside, while the
  caller ranks the keyword method's best `keyword_depth` turns under the lock; then the
  vectors' nearest `dense_depth` turns and the keyword hits' own cosines go to `fusion.fuse`.
  The vectors' sketches are scanned on that thread the moment the query's vector is made,
  should the caller still be ranking or be waiting for it, and joined by the caller, the lock
  held until the scan ends (that thread then reads the query's cosine statistics, and the
  keyword hits' cosines from their copied rows, while the caller ends the scan). A model in
  process (Embedder.in_process) makes the vector in milliseconds, so the caller waits for it
  holding the lock, copying the keyword hits' rows meanwhile; an endpoint's may take a round
  trip of any length, so the caller copies them and lets the lock go while it waits, and then
  searches the vectors itself. A filter restricts the fused ranking to the turns it admits
  (as the keyword kinds' filters do): both sides look deeper until `limit` admitted turns are
  found (HybridIndex.ranked). A fused score is relative to the turns both sides returned (the
  neighbours whose cosines the dense side returned, the keyword side's depth), so a deeper
  search, filtered or of a larger limit, may score a turn a little differently; the keyword
  kinds' scores are absolute.
- The model: its id is recorded beside the vectors. A store written with another model is
  refused (IncompatibleStoreError) with the command that embeds it again (`himga reembed`,
  himga.cli.reembed); a store holding turns without vectors (one written by an earlier himga
  or being re-embedded) has them embedded when it opens, in one transaction.

Engines: himga.memory.hybrid_sqlite (the namespace's SQLite file, the default) and
himga.memory.hybrid_postgres (`--database`: every server over it holds the same index). The
registry's factory, `open_hybrid`, picks the engine from the place.
"""

from __future__ import annotations

import builtins
import shlex
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np

from himga.data.conversation import Message, Session
from himga.embeddings import Embedder, shared_embedder
from himga.errors import IncompatibleStoreError
from himga.memory.base import DEFAULT_LIMIT, Hit, hit_of
from himga.memory.beside import BESIDE, Nearest, QueryVector, ended, helped
from himga.memory.derived import DerivedIndex, Placing
from himga.memory.filters import MessageFilter
from himga.memory.fusion import Dated, Fusion, Links, dense_query, fuse_arrays, pairs, passage
from himga.memory.hybrid_options import HybridOptions
from himga.memory.indexed import IndexedMemory
from himga.memory.method import DEFAULT_METHOD
from himga.memory.months import named_months, said_in
from himga.memory.ranking import Turns
from himga.memory.rows import Change, Rows, Version
from himga.memory.text import query_terms
from himga.memory.vectors import Gathered, SharedNearest, VectorIndex
from himga.pools import started
from himga.storage.place import Place


def embedder_of(spec: str | Path) -> Embedder:
    """The embedder of `spec`, loaded once a process: every namespace of a server, and its
    episode stores, share it (himga.embeddings.shared_embedder)."""
    return shared_embedder(str(spec))


def reembed_command(model: str, where: str) -> str:
    """The command that embeds a store again with `model` (`where`: its --data-dir or
    --database and --namespace arguments)."""
    return f"himga reembed {where} --embedding-model {shlex.quote(model)}"


def _refused(said: str, spec: str, where: str) -> IncompatibleStoreError:
    """A store refused for its vectors (`said`): the message names the model (`spec`) and the
    command that embeds the store again; a server's caller reads it without them (their paths
    are the server's: its log has them)."""
    serve = "serve it with the model that made them, or embed it again"
    return IncompatibleStoreError(
        f"{said} ({spec}); {serve}: {reembed_command(spec, where)}",
        public=f"{said}; {serve} with `himga reembed` (the server's log has the command)",
    )


def check_model(
    name: str, recorded: str | None, embedder: Embedder, spec: str, where: str, width: int
) -> None:
    """IncompatibleStoreError unless vectors recorded as made by `recorded` (None: none
    recorded), one of which is `width` bytes, are `embedder`'s. The width is checked too: an
    endpoint's model id is its name, which another server may give a model of another size."""
    if recorded is not None and recorded != embedder.model_id:
        said = f"{name}: its vectors were made by embedding model {recorded!r}"
        raise _refused(f"{said}, not by {embedder.model_id!r}", spec, where)
    if width != 4 * embedder.dimension:
        said = f"{name}: its vectors have {width // 4} dimensions, but {embedder.model_id!r}"
        raise _refused(f"{said} gives {embedder.dimension}", spec, where)


# --- what a write carries ---------------------------------------------------------------


@dataclass(slots=True)
class EmbeddedTurns(Turns):
    """A batch as the hybrid memory writes it: the keyword memories' Turns, and the vector of
    each turn with text (`embedded`: their indexes in the batch; `vectors`: one row each)."""

    embedded: list[int] = field(default_factory=list)
    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))

    def embed(self, embedder: Embedder) -> None:
        """Embed the passage of every turn with text (`embedded`, `vectors`)."""
        self.embedded = [i for i, content in enumerate(self.contents) if content.strip()]
        passages = [passage(self.roles[i], self.contents[i]) for i in self.embedded]
        self.vectors = (
            as_vectors(embedder.embed_passages(passages), embedder.dimension)
            if passages
            else np.zeros((0, embedder.dimension), dtype=np.float32)
        )

    def vector_rows(self, placing: Placing) -> tuple[list[int], np.ndarray, list[int]]:
        """The turn numbers with a vector, their vectors, and the numbers of the turns without
        one (their text is empty)."""
        keys = [placing.numbers[i] for i in self.embedded]
        chosen = set(self.embedded)
        bare = [n for i, n in enumerate(placing.numbers) if i not in chosen]
        return keys, self.vectors, bare


def as_vectors(found: Any, dimension: int) -> np.ndarray:
    """An embedder's answer as the stores keep it: C-ordered float32 rows of `dimension`."""
    vectors = np.ascontiguousarray(found, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[1] != dimension:
        raise ValueError(f"an embedder gave vectors of shape {vectors.shape}, not (n, {dimension})")
    return vectors


class VectorRows(Rows, Protocol):
    """What the hybrid memory asks of a store beside its rows (himga.memory.rows), in the same
    transaction: the vectors of its turns, and the turns that have none."""

    def vectors_from(self, first: int) -> Iterator[tuple[Sequence[int], np.ndarray]]:
        """The vectors of the turns numbered from `first` on, a batch at a time."""
        ...

    def vectors_of(self, numbers: Sequence[int]) -> tuple[Sequence[int], np.ndarray]:
        """The vectors of those of `numbers` that have one."""
        ...

    def unembedded(self) -> tuple[list[int], list[str], list[str]]:
        """The stored turns with text but no vector: their numbers, roles and contents."""
        ...

    def write_vectors(self, numbers: Sequence[int], vectors: np.ndarray) -> None:
        """Store (or replace) the vectors of turns `numbers`."""
        ...


# --- what is held ------------------------------------------------------------------------


class HybridIndex(DerivedIndex):
    """The keyword memories' derived index and the vectors of the turns it holds. Vectors of
    turns read in from the store (appended by another writer, or replaced by one) are read
    from it afterwards in the same transaction (`read_vectors`); those of this memory's own
    writes are placed with them."""

    def __init__(self, empty_vectors: Callable[[], VectorIndex]) -> None:
        """`empty_vectors`: a new, empty index of the memory's vectors (made again by each
        clear)."""
        self._empty_vectors = empty_vectors
        super().__init__(DEFAULT_METHOD)

    def clear(self) -> None:
        super().clear()
        self.vectors = self._empty_vectors()
        self._read_from: int | None = None  # vectors of the turns from here on: to be read
        self._reread: set[int] = set()  # turns replaced by others: their vectors to be read

    @property
    def waiting(self) -> bool:
        """Whether turns were read in whose vectors are not read yet."""
        return self._read_from is not None or bool(self._reread)

    def load(self, numbers: Sequence[int], *columns: Any) -> None:
        super().load(numbers, *columns)
        if numbers:
            first = numbers[0]
            self._read_from = first if self._read_from is None else min(self._read_from, first)

    def replace(self, numbers: Sequence[int], *columns: Any) -> None:
        super().replace(numbers, *columns)
        self._reread.update(numbers)

    def drop(self, numbers: Sequence[int], old_terms: Sequence[Sequence[str]]) -> int:
        dropped = super().drop(numbers, old_terms)
        self._remove(numbers)
        self._reread.difference_update(numbers)
        return dropped

    def place(self, turns: Turns, placing: Placing, old_terms: Sequence[Sequence[str]]) -> None:
        super().place(turns, placing, old_terms)
        assert isinstance(turns, EmbeddedTurns)
        keys, vectors, bare = turns.vector_rows(placing)
        self._remove(bare)
        if keys:
            self.vectors.add(keys, vectors)

    def add_vectors(self, keys: Sequence[int], vectors: np.ndarray) -> None:
        """Hold the vectors of stored turns (embedded when the store opened)."""
        if len(keys):
            self.vectors.add(keys, vectors)
            self.changes += 1  # a search's rows copied before (First.gathered) are not these

    def _remove(self, numbers: Iterable[int]) -> None:
        held = [n for n in numbers if n in self.vectors]
        if held:
            self.vectors.remove(held)

    def read_vectors(self, rows: VectorRows) -> None:
        """Read the vectors of the turns read in since the last call."""
        if self._reread:
            numbers = sorted(self._reread)
            self._remove(numbers)  # a correction that emptied its text has none now
            keys, vectors = rows.vectors_of(numbers)
            self.add_vectors(keys, vectors)
            self._reread.clear()
        if self._read_from is not None:
            for keys, vectors in rows.vectors_from(self._read_from):
                self.add_vectors(keys, vectors)
            self._read_from = None

    def keyword_side(self, wanted: Sequence[str], depth: int) -> tuple[np.ndarray, np.ndarray]:
        """The keyword side of a search of terms `wanted`: its best `depth` turns, unfiltered,
        as `pairs` makes them."""
        return pairs(self.best(wanted, depth, None) if wanted else [])

    def ranked(
        self,
        wanted: Sequence[str],
        query: np.ndarray,
        limit: int,
        chosen: MessageFilter | None,
        fusion: Fusion,
        first: First | None = None,
        months: tuple[int, ...] = (),
    ) -> builtins.list[tuple[int, float]]:
        """The best `limit` turns, fused, for a query of terms `wanted` and vector `query`,
        among those `chosen` selects. `first`: what the caller found already at the first
        depths, on this index as it is now (First). `months`: those the query names
        (himga.memory.months.named_months), whose turns the fusion counts more.

        Both sides rank every turn, the fused list is restricted to the turns the filter
        admits, and the depths grow (by GROWTH, up to every turn or MOST_DEEPER times) until
        `limit` of them are found; a turn scores as it would unfiltered at those depths."""
        keyword_depth, dense_depth = first_depths(limit, fusion)
        allowed = self.facets.selector(chosen, self.windows) if chosen else None
        around = Links(*self.windows.links())
        stored = len(self.windows)
        full = self.full_match(wanted)
        dated = self._dated(months)
        for _ in range(MOST_DEEPER + 1):
            gathered = stats = hit_cosines = None
            if first is not None:
                (keyword_keys, keyword_scores), found = first.keyword, first.nearest
                gathered, stats, hit_cosines = first.gathered, first.stats, first.cosines
                first = None
                if found is None:  # the scan has the cores to itself
                    found = self.vectors.nearest(query, dense_depth, None)
            else:
                keyword_keys, keyword_scores, found = self._both_sides(
                    wanted, keyword_depth, query, dense_depth
                )
            near, near_cosines = found
            dense_keys, cosines, stats = self._dense(
                query, near, near_cosines, keyword_keys, gathered, stats, hit_cosines
            )
            if not keyword_keys.size and not dense_keys.size:
                return []
            fused = fuse_arrays(
                keyword_keys, keyword_scores, dense_keys, cosines, stats, around, fusion,
                limit if allowed is None else keyword_keys.size + dense_keys.size, full, dated,
            )  # fmt: skip
            if allowed is None:
                return fused
            kept = [pair for pair in fused if allowed(pair[0])]
            if len(kept) >= limit or min(keyword_depth, dense_depth) >= stored:
                break
            keyword_depth, dense_depth = keyword_depth * GROWTH, dense_depth * GROWTH
        return kept[:limit]

    def _dated(self, months: tuple[int, ...]) -> Dated | None:
        """Which candidates were said in one of `months` (None: no month is named)."""
        if not months:
            return None
        times_of = self.facets.times_of
        return lambda keys: said_in(times_of(keys), months)

    def _both_sides(
        self, wanted: Sequence[str], keyword_depth: int, query: np.ndarray, dense_depth: int
    ) -> tuple[np.ndarray, np.ndarray, Nearest]:
        """The keyword side's best `keyword_depth` turns and the vectors' nearest `dense_depth`,
        their scan begun on a worker thread (`scan_beside`) and joined by the caller once its
        keyword side is ranked."""
        scan = self.scan_beside(dense_depth)
        shared = scan(query) if scan is not None else None
        if shared is None:
            keyword_keys, keyword_scores = self.keyword_side(wanted, keyword_depth)
            return keyword_keys, keyword_scores, self.vectors.nearest(query, dense_depth, None)
        beside = started(BESIDE, shared.share)
        try:
            helped(shared)
            keyword_keys, keyword_scores = self.keyword_side(wanted, keyword_depth)
            found = shared.nearest()
        finally:  # the scan reads the index: every part ends (`share` waits for them) first
            ended(beside)
        return keyword_keys, keyword_scores, found

    def scan_beside(self, depth: int) -> Callable[[np.ndarray], SharedNearest | None] | None:
        """The search for a query's `depth` nearest turns to begin beside the keyword side, on
        one thread, and to be joined by the caller once its keyword side is ranked
        (VectorIndex.shared_nearest, None where it would not scan the sketches): the other core
        then waits no longer than the keyword side lasts. None without sketches: an exact
        search of a few thousand vectors is quicker than handing it over."""
        if not self.vectors.sketched:
            return None
        shared_nearest = self.vectors.shared_nearest
        return lambda query: shared_nearest(query, depth)

    def _dense(
        self,
        query: np.ndarray,
        keys: np.ndarray,
        cosines: np.ndarray,
        keyword_keys: np.ndarray,
        gathered: Gathered | None = None,
        stats: tuple[float, float] | None = None,
        hit_cosines: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, tuple[float, float]]:
        """The dense side: the nearest turns' `keys` and `cosines` and the keyword hits' own
        cosines (nan for a hit without a vector, which fusion leaves out), as float64, with
        the query's cosine statistics. `gathered`: the keyword hits' rows, when the caller
        copied them while the query was embedded; `stats` and `hit_cosines`: the statistics,
        and the hits' cosines from those rows, when the scan's thread read them (First)."""
        if not len(self.vectors):
            return _NO_KEYS, _NO_COSINES, (0.0, 0.0)
        if hit_cosines is None and gathered is not None:
            hit_cosines = self.vectors.similarities(query, gathered)
        if hit_cosines is not None:
            # every hit's cosine from its copied row, the nearest turns' first: fusion keeps a
            # key's first cosine, so a hit among them counts with its cosine from the search
            keys = np.concatenate((keys, keyword_keys))
            cosines = np.concatenate((cosines, hit_cosines))
        else:
            near = set(keys.tolist())
            others = np.fromiter(
                (key not in near for key in keyword_keys.tolist()),
                dtype=bool,
                count=keyword_keys.size,
            )
            if others.any():
                keys = np.concatenate((keys, keyword_keys[others]))
                own = self.vectors.similarities(query, keyword_keys[others])
                cosines = np.concatenate((cosines, own))
        # exact moments: a delete leaves the statistics, so the scores, storing less would
        moments = stats if stats is not None else self.vectors.stats(query)
        return keys, cosines.astype(np.float64), moments


_NO_KEYS = np.zeros(0, dtype=np.int64)
_NO_COSINES = np.zeros(0, dtype=np.float64)


@dataclass(frozen=True, slots=True)
class First:
    """What a search found at its first depths (`first_depths`) before it ranked: the keyword
    side (HybridIndex.keyword_side), the vectors' nearest turns when they were found beside
    it (None: not yet), the keyword hits' rows when they were copied while the query was
    embedded (None: not copied), and the query's cosine statistics (VectorIndex.stats) and the
    keyword hits' cosines (VectorIndex.similarities) when the scan's thread read them (None:
    not read)."""

    keyword: tuple[np.ndarray, np.ndarray]
    nearest: Nearest | None
    gathered: Gathered | None = None
    stats: tuple[float, float] | None = None
    cosines: np.ndarray | None = None


def first_depths(limit: int, fusion: Fusion) -> tuple[int, int]:
    """How deep a search for `limit` turns looks first on its keyword side and its dense side."""
    return max(limit, fusion.keyword_depth), max(limit, fusion.dense_depth)


GROWTH = 4
"""How much deeper both sides look when a filter admits fewer than `limit` of the fused turns."""
MOST_DEEPER = 4
"""How many times they look deeper at most (depths up to GROWTH ** MOST_DEEPER times)."""


# --- the memory --------------------------------------------------------------------------


class HybridMemory(IndexedMemory):
    """What both engines' hybrid memories add to the keyword skeleton: the vectors and the
    fused search (see the module's text). An engine's class puts this before its keyword
    memory (`class HybridSQLiteMemory(HybridMemory, SQLiteKeywordMemory)`) and yields
    VectorRows from its transactions."""

    _embedder: Embedder
    _fusion: HybridOptions
    embedded_at_open = 0
    """How many stored turns had no vector when the memory opened, and were embedded then."""

    def _set_model(self, options: HybridOptions) -> None:
        """Take the options' model and fusion (before the keyword memory opens)."""
        self._fusion = options
        self._embedder = embedder_of(options.embedding_model)

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    def _derived(self) -> DerivedIndex:
        dimension, options = self._embedder.dimension, self._fusion
        return HybridIndex(lambda: VectorIndex(dimension, options.graph(), options.sketch()))

    @property
    def _vectors(self) -> HybridIndex:
        index = self._index
        assert isinstance(index, HybridIndex)
        return index

    def _turns_of(self, items: Iterable[tuple[Message, Session]]) -> Turns:
        turns = EmbeddedTurns.of(items)
        turns.embed(self._embedder)
        return turns

    def _refresh(self, rows: Rows, *, write: bool) -> Version:
        now = super()._refresh(rows, write=write)
        index = self._vectors
        if index.waiting:
            try:
                index.read_vectors(_vector_rows(rows))
            except BaseException:  # half read in: read it all again next time
                self._version = self._generation = None
                raise
        return now

    def _embed_missing(self) -> int:
        """Embed the stored turns with text but no vector (a store of an earlier himga, or one
        being re-embedded), in one transaction; how many there were. Looked for first by
        reading alone, so a store holding every vector opens without a write."""
        with self._lock.writing(), self._using(write=False) as (rows, _):
            if not _vector_rows(rows).unembedded()[0]:
                return 0
        with self._lock.writing():
            with self._using(write=True) as (rows, seen):
                numbers, roles, contents = _vector_rows(rows).unembedded()
                vectors = np.zeros((0, self._embedder.dimension), dtype=np.float32)
                after = seen
                if numbers:
                    vectors = as_vectors(
                        self._embedder.embed_passages(
                            [passage(r, c) for r, c in zip(roles, contents, strict=True)]
                        ),
                        self._embedder.dimension,
                    )
                    _vector_rows(rows).write_vectors(numbers, vectors)
                    # other servers read these turns, and so their vectors, again
                    after = rows.bump(seen, Change(numbers, rows.terms(numbers)), None)
            if numbers:
                self._placed(after, lambda: self._vectors.add_vectors(numbers, vectors))
        return len(numbers)

    def search(
        self, query: str, limit: int = DEFAULT_LIMIT, *, filter: MessageFilter | None = None
    ) -> builtins.list[Hit]:
        if limit <= 0 or not query.strip():
            return []
        wanted = query_terms(query)
        if not wanted:  # only stopwords and punctuation: nothing asked, as by the keyword kinds
            return []
        asked = set(wanted)
        months = named_months(query)

        def hits(
            rows: Rows, best: builtins.list[tuple[int, float]] | None
        ) -> builtins.list[Hit] | None:
            if best is None:
                return None
            if not best:
                return []
            stored = rows.stored([number for number, _ in best])
            return [hit_of(stored[number], score) for number, score in best]

        def hits_unless_waiting(
            rows: Rows, begun: builtins.list[tuple[int, float]] | _Waiting
        ) -> builtins.list[Hit] | _Waiting | None:
            return begun if isinstance(begun, _Waiting) else hits(rows, begun)

        # The query is embedded once, without the names of the speakers it names (fusion's
        # dense_query), on a thread of himga.memory.beside while the caller ranks the keyword
        # side under the lock (`_begun`). Should the embedding be done first, or the model be
        # in process (the caller then waits for it), the vectors' scan follows it there and the
        # search ends under that hold of the lock; else the caller lets the lock go while it
        # waits for an endpoint's vector, and then searches the vectors itself. Should the
        # speakers the index knows have changed meanwhile (another server's turns, read in
        # now), the query is embedded again; should the index have changed, the keyword side
        # is ranked again.
        for _ in range(MOST_EMBEDDINGS):
            embedded: builtins.list[tuple[set[str], QueryVector]] = []
            begun = self._read(
                partial(self._begun, query, asked, wanted, months, limit, filter, embedded),
                hits_unless_waiting,
            )
            if not isinstance(begun, _Waiting):
                return begun or []
            vector = begun.vector.result()

            def pick(
                begun: _Waiting = begun, vector: np.ndarray = vector
            ) -> builtins.list[tuple[int, float]] | None:
                if self._named_now(asked) != begun.named:
                    return None
                first = (
                    First(begun.keyword, None, begun.gathered)
                    if begun.holds(self._vectors)
                    else None
                )
                return self._vectors.ranked(
                    wanted, vector, limit, filter, self._fusion, first, months
                )

            found = self._read(pick, hits)
            if found is not None:
                return found
        with self._lock.writing(), self._using(write=False) as (rows, _):
            vector = self._query_vector(query, self._named_now(asked))
            return (
                hits(
                    rows,
                    self._vectors.ranked(wanted, vector, limit, filter, self._fusion, None, months),
                )
                or []
            )

    def _begun(
        self,
        query: str,
        asked: set[str],
        wanted: Sequence[str],
        months: tuple[int, ...],
        limit: int,
        chosen: MessageFilter | None,
        embedded: builtins.list[tuple[set[str], QueryVector]],
    ) -> builtins.list[tuple[int, float]] | _Waiting:
        """A search of `query` (terms `wanted`, `asked`) begun under the lock: its vector set
        going (QueryVector) and its keyword side ranked meanwhile; then the fused turns, when
        the scan ran beside (the vector made first) or the model is in process (its vector
        waited for under the lock), or else what the search waits for. `embedded`: the vector set
        going by an earlier call of this search, for the speakers it named (the index was found
        behind the store's, and read in): made again only should they differ."""
        index = self._vectors
        keyword_depth, dense_depth = first_depths(limit, self._fusion)
        named = self._named_now(asked)
        if embedded and embedded[0][0] == named:  # its scan, if any, was of the index before
            earlier = embedded[0][1]
            keyword = index.keyword_side(wanted, keyword_depth)
            if not earlier.done:
                return _Waiting.of(named, earlier, keyword, index)
            made = earlier.result()
            first = First(keyword, None)
            return index.ranked(wanted, made, limit, chosen, self._fusion, first, months)
        copied: builtins.list[Gathered] = []  # the keyword hits' rows once copied: seen whole

        def then(made: np.ndarray) -> tuple[tuple[float, float], np.ndarray | None]:
            """What the scan's thread reads while the caller ends the scan: the query's cosine
            statistics, and the keyword hits' cosines once their rows are copied (else the
            caller scores them: _dense)."""
            own = index.vectors.similarities(made, copied[0]) if copied else None
            return index.vectors.stats(made), own

        vector = QueryVector(
            lambda: self._query_vector(query, named), index.scan_beside(dense_depth), then
        )
        try:
            embedded[:] = [(named, vector)]
            keyword = index.keyword_side(wanted, keyword_depth)
            in_process = self._embedder.in_process  # its vector comes in milliseconds
            if not vector.ranked(wait=in_process) and not in_process:
                return _Waiting.of(named, vector, keyword, index)
            # while the vector is still being made, the keyword hits' rows are copied
            gathered = None if vector.made else index.vectors.gathered(keyword[0])
            if gathered is not None:
                copied.append(gathered)
            nearest = vector.nearest()  # the caller joins the scan beside, if any, and waits
            made = vector.result()
        except BaseException:
            # a scan begun, or to begin once the vector is made (the caller said it waits),
            # reads the index, as does what its thread reads after it: they end before the
            # lock is let go; else none will begin now
            if vector.ranked():
                vector.wait()
            raise
        stats, cosines = vector.also if vector.also is not None else (None, None)
        first = First(keyword, nearest, gathered, stats, cosines)
        return index.ranked(wanted, made, limit, chosen, self._fusion, first, months)

    def _query_vector(self, query: str, named: set[str]) -> np.ndarray:
        """The vector of `query` with the speakers `named` left out (fusion's dense_query)."""
        found = self._embedder.embed_queries([dense_query(query, named)])
        vector: np.ndarray = as_vectors(found, self._embedder.dimension)[0]
        return vector

    def _named_now(self, asked: set[str]) -> set[str]:
        return set(self._index.windows.named(asked))


@dataclass(frozen=True, slots=True)
class _Waiting:
    """A search whose keyword side was ranked before its query's vector was made: the speakers
    left out of the embedded query, the vector to come, and the keyword side with the index it
    was ranked on, that index's count of changes then and the keyword hits' rows copied out of
    it (`of`)."""

    named: set[str]
    vector: QueryVector
    keyword: tuple[np.ndarray, np.ndarray]
    index: HybridIndex
    changes: int
    gathered: Gathered

    @classmethod
    def of(
        cls, named: set[str], vector: QueryVector, keyword: tuple[np.ndarray, np.ndarray],
        index: HybridIndex,
    ) -> _Waiting:  # fmt: skip
        """The search waiting for `vector`, its keyword hits' rows copied now, under the lock
        and while the query is embedded, so that what follows the vector has less to do."""
        return cls(named, vector, keyword, index, index.changes, index.vectors.gathered(keyword[0]))

    def holds(self, index: HybridIndex) -> bool:
        """Whether the keyword side is still `index`'s: the same index, unchanged since."""
        return index is self.index and index.changes == self.changes


MOST_EMBEDDINGS = 2
"""How many times a search embeds its query before it does so holding the lock alone."""


def _vector_rows(rows: Rows) -> VectorRows:
    """An engine's rows, as the hybrid memory's engines make them (VectorRows)."""
    return cast(VectorRows, rows)


def open_hybrid(namespace: str, place: Place, options: HybridOptions) -> IndexedMemory:
    """The registry's factory: the namespace's hybrid memory in the server's database, in its
    SQLite file in a data directory, or in memory (no place)."""
    if place is None or isinstance(place, Path):
        from himga.memory.hybrid_sqlite import HybridSQLiteMemory

        return HybridSQLiteMemory.for_namespace(namespace, place, options)
    from himga.memory.hybrid_postgres import HybridPostgresMemory

    return HybridPostgresMemory.for_namespace(namespace, place, options)
