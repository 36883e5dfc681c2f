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
    CorpusSearch,
    HoldsRecords,
    KeptParts,
    PieceReads,
    SimilarityGraphReads,
    aquery_vector,
    capabilities,
    need,
    query_vector,
    require,
)
from semrag.types import Chunk

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


class Rules:
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
            and :class:`~semrag.index.reader.CorpusSearch`; its optional capabilities are
            checked too. An index with a reader of its own (a ``SemanticIndex``) is checked
            by its reader.
        queries: a few questions about its documents (at least one).
        k: hits asked of each search.
        max_documents: documents whose reads are checked (the first ones of ``doc_ids``).
        reference: an index built from the same documents; its answers must be the
            reader's (documents, sentences, chunks, dense hits).

    Returns:
        A :class:`ReaderReport`.

    Raises:
        MissingCapabilityError: the reader lacks part of :class:`CorpusReader` or
            :class:`CorpusSearch`.
        AssertionError: naming the first rule the reader breaks.
        ConfigError: no queries given.
    """
    if not queries or k < 1:
        raise ConfigError("check_reader needs at least one query and k >= 1")
    reader = as_reader(reader)
    require(reader, CorpusReader, by="check_reader")
    search = need(reader, CorpusSearch, by="check_reader")
    rules = Rules()
    docs = _check_corpus(reader, rules, max_documents)
    for query in queries:
        _check_search(reader, search, rules, query, k)
    if offers(reader, SimilarityGraphReads):
        _check_graph(reader, rules, queries[0], k)
    _check_optional(reader, rules, docs, queries[0], k)
    if reference is not None:
        _check_against(reader, as_reader(reference), rules, docs, queries, k)
    return ReaderReport(
        type(reader).__name__,
        tuple(c.__name__ for c in capabilities(reader)),
        len(docs),
        len(queries),
        tuple(rules.names),
    )


def _chunks(reader: CorpusReader, doc_id: str, text: str) -> tuple[list[int], list[Chunk]]:
    """The ids and chunks of a document: those overlapping its whole text."""
    ids = reader.overlapping_chunks_many([(doc_id, 0, len(text))])[0]
    return ids, reader.chunks_of(ids)


def _check_corpus(reader: CorpusReader, rules: Rules, max_documents: int) -> list[str]:
    rules.hold("current_version() is an int", isinstance(reader.current_version(), int))
    doc_ids = list(reader.doc_ids)
    rules.hold("doc_ids are distinct strings", len(set(doc_ids)) == len(doc_ids))
    docs = doc_ids[:max_documents]
    unknown = uuid.uuid4().hex
    rules.hold("documents() leaves an unknown id out", reader.documents([unknown]) == {})
    try:
        reader.chunks_of([2**62])
    except KeyError:
        rules.hold("an unknown chunk id is a KeyError (NotIndexedError)", True)
    else:
        rules.hold("an unknown chunk id is a KeyError (NotIndexedError)", False)
    dim = int(reader.embedder.dim)
    with reader.read():
        records = reader.documents(docs)
        rules.hold("documents() gives every indexed id", sorted(records) == sorted(docs))
        for d in docs:
            _check_document(reader, rules, d, records[d], dim)
    return docs


def _check_document(reader: CorpusReader, rules: Rules, d: str, record: Any, dim: int) -> None:
    text = record.doc.text
    rules.hold("a record is of its document", record.doc.id == d, d)
    spans = list(record.sentences)
    rules.hold(
        "sentences are ordered spans of the text",
        all(0 <= s.start < s.end <= len(text) for s in spans)
        and all(a.end <= b.start for a, b in zip(spans, spans[1:], strict=False)),
        d,
    )
    svec = np.asarray(record.sentence_vectors)
    rules.hold("one sentence vector per sentence", svec.shape == (len(spans), dim), d)
    rules.hold("themes are strings", all(isinstance(t, str) for t in record.themes), d)
    ids, chunks = _chunks(reader, d, text)
    rules.hold(
        "a chunk's text is its span of the document",
        all(c.doc_id == d and text[c.start : c.end] == c.text for c in chunks),
        d,
    )
    rules.hold(
        "the chunks overlapping a text are in text order",
        [c.start for c in chunks] == sorted(c.start for c in chunks),
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


def _check_search(
    reader: CorpusReader, search: CorpusSearch, rules: Rules, query: str, k: int
) -> None:
    q = np.asarray(query_vector(reader, query), np.float32)
    rules.hold("a query vector is one unit row", q.ndim == 1 and abs(np.linalg.norm(q) - 1) < 1e-3)
    aq = asyncio.run(aquery_vector(reader, query))
    rules.hold("the embedder's aembed equals its embed", np.allclose(aq, q, atol=1e-6))
    with reader.read():
        scores, found = search.dense_search(q, k)
        ids = [int(i) for i in np.asarray(found).reshape(-1) if i >= 0]
        dense = np.asarray(scores, np.float64).reshape(-1)[: len(ids)]
        rules.hold("dense_search returns at most k hits", len(ids) <= k)
        _descending(rules, "dense scores descend", dense.tolist())
        cosines = np.asarray(reader.vectors_of(ids), np.float32) @ q if ids else np.zeros(0)
        rules.hold(
            "a dense score is the cosine of the query and the chunk's vector",
            np.allclose(cosines, dense, atol=_ATOL),
            query,
        )
        channel, sparse_lists = search.search_channels(q[None, :], [query], k)
        rules.hold(
            "search_channels' dense ids are dense_search's",
            [int(i) for i in np.asarray(channel)[0] if i >= 0] == ids,
            query,
        )
        pairs = list(sparse_lists[0])
        rules.hold("the BM25 channel returns at most k hits", len(pairs) <= k)
        _descending(rules, "BM25 scores descend", [s for _, s in pairs])
        some = sorted({i for i, _ in pairs} | set(ids))
        many = np.asarray(search.sparse_scores_many([query, query], some))
        by_id = dict(zip(some, many[0].tolist(), strict=True)) if len(many) else {}
        rules.hold(
            "sparse_scores_many gives the BM25 hits' scores, one row per query",
            many.shape == (2, len(some))
            and np.allclose(many[0], many[1], atol=_ATOL)
            and all(math.isclose(by_id[i], s, rel_tol=1e-4, abs_tol=_ATOL) for i, s in pairs),
            query,
        )


def _check_graph(reader: Any, rules: Rules, query: str, k: int) -> None:
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
    texts = {d: r.doc.text for d, r in reader.documents([h.chunk.doc_id for h in hits]).items()}
    rules.hold(
        "the SSG traversal returns sentences of the documents",
        all(h.chunk.text == texts[h.chunk.doc_id][h.chunk.start : h.chunk.end] for h in hits),
        query,
    )


def _check_optional(
    reader: CorpusReader, rules: Rules, docs: Sequence[str], query: str, k: int
) -> None:
    if offers(reader, AsyncReads):
        _check_twins(reader, rules, docs, query, k)
    if offers(reader, KeptParts):
        rules.hold("parts is a mapping", isinstance(reader.parts, Mapping))
    if offers(reader, HoldsRecords):
        for d, record in reader.documents(docs).items():
            rules.hold(
                "indexed(d) is one record until d changes", reader.indexed(d) is reader.indexed(d)
            )
            rules.hold(
                "chunk_ids are the ids of the document's chunks",
                list(reader.chunk_ids(d)) == _chunks(reader, d, record.doc.text)[0],
                d,
            )
    if offers(reader, PieceReads) and reader.piece_index is not None:
        split = reader.piece_index.split
        rules.hold(
            "kept pieces name their split", len(split) == 2 and all(int(n) > 0 for n in split)
        )


def _check_twins(reader: Any, rules: Rules, docs: Sequence[str], query: str, k: int) -> None:
    """Each awaited read answers as its blocking twin."""
    q = query_vector(reader, query)
    ids = [int(i) for i in reader.dense_search(q, k)[1] if i >= 0]
    docs = docs[:3]
    spans = [(d, 0, 10**9) for d in docs]

    async def twins() -> list[tuple[str, bool]]:
        with reader.read():
            texts = {d: r.doc.text for d, r in (await reader.adocuments(docs)).items()}
            over = await reader.aoverlapping_chunks_many(spans)
            found = [int(i) for i in (await reader.adense_search(q, k))[1] if i >= 0]
            sparse = await reader.asparse_scores_many([query], ids)
            return [
                ("acurrent_version", await reader.acurrent_version() == reader.current_version()),
                ("adocuments", texts == {d: r.doc.text for d, r in reader.documents(docs).items()}),
                ("achunks_of", await reader.achunks_of(ids) == reader.chunks_of(ids)),
                ("aoverlapping_chunks_many", over == reader.overlapping_chunks_many(spans)),
                ("adense_search", found == ids),
                (
                    "asparse_scores_many",
                    np.allclose(sparse, reader.sparse_scores_many([query], ids), atol=_ATOL),
                ),
            ]

    for name, ok in asyncio.run(twins()):
        rules.hold(f"{name} answers as its blocking twin", ok)


def _check_against(
    reader: CorpusReader,
    reference: CorpusReader,
    rules: Rules,
    docs: Sequence[str],
    queries: Sequence[str],
    k: int,
) -> None:
    rules.hold(
        "the reference holds the same documents",
        sorted(reader.doc_ids) == sorted(reference.doc_ids),
    )
    with reader.read(), reference.read():
        mine, theirs = reader.documents(docs), reference.documents(docs)
        for d in docs:
            text = mine[d].doc.text
            rules.hold(
                "each document, its sentences and chunks equal the reference's",
                text == theirs[d].doc.text
                and list(mine[d].sentences) == list(theirs[d].sentences)
                and [_span(c) for c in _chunks(reader, d, text)[1]]
                == [_span(c) for c in _chunks(reference, d, text)[1]],
                d,
            )
    search, ref_search = (
        need(reader, CorpusSearch, by="check_reader"),
        need(reference, CorpusSearch, by="check_reader"),
    )
    for query in queries:
        q = query_vector(reference, query)
        got, want = search.dense_search(q, k), ref_search.dense_search(q, k)
        rules.hold(
            "dense hits equal the reference's",
            [_span(c) for c in reader.chunks_of([int(i) for i in got[1] if i >= 0])]
            == [_span(c) for c in reference.chunks_of([int(i) for i in want[1] if i >= 0])]
            and np.allclose(got[0][got[1] >= 0], want[0][want[1] >= 0], atol=_ATOL),
            query,
        )


def _span(chunk: Chunk) -> tuple[str, int, int, str]:
    return (chunk.doc_id, chunk.start, chunk.end, chunk.text)


def _descending(rules: Rules, name: str, scores: Sequence[float]) -> None:
    rules.hold(name, all(a >= b - 1e-9 for a, b in zip(scores, scores[1:], strict=False)))
