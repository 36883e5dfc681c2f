"""SemanticIndex: documents, sentences, chunks, vectors, dense + BM25 indexes and the SSG.

One object owns everything retrievers need, computed once and batched:

* the documents and their sentence spans (from the chunker's splitter);
* one vector per sentence (the chunker reuses them through the embedder's cache);
* the chunks of the chunker, a vector per chunk, a FAISS index and a BM25 index over the
  same integer ids;
* the semantic similarity graph (window nodes, kNN edges, themes, bridges).

These are the index's *parts*. A write (``add_documents``, ``delete``) computes what it
adds once, makes one :class:`~semrag.index.change.Change` and hands it to every part in
``_commit``: the dense and BM25 indexes, the graph (:class:`~semrag.index.live_ssg.LiveSSG`)
and every follower (a :class:`~semrag.graph.KnowledgeGraph` built over the index). No
part rebuilds from scratch; each applies the change. Readers of the graph take one
:class:`SSGView` (a version) and never see a half-applied change.

``save(dir)`` writes a versioned directory atomically; ``SemanticIndex.load(dir)`` checks
format, checksums and the embedder's dimension.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import functools
import itertools
import json
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag._rwlock import RWLock
from semrag._steps import Call, acall, adrive, call, drive
from semrag._validation import HasMethods, Options, check_k, check_query, validate_params
from semrag.chunking._split import mean_windows
from semrag.chunking.base import BoundaryChunker, as_documents
from semrag.embeddings import BaseEmbedder, as_embedder
from semrag.errors import ConfigError, DocumentConflictError, NotIndexedError, StoreError
from semrag.identity import OnConflict, check_on_conflict
from semrag.index.change import Change, IndexedDocument, IndexPart, StagedPart
from semrag.index.dense import DenseIndex, top_k
from semrag.index.external import StoreBackedDense, VectorClient
from semrag.index.live_ssg import LiveSSG
from semrag.index.passages import PassagePhrases
from semrag.index.persist import atomic_directory, read_manifest
from semrag.index.pieces import PieceIndex, check_split
from semrag.index.presplit import place_chunks, whole_document_chunk
from semrag.index.sparse import IDF_VARIANTS, BM25Index
from semrag.index.ssg import SemanticSimilarityGraph, SSGConfig, keyword_themes, window_ranges
from semrag.llm import LLM, acomplete_json, complete_json, llm_failure
from semrag.types import Chunk, Document, MetadataFilter, ScoredChunk, Span, as_filter

__all__ = ["SSGView", "SemanticIndex"]

Floats = npt.NDArray[np.float32]
_WHOLE = "whole"  # add_documents(split=False): each document is one chunk
_Given = dict[str, list[Chunk]] | str | None  # chunks not made by the chunker
FORMAT_VERSION = 2  # 2: the graph saves its neighbour lists (format 1 is read and rebuilt)
KIND = "semrag.SemanticIndex"

_THEME_SCHEMA = {
    "type": "object",
    "required": ["themes"],
    "properties": {"themes": {"type": "array", "items": {"type": "string", "minLength": 1}}},
}
_THEME_PROMPT = (
    "Read the start of a document and name its {n} main themes, each in a few words.\n"
    'Reply with JSON only: {{"themes": ["...", "..."]}}\n\nDOCUMENT:\n{text}\n'
)


def _mean_of(vectors: Floats, ranges: Sequence[Sequence[int]], dim: int) -> Floats:
    """Unit-norm mean of ``vectors[a:b]`` for each ``(a, b)``; ``(0, dim)`` when none."""
    if not len(ranges):
        return np.zeros((0, dim), np.float32)
    return _normalise(mean_windows(vectors, np.asarray(ranges, dtype=np.int64)))


def _normalise(v: Floats) -> Floats:
    norms = np.linalg.norm(v, axis=-1, keepdims=True)
    out = np.divide(v, norms, out=np.zeros_like(v), where=norms > 0)
    return out.astype(np.float32, copy=False)


class _NodeSearch:
    """Exact inner-product top-k over a fixed matrix, with :class:`DenseIndex`'s shape."""

    def __init__(self, vectors: Floats) -> None:
        self.vectors = vectors

    def search(self, query: Floats, k: int) -> tuple[Floats, npt.NDArray[np.int64]]:
        """``(scores, ids)`` of shape ``(1, k)``, best first; missing slots have id -1."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        scores = np.full((1, k), -np.inf, np.float32)
        ids = np.full((1, k), -1, np.int64)
        n = self.vectors.shape[0]
        if n == 0:
            return scores, ids
        kk = min(k, n)
        ids[:, :kk], scores[:, :kk] = top_k((self.vectors @ q)[None, :], kk)
        return scores, ids


class _NodeANNSearch:
    """Approximate top-k over one version's window nodes, with :class:`_NodeSearch`'s shape.

    The HNSW hits (serials) map back to nodes through the version's increasing serials;
    each hit is scored exactly (its vector times the query) and ties go to the lower node.
    """

    def __init__(self, ann: Any, serials: npt.NDArray[np.int64], vectors: Floats) -> None:
        self.ann, self.serials, self.vectors = ann, serials, vectors

    def search(self, query: Floats, k: int) -> tuple[Floats, npt.NDArray[np.int64]]:
        """``(scores, ids)`` of shape ``(1, k)``, best first; missing slots have id -1."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        scores = np.full((1, k), -np.inf, np.float32)
        ids = np.full((1, k), -1, np.int64)
        n = self.vectors.shape[0]
        if n == 0 or k < 1:
            return scores, ids
        hits = self.ann.search(q[None, :], min(k, n))[0][0]
        hits = hits[hits >= 0]
        nodes = np.searchsorted(self.serials, hits)
        found = nodes < n
        found[found] = self.serials[nodes[found]] == hits[found]
        nodes = nodes[found]
        exact = self.vectors[nodes] @ q
        order = np.lexsort((nodes, -exact))
        ids[0, : order.size], scores[0, : order.size] = nodes[order], exact[order]
        return scores, ids


class SSGView:
    """One consistent version of the similarity graph and the documents it was built from.

    A traversal takes a view once (:meth:`SemanticIndex.ssg_view`) and reads everything
    through it: the graph, the sentence vectors, where each sentence is, the window nodes
    as chunks and the node index. A writer that changes the index meanwhile leads to a new
    version; it never changes this one, so a reader never mixes two versions.
    """

    def __init__(
        self,
        version: int,
        graph: SemanticSimilarityGraph,
        entries: Mapping[str, IndexedDocument],
        sentence_matrix: Floats,
        sentence_offsets: Sequence[int],
        tokenizer: Any,
        dim: int,
    ) -> None:
        self.version = version
        self.graph = graph
        self._entries = entries
        self._doc_order = graph.doc_ids
        self.sentence_matrix = sentence_matrix
        self._offsets = list(sentence_offsets)
        self._tokenizer = tokenizer
        self._dim = dim

    def has_document(self, doc_id: str) -> bool:
        """Whether ``doc_id`` is in this version."""
        return doc_id in self._entries

    @property
    def node_index(self) -> _NodeSearch | _NodeANNSearch:
        """Search over this version's window nodes (ids = node numbers).

        Exact: the version's node vectors times the query, nothing built for it, so a
        change never leaves an index to rebuild on the next query. With
        ``SSGConfig(knn="hnsw")``: the graph's persistent HNSW, masked to this version's
        nodes (approximate, ``log`` of the nodes per query; scores exact).
        """
        g = self.graph
        if g.node_ann is not None and g.node_serial is not None:
            return _NodeANNSearch(g.node_ann, g.node_serial, g.node_vectors)
        return _NodeSearch(g.node_vectors)

    def sentence_location(self, global_index: int) -> tuple[str, Span]:
        """``(doc_id, span)`` of a sentence by its index in :attr:`sentence_matrix`."""
        d = bisect.bisect_right(self._offsets, global_index) - 1
        doc_id = self._doc_order[d]
        return doc_id, self._entries[doc_id].sentences[global_index - self._offsets[d]]

    def sentence_text(self, global_index: int) -> str:
        """The text of a sentence by its index in :attr:`sentence_matrix`."""
        doc_id, span = self.sentence_location(global_index)
        return span.of(self._entries[doc_id].doc.text)

    def node_chunk(self, node: int) -> Chunk:
        """A window node as a :class:`Chunk` with exact offsets (in this version)."""
        a, b = self.graph.node_sentences[node]
        return self.sentences_chunk(int(a), int(b), index=node)

    def sentences_chunk(self, first: int, end: int, *, index: int = 0) -> Chunk:
        """Global sentences ``first .. end - 1`` (all of one document) as one :class:`Chunk`.

        Raises:
            ConfigError: if the range is empty or crosses a document boundary.
        """
        d = bisect.bisect_right(self._offsets, first) - 1
        if not (0 <= first < self._offsets[-1] and first < end <= self._offsets[d + 1]):
            raise ConfigError(
                f"sentences {first}..{end - 1} are not a non-empty run of one document"
            )
        doc_id = self._doc_order[d]
        entry = self._entries[doc_id]
        a, b = first - self._offsets[d], end - self._offsets[d]
        start, stop = entry.sentences[a].start, entry.sentences[b - 1].end
        text = entry.doc.text[start:stop]
        return Chunk(
            doc_id=doc_id,
            start=start,
            end=stop,
            text=text,
            token_count=int(self._tokenizer.count([text])[0]),
            index=index,
            sentence_start=a,
            sentence_end=b,
            metadata=entry.doc.metadata,
        )


