"""The reader contract as one call: :func:`check_reader`.

A third party that serves a semrag index from another database writes a reader (see
:mod:`semrag.index.reader` and ``docs/readers.md``) and proves it keeps the contract the
retrievers rely on::

    from semrag.testing import check_reader

    report = check_reader(MyReader(...), queries=["what do bees eat?"])
    print(report)  # the capabilities it offers, what was checked

The checks need no second index: every answer is checked against the reader's own other
answers (a chunk's text against its document, a dense hit's score against the chunk's
vector, the BM25 channel against the sparse scores, each async twin against its sync
read). Given a ``reference`` (an embedded :class:`~semrag.SemanticIndex` built from the
same documents), the reader's documents, chunks and dense hits must also equal its.
"""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semrag._rwlock import ProvidesReader, as_reader
from semrag._validation import offers
from semrag.errors import ConfigError
from semrag.index.reader import (
    AsyncReads,
    CorpusReader,
    CorpusReads,
    CorpusSearch,
    HoldsRecords,
    KeptParts,
    PieceReads,
    SimilarityGraphReads,
    capabilities,
    require,
)

__all__ = ["ReaderReport", "check_reader"]

_ATOL = 1e-4  # float32 dot products computed in other orders (a database's, FAISS's)


@dataclass(frozen=True)
class ReaderReport:
    """What :func:`check_reader` found: the reader's capabilities and what it checked."""

    reader: str
    """The reader's class name."""
    capabilities: tuple[str, ...]
    """The capability protocols it offers (:mod:`semrag.index.reader`)."""
    documents: int
    """Documents whose reads were checked."""
    queries: int
    """Queries whose searches were checked."""
    checks: tuple[str, ...] = field(default=())
    """The rules that were checked, in order."""

    def __str__(self) -> str:
        return (
            f"{self.reader}: {', '.join(self.capabilities)}; {len(self.checks)} rules held on "
            f"{self.documents} documents and {self.queries} queries"
        )


