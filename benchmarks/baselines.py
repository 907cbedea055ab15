"""Off-the-shelf retrievers bench-memory times beside himga's memories, in the same run.

Each takes the same messages and answers the same questions as a memory's `retrieve` does: the
CONTEXT_HITS best messages' text, one document per message, English stemming and stopwords.
Both are pinned exactly in the `dev` extra of pyproject.toml; neither is a dependency of himga.

- tantivy (Rust's Lucene-like engine, its official Python binding): an index in RAM, the
  `en_stem` analyzer, the question parsed as a disjunction of its words (query syntax removed),
  the top hits' stored text read back. `en_stem` keeps stopwords, so a question's "what", "did"
  and "the" cost it postings himga never reads; `Tantivy(himga_terms=True)` indexes and asks
  himga's own terms instead (himga.memory.text: the same words, stopwords and single letters
  dropped, the same Porter stems), so both engines walk the postings of the same terms.
- bm25s (BM25 over sparse matrices, numpy): its tokenizer with its English stopwords and
  PyStemmer's English stemmer; it indexes a fixed corpus at once, so it has no incremental
  ingest.
"""

from __future__ import annotations

import re
from typing import Any

from himga.memory.context import CONTEXT_HITS
from himga.memory.text import query_terms, terms_of

_SYNTAX = re.compile(r"[^\w\s]")


class Tantivy:
    """An in-RAM tantivy index of one document a message: its text through `en_stem`, or with
    `himga_terms` himga's terms of it (joined by spaces, split on them by tantivy's whitespace
    tokenizer; the text is stored apart, indexed as one raw token)."""

    def __init__(self, *, himga_terms: bool = False) -> None:
        import tantivy

        schema = tantivy.SchemaBuilder()
        self._himga_terms = himga_terms
        if himga_terms:
            schema.add_text_field("content", stored=True, tokenizer_name="raw")
            schema.add_text_field("terms", tokenizer_name="whitespace")
        else:
            schema.add_text_field("content", stored=True, tokenizer_name="en_stem")
        self._schema = schema.build()
        self._index = tantivy.Index(self._schema)
        self._writer = self._index.writer()
        self._tantivy = tantivy

    def ingest_many(self, pairs: list[tuple[Any, Any]]) -> None:
        document = self._tantivy.Document
        if self._himga_terms:
            contents = [message.content for message, _ in pairs]
            for content, own in zip(contents, terms_of(contents), strict=True):
                self._writer.add_document(document(content=content, terms=" ".join(own)))
        else:
            for message, _ in pairs:
                self._writer.add_document(document(content=message.content))
        self._writer.commit()
        self._writer.wait_merging_threads()
        self._writer = self._index.writer()
        self._index.reload()
        self._searcher = self._index.searcher()

    def retrieve(self, question: str) -> list[str]:
        if self._himga_terms:
            query = self._query_of(query_terms(question))
            if query is None:
                return []
        else:
            query = self._index.parse_query(_SYNTAX.sub(" ", question), ["content"])
        found = self._searcher.search(query, CONTEXT_HITS).hits
        return [self._searcher.doc(address)["content"][0] for _, address in found]

    def _query_of(self, wanted: list[str]) -> Any:
        """A disjunction of `wanted` (himga's terms of a question), None for no term."""
        if not wanted:
            return None
        query, occur = self._tantivy.Query, self._tantivy.Occur.Should
        return query.boolean_query(
            [(occur, query.term_query(self._schema, "terms", term)) for term in wanted]
        )


class BM25S:
    """A bm25s index of one document a message, built once over all of them."""

    def __init__(self) -> None:
        import bm25s
        import Stemmer

        self._bm25s = bm25s
        self._stemmer = Stemmer.Stemmer("english")
        self._texts: list[str] = []

    def ingest_many(self, pairs: list[tuple[Any, Any]]) -> None:
        self._texts.extend(message.content for message, _ in pairs)
        tokens = self._tokens(self._texts)
        self._retriever = self._bm25s.BM25()
        self._retriever.index(tokens, show_progress=False)

    def _tokens(self, texts: list[str], ids: bool = True) -> Any:
        return self._bm25s.tokenize(
            texts, stopwords="en", stemmer=self._stemmer, return_ids=ids, show_progress=False
        )

    def retrieve(self, question: str) -> list[str]:
        asked = self._tokens([question], ids=False)  # words: the index maps them to its ids
        found, _ = self._retriever.retrieve(
            asked, k=min(CONTEXT_HITS, len(self._texts)), show_progress=False
        )
        return [self._texts[int(i)] for i in found[0]]