class SemanticIndex:
    """Everything the retrievers search, built once and kept in step.

    Args:
        chunker: any semrag chunker; default ``SemanticChunker(embedder)``.
        embedder: the embedder for sentences, chunks and queries; default the chunker's,
            or the packaged all-MiniLM-L6-v2.
        ssg: an :class:`~semrag.index.ssg.SSGConfig`, ``True`` for the defaults, or
            ``False`` to skip the semantic similarity graph.
        dense: ``"flat"`` (exact inner product), ``"hnsw"`` for large corpora, or a
            :class:`~semrag.index.external.VectorClient`: the dense channel on a vector
            store you already run (the adapters wrap LangChain and LlamaIndex stores).
        sparse: the BM25 idf: ``"okapi"`` (as rank-bm25 scores; a term in more than half
            the chunks scores 0 or near it, which on a corpus of a few chunks is most
            terms) or ``"lucene"`` (always positive, as Lucene and Elasticsearch score;
            use it for small corpora). See :class:`~semrag.index.sparse.BM25Index`.
        chunk_vectors: ``"embed"`` embeds each chunk's text (the model truncates long
            chunks); ``"mean"`` averages the chunk's sentence vectors (no extra cost, no
            truncation).
        theme_llm: an :class:`~semrag.llm.LLM` that names document themes; without one,
            themes are TF-IDF keywords.
        on_llm_error: when the theme LLM fails for a document: ``"fallback"`` (its
            keyword themes are used and :attr:`notes` says so) or ``"raise"``.
        pieces: ``(max_tokens, overlap_tokens)``: also keep every chunk cut again into
            small overlapping pieces with their vectors, as SKETCH searches them (the
            paper: ``(100, 16)``; see :class:`~semrag.index.pieces.PieceIndex`). Each
            change splits and embeds its own documents' pieces, and they are saved with
            the index, so no SKETCH query with that split embeds a piece. ``None``
            (default): a :class:`~semrag.retrieval.SketchRetriever` makes them itself on
            its first query after each change.
        passages: also keep every chunk's entity phrases and the phrase names' vectors,
            what :class:`~semrag.retrieval.PPRRetriever` (``GraphRetriever()``'s default)
            builds its passage graph from (see :class:`~semrag.index.passages.PassagePhrases`).
            Each change finds its own documents' phrases and embeds their new names, and
            they are saved with the index, so a retriever (in this process or one that
            loads the index) finds no phrase and embeds no name. ``False`` (default): the
            first ``PPRRetriever`` query enables the part (:meth:`enable`), and from then
            on it is kept the same way.
        show_progress: progress bars on long builds.

    Attributes:
        notes: every fallback taken while indexing, with its reason.

    Examples:
        >>> from semrag.testing import FakeEmbedder
        >>> index = SemanticIndex(embedder=FakeEmbedder())
        >>> docs = [Document("a", "Cats purr. Cats nap."), Document("b", "Stocks fell.")]
        >>> index.add_documents(docs)
        >>> [h.chunk.doc_id for h in index.search("stocks", k=1)]
        ['b']
    """

    def __init__(
        self,
        chunker: BoundaryChunker | None = None,
        embedder: Any = None,
        *,
        ssg: SSGConfig | bool = True,
        dense: str | VectorClient = "flat",
        sparse: str = "okapi",
        chunk_vectors: str = "embed",
        theme_llm: LLM | None = None,
        on_llm_error: str = "fallback",
        pieces: tuple[int, int] | None = None,
        passages: bool = False,
        show_progress: bool = False,
    ) -> None:
        from semrag.chunking.semantic import SemanticChunker

        p = validate_params(
            "SemanticIndex",
            {
                "dense": [Options("flat", "hnsw"), HasMethods("upsert", "delete", "search")],
                "sparse": [Options(*IDF_VARIANTS)],
                "chunk_vectors": [Options("embed", "mean")],
                "theme_llm": [HasMethods("complete", "acomplete"), None],
                "on_llm_error": [Options("fallback", "raise")],
                "passages": [bool],
                "show_progress": [bool],
            },
            {
                "dense": dense,
                "sparse": sparse,
                "chunk_vectors": chunk_vectors,
                "theme_llm": theme_llm,
                "on_llm_error": on_llm_error,
                "passages": passages,
                "show_progress": show_progress,
            },
        )
        show_progress = p["show_progress"]
        self.on_llm_error = on_llm_error
        self.notes: list[str] = []

        if embedder is None and chunker is not None:
            self.embedder: BaseEmbedder = chunker.embedder
        else:
            self.embedder = as_embedder(embedder)
        self.chunker = chunker if chunker is not None else SemanticChunker(self.embedder)
        self.ssg_config = SSGConfig() if ssg is True else (ssg or None)
        if self.ssg_config is not None and not isinstance(self.ssg_config, SSGConfig):
            raise ConfigError("ssg must be an SSGConfig, True or False")
        self.dense_kind = dense if isinstance(dense, str) else StoreBackedDense.kind
        self.chunk_vectors = chunk_vectors
        self.theme_llm = theme_llm
        self.show_progress = show_progress
        self._entries: dict[str, IndexedDocument] = {}
        self._chunk_by_id: dict[int, Chunk] = {}
        self._next_id = 0
        self._dense: DenseIndex | StoreBackedDense | None = (
            None if isinstance(dense, str) else StoreBackedDense(dense, self.embedder.dim)
        )
        self.sparse = BM25Index(idf=sparse)
        self._ssg = LiveSSG(self.ssg_config, self.embedder.dim) if self.ssg_config else None
        self._pieces = (
            None
            if pieces is None
            else PieceIndex(
                check_split("SemanticIndex", pieces),
                self.chunker.tokenizer,
                self.embedder,
                self.dense_kind,
            )
        )
        self._passages = PassagePhrases(self.embedder) if passages else None
        self._view: SSGView | None = None
        self._shared: tuple[weakref.ref[Floats], ...] | None = None  # see _share_vectors
        # doc id -> (its record, chunk order by start, starts, furthest end so far)
        self._chunk_spans: dict[str, tuple[IndexedDocument, list[int], list[int], list[int]]] = {}
        self._version = 0
        self._followers: list[IndexPart] = []
        # _commit_lock orders whole commits (followers included), so every part sees the
        # changes in the same order. A commit stages the change in every part without the
        # write side of _lock, then holds it only to swap the staged states in; readers of
        # several parts hold its read side (see read()), so they never mix two versions.
        # Graph readers take no lock: they read the published SSGView. Readers of the
        # index and a follower (the knowledge graph) also hold the read side of
        # _follow_lock, which a commit holds from its swap until every follower is written
        # (lock order: _follow_lock, then _lock).
        self._lock = RWLock()
        self._follow_lock = RWLock()
        self._commit_lock = threading.RLock()
        self._publish_view()

    # -- read access ----------------------------------------------------------------------
    @property
    def version(self) -> int:
        """A number that changes with every add or delete: retrievers key caches by it."""
        return self._version

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._entries

    @property
    def doc_ids(self) -> list[str]:
        """Ids of the indexed documents, in insertion order."""
        return list(self._entries)

    def _entry(self, doc_id: str) -> IndexedDocument:
        try:
            return self._entries[doc_id]
        except KeyError:
            raise NotIndexedError(f"document {doc_id!r} is not indexed") from None

    def document(self, doc_id: str) -> Document:
        """The indexed document ``doc_id`` (:class:`~semrag.errors.NotIndexedError` if absent)."""
        return self._entry(doc_id).doc

    def sentences(self, doc_id: str) -> list[Span]:
        """Sentence spans of ``doc_id``."""
        return self._entry(doc_id).sentences

    def chunks(self, doc_id: str | None = None) -> list[Chunk]:
        """Chunks of one document, or of all documents in order."""
        if doc_id is not None:
            return list(self._entry(doc_id).chunks)
        return [c for e in self._entries.values() for c in e.chunks]

    def chunk(self, chunk_id: int) -> Chunk:
        """The chunk stored under an integer id of the dense/BM25 indexes."""
        with self._lock.read():
            try:
                return self._chunk_by_id[chunk_id]
            except KeyError:
                raise NotIndexedError(f"chunk {chunk_id!r} is not indexed") from None

    def indexed(self, doc_id: str) -> IndexedDocument:
        """The record ingestion made of ``doc_id``: its sentences, chunks and vectors.

        The same object until the document is replaced or deleted, so a cache keyed by it
        (``record is index.indexed(doc_id)``) knows whether the document changed.
        """
        return self._entry(doc_id)

    def chunk_ids(self, doc_id: str) -> list[int]:
        """Integer ids of ``doc_id``'s chunks, in document order."""
        return list(self._entry(doc_id).chunk_ids)

    def vectors_of(self, chunk_ids: Sequence[int]) -> Floats:
        """Stored unit vectors of the given chunks, shape ``(len(chunk_ids), dim)``."""
        with self._lock.read():
            return self.dense.vectors_of(chunk_ids)

    def sentence_vectors(self, doc_id: str) -> Floats:
        """Unit vectors of ``doc_id``'s sentences, aligned with :meth:`sentences`.

        Float32, or float16 when the index holds its SSG rows so
        (``SSGConfig(vector_dtype="float16")``).
        """
        return self._entries[doc_id].sentence_vectors

    def overlapping_chunks(self, doc_id: str, start: int, end: int) -> list[int]:
        """Ids of ``doc_id``'s chunks that share a character with ``[start, end)``.

        In the document's chunk order. Two binary searches bound the candidates (chunks
        by start, and the furthest end reached so far), so a document of many chunks
        costs a lookup ``log`` of them plus the chunks found, whatever their layout
        (chunks of a splitter may overlap).
        """
        entry = self._entries.get(doc_id)
        if entry is None:
            return []
        cached = self._chunk_spans.get(doc_id)
        if cached is None or cached[0] is not entry:
            order = sorted(range(len(entry.chunks)), key=lambda i: entry.chunks[i].start)
            starts = [entry.chunks[i].start for i in order]
            reach = list(itertools.accumulate((entry.chunks[i].end for i in order), max))
            cached = self._chunk_spans[doc_id] = (entry, order, starts, reach)
        _, order, starts, reach = cached
        lo, hi = bisect.bisect_right(reach, start), bisect.bisect_left(starts, end)
        chunks, ids = entry.chunks, entry.chunk_ids
        found = [j for j in order[lo:hi] if chunks[j].end > start]
        if len(found) > 1 and any(a > b for a, b in itertools.pairwise(found)):
            found.sort()  # chunks not stored in start order
        return [ids[j] for j in found]

    def overlapping_chunks_many(self, spans: Sequence[tuple[str, int, int]]) -> list[list[int]]:
        """:meth:`overlapping_chunks` of each ``(doc_id, start, end)`` (one read on a server)."""
        return [self.overlapping_chunks(d, a, b) for d, a, b in spans]

    def fetch_documents(self, doc_ids: Sequence[str]) -> None:
        """Nothing to fetch: the documents are in memory.

        A retriever about to read several documents' sentences says so here; an index
        on a server (:class:`~semrag.graph.Neo4jIndex`) fetches them in one round trip.
        """

    def sparse_scores(self, query: str, chunk_ids: Sequence[int]) -> npt.NDArray[np.float64]:
        """BM25 scores of ``query`` for the given chunks (0 where no term matches)."""
        with self._lock.read():
            return self.sparse.scores_of(query, chunk_ids)

    def search_channels(
        self, vectors: npt.ArrayLike, queries: Sequence[str], k: int
    ) -> tuple[npt.NDArray[np.int64], list[list[tuple[int, float]]]]:
        """Dense top-``k`` ids of each vector (``-1`` pads) and BM25 top ``k`` of each query.

        One read of one version (a database index answers both in one round trip).
        """
        with self._lock.read():
            _, ids = self.dense.search(vectors, k)
            return ids, self.sparse.search_many(list(queries), k)

    def sparse_scores_many(
        self, queries: Sequence[str], chunk_ids: Sequence[int]
    ) -> npt.NDArray[np.float64]:
        """:meth:`sparse_scores` of each query: shape ``(len(queries), len(chunk_ids))``."""
        with self._lock.read():
            rows = [self.sparse_scores(q, chunk_ids) for q in queries]
        return np.array(rows, np.float64).reshape(len(queries), len(chunk_ids))

    def sentence_vectors_of(self, chunk_ids: Sequence[int]) -> list[Floats]:
        """The vectors of each chunk's sentences (``sentence_start .. sentence_end``)."""
        with self._lock.read():
            out = []
            for i in chunk_ids:
                c = self._chunk_by_id[int(i)]
                out.append(
                    self._entries[c.doc_id].sentence_vectors[c.sentence_start : c.sentence_end]
                )
            return out

    @property
    def tokenizer(self) -> Any:
        """What counts a chunk's tokens: the chunker's tokenizer."""
        return self.chunker.tokenizer

    def themes(self, doc_id: str) -> list[str]:
        """Themes of ``doc_id`` (keywords, or the theme LLM's)."""
        return list(self._entries[doc_id].themes)

    @property
    def dense(self) -> DenseIndex | StoreBackedDense:
        """The dense part: chunk vectors searched in process, or by the user's vector store."""
        if self._dense is None:
            self._dense = DenseIndex(self.embedder.dim, kind=self.dense_kind)
        return self._dense

    @property
    def parts(self) -> dict[str, StagedPart]:
        """The index's own parts, by name: each stages and publishes every :class:`Change`."""
        parts: dict[str, StagedPart] = {"dense": self.dense, "sparse": self.sparse}
        if self._ssg is not None:
            parts["ssg"] = self._ssg
        if self._pieces is not None:
            parts["pieces"] = self._pieces
        if self._passages is not None:
            parts["passages"] = self._passages
        return parts

    def can_commit(self) -> bool:
        """Whether the calling thread may make a change now (it holds no read of the index)."""
        return not (self._lock.reading() or self._follow_lock.reading())

    def enable(self, part: str) -> None:
        """Add a part to a populated index: built from the indexed documents, then kept.

        ``"passages"``: the PPR passage phrases (as ``SemanticIndex(passages=True)``). An
        index that holds the part already is left as it is.

        Raises:
            ConfigError: for a part that cannot be enabled this way.
        """
        if part != "passages":
            raise ConfigError(f"enable() builds the part 'passages', not {part!r}")
        with self._commit_lock:
            if self._passages is not None:
                return
            built = PassagePhrases(self.embedder)
            publish = built.stage(Change(self._version, tuple(self._entries.values())))
            with self._lock.write():
                publish()
                self._passages = built

    @property
    def piece_index(self) -> PieceIndex | None:
        """The small pieces kept with the index (``pieces=``), or ``None``."""
        return self._pieces

    def read(self, *, followers: bool = False) -> contextlib.AbstractContextManager[None]:
        """Read one version of the index for the length of a ``with`` block.

        Retrievers that read several parts for one query (IAR, PPR) hold it, so every
        hit comes from one version. Many readers share it; a commit waits for the
        readers inside and keeps new ones out only while it swaps its staged parts in.

        Args:
            followers: also read the parts that follow the index (the knowledge graph of
                :meth:`KnowledgeGraph.build`) at the same version. SKETCH and community
                search hold it. Such readers also wait while a commit writes its change
                to the followers (the graph's ledger update and store write, not its
                extraction, which runs before); other readers do not. Take it as the
                outermost read of a thread (a ``followers`` read inside a plain one is a
                :class:`RuntimeError`: it could deadlock with a commit).

        Raises:
            RuntimeError: ``followers=True`` inside a plain read of the same thread.

        Examples:
            >>> from semrag.testing import FakeEmbedder
            >>> index = SemanticIndex(embedder=FakeEmbedder())
            >>> index.add_documents(["Bees make honey."])
            >>> with index.read():
            ...     dense, sparse = index.search("bees", k=1), index.search_sparse("bees", k=1)
            >>> dense[0].chunk == sparse[0].chunk
            True
        """
        if not followers:
            return self._lock.read()
        if self._lock.reading() and not self._follow_lock.reading():
            raise ConfigError(
                "index.read(followers=True) inside index.read(): take the followers read "
                "first (the outermost read)"
            )
        return _both(self._follow_lock.read(), self._lock.read())

    # -- the one place the index changes ----------------------------------------------------
    def follow(
        self,
        part: IndexPart,
        *,
        replay: bool | Callable[[list[IndexedDocument], int], Change] = False,
    ) -> None:
        """Give every later change of this index to ``part`` too (e.g. a knowledge graph).

        ``part.apply(change)`` runs after the index's own parts have applied the change,
        in commit order. With ``replay=True``, ``part`` first gets one change that adds
        every document indexed now; with a function, it gets the change that function
        makes of the indexed documents (in order) and the version (a part that saved its
        state catches up this way). No change can slip in between.
        """
        with self._commit_lock:
            if self.follows(part):
                return
            if replay:
                docs = list(self._entries.values())
                change = (
                    replay(docs, self._version)
                    if callable(replay)
                    else Change(self._version, added=tuple(docs))
                )
                part.apply(change)
            self._followers.append(part)

    def follows(self, part: object) -> bool:
        """Whether ``part`` gets this index's changes."""
        return any(p is part for p in self._followers)

    def unfollow(self, part: IndexPart) -> bool:
        """Stop giving changes to ``part``; ``False`` if it was not following."""
        with self._commit_lock:
            for i, p in enumerate(self._followers):
                if p is part:
                    del self._followers[i]
                    return True
            return False

    def _commit(self, added: Sequence[IndexedDocument], removed_ids: Iterable[str] = ()) -> Change:
        """Make one change: every part applies it, then the new version is published.

        ``added`` documents replace indexed ones of the same id.
        """
        with self._commit_lock:
            gone = {*removed_ids, *(d.id for d in added)}
            removed = tuple(e for i, e in self._entries.items() if i in gone)
            change = Change(self._version + 1, tuple(added), removed)
            if not change:
                return change
            # Each part computes its next state where no reader looks (a failure here
            # leaves the index as it was); readers wait only while the states are swapped in.
            # Followers that stage (the knowledge graph's extraction) do it here too.
            publish = [part.stage(change) for part in self.parts.values()]
            follow = [_staged(f, change) for f in self._followers]
            with self._follow_lock.write():
                with self._lock.write():
                    for swap in publish:
                        swap()
                    entries = {i: e for i, e in self._entries.items() if i not in gone}
                    entries.update((d.id, d) for d in added)
                    for i in change.removed_chunk_ids():
                        self._chunk_by_id.pop(i, None)
                    for d in added:
                        self._chunk_by_id.update(zip(d.chunk_ids, d.chunks, strict=True))
                    self._entries = entries
                    for doc_id in gone:
                        self._chunk_spans.pop(doc_id, None)
                    self._share_vectors(added)
                    self._version = change.version
                    self._publish_view()
                failed = _run_all(follow)  # readers of index and followers wait for these
            if failed is not None:
                raise failed
            return change

    def _share_vectors(self, added: Iterable[IndexedDocument]) -> None:
        """Point documents' vectors at the rows the parts search: each vector held once.

        The dense part keeps every chunk vector in one array, the SSG every sentence and
        window-node vector in one array each (an HNSW graph holds its rows itself, read in
        place: the dense part's with ``dense="hnsw"``, the node index's with
        ``knn="hnsw"``); a document's arrays become views of its rows there, so the arrays
        ingestion made are freed. Those holders move when the rows
        outgrow them or are compacted (a delete); then every document is pointed again,
        which costs what the move did. The values never change, so a reader sees the same
        vectors either way.
        """
        dense, ssg = self._dense, self._ssg
        buffers = (
            *((dense.buffer,) if dense is not None else ()),
            *(ssg.buffers() if ssg is not None else ()),
        )
        moved = (
            self._shared is None
            or len(self._shared) != len(buffers)
            or any(ref() is not buf for ref, buf in zip(self._shared, buffers, strict=True))
        )
        for e in self._entries.values() if moved else added:
            if dense is not None:  # the same values, shared
                object.__setattr__(e, "chunk_vectors", dense.rows_view(e.chunk_ids))
            if ssg is not None:
                sentences, nodes = ssg.document_rows(e.id)
                object.__setattr__(e, "sentence_vectors", sentences)
                object.__setattr__(e, "node_vectors", nodes)
        self._shared = tuple(weakref.ref(b) for b in buffers)

    def _publish_view(self) -> None:
        if self._ssg is None:
            return
        self._view = SSGView(
            self._version,
            self._ssg.graph,
            self._entries,
            self._ssg.sentence_matrix,
            self._ssg.doc_sentences.tolist(),
            self.chunker.tokenizer,
            self.embedder.dim,
        )

    # -- building ---------------------------------------------------------------------------
    def _validate(self, documents: Iterable[Document | str]) -> list[Document]:
        docs = as_documents(documents)
        twice = sorted(i for i, n in Counter(d.id for d in docs).items() if n > 1)
        if twice:
            raise DocumentConflictError(
                f"one call names {len(twice)} document id(s) more than once: {twice[:5]}; "
                "give each document its own id (Document.id, metadata 'doc_id' or "
                "'source'), or pass a splitter's chunks to add_chunks",
                ids=twice,
            )
        for d in docs:
            try:
                json.dumps(dict(d.metadata))
            except (TypeError, ValueError) as exc:
                raise ConfigError(
                    f"metadata of document {d.id!r} is not JSON-serialisable"
                ) from exc
        return docs

    def _blocks(self, docs: list[Document]) -> list[list[tuple[Document, list[Span]]]]:
        """Group documents so each block's sentences fit the embedder's cache."""
        budget = max(1, self.embedder.cache_size // 2)
        blocks: list[list[tuple[Document, list[Span]]]] = [[]]
        size = 0
        for d in docs:
            spans = self.chunker.sentences(d.text)
            if blocks[-1] and size + len(spans) > budget:
                blocks.append([])
                size = 0
            blocks[-1].append((d, spans))
            size += len(spans)
        return [b for b in blocks if b]

    def _second_pass_texts(
        self,
        block: list[tuple[Document, list[Span]]],
        chunk_lists: list[list[Chunk]],
        themes: list[list[str]],
    ) -> list[str]:
        texts: list[str] = []
        for (doc, spans), chunks, theme in zip(block, chunk_lists, themes, strict=True):
            if self.chunk_vectors == "embed":
                embedding_text = getattr(self.chunker, "embedding_text", None)
                texts += [embedding_text(c) if embedding_text else c.text for c in chunks]
            if self.ssg_config is not None and self.ssg_config.node_pooling == "concat":
                ranges = window_ranges(len(spans), self.ssg_config.window, self.ssg_config.step)
                texts += [doc.text[spans[a].start : spans[b - 1].end] for a, b in ranges]
            texts.append(", ".join(theme) if theme else doc.text[:500])
        return texts

    def _vectors_of_block(
        self,
        block: list[tuple[Document, list[Span]]],
        sentence_vectors: Floats,
        chunk_lists: list[list[Chunk]],
        themes: list[list[str]],
        second: Floats,
    ) -> list[tuple[Any, ...]]:
        """Each document of a block with its sentence, chunk, node and theme vectors."""
        s_pos = 0
        t_pos = 0
        cfg = self.ssg_config
        computed = []
        for (doc, spans), chunks, theme in zip(block, chunk_lists, themes, strict=True):
            svec = sentence_vectors[s_pos : s_pos + len(spans)]
            s_pos += len(spans)
            if self.chunk_vectors == "embed":
                cvec = second[t_pos : t_pos + len(chunks)]
                t_pos += len(chunks)
            else:
                ranges = [[c.sentence_start, c.sentence_end] for c in chunks]
                cvec = _mean_of(svec, ranges, self.embedder.dim)
            ranges_n = window_ranges(len(spans), cfg.window, cfg.step) if cfg else []
            if cfg is not None and cfg.node_pooling == "concat":
                nvec = second[t_pos : t_pos + len(ranges_n)]
                t_pos += len(ranges_n)
            else:
                nvec = _mean_of(svec, ranges_n, self.embedder.dim)
            if cfg is not None and cfg.vector_dtype != "float32":
                # the rows as the graph holds them, rounded once, now: until its commit a
                # large add holds them in that many bytes (chunk vectors: from the unrounded)
                svec, nvec = svec.astype(cfg.vector_dtype), nvec.astype(cfg.vector_dtype)
            theme_vec = _normalise(second[t_pos : t_pos + 1])[0]
            computed.append((doc, spans, svec, chunks, cvec, ranges_n, nvec, theme, theme_vec))
            t_pos += 1
        return computed

    def _conflicts(self, docs: list[Document], on_conflict: OnConflict) -> list[Document]:
        """The documents to add under ``on_conflict`` (see :mod:`semrag.identity`).

        Raises:
            DocumentConflictError: with ``"error"``, if any id is already indexed.
        """
        taken = [d.id for d in docs if d.id in self._entries]
        if not taken or on_conflict == "replace":
            return docs
        if on_conflict == "error":
            raise DocumentConflictError(
                f"{len(taken)} document id(s) already indexed: {taken[:5]}; nothing was "
                "added. Pass on_conflict='replace' to replace them (an upsert) or "
                "'skip' to keep the indexed ones",
                ids=taken,
            )
        self.notes.append(f"add: skipped {len(taken)} already indexed: {taken[:20]}")
        return [d for d in docs if d.id not in self._entries]

    def _store(self, computed: list[tuple[Any, ...]], on_conflict: OnConflict) -> None:
        """Commit the documents of one ``add_documents`` call as one change."""
        with self._commit_lock:  # ids are taken in commit order
            # checked again here: another add may have committed an id since the call began
            kept = {d.id for d in self._conflicts([c[0] for c in computed], on_conflict)}
            computed = [c for c in computed if c[0].id in kept]
            if not computed:
                return
            added = []
            for doc, spans, svec, chunks, cvec, ranges_n, nvec, theme, theme_vec in computed:
                ids = list(range(self._next_id, self._next_id + len(chunks)))
                self._next_id += len(chunks)
                added.append(
                    IndexedDocument(
                        doc, spans, svec, list(chunks), ids, cvec, ranges_n, nvec, theme, theme_vec
                    )
                )
            self._commit(added)  # one change per call (with "replace", re-added ids replace)

    def _keyword_themes(self, block: list[tuple[Document, list[Span]]]) -> list[list[str]]:
        n = self.ssg_config.n_themes if self.ssg_config else 5
        return keyword_themes([d.text for d, _ in block], n)

    def _theme_prompt(self, doc: Document) -> str:
        n = self.ssg_config.n_themes if self.ssg_config else 5
        return _THEME_PROMPT.format(n=n, text=" ".join(doc.text.split()[:500]))

    def add_documents(
        self, documents: Iterable[Any], *, split: bool = True, on_conflict: OnConflict = "error"
    ) -> None:
        """Index documents.

        ``documents`` may be semrag :class:`Document` objects, strings, LangChain
        ``Document`` objects or LlamaIndex documents and nodes; text and metadata are
        kept. Each is named by the rule of :mod:`semrag.identity` (explicit id, else
        ``metadata["source"]`` with its page or row, else a hash of the text; never the
        position in the call).

        Sentences of a block of documents are embedded in one call; the chunker then finds
        them in the embedder's cache; chunk, window and theme texts go in a second call.
        A block is stored only once everything for it is computed, so an error (a failing
        embedder or LLM) leaves the documents already indexed, old versions included, as
        they were.

        Args:
            documents: the documents.
            split: ``False`` indexes each document as one chunk, as it is (what a vector
                store does with what it is given; the graph still has its sentences).
            on_conflict: for an id that is already indexed: ``"error"`` (nothing is
                added), ``"replace"`` (the indexed document is replaced, in the same
                change) or ``"skip"`` (the new one is left out; :attr:`notes` says so).

        Raises:
            TypeError: if an item is none of those.
            DocumentConflictError: on an id given twice in the call, or already indexed
                with ``on_conflict="error"``; it names the ids.
            ConfigError: on metadata that is not JSON, or a bad ``on_conflict``.
            EmbeddingError: if the embedder misbehaves (nothing is added then).
        """
        docs = self._admit(self._validate(documents), on_conflict)
        self._add(docs, None if split else _WHOLE, on_conflict)

    def _admit(self, docs: list[Document], on_conflict: Any) -> list[Document]:
        """Fail fast, before any embedding, on a conflict the commit would refuse."""
        return self._conflicts(docs, check_on_conflict(on_conflict))

    def add_chunks(
        self,
        chunks: Iterable[Any],
        documents: Iterable[Any] | None = None,
        *,
        on_conflict: OnConflict = "error",
    ) -> None:
        """Index chunks made elsewhere, as they are (no re-chunking).

        For a splitter's output: LangChain ``Document`` chunks, LlamaIndex nodes or semrag
        :class:`Chunk` objects. Each chunk names its document
        (:func:`semrag.identity.chunk_document_id`: the ``semrag_doc_id`` a semrag
        splitter wrote, a node's ``ref_doc_id``, ``doc_id``, or ``source`` with its page)
        and, when it can, its offset (``start_index``, ``start_char_idx``); the table in
        :mod:`semrag.index.presplit` lists what is read. Chunks of one document are
        indexed together; a document that is already indexed is handled by
        ``on_conflict`` as in :meth:`add_documents`.

        With ``documents`` (the texts that were split, any kind :meth:`add_documents`
        takes), each chunk is found in its document's text and its offsets index that
        text. Without them, a document's text is rebuilt from its chunks: placed at their
        offsets (characters between chunks become spaces), or, for chunks without
        offsets, joined by blank lines.

        Chunk metadata is kept per chunk; the document's metadata is the metadata all its
        chunks share (or the given document's). Chunks may overlap (a splitter's
        ``chunk_overlap``); a chunk of whitespace only is skipped.

        Examples:
            >>> from semrag.testing import FakeEmbedder
            >>> index = SemanticIndex(embedder=FakeEmbedder())
            >>> text = "Bees find flowers. They dance. Rockets reach orbit."
            >>> pieces = [Chunk("a", 0, 30, text[:30], 6), Chunk("a", 31, 51, text[31:], 3)]
            >>> index.add_chunks(pieces)
            >>> [c.text for c in index.chunks("a")]
            ['Bees find flowers. They dance.', 'Rockets reach orbit.']

        Raises:
            ConfigError: if a chunk names no document, or one that is not in
                ``documents``; if a chunk is not where its offset says; if ``documents``
                holds a document without chunks.
            DocumentConflictError: as in :meth:`add_documents`.
            TypeError: on an item of an unsupported kind.
        """
        docs, chunk_lists = self._place(chunks, documents)
        self._add(self._admit(docs, on_conflict), chunk_lists, on_conflict)

    def _place(
        self, chunks: Iterable[Any], documents: Iterable[Any] | None
    ) -> tuple[list[Document], dict[str, list[Chunk]]]:
        if isinstance(chunks, (str, Chunk)):
            raise ConfigError("pass a list of chunks")
        given = self._validate(documents) if documents is not None else None
        docs, chunk_lists = place_chunks(
            chunks, given, self.chunker.sentences, self.chunker.tokenizer.count
        )
        return self._validate(docs), chunk_lists

    def _chunk_lists(
        self, block: list[tuple[Document, list[Span]]], given: _Given
    ) -> list[list[Chunk]] | None:
        """The block's chunks when they are given (not the chunker's to make)."""
        if given is None:
            return None
        if given is _WHOLE:
            counts = self.chunker.tokenizer.count([d.text.strip() for d, _ in block])
            return [
                whole_document_chunk(d, spans, n)
                for (d, spans), n in zip(block, counts, strict=True)
            ]
        return [given[d.id] for d, _ in block]

    def _ingest(
        self, docs: list[Document], given: _Given, on_conflict: OnConflict
    ) -> Generator[Call, Any, None]:
        """Ingestion, written once: it yields the embedder's, chunker's and LLM's work.

        :meth:`_add` answers with blocking calls, :meth:`_aadd` with their async twins
        (and runs the steps between them in a worker thread). Blocks bound the embedder's
        batches; the call is one change (one commit), so a bulk load costs every part one
        application, and a failure adds nothing.
        """
        bar = self._progress(len(docs))
        computed: list[tuple[Any, ...]] = []
        for block in self._blocks(docs):
            sentence_texts = [s.of(d.text) for d, spans in block for s in spans]
            svecs = yield Call("embed", (sentence_texts,), on=self.embedder)
            chunk_lists = self._chunk_lists(block, given)
            if chunk_lists is None:
                docs_of_block = [d for d, _ in block]
                results = yield Call("chunk_with_stats", (docs_of_block,), on=self.chunker)
                chunk_lists = [r.chunks for r in results]
            themes = self._keyword_themes(block)
            if self.theme_llm is not None:
                prompts = [self._theme_prompt(d) for d, _ in block]
                replies = yield Call("ask", (prompts,), on=_ThemeAsker(self.theme_llm))
                replies = [
                    self._theme_failed(d, r) if isinstance(r, Exception) else r
                    for (d, _), r in zip(block, replies, strict=True)
                ]
                themes = self._merge_themes(block, replies, themes)
            texts = self._second_pass_texts(block, chunk_lists, themes)
            second = yield Call("embed", (texts,), on=self.embedder)
            computed += self._vectors_of_block(block, svecs, chunk_lists, themes, second)
            if bar is not None:
                bar.update(len(block))
        if bar is not None:
            bar.close()
        self._store(computed, on_conflict)

    def _add(self, docs: list[Document], given: _Given, on_conflict: OnConflict) -> None:
        drive(self._ingest(docs, given, on_conflict), functools.partial(call, None))

    async def aadd_documents(
        self, documents: Iterable[Any], *, split: bool = True, on_conflict: OnConflict = "error"
    ) -> None:
        """Async twin of :meth:`add_documents`.

        Theme LLM calls run concurrently; the CPU work runs in worker threads, so the event
        loop is never blocked.
        """
        docs = await asyncio.to_thread(self._validate, documents)
        docs = self._admit(docs, on_conflict)
        await self._aadd(docs, None if split else _WHOLE, on_conflict)

    async def aadd_chunks(
        self,
        chunks: Iterable[Any],
        documents: Iterable[Any] | None = None,
        *,
        on_conflict: OnConflict = "error",
    ) -> None:
        """Async twin of :meth:`add_chunks`."""
        docs, chunk_lists = await asyncio.to_thread(self._place, chunks, documents)
        await self._aadd(self._admit(docs, on_conflict), chunk_lists, on_conflict)

    async def _aadd(self, docs: list[Document], given: _Given, on_conflict: OnConflict) -> None:
        await adrive(self._ingest(docs, given, on_conflict), functools.partial(acall, None))

    def _theme_failed(self, doc: Document, exc: Exception) -> None:
        if self.on_llm_error == "raise":
            raise exc
        self.notes.append(f"{doc.id}: themes: {llm_failure(exc)}; keyword themes used")

    def _merge_themes(
        self, block: list[Any], replies: list[Any], keywords: list[list[str]]
    ) -> list[list[str]]:
        """The LLM's themes per document, or its keyword themes where the LLM failed."""
        return [
            kw if reply is None else self._llm_themes(reply)
            for reply, kw in zip(replies, keywords, strict=True)
        ]

    def _llm_themes(self, reply: dict[str, Any]) -> list[str]:
        n = self.ssg_config.n_themes if self.ssg_config else 5
        return [t.strip() for t in reply["themes"] if t.strip()][:n]

    def _progress(self, total: int) -> Any:
        if not self.show_progress:
            return None
        from tqdm.auto import tqdm

        return tqdm(total=total, desc="Indexing", unit="doc")

    def delete(self, ids: str | Iterable[str]) -> bool:
        """Remove one document or several (in one change), with their chunks and graph nodes.

        Returns ``True`` when every id was indexed; an id that was not is reported by
        ``False`` and in :attr:`notes` (the others are removed all the same).

        Examples:
            >>> from semrag.testing import FakeEmbedder
            >>> index = SemanticIndex(embedder=FakeEmbedder(), ssg=False)
            >>> index.add_documents([Document("a", "Bees."), Document("b", "Ants.")])
            >>> index.delete(["a", "zz"]), index.doc_ids, index.notes
            (False, ['b'], ["delete: not indexed: ['zz']"])

        Raises:
            ConfigError: if ``ids`` is not a string or an iterable of strings.
        """
        wanted = _id_list(ids)
        removed = self._commit((), wanted).removed
        gone = {d.id for d in removed}
        unknown = [i for i in dict.fromkeys(wanted) if i not in gone]
        if unknown:
            self.notes.append(f"delete: not indexed: {unknown[:20]}")
        return not unknown

    async def adelete(self, ids: str | Iterable[str]) -> bool:
        """Async twin of :meth:`delete` (the commit runs in a worker thread)."""
        return await asyncio.to_thread(self.delete, ids)

    def doc_ids_where(
        self, filter: MetadataFilter, among: Iterable[str] | None = None
    ) -> list[str]:
        """Ids of the documents (of ``among``, default all) whose metadata ``filter`` accepts.

        Examples:
            >>> from semrag.testing import FakeEmbedder
            >>> index = SemanticIndex(embedder=FakeEmbedder(), ssg=False)
            >>> index.add_documents([Document("a", "Bees.", {"n": 1}), Document("b", "Ants.")])
            >>> index.doc_ids_where({"n": 1}), index.doc_ids_where(lambda m: True, ["b", "x"])
            (['a'], ['b'])
        """
        accept = as_filter(filter)
        entries = self._entries
        wanted = entries if among is None else [i for i in among if i in entries]
        return [i for i in wanted if accept(entries[i].doc.metadata)]

    def delete_many(self, doc_ids: Iterable[str]) -> int:
        """Remove several documents in one change; returns how many were indexed.

        Absent ids are ignored (the vector stores' ``delete`` semantics; :meth:`delete`
        reports them).
        """
        if isinstance(doc_ids, str):
            raise ConfigError("pass a list of document ids, or use delete() for one")
        return len(self._commit((), _id_list(doc_ids)).removed)

    # -- search -------------------------------------------------------------------------------
    def embed_query(self, query: str) -> Floats:
        """The query's vector."""
        if not isinstance(query, str):
            raise ConfigError(f"query must be str, got {type(query).__name__}")
        return self.embedder.embed([query])[0]

    async def aembed_query(self, query: str) -> Floats:
        """Async twin of :meth:`embed_query`."""
        if not isinstance(query, str):
            raise ConfigError(f"query must be str, got {type(query).__name__}")
        return (await self.embedder.aembed([query]))[0]

    def dense_search(self, vector: Floats, k: int) -> tuple[Floats, npt.NDArray[np.int64]]:
        """Dense top-``k`` as arrays: cosine similarities and chunk ids, best first."""
        k = check_k("SemanticIndex.search", k, 10)
        with self._lock.read():
            scores, ids = self.dense.search(vector, k)
        keep = ids[0] >= 0
        return scores[0][keep], ids[0][keep].astype(np.int64)

    def search_vector(
        self,
        vector: Floats,
        k: int,
        *,
        filter: MetadataFilter | None = None,
        doc_ids: Iterable[str] | None = None,
    ) -> list[ScoredChunk]:
        """Dense top-``k`` chunks for a query vector.

        Args:
            vector: the query vector.
            k: how many chunks.
            filter: only chunks whose metadata it accepts (a callable on the metadata,
                or a mapping every item of which the metadata must hold).
            doc_ids: only chunks of these documents.

        A filtered search is exact: it scores every accepted chunk.
        """
        with self._lock.read():
            if filter is None and doc_ids is None:
                scores, ids = self.dense_search(vector, k)
            else:
                scores, ids = self._filtered_search(vector, k, filter, doc_ids)
            return [
                ScoredChunk(
                    self._chunk_by_id[int(i)],
                    float(s),
                    {"dense": float(s)},
                    ({"channel": "dense", "rank": r},),
                )
                for r, (s, i) in enumerate(zip(scores, ids, strict=True))
            ]

    def _filtered_search(
        self,
        vector: Floats,
        k: int,
        filter: MetadataFilter | None,
        doc_ids: Iterable[str] | None,
    ) -> tuple[Floats, npt.NDArray[np.int64]]:
        k = check_k("SemanticIndex.search", k, 10)
        if doc_ids is not None:
            if isinstance(doc_ids, str):
                raise ConfigError("doc_ids must be a list of document ids")
            entries = [self._entries[d] for d in set(doc_ids) if d in self._entries]
            pool = ((i, c) for e in entries for i, c in zip(e.chunk_ids, e.chunks, strict=True))
        else:
            pool = iter(self._chunk_by_id.items())
        accept = as_filter(filter) if filter is not None else None
        ids = np.fromiter(
            (i for i, c in pool if accept is None or accept(c.metadata)), dtype=np.int64
        )
        if not ids.size:
            return np.zeros(0, np.float32), ids
        ids.sort()
        q = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        cols, scores = top_k(q @ self.dense.vectors_of(ids).T, min(k, ids.size))
        return scores[0], ids[cols[0]]

    def search_mmr(
        self,
        vector: Floats,
        k: int = 4,
        *,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: MetadataFilter | None = None,
        doc_ids: Iterable[str] | None = None,
    ) -> list[ScoredChunk]:
        """Maximal marginal relevance: ``k`` of the ``fetch_k`` nearest chunks, diverse.

        Each step takes the candidate with the best ``lambda_mult * sim(query) -
        (1 - lambda_mult) * max sim(chosen)`` (Carbonell & Goldstein, 1998); ``1`` is
        plain similarity search, ``0`` maximal diversity. Scores are the query
        similarities; the order is the order of choice.
        """
        if not 0 <= lambda_mult <= 1:
            raise ConfigError(f"lambda_mult must be in [0, 1], got {lambda_mult}")
        k = check_k("SemanticIndex.search_mmr", k, 4)
        with self._lock.read():
            pool = self.search_vector(vector, max(k, fetch_k), filter=filter, doc_ids=doc_ids)
            if not pool:
                return []
            ids = [self.chunk_ids(h.chunk.doc_id)[h.chunk.index] for h in pool]
            vecs = self.dense.vectors_of(ids)
        relevance = np.array([h.score for h in pool])
        between = vecs @ vecs.T
        chosen = [0]
        closest = between[0].copy()  # each candidate's similarity to the nearest chosen one
        while len(chosen) < min(k, len(pool)):
            value = lambda_mult * relevance - (1 - lambda_mult) * closest
            value[chosen] = -np.inf
            best = int(np.argmax(value))
            chosen.append(best)
            np.maximum(closest, between[best], out=closest)
        return [pool[i] for i in chosen]

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        doc_ids: Iterable[str] | None = None,
    ) -> list[ScoredChunk]:
        """Dense top-``k`` chunks for ``query`` (cosine similarity); see :meth:`search_vector`."""
        check_query("SemanticIndex.search", query)
        return self.search_vector(self.embed_query(query), k, filter=filter, doc_ids=doc_ids)

    async def asearch(
        self,
        query: str,
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        doc_ids: Iterable[str] | None = None,
    ) -> list[ScoredChunk]:
        """Async twin of :meth:`search`."""
        check_query("SemanticIndex.search", query)
        vector = await self.aembed_query(query)
        return await asyncio.to_thread(
            self.search_vector, vector, k, filter=filter, doc_ids=doc_ids
        )

    def search_sparse(self, query: str, k: int = 10) -> list[ScoredChunk]:
        """BM25 top-``k`` chunks for ``query`` (positive scores only)."""
        check_query("SemanticIndex.search_sparse", query)
        k = check_k("SemanticIndex.search_sparse", k, 10)
        with self._lock.read():
            found = self.sparse.search(query, k)
            return [
                ScoredChunk(
                    self._chunk_by_id[i], s, {"sparse": s}, ({"channel": "sparse", "rank": r},)
                )
                for r, (i, s) in enumerate(found)
            ]

    # -- the semantic similarity graph ------------------------------------------------------
    @property
    def ssg(self) -> SemanticSimilarityGraph:
        """The semantic similarity graph of the current version.

        Raises:
            ConfigError: if the index was created with ``ssg=False``.
        """
        return self.ssg_view().graph

    def ssg_view(self) -> SSGView:
        """The current consistent version of the graph and its documents.

        Every change publishes a new view (see :class:`SSGView`); taking one costs nothing
        and never waits for a writer.

        Raises:
            ConfigError: if the index was created with ``ssg=False``.
        """
        view = self._view
        if view is None:
            raise ConfigError("this index was built with ssg=False")
        return view

    @property
    def node_index(self) -> _NodeSearch | _NodeANNSearch:
        """Search over the SSG's window nodes (ids = node numbers; see SSGView.node_index)."""
        return self.ssg_view().node_index

    @property
    def sentence_matrix(self) -> Floats:
        """All sentence vectors, documents in insertion order."""
        return self.ssg_view().sentence_matrix

    def sentence_location(self, global_index: int) -> tuple[str, Span]:
        """``(doc_id, span)`` of a sentence by its index in :attr:`sentence_matrix`."""
        return self.ssg_view().sentence_location(global_index)

    def node_chunk(self, node: int) -> Chunk:
        """A window node of the SSG as a :class:`Chunk` with exact offsets."""
        return self.ssg_view().node_chunk(node)

    # -- persistence ------------------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """Write the index to ``directory`` atomically (a versioned format, no pickle).

        A crash during the write leaves the previous save intact (or nothing), never a
        directory that loads with missing or corrupt parts.
        """
        from semrag._version import __version__

        manifest = {
            "kind": KIND,
            "format_version": FORMAT_VERSION,
            "library_version": __version__,
            "embedder": repr(self.embedder),
            "dim": self.embedder.dim,
            "chunker": repr(self.chunker),
            "ssg": self.ssg_config.to_dict() if self.ssg_config else None,
            "dense": self.dense.config(),
            "chunk_vectors": self.chunk_vectors,
            "next_id": self._next_id,
            "pieces": (
                None
                if self._pieces is None
                else {"split": list(self._pieces.split), "dense": self._pieces.dense.config()}
            ),
            "passages": None if self._passages is None else {"titles": self._passages.titles},
        }
        with self._commit_lock, atomic_directory(directory, manifest) as tmp:
            entries = list(self._entries.values())
            with open(tmp / "documents.jsonl", "w", encoding="utf-8") as f:
                for e in entries:
                    record = {
                        "id": e.doc.id,
                        "text": e.doc.text,
                        "metadata": dict(e.doc.metadata),
                        "sentences": [[s.start, s.end] for s in e.sentences],
                        "chunks": [
                            [c.start, c.end, c.token_count, c.sentence_start, c.sentence_end]
                            for c in e.chunks
                        ],
                        "chunk_ids": e.chunk_ids,
                        "node_ranges": [list(r) for r in e.node_ranges],
                        "themes": e.themes,
                    }
                    if any(c.metadata != e.doc.metadata for c in e.chunks):  # pre-split input
                        record["chunk_metadata"] = [dict(c.metadata) for c in e.chunks]
                    f.write(json.dumps(record, ensure_ascii=False) + "\n")
            dim = self.embedder.dim
            for name, parts in (
                ("sentence_vectors.npy", [e.sentence_vectors for e in entries]),
                ("node_vectors.npy", [e.node_vectors for e in entries]),
                ("theme_vectors.npy", [e.theme_vector[None, :] for e in entries]),
            ):
                arr = np.concatenate(parts) if parts else np.zeros((0, dim), np.float32)
                np.save(tmp / name, arr.astype(np.float32), allow_pickle=False)
            with self._lock.read():
                for part in self.parts.values():
                    part.save(tmp)
        return Path(directory)

    @classmethod
    def load(
        cls,
        directory: str | Path,
        *,
        embedder: Any = None,
        chunker: BoundaryChunker | None = None,
        theme_llm: LLM | None = None,
        dense: VectorClient | None = None,
    ) -> SemanticIndex:
        """Load an index written by :meth:`save`.

        Args:
            directory: the saved index.
            embedder: the embedder for new documents and queries; default the packaged
                MiniLM. Its dimension must match the saved one.
            chunker: the chunker for documents added later; default ``SemanticChunker``.
            theme_llm: optional theme LLM for documents added later.
            dense: the vector store of an index saved with one (required then; it must
                hold the entries it held at the save: the store persists them itself).

        Raises:
            ConfigError: on a missing directory, a newer format or a dimension mismatch.
            StoreError: if the save is incomplete or a file is corrupt.
        """
        from semrag._version import __version__

        directory = Path(directory)
        m = read_manifest(
            directory, kind=KIND, format_version=FORMAT_VERSION, library_version=__version__
        )
        try:
            return cls._from_saved(directory, m, embedder, chunker, theme_llm, dense)
        except (KeyError, IndexError, TypeError, ValueError, OSError, StoreError) as exc:
            if isinstance(exc, ConfigError):
                raise
            raise StoreError(
                f"{directory} does not hold a consistent index ({type(exc).__name__}: {exc}); "
                "it was edited or written by something else"
            ) from exc

    @classmethod
    def _from_saved(
        cls,
        directory: Path,
        m: dict[str, Any],
        embedder: Any,
        chunker: BoundaryChunker | None,
        theme_llm: LLM | None,
        client: VectorClient | None,
    ) -> SemanticIndex:
        ssg_cfg = SSGConfig(**m["ssg"]) if m["ssg"] else False
        external = m["dense"]["kind"] == StoreBackedDense.kind
        if external != (client is not None):
            raise ConfigError(
                "this index keeps its vectors in a vector store: pass it as dense="
                if external
                else "dense= is for an index saved with a vector store; this one was not"
            )
        index = cls(
            chunker,
            embedder,
            ssg=ssg_cfg,
            dense=client if client is not None else m["dense"]["kind"],
            chunk_vectors=m["chunk_vectors"],
            theme_llm=theme_llm,
            pieces=tuple(m["pieces"]["split"]) if m.get("pieces") else None,
        )
        if index.embedder.dim != m["dim"]:
            raise ConfigError(
                f"the index was built with {m['dim']}-dimensional vectors ({m['embedder']}); "
                f"the embedder gives {index.embedder.dim}"
            )
        svecs = np.load(directory / "sentence_vectors.npy", allow_pickle=False)
        nvecs = np.load(directory / "node_vectors.npy", allow_pickle=False)
        tvecs = np.load(directory / "theme_vectors.npy", allow_pickle=False)
        index._dense = (
            StoreBackedDense.load(directory, client, int(m["dim"]))
            if client is not None
            else DenseIndex.load(directory, m["dense"])
        )
        index.sparse = BM25Index.load(directory)  # with its saved idf variant
        records = []
        with open(directory / "documents.jsonl", encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                doc = Document(r["id"], r["text"], r["metadata"])
                metas = r.get("chunk_metadata") or [doc.metadata] * len(r["chunks"])
                chunks = [
                    Chunk(doc.id, a, b, doc.text[a:b], tc, i, ss, se, meta)
                    for i, ((a, b, tc, ss, se), meta) in enumerate(
                        zip(r["chunks"], metas, strict=True)
                    )
                ]
                records.append((doc, r, chunks))
        n_sent = sum(len(r["sentences"]) for _, r, _ in records)
        n_node = sum(len(r["node_ranges"]) for _, r, _ in records)
        counts = (n_sent, n_node, len(records))
        if counts != (len(svecs), len(nvecs), len(tvecs)):
            raise StoreError(
                f"documents.jsonl describes {counts} sentences / nodes / documents, the "
                f"vector files hold {(len(svecs), len(nvecs), len(tvecs))}"
            )
        chunk_ids = {int(i) for _, r, _ in records for i in r["chunk_ids"]}
        if set(index._dense.ids.tolist()) != chunk_ids or set(index.sparse._ids) != chunk_ids:
            raise StoreError("the dense / BM25 indexes and documents.jsonl hold different chunks")
        index._next_id = int(m["next_id"])
        if chunk_ids and max(chunk_ids) >= index._next_id:
            raise StoreError(f"next_id {index._next_id} is not above every chunk id")
        s_pos = n_pos = 0
        for t_pos, (doc, r, chunks) in enumerate(records):
            ids = [int(i) for i in r["chunk_ids"]]
            spans = [Span(a, b) for a, b in r["sentences"]]
            ranges = [(a, b) for a, b in r["node_ranges"]]
            entry = IndexedDocument(
                doc,
                spans,
                svecs[s_pos : s_pos + len(spans)],
                chunks,
                ids,
                index._dense.rows_view(ids),
                ranges,
                nvecs[n_pos : n_pos + len(ranges)],
                list(r["themes"]),
                tvecs[t_pos],
            )
            s_pos += len(spans)
            n_pos += len(ranges)
            index._entries[doc.id] = entry
            index._chunk_by_id.update(zip(ids, chunks, strict=True))
        index._version = 1 if records else 0
        if m.get("pieces"):
            index._pieces = PieceIndex.load(
                directory,
                list(index._entries.values()),
                tokenizer=index.chunker.tokenizer,
                embedder=index.embedder,
                config=m["pieces"]["dense"],
            )
        if m.get("passages"):
            index._passages = PassagePhrases.load(
                directory, list(index._entries.values()), embedder=index.embedder
            )
        if ssg_cfg:
            index._ssg = index._ssg_from_saved(directory, ssg_cfg, nvecs, svecs)
            index._publish_view()
        index._share_vectors(())
        return index

    def _ssg_from_saved(
        self, directory: Path, cfg: SSGConfig, node_vectors: Floats, sentence_vectors: Floats
    ) -> LiveSSG:
        entries = list(self._entries.values())
        saved = directory / "ssg.npz"
        current = False
        if saved.exists():
            with np.load(saved, allow_pickle=False) as z:
                current = "intra_cols" in z.files
        if not current:  # format 1 kept only the CSR graph: rebuild the lists once
            return LiveSSG.fresh(cfg, self.embedder.dim, entries)
        ssg = LiveSSG.load(
            directory, cfg, node_vectors=node_vectors, sentence_matrix=sentence_vectors
        )
        if ssg.doc_ids != [e.id for e in entries]:
            raise StoreError("the graph and documents.jsonl list different documents")
        return ssg

    def __repr__(self) -> str:
        return (
            f"SemanticIndex(documents={len(self)}, chunks={len(self._chunk_by_id)}, "
            f"chunker={self.chunker!r}, ssg={self.ssg_config is not None})"
        )


class _ThemeAsker:
    """The theme LLM for one block: a reply, or the exception it raised, per prompt."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm

    def ask(self, prompts: Sequence[str]) -> list[Any]:
        out: list[Any] = []
        for prompt in prompts:
            try:
                out.append(complete_json(self.llm, prompt, _THEME_SCHEMA))
            except Exception as exc:  # every LLM failure takes the documented path
                out.append(exc)
        return out

    async def aask(self, prompts: Sequence[str]) -> list[Any]:
        return list(
            await asyncio.gather(
                *(acomplete_json(self.llm, p, _THEME_SCHEMA) for p in prompts),
                return_exceptions=True,
            )
        )