class _Rules:
    """Collects the names of the rules checked; fails on the first broken one."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def hold(self, name: str, ok: object, detail: str = "") -> None:
        if name not in self.names:
            self.names.append(name)
        if not ok:
            raise AssertionError(f"reader contract: {name}" + (f" ({detail})" if detail else ""))


def check_reader(
    reader: Any,
    *,
    queries: Sequence[str],
    k: int = 5,
    max_documents: int = 20,
    reference: CorpusReader | ProvidesReader | None = None,
) -> ReaderReport:
    """Check that ``reader`` keeps the reader contract; return what it offers.

    Args:
        reader: the reader to check: it must offer :class:`~semrag.index.reader.CorpusReader`
            (reads, searches, the SSG view); its optional capabilities are checked too. An
            index with a reader of its own (a ``SemanticIndex``) is checked by its reader.
        queries: a few questions about its documents (at least one).
        k: hits asked of each search.
        max_documents: documents whose reads are checked (the first ones of ``doc_ids``).
        reference: an index built from the same documents; its answers must be the
            reader's (documents, sentences, chunks, dense hits).

    Returns:
        A :class:`ReaderReport`.

    Raises:
        MissingCapabilityError: the reader lacks part of :class:`CorpusReader`.
        AssertionError: naming the first rule the reader breaks.
        ConfigError: no queries given.
    """
    if not queries or k < 1:
        raise ConfigError("check_reader needs at least one query and k >= 1")
    reader = as_reader(reader)
    if reference is not None:
        reference = as_reader(reference)
    require(reader, CorpusReads, CorpusSearch, SimilarityGraphReads, by="check_reader")
    rules = _Rules()
    docs = _check_corpus(reader, rules, max_documents)
    for query in queries:
        _check_search(reader, rules, query, k)
    _check_graph(reader, rules, queries[0], k)
    _check_optional(reader, rules, docs)
    if reference is not None:
        _check_against(reader, reference, rules, docs, queries, k)
    return ReaderReport(
        type(reader).__name__,
        tuple(c.__name__ for c in capabilities(reader)),
        len(docs),
        len(queries),
        tuple(rules.names),
    )


def _check_corpus(reader: Any, rules: _Rules, max_documents: int) -> list[str]:
    version = reader.version
    rules.hold(
        "version is an int, and current_version() is it", version == reader.current_version()
    )
    doc_ids = list(reader.doc_ids)
    rules.hold("doc_ids are distinct strings", len(set(doc_ids)) == len(doc_ids))
    rules.hold("len(reader) counts the documents", len(reader) == len(doc_ids))
    rules.hold("an unknown id is not in the reader", uuid.uuid4().hex not in reader)
    docs = doc_ids[:max_documents]
    rules.hold("every document id is in the reader", all(d in reader for d in docs))
    try:
        reader.document(uuid.uuid4().hex)
    except KeyError:
        rules.hold("an unknown document is a KeyError (NotIndexedError)", True)
    else:
        rules.hold("an unknown document is a KeyError (NotIndexedError)", False)
    dim = int(reader.embedder.dim)
    reader.fetch_documents(docs)
    with reader.read():
        for d in docs:
            _check_document(reader, rules, d, dim)
    return docs


def _check_document(reader: Any, rules: _Rules, d: str, dim: int) -> None:
    text = reader.document(d).text
    spans = reader.sentences(d)
    rules.hold(
        "sentences are ordered spans of the text",
        all(0 <= s.start < s.end <= len(text) for s in spans)
        and all(a.end <= b.start for a, b in zip(spans, spans[1:], strict=False)),
        d,
    )
    svec = np.asarray(reader.sentence_vectors(d))
    rules.hold("one sentence vector per sentence", svec.shape == (len(spans), dim), d)
    chunks = reader.chunks(d)
    rules.hold(
        "a chunk's text is its span of the document",
        all(c.doc_id == d and text[c.start : c.end] == c.text for c in chunks),
        d,
    )
    rules.hold(
        "chunks are in text order", [c.start for c in chunks] == sorted(c.start for c in chunks)
    )
    ids = reader.overlapping_chunks(d, 0, len(text))
    rules.hold(
        "the chunks overlapping the whole text are its chunks, by id",
        [_span(reader.chunk(i)) for i in ids] == [_span(c) for c in chunks],
        d,
    )
    many = reader.overlapping_chunks_many([(d, 0, len(text)), (d, 0, 0)])
    rules.hold("overlapping_chunks_many answers each span", list(many) == [list(ids), []], d)
    vectors = np.asarray(reader.vectors_of(ids))
    rules.hold("one chunk vector per id", vectors.shape == (len(ids), dim), d)
    norms = np.linalg.norm(vectors, axis=1) if len(ids) else np.zeros(0)
    rules.hold(
        "chunk vectors are finite and unit length (or zero)",
        bool(np.isfinite(vectors).all())
        and all(abs(n - 1) < 1e-3 or n == 0 for n in norms.tolist()),
        d,
    )
    per_chunk = reader.sentence_vectors_of(ids)
    rules.hold(
        "sentence_vectors_of gives each chunk's sentence vectors",
        len(per_chunk) == len(ids) and all(np.asarray(v).shape[-1] == dim for v in per_chunk),
        d,
    )
    rules.hold("themes are strings", all(isinstance(t, str) for t in reader.themes(d)), d)


def _check_search(reader: Any, rules: _Rules, query: str, k: int) -> None:
    q = np.asarray(reader.embed_query(query), np.float32)
    rules.hold("a query vector is one unit row", q.ndim == 1 and abs(np.linalg.norm(q) - 1) < 1e-3)
    aq = asyncio.run(reader.aembed_query(query))
    rules.hold("aembed_query equals embed_query", np.allclose(aq, q, atol=1e-6))
    with reader.read():
        dense = reader.search(query, k)
        rules.hold("search returns at most k hits", len(dense) <= k)
        _descending(rules, "dense scores descend", dense)
        rules.hold(
            "search_vector of the query's vector equals search",
            _hits(reader.search_vector(q, k)) == _hits(dense),
            query,
        )
        ids, sparse_lists = reader.search_channels(q[None, :], [query], k)
        ids = [int(i) for i in np.asarray(ids)[0] if i >= 0]
        rules.hold(
            "search_channels' dense ids are search's hits",
            [_span(reader.chunk(i)) for i in ids] == [_span(h.chunk) for h in dense],
            query,
        )
        cosines = np.asarray(reader.vectors_of(ids), np.float32) @ q if ids else np.zeros(0)
        rules.hold(
            "a dense score is the cosine of the query and the chunk's vector",
            np.allclose(cosines, [h.score for h in dense], atol=_ATOL),
            query,
        )
        sparse = reader.search_sparse(query, k)
        rules.hold("search_sparse returns at most k hits", len(sparse) <= k)
        _descending(rules, "BM25 scores descend", sparse)
        pairs = list(sparse_lists[0])
        rules.hold(
            "search_channels' BM25 hits are search_sparse's",
            [_span(reader.chunk(i)) for i, _ in pairs] == [_span(h.chunk) for h in sparse]
            and np.allclose([s for _, s in pairs], [h.score for h in sparse], atol=_ATOL),
            query,
        )
        some = sorted({i for i, _ in pairs} | set(ids))
        scores = np.asarray(reader.sparse_scores(query, some))
        by_id = dict(zip(some, scores.tolist(), strict=True))
        rules.hold(
            "sparse_scores are the BM25 hits' scores",
            all(math.isclose(by_id[i], s, rel_tol=1e-4, abs_tol=_ATOL) for i, s in pairs),
            query,
        )
        many = np.asarray(reader.sparse_scores_many([query, query], some))
        rules.hold(
            "sparse_scores_many stacks sparse_scores",
            many.shape == (2, len(some)) and np.allclose(many[0], scores, atol=_ATOL),
        )
    found = asyncio.run(reader.asearch(query, k))
    rules.hold("asearch equals search", _hits(found) == _hits(reader.search(query, k)), query)


def _check_graph(reader: Any, rules: _Rules, query: str, k: int) -> None:
    if reader.ssg_config is None:
        try:
            reader.ssg_view()
        except ConfigError:
            rules.hold("ssg_view() without a graph is a ConfigError", True)
        else:
            rules.hold("ssg_view() without a graph is a ConfigError", False)
        return
    from semrag.retrieval.ssg import SSGRetriever

    hits = SSGRetriever(reader, k=k).retrieve(query)
    rules.hold(
        "the SSG traversal returns sentences of the documents",
        all(
            h.chunk.text == reader.document(h.chunk.doc_id).text[h.chunk.start : h.chunk.end]
            for h in hits
        ),
        query,
    )


def _check_optional(reader: CorpusReader, rules: _Rules, docs: Sequence[str]) -> None:
    if offers(reader, AsyncReads):
        version = asyncio.run(reader.acurrent_version())
        rules.hold("acurrent_version equals current_version", version == reader.current_version())
    if offers(reader, KeptParts):
        rules.hold("parts is a mapping", isinstance(reader.parts, Mapping))
    if offers(reader, HoldsRecords):
        for d in docs:
            text = reader.document(d).text
            rules.hold(
                "indexed(d) is one record until d changes", reader.indexed(d) is reader.indexed(d)
            )
            rules.hold(
                "chunk_ids are the ids of the document's chunks",
                list(reader.chunk_ids(d)) == list(reader.overlapping_chunks(d, 0, len(text))),
                d,
            )
    if offers(reader, PieceReads) and reader.piece_index is not None:
        split = reader.piece_index.split
        rules.hold(
            "kept pieces name their split", len(split) == 2 and all(int(n) > 0 for n in split)
        )


def _check_against(
    reader: Any,
    reference: CorpusReader,
    rules: _Rules,
    docs: Sequence[str],
    queries: Sequence[str],
    k: int,
) -> None:
    rules.hold(
        "the reference holds the same documents",
        sorted(reader.doc_ids) == sorted(reference.doc_ids),
    )
    with reader.read(), reference.read():
        for d in docs:
            rules.hold(
                "each document, its sentences and chunks equal the reference's",
                reader.document(d).text == reference.document(d).text
                and reader.sentences(d) == reference.sentences(d)
                and [_span(c) for c in reader.chunks(d)] == [_span(c) for c in reference.chunks(d)],
                d,
            )
    for query in queries:
        got, want = reader.search(query, k), reference.search(query, k)
        rules.hold(
            "dense hits equal the reference's",
            [_span(h.chunk) for h in got] == [_span(h.chunk) for h in want]
            and np.allclose([h.score for h in got], [h.score for h in want], atol=_ATOL),
            query,
        )


def _span(chunk: Any) -> tuple[str, int, int, str]:
    return (chunk.doc_id, chunk.start, chunk.end, chunk.text)


def _hits(found: Sequence[Any]) -> list[tuple[str, int, int, float]]:
    return [(h.chunk.doc_id, h.chunk.start, h.chunk.end, round(float(h.score), 4)) for h in found]


def _descending(rules: _Rules, name: str, found: Sequence[Any]) -> None:
    scores = [float(h.score) for h in found]
    rules.hold(name, all(a >= b - 1e-9 for a, b in zip(scores, scores[1:], strict=False)))