def _id_list(ids: Any) -> list[str]:
    """``ids`` (one id or an iterable of ids) as a list of strings.

    Raises:
        ConfigError: on anything else (``None``, numbers, bytes, a mix).
    """
    if isinstance(ids, str):
        return [ids]
    if isinstance(ids, (bytes, Mapping)) or not isinstance(ids, Iterable):
        raise ConfigError(f"document ids must be a str or a list of str, got {type(ids).__name__}")
    out = list(ids)
    bad = [i for i in out if not isinstance(i, str)]
    if bad:
        raise ConfigError(f"document ids must be str; got {type(bad[0]).__name__} {bad[0]!r}")
    return out


def _run_all(writes: Sequence[Callable[[], None]]) -> Exception | None:
    """Run every follower's write, even after one fails; the first failure, if any.

    A follower that fails repairs itself from its own record (the knowledge graph
    rewrites its store from its ledger); the others must not miss the change meanwhile.
    Later failures are attached to the first as notes.
    """
    first: Exception | None = None
    for write in writes:
        try:
            write()
        except Exception as exc:  # noqa: BLE001 - re-raised by the caller
            if first is None:
                first = exc
            else:
                first.add_note(f"another follower failed too: {exc!r}")
    return first


def _staged(part: IndexPart, change: Change) -> Callable[[], None]:
    """``part.stage(change)`` for a part that stages, else a function that applies it."""
    stage = getattr(part, "stage", None)
    if callable(stage):
        return stage(change)
    return lambda: part.apply(change)


@contextlib.contextmanager
def _both(
    first: contextlib.AbstractContextManager[None], second: contextlib.AbstractContextManager[None]
) -> Iterator[None]:
    with first, second:
        yield
