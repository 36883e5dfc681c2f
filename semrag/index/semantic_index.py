"""SemanticIndex: documents, sentences, chunks, vectors, dense + BM25 indexes and the SSG.

One object users build, holding a few objects that each own their state and have one job:

* :class:`~semrag.index.ingest.ingestion.Ingestion` turns documents into frozen
  :class:`~semrag.index.ingest.prepared.PreparedDocument` records (chunk, embed, theme), with the
  embedder, chunker and vector settings it owns;
* :class:`~semrag.index.corpus.Corpus` holds the records, chunk ids, version, followers
  and locks, and makes every change in one place (``commit``);
* :class:`~semrag.index.parts.part_set.PartSet` holds the parts the change goes to: the dense and
  BM25 indexes, the similarity graph (:class:`~semrag.index.parts.live_ssg.LiveSSG`), SKETCH's
  pieces, PPR's phrases, and the graph view readers take;
* :class:`~semrag.index.search.IndexSearch` searches one version of them.

Saving and loading are functions over the corpus and the parts (:mod:`semrag.index.storage.saved`).
This class wires them and delegates: a write computes its records, the corpus commits one
:class:`~semrag.index.change.Change` that every part and follower (a
:class:`~semrag.graph.KnowledgeGraph` built over the index) applies; no part rebuilds
from scratch. Readers of the graph take one :class:`SSGView` (a version) and never see a
half-applied change.

``save(dir)`` writes a versioned directory atomically; ``SemanticIndex.load(dir)`` checks
format, checksums and the embedder.
"""

from __future__ import annotations

import asyncio
import contextlib
import warnings
from collections.abc import Callable, Generator, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from semrag._steps import Call, acall, adrive, call, drive
from semrag._validation import HasMethods, Options, check_query, validate_params
from semrag.chunking.base import BoundaryChunker
from semrag.embeddings import BaseEmbedder, Embedder, as_embedder
from semrag.errors import ConfigError, DocumentConflictError, StoreError
from semrag.fingerprint import EmbedderFingerprint, stored_fingerprint
from semrag.identity import OnConflict, check_on_conflict
from semrag.index._reembed import shadow_options
from semrag.index.change import Change, Follower, IndexedDocument, StagedPart, StoresParts
from semrag.index.corpus import Corpus
from semrag.index.index_reader import IndexReader
from semrag.index.ingest.ingestion import WHOLE, Given, Ingestion, id_list
from semrag.index.ingest.prepared import (
    PreparedBatch,
    PreparedDocument,
    check_settings,
    ingest_settings,
)
from semrag.index.parts._enable import check_enabled, check_ssg_config, new_part, window_nodes
from semrag.index.parts._ssg_view import SSGView
from semrag.index.parts.external import StoreBackedDense, VectorClient
from semrag.index.parts.live_ssg import LiveSSG
from semrag.index.parts.part_set import PartSet
from semrag.index.parts.passages import PassagePhrases
from semrag.index.parts.pieces import PieceIndex, check_split
from semrag.index.parts.sparse import IDF_VARIANTS, BM25Index
from semrag.index.parts.ssg import SSGConfig
from semrag.index.search import IndexSearch
from semrag.index.storage.persist import ANY_BASE, Saved, current_generation, load_saved
from semrag.index.storage.saved import FORMAT_VERSION, KIND, restore, save_index, saved_options
from semrag.llm import LLM
from semrag.static_embedder import StaticEmbedder
from semrag.types import Chunk, Document, Floats, MetadataFilter, ScoredChunk, as_filter

__all__ = ["SSGView", "SemanticIndex"]

MOVED_TO_READER = frozenset(
    """aembed_query can_commit chunk_ids chunk_vectors corpus current_version dense dense_kind
    dense_search embed_query followers follows indexed on_llm_error
    overlapping_chunks overlapping_chunks_many part_set piece_index search_channels sentence_dtype
    sentence_vectors sentence_vectors_of sentences sparse sparse_scores sparse_scores_many
    ssg_config ssg_view theme_llm themes tokenizer vectors_of""".split()
)
"""What retrievers read: on ``index.reader()`` since 0.3 (on the index, warned, until 0.4)."""
MOVED_TO_VIEW = {
    "ssg": "graph",
    "node_index": "node_index",
    "sentence_matrix": "sentence_matrix",
    "sentence_location": "sentence_location",
    "node_chunk": "node_chunk",
}
"""The similarity graph's reads: on ``index.reader().ssg_view()`` since 0.3 (likewise)."""


class SemanticIndex:
    """Everything the retrievers search, built once and kept in step.

    Args:
        chunker: any semrag chunker; default ``SemanticChunker()``: boundaries from the
            packaged static encoder (the splitter's default; boundary quality equal to
            MiniLM's in ``benchmarks/boundary_quality.py``), so the index's encoder reads
            each chunk once: with an embedder that pools spans
            (:class:`~semrag.embeddings.PoolsSpans`, as the default MiniLM does) the
            sentence vectors (which IAR, SPC, community search and the SSG compare with
            query vectors) are read off the chunks' pass (late chunking) instead of
            embedding every sentence again (``benchmarks/index_build.py``).
        embedder: the embedder for sentences, chunks and queries; default the chunker's,
            or the packaged all-MiniLM-L6-v2. A chunker on the static boundary encoder
            (``SemanticChunker()``) cuts; it never makes the index's vectors by default.
        ssg: the semantic similarity graph (what :class:`~semrag.SSGRetriever` walks): an
            :class:`~semrag.index.parts.ssg.SSGConfig`, ``True`` for the defaults, or ``False``
            (the default: the default retrievers do not read it; add it later with
            ``index.enable("ssg")``, from the kept sentence vectors).
        dense: ``"auto"`` (the default: exact inner product until the index holds
            :data:`~semrag.index.parts.dense.AUTO_APPROXIMATE_ROWS` chunks, 50,000, then an
            inverted file re-ranked on the stored rows, built once by the change that gets
            there), ``"flat"`` (always exact), ``"ivf"`` (that inverted file from 624
            chunks), ``"hnsw"`` (always an HNSW graph), or a
            :class:`~semrag.index.parts.external.VectorClient`: the dense channel on a vector
            store you already run (the adapters wrap LangChain and LlamaIndex stores).
        sparse: the BM25 idf: ``"okapi"`` (as rank-bm25 scores; a term in more than half
            the chunks scores 0 or near it, which on a corpus of a few chunks is most
            terms) or ``"lucene"`` (always positive, as Lucene and Elasticsearch score;
            use it for small corpora). See :class:`~semrag.index.parts.sparse.BM25Index`.
        chunk_vectors: ``"embed"`` embeds each chunk's text (the model truncates long
            chunks); ``"mean"`` averages the chunk's sentence vectors (no extra cost, no
            truncation).
        theme_llm: an :class:`~semrag.llm.LLM` that names document themes; without one,
            themes are TF-IDF keywords.
        on_llm_error: when the theme LLM fails for a document: ``"fallback"`` (its
            keyword themes are used and :attr:`notes` says so) or ``"raise"``.
        pieces: ``(max_tokens, overlap_tokens)``: also keep every chunk cut again into
            small overlapping pieces with their vectors, as SKETCH searches them (the
            paper: ``(100, 16)``; see :class:`~semrag.index.parts.pieces.PieceIndex`). Each
            change splits and embeds its own documents' pieces, and they are saved with
            the index, so no SKETCH query with that split embeds a piece. ``None``
            (default): a :class:`~semrag.retrieval.SketchRetriever` derives them in
            process on its first query after each change (:mod:`semrag.index.derived`).
        passages: also keep every chunk's entity phrases and the phrase names' vectors,
            what :class:`~semrag.retrieval.PPRRetriever` (``GraphRetriever()``'s default)
            builds its passage graph from (:class:`~semrag.index.parts.passages.PassagePhrases`).
            Each change finds its own documents' phrases and embeds their new names, and
            they are saved with the index, so a retriever (in this process or one that
            loads the index) finds no phrase and embeds no name (about 12% on top of the
            build on 2Wiki). ``False`` (default): a ``PPRRetriever`` derives the phrases
            in process on its first query (:mod:`semrag.index.derived`), not saved;
            :meth:`enable` adds the part later.
        sentence_dtype: how the sentence vectors are held (what IAR's sentence scores,
            SPC, local search and a later ``enable("ssg")`` read): ``"float16"`` (the
            default without an SSG: half the memory; on the development sets a sentence
            score moves by 6e-5 at most and IAR's top 10 do not change) or
            ``"float32"``. With an SSG its rows are the sentence vectors and
            ``SSGConfig(vector_dtype=...)`` decides (leave this out).
        show_progress: progress bars on long builds and re-embeddings; ``None`` (the
            default): on a terminal or in a notebook once the work has run two seconds,
            never in CI (``CI`` set) or with ``SEMRAG_PROGRESS=0``.

    Attributes:
        notes: every fallback taken while indexing, with its reason.

    Examples:
        >>> from semrag import Document
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
        embedder: Embedder | None = None,
        *,
        ssg: SSGConfig | bool = False,
        dense: str | VectorClient = "auto",
        sparse: str = "okapi",
        chunk_vectors: str = "embed",
        theme_llm: LLM | None = None,
        on_llm_error: str = "fallback",
        pieces: tuple[int, int] | None = None,
        passages: bool = False,
        sentence_dtype: str | None = None,
        show_progress: bool | None = None,
    ) -> None:
        from semrag.chunking.semantic import SemanticChunker

        p = validate_params(
            "SemanticIndex",
            {
                "dense": [
                    Options("auto", "flat", "ivf", "hnsw"),
                    HasMethods("upsert", "delete", "search"),
                ],
                "sparse": [Options(*IDF_VARIANTS)],
                "chunk_vectors": [Options("embed", "mean")],
                "theme_llm": [HasMethods("complete", "acomplete"), None],
                "on_llm_error": [Options("fallback", "raise")],
                "passages": [bool],
                "sentence_dtype": [Options("float16", "float32"), None],
                "show_progress": [bool, None],
            },
            {
                "dense": dense,
                "sparse": sparse,
                "chunk_vectors": chunk_vectors,
                "theme_llm": theme_llm,
                "on_llm_error": on_llm_error,
                "passages": passages,
                "sentence_dtype": sentence_dtype,
                "show_progress": show_progress,
            },
        )
        self.notes: list[str] = []
        self._generations: dict[Path, int] = {}  # saved directory -> the version it holds of us
        self._home: Path | None = None  # the directory loaded from or last saved to
        model: BaseEmbedder = (
            chunker.embedder
            if embedder is None
            and chunker is not None
            and not isinstance(chunker.embedder, StaticEmbedder)  # boundaries only
            else as_embedder(embedder)
        )
        ssg_config = SSGConfig() if ssg is True else (ssg or None)
        if ssg_config is not None and not isinstance(ssg_config, SSGConfig):
            raise ConfigError("ssg must be an SSGConfig, True or False")
        if (
            sentence_dtype is not None
            and ssg_config is not None
            and sentence_dtype != ssg_config.vector_dtype
        ):
            raise ConfigError(
                f"sentence_dtype={sentence_dtype!r} but the similarity graph holds the "
                f"sentence vectors as {ssg_config.vector_dtype}: with an SSG, set "
                "SSGConfig(vector_dtype=...) and leave sentence_dtype out"
            )
        self._ingestion = Ingestion(
            model,
            chunker if chunker is not None else SemanticChunker(),
            ssg_config=ssg_config,
            chunk_vectors=chunk_vectors,
            theme_llm=theme_llm,
            on_llm_error=on_llm_error,
            sentence_dtype=sentence_dtype or "float16",
            show_progress=p["show_progress"],
            notes=self.notes,
        )
        self._dense_kind = dense if isinstance(dense, str) else StoreBackedDense.kind
        self._corpus = Corpus()
        dim = model.dim
        self._part_set = PartSet(
            dim,
            self._dense_kind,
            BM25Index(idf=sparse),
            dense=None if isinstance(dense, str) else StoreBackedDense(dense, dim),
            ssg=LiveSSG(ssg_config, dim) if ssg_config else None,
            pieces=None
            if pieces is None
            else PieceIndex(
                check_split("SemanticIndex", pieces),
                self.chunker.tokenizer,
                self.embedder,
                self._dense_kind,
            ),
            passages=PassagePhrases() if passages else None,
        )
        self._search = IndexSearch(self._corpus, self._part_set)
        self._fingerprint: EmbedderFingerprint | None = None  # see the fingerprint property
        self._reader = IndexReader(
            self._corpus,
            self._part_set,
            self._search,
            settings=lambda: self._ingestion,
            fingerprint=lambda: self.fingerprint,
            dense_kind=self._dense_kind,
        )
        self._publish_view()

    # -- the settings (ingestion's) ------------------------------------------------------
    @property
    def embedder(self) -> BaseEmbedder:
        """The embedder of sentences, chunks and queries (:meth:`reembed` changes it)."""
        return self._ingestion.embedder

    @property
    def chunker(self) -> BoundaryChunker:
        """The chunker of documents added with :meth:`add_documents`."""
        return self._ingestion.chunker

    @property
    def show_progress(self) -> bool | None:
        """Whether long builds show a progress bar (``None``: on a terminal, outside CI)."""
        return self._ingestion.show_progress

    @show_progress.setter
    def show_progress(self, value: bool | None) -> None:
        self._ingestion.show_progress = None if value is None else bool(value)

    @property
    def fingerprint(self) -> EmbedderFingerprint:
        """The fingerprint of the model that made the index's vectors.

        Saved with the index (and by :class:`~semrag.neo4j.Neo4jIndexStore`) and checked
        where an embedder meets the vectors again (see :mod:`semrag.fingerprint`). It is
        the embedder's own, unless the index was loaded with
        ``allow_embedder_mismatch=True``; :meth:`reembed` makes it the new model's.
        """
        if self._fingerprint is None:
            self._fingerprint = EmbedderFingerprint.of(self.embedder)
        return self._fingerprint

    def _adopt_fingerprint(
        self,
        saved: dict[str, Any] | None,
        *,
        dim: int,
        name: str,
        what: str,
        allow_mismatch: bool,
    ) -> None:
        """Take the fingerprint of saved vectors (:func:`~semrag.fingerprint.stored_fingerprint`).

        Raises:
            EmbedderMismatchError: if the embedder is another model.
        """
        self._fingerprint, note = stored_fingerprint(
            saved, self.embedder, dim=dim, name=name, what=what, allow_mismatch=allow_mismatch
        )
        if note is not None:
            self.notes.append(note)

    # -- reads (the corpus's, one version at a time) ------------------------------------
    def reader(self) -> IndexReader:
        """What retrievers read: the index's :class:`~semrag.index.index_reader.IndexReader`.

        A live view of this index (its sentences, vectors, parts, the similarity graph's
        view, the batched reads retrievers make); the index itself keeps the API users
        call. Any retriever takes the index and reads through this.
        """
        return self._reader

    @property
    def version(self) -> int:
        """A number that changes with every add or delete: retrievers key caches by it."""
        return self._corpus.version

    def __len__(self) -> int:
        return len(self._corpus)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._corpus

    @property
    def doc_ids(self) -> list[str]:
        """Ids of the indexed documents, in insertion order."""
        return self._corpus.doc_ids

    def document(self, doc_id: str) -> Document:
        """The indexed document ``doc_id`` (:class:`~semrag.errors.NotIndexedError` if absent)."""
        return self._corpus.entry(doc_id).doc

    def chunks(self, doc_id: str | None = None) -> list[Chunk]:
        """Chunks of one document, or of all documents in order."""
        return self._reader.chunks(doc_id)

    def chunk(self, chunk_id: int) -> Chunk:
        """The chunk stored under an integer id of the dense/BM25 indexes."""
        return self._reader.chunks_of([chunk_id])[0]

    # -- searches (IndexSearch's; the query embedded here) ----------------------------

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
        return self._search.vector(vector, k, filter=filter, doc_ids=doc_ids)

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
        return self._search.mmr(
            vector, k, fetch_k=fetch_k, lambda_mult=lambda_mult, filter=filter, doc_ids=doc_ids
        )

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
        return self.search_vector(
            self._reader.embed_query(query), k, filter=filter, doc_ids=doc_ids
        )

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
        vector = await self._reader.aembed_query(query)
        return await asyncio.to_thread(
            self.search_vector, vector, k, filter=filter, doc_ids=doc_ids
        )

    def search_sparse(self, query: str, k: int = 10) -> list[ScoredChunk]:
        """BM25 top-``k`` chunks for ``query`` (positive scores only)."""
        check_query("SemanticIndex.search_sparse", query)
        return self._search.sparse(query, k)

    # -- writes (ingestion computes the records, the corpus commits them) ----------------

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
        docs = self._admit(self._ingestion.validate(documents), on_conflict)
        self._add(docs, None if split else WHOLE, on_conflict)

    async def aadd_documents(
        self, documents: Iterable[Any], *, split: bool = True, on_conflict: OnConflict = "error"
    ) -> None:
        """Async twin of :meth:`add_documents`.

        Theme LLM calls run concurrently; the CPU work runs in worker threads, so the event
        loop is never blocked.
        """
        docs = await asyncio.to_thread(self._ingestion.validate, documents)
        docs = self._admit(docs, on_conflict)
        await self._aadd(docs, None if split else WHOLE, on_conflict)

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
        :mod:`semrag.index.ingest.presplit` lists what is read. Chunks of one document are
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
            >>> from semrag import Chunk, Document, SemanticIndex
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
        docs, chunk_lists = self._ingestion.place(chunks, documents)
        self._add(self._admit(docs, on_conflict), chunk_lists, on_conflict)

    async def aadd_chunks(
        self,
        chunks: Iterable[Any],
        documents: Iterable[Any] | None = None,
        *,
        on_conflict: OnConflict = "error",
    ) -> None:
        """Async twin of :meth:`add_chunks`."""
        docs, chunk_lists = await asyncio.to_thread(self._ingestion.place, chunks, documents)
        await self._aadd(self._admit(docs, on_conflict), chunk_lists, on_conflict)

    def prepare_documents(self, documents: Iterable[Any], *, split: bool = True) -> PreparedBatch:
        """Chunk and embed documents as :meth:`add_documents` does, without indexing them.

        For a worker process (see :mod:`semrag.ingest`): the returned
        :class:`~semrag.index.ingest.prepared.PreparedBatch` (picklable) goes to the writing
        index's :meth:`add_prepared`, which embeds nothing. This index is left unchanged.

        Raises:
            DocumentConflictError: on an id given twice in the call.
            ConfigError: on metadata that is not JSON.
        """
        computed = self._ingestion.prepare(documents, split=split)
        return PreparedBatch(ingest_settings(self._reader), tuple(computed))

    def add_prepared(self, batch: PreparedBatch, *, on_conflict: OnConflict = "error") -> None:
        """Index a batch another process prepared (:meth:`prepare_documents`): one change.

        Nothing is chunked or embedded here; the batch's vectors are the index's.

        Raises:
            ConfigError: if the batch was prepared with other settings (chunker, chunk
                vectors, similarity graph, or another embedding model), by another
                semrag version (another layout), or holds vectors that do not fit its
                documents.
            DocumentConflictError: as :meth:`add_documents`, by ``on_conflict``.
        """
        if not isinstance(batch, PreparedBatch):
            raise ConfigError(f"add_prepared takes a PreparedBatch, got {type(batch).__name__}")
        batch.check()
        check_settings(ingest_settings(self._reader), batch.settings)
        self._admit([d.doc for d in batch.documents], on_conflict)
        self._store(list(batch.documents), on_conflict)

    def delete(self, ids: str | Iterable[str]) -> bool:
        """Remove one document or several (in one change), with their chunks and graph nodes.

        Returns ``True`` when every id was indexed; an id that was not is reported by
        ``False`` and in :attr:`notes` (the others are removed all the same).

        Examples:
            >>> from semrag import Chunk, Document, SemanticIndex
            >>> from semrag.testing import FakeEmbedder
            >>> index = SemanticIndex(embedder=FakeEmbedder(), ssg=False)
            >>> index.add_documents([Document("a", "Bees."), Document("b", "Ants.")])
            >>> index.delete(["a", "zz"]), index.doc_ids, index.notes
            (False, ['b'], ["delete: not indexed: ['zz']"])

        Raises:
            ConfigError: if ``ids`` is not a string or an iterable of strings.
        """
        wanted = id_list(ids)
        removed = self._commit((), wanted).removed
        gone = {d.id for d in removed}
        unknown = [i for i in dict.fromkeys(wanted) if i not in gone]
        if unknown:
            self.notes.append(f"delete: not indexed: {unknown[:20]}")
        return not unknown

    async def adelete(self, ids: str | Iterable[str]) -> bool:
        """Async twin of :meth:`delete` (the commit runs in a worker thread)."""
        return await asyncio.to_thread(self.delete, ids)

    def _delete_many(self, doc_ids: Iterable[str]) -> int:
        """``delete_many`` of 0.2 (deprecated: :meth:`delete` takes a list of ids).

        Removes several documents in one change; returns how many were indexed.
        """
        if isinstance(doc_ids, str):
            raise ConfigError("pass a list of document ids, or use delete() for one")
        return len(self._commit((), id_list(doc_ids)).removed)

    def doc_ids_where(
        self, filter: MetadataFilter, among: Iterable[str] | None = None
    ) -> list[str]:
        """Ids of the documents (of ``among``, default all) whose metadata ``filter`` accepts.

        Examples:
            >>> from semrag import Chunk, Document, SemanticIndex
            >>> from semrag.testing import FakeEmbedder
            >>> index = SemanticIndex(embedder=FakeEmbedder(), ssg=False)
            >>> index.add_documents([Document("a", "Bees.", {"n": 1}), Document("b", "Ants.")])
            >>> index.doc_ids_where({"n": 1}), index.doc_ids_where(lambda m: True, ["b", "x"])
            (['a'], ['b'])
        """
        accept = as_filter(filter)
        entries = self._corpus.by_id()
        wanted = entries if among is None else [i for i in among if i in entries]
        return [i for i in wanted if accept(entries[i].doc.metadata)]

    def _admit(self, docs: list[Document], on_conflict: Any) -> list[Document]:
        """Fail fast, before any embedding, on a conflict the commit would refuse."""
        return self._conflicts(docs, check_on_conflict(on_conflict))

    def _conflicts(self, docs: list[Document], on_conflict: OnConflict) -> list[Document]:
        """The documents to add under ``on_conflict`` (see :mod:`semrag.identity`).

        Raises:
            DocumentConflictError: with ``"error"``, if any id is already indexed.
        """
        taken = [d.id for d in docs if d.id in self._corpus]
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
        return [d for d in docs if d.id not in self._corpus]

    def _store(self, computed: list[PreparedDocument], on_conflict: OnConflict) -> None:
        """Commit the documents of one ``add_documents`` call as one change.

        ``computed`` is emptied: its arrays belong to the records from then on.
        """
        with self._corpus.writer():  # ids are taken in commit order
            # checked again here: another add may have committed an id since the call began
            kept = {d.id for d in self._conflicts([c.doc for c in computed], on_conflict)}
            records = self._corpus.assign_ids([c for c in computed if c.id in kept])
            # the caller's list lets go of what ingestion made: as the dense part stores
            # each batch of chunk vectors, its records read them there and the arrays
            # are freed during the commit (PartSet.stage)
            computed.clear()
            if records:  # one change per call (with "replace", re-added ids replace)
                self._commit(records)

    def _ingest(
        self, docs: list[Document], given: Given, on_conflict: OnConflict
    ) -> Generator[Call, Any, None]:
        """Ingestion, written once: it yields the embedder's, chunker's and LLM's work.

        :meth:`_add` answers with blocking calls, :meth:`_aadd` with their async twins
        (and runs the steps between them in a worker thread). Blocks bound the embedder's
        batches; the call is one change (one commit), so a bulk load costs every part one
        application, and a failure adds nothing.
        """
        computed = yield from self._ingestion.compute(docs, given)
        self._store(computed, on_conflict)

    def _add(self, docs: list[Document], given: Given, on_conflict: OnConflict) -> None:
        drive(self._ingest(docs, given, on_conflict), call)

    async def _aadd(self, docs: list[Document], given: Given, on_conflict: OnConflict) -> None:
        await adrive(self._ingest(docs, given, on_conflict), acall)

    # -- parts ----------------------------------------------------------------------------
    @property
    def parts(self) -> dict[str, StagedPart]:
        """The index's own parts, by name: each stages and publishes every :class:`Change`."""
        return self._part_set.named()

    def enable(
        self,
        part: str,
        *,
        split: tuple[int, int] = (100, 16),
        config: SSGConfig | None = None,
    ) -> None:
        """Add a part to a populated index: built from the indexed documents, then kept.

        ``"passages"``: the PPR passage phrases (as ``SemanticIndex(passages=True)``);
        ``"pieces"``: SKETCH's small pieces of ``split`` (as ``SemanticIndex(pieces=split)``);
        ``"ssg"``: the semantic similarity graph with ``config`` (default ``SSGConfig()``),
        from the sentence vectors the index holds (window nodes mean-pooled: nothing is
        embedded again). From then on the part follows every change and is saved with the
        index. An index that holds the part already is left as it is. Followers that store
        the index elsewhere (:class:`~semrag.neo4j.Neo4jIndexStore`) are told, through
        their ``part_enabled(part)`` (:class:`~semrag.index.change.StoresParts`), and write
        the new part before this returns.

        Raises:
            ConfigError: for a part that cannot be enabled this way, a bad ``split``, or an
                SSG config that needs what the index did not keep (concatenated windows,
                another number of themes): build with ``SemanticIndex(ssg=config)``.
        """
        check_enabled(part)
        with self._corpus.writer():  # no change between the build and its followers' write
            if part == "ssg":
                built_now = self._enable_ssg(check_ssg_config(config or SSGConfig()))
            else:
                built_now = self._enable_part(part, split)
            if built_now:
                for follower in self._corpus.followers:
                    if isinstance(follower, StoresParts):
                        follower.part_enabled(part)

    def _enable_part(self, part: str, split: tuple[int, int]) -> bool:
        """Build ``"passages"`` or ``"pieces"`` (under the commit lock ``enable`` holds)."""
        if part in self._part_set.named():
            return False
        built = new_part(
            part,
            split,
            embedder=self.embedder,
            tokenizer=self.chunker.tokenizer,
            dense_kind=self._dense_kind,
        )
        publish = built.stage(Change(self._corpus.version, tuple(self._corpus.records())))
        with self._corpus.swap():
            publish()
            self._part_set.keep(part, built)
        return True

    def _enable_ssg(self, cfg: SSGConfig) -> bool:
        """Build the graph from the kept sentence vectors (under ``enable``'s commit lock)."""
        if self._part_set.ssg is not None:
            return False
        entries = self._corpus.records()
        nodes = window_nodes(cfg, entries, self.embedder.dim)
        graph = LiveSSG(cfg, self.embedder.dim)
        staged = tuple(  # the graph is built while readers go on reading
            e.with_windows(r, sv, nv) for e, (r, sv, nv) in zip(entries, nodes, strict=True)
        )
        publish = graph.stage(Change(self._corpus.version, staged))
        with self._corpus.swap():  # readers see the index without the graph or with it
            for e, (ranges, svec, nvec) in zip(entries, nodes, strict=True):
                e.rows.add_windows(ranges, svec, nvec)
            publish()
            self._part_set.keep("ssg", graph)
            self._ingestion.use_ssg(cfg)
            self._share_vectors(())
            self._publish_view()
        return True

    # -- versions: followers, reads, the one place the index changes ---------------------
    def follow(
        self,
        part: Follower,
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
        self._corpus.follow(part, replay=replay)

    def unfollow(self, part: Follower) -> bool:
        """Stop giving changes to ``part``; ``False`` if it was not following."""
        return self._corpus.unfollow(part)

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
            ConfigError: ``followers=True`` inside a plain read of the same thread.

        Examples:
            >>> from semrag.testing import FakeEmbedder
            >>> index = SemanticIndex(embedder=FakeEmbedder())
            >>> index.add_documents(["Bees make honey."])
            >>> with index.read():
            ...     dense, sparse = index.search("bees", k=1), index.search_sparse("bees", k=1)
            >>> dense[0].chunk == sparse[0].chunk
            True
        """
        return self._corpus.read(followers=followers)

    def _commit(self, added: Sequence[IndexedDocument], removed_ids: Iterable[str] = ()) -> Change:
        """Make one change: every part applies it, then the new version is published.

        ``added`` documents replace indexed ones of the same id.
        """
        return self._corpus.commit(added, removed_ids, self._part_set.stage, self._swapped)

    def _swapped(self, change: Change) -> None:
        """Under the write lock, after the corpus swapped in ``change``: views follow it."""
        self._share_vectors(change.added)
        self._publish_view()

    def _adopt(self, shadow: SemanticIndex) -> Change:
        """Make a re-embedded twin of this index (:meth:`reembed`) current, as one change.

        ``shadow`` holds the same documents with another model's vectors. Followers get a
        change that removes every document and adds its new version. The caller holds
        the corpus's writer (``Corpus.writer``) and made sure no write landed since ``shadow`` was
        filled.
        """
        fingerprint = shadow.fingerprint  # computed before readers are stopped

        def swap(change: Change) -> None:
            self._ingestion = self._ingestion.with_model(shadow.embedder, shadow.chunker)
            self._fingerprint = fingerprint
            self._part_set.take(shadow._part_set)
            self.notes.extend(shadow.notes)
            self._publish_view()

        return self._corpus.adopt(shadow._corpus, swap)

    def _share_vectors(self, added: Iterable[IndexedDocument]) -> None:
        """Point the records' vectors at the parts' rows (see :meth:`PartSet.share_vectors`)."""
        self._part_set.share_vectors(self._corpus.records(), added)

    def _publish_view(self) -> None:
        self._part_set.publish_view(
            self._corpus.version, self._corpus.by_id(), self.chunker.tokenizer
        )

    # -- the model ------------------------------------------------------------------------
    def reembed(
        self,
        embedder: Embedder,
        *,
        chunker: BoundaryChunker | None = None,
        show_progress: bool | None = None,
    ) -> None:
        """Move the index to another embedding model: every vector embedded again, one change.

        Every sentence, chunk, window, theme, SKETCH piece and passage-phrase vector is
        computed by ``embedder``; the documents, their sentences, chunks (offsets and
        texts) and themes stay as they are, BM25 and the graph follow. The result is the
        index a fresh build with the new model gives over the same chunks (to cut the
        documents again with a chunker that uses the new model, add them again instead:
        ``add_documents(docs, on_conflict="replace")``).

        It is one change of the living index: built beside the current version (readers
        keep answering from the old vectors with the old model meanwhile, and writes
        that land meanwhile are embedded too), then swapped in whole with the new
        embedder and :attr:`fingerprint`; followers such as a
        :class:`~semrag.neo4j.Neo4jIndexStore` write it as any change. A failure or a
        kill before the swap leaves the old index; a save is the old or the new one
        (saves are atomic). Chunk ids are new.

        Args:
            embedder: the new model (any embedder :class:`SemanticIndex` takes).
            chunker: the chunker for documents added later; default the index's own, or,
                when it embeds with the index's old model (the default
                ``SemanticChunker``), a copy of it with the new model.
            show_progress: a progress bar over the documents (default: the index's
                ``show_progress``).

        Raises:
            ConfigError: for an index whose dense channel is the user's vector store (it
                embeds the chunks itself: rebuild the store), or one followed by a
                knowledge graph (it embeds entity names with the old model: unfollow it,
                re-embed, then build it again over the index).
            EmbeddingError: if the new embedder misbehaves (the index is left as it was).

        Examples:
            >>> from semrag import SemanticIndex
            >>> from semrag.testing import FakeEmbedder
            >>> index = SemanticIndex(embedder=FakeEmbedder(dim=32))
            >>> index.add_documents(["Bees dance.", "Rockets fly."])
            >>> index.reembed(FakeEmbedder(dim=64))
            >>> index.embedder.dim, index.fingerprint.dim
            (64, 64)
        """
        drive(self._reembedding(embedder, chunker, show_progress), call)

    async def areembed(
        self,
        embedder: Embedder,
        *,
        chunker: BoundaryChunker | None = None,
        show_progress: bool | None = None,
    ) -> None:
        """Async twin of :meth:`reembed` (the embedder's async path; CPU work off the loop)."""
        steps = self._reembedding(embedder, chunker, show_progress)
        await adrive(steps, acall)

    def _reembedding(
        self, embedder: Embedder, chunker: BoundaryChunker | None, show_progress: bool | None
    ) -> Generator[Call, Any, None]:
        """``reembed``, written once: it yields the new embedder's work.

        The documents are embedded outside every lock into a shadow index
        (:func:`~semrag.index._reembed.shadow_options`); the swap happens only if no write
        landed since, else the documents that changed are embedded too and it tries again.
        """
        options, dense, sparse = shadow_options(self._reader, embedder, chunker)
        shadow = SemanticIndex(**options)
        shadow._part_set.use(dense=dense, sparse=sparse)
        if show_progress is not None:
            shadow.show_progress = show_progress
        done: dict[str, tuple[IndexedDocument, PreparedDocument]] = {}
        while True:
            with self.read():
                current = {d: self._corpus.entry(d) for d in self._corpus.doc_ids}
            todo = {i: e for i, e in current.items() if i not in done or done[i][0] is not e}
            if todo:
                docs = [e.doc for e in todo.values()]
                rows = yield from shadow._ingestion.compute(docs, None, todo)
                done.update((row.id, (todo[row.id], row)) for row in rows)
            with self._corpus.writer():
                live = self._corpus.by_id()
                if live.keys() == current.keys() and all(e is current[i] for i, e in live.items()):
                    shadow._corpus.skip_ids(self._corpus.next_id)  # new ids: none reused
                    shadow._store([done[i][1] for i in current], "error")
                    self._adopt(shadow)
                    return

    # -- saving ---------------------------------------------------------------------------
    def save(self, directory: str | Path, *, overwrite: bool = False) -> Path:
        """Publish the index as ``directory``'s next version, atomically (no pickle).

        The files are written beside the current version, then published by one atomic
        step (:mod:`semrag.index.storage.persist`): processes loading ``directory``
        meanwhile get the old or the new version whole, never an error, and a crash at
        any moment leaves the last published version. Old versions are removed once no
        load can still be reading them.

        One writer at a time: a save publishes only over the version this index was
        loaded from or last saved to ``directory`` (or into a directory holding no save),
        so two processes writing one directory never lose each other's changes silently.

        Args:
            directory: the saved directory (created when missing).
            overwrite: replace whatever version ``directory`` publishes (a rebuild that
                supersedes it) instead of refusing one this index never saw.

        Raises:
            SaveConflictError: if ``directory`` publishes a version this index was not
                loaded from and did not save (another writer saved since): load it again,
                apply the changes again and save, or pass ``overwrite=True``.
            StoreError: if the directory cannot be written.

        Examples:
            >>> import tempfile
            >>> from semrag import SemanticIndex
            >>> from semrag.testing import FakeEmbedder
            >>> index = SemanticIndex(embedder=FakeEmbedder(dim=32))
            >>> index.add_documents(["Bees dance.", "Rockets fly."])
            >>> folder = tempfile.mkdtemp()
            >>> _ = index.save(folder)
            >>> _ = index.save(folder)  # its own save: the next version
            >>> loaded = SemanticIndex.load(folder, embedder=FakeEmbedder(dim=32))
            >>> loaded.version == index.version, loaded.refresh()  # nothing newer saved
            (True, False)
        """
        directory = Path(directory)
        key = directory.resolve()
        base = ANY_BASE if overwrite else self._generations.get(key)
        generation = save_index(self._reader, directory, base)
        self._generations[key], self._home = generation, directory
        return directory

    def refresh(self) -> bool:
        """Move to the newest save of the directory this index was loaded from (or saved to).

        For a serving process that follows an ingestion job: it reads one small file, and
        when the directory publishes a newer version than the one this index holds, that
        version is loaded (with this index's embedder and chunker) and swapped in as one
        change; readers go on answering from the old version meanwhile and never see a
        mix. Changes made in this process and not saved are replaced.

        Returns:
            Whether a newer version was loaded.

        Raises:
            ConfigError: for an index never loaded or saved, or one whose vectors are in
                the user's vector store (load it again instead).
            StoreError: if the newer save is damaged (the index stays as it was).
        """
        if self._home is None:
            raise ConfigError(
                "refresh() follows the directory an index was loaded from; "
                "this one was never loaded or saved"
            )
        if self._dense_kind == StoreBackedDense.kind:
            raise ConfigError("an index over your vector store refreshes by loading it again")
        home = self._home
        if current_generation(home) == self._generations[home.resolve()]:
            return False
        newer = SemanticIndex.load(
            home, embedder=self.embedder, chunker=self.chunker, theme_llm=self._ingestion.theme_llm
        )
        with self._corpus.writer():
            self._adopt(newer)
        self._generations[home.resolve()] = newer._generations[home.resolve()]
        return True

    @classmethod
    def load(
        cls,
        directory: str | Path,
        *,
        embedder: Embedder | None = None,
        chunker: BoundaryChunker | None = None,
        theme_llm: LLM | None = None,
        dense: VectorClient | None = None,
        allow_embedder_mismatch: bool = False,
    ) -> SemanticIndex:
        """Load the version of an index that ``directory`` publishes now (see :meth:`save`).

        The load reads one published version whole, however many saves overlap it, and
        never writes; the index reports the :attr:`version` it was saved at, and
        :meth:`refresh` follows later saves.

        The save records the fingerprint of the model that made its vectors
        (:mod:`semrag.fingerprint`); the embedder must be that model (another model of the
        same dimension would answer every query wrongly), or the load raises.

        Args:
            directory: the saved index.
            embedder: the embedder for new documents and queries; default the packaged
                MiniLM. It must be the model the index was built with (checked by its
                vectors of a few probe texts); to move to another model, load with the
                old one and call :meth:`reembed`.
            chunker: the chunker for documents added later; default ``SemanticChunker``.
            theme_llm: optional theme LLM for documents added later.
            dense: the vector store of an index saved with one (required then; it must
                hold the entries it held at the save: the store persists them itself).
            allow_embedder_mismatch: load with another model anyway (for a model you know
                shares the saved one's vector space); :attr:`notes` records it, and the
                index keeps the saved fingerprint.

        Raises:
            EmbedderMismatchError: if the embedder is not the model the index was built
                with (a :class:`ConfigError`; it names both models).
            ConfigError: on a missing directory, a newer format or a dimension mismatch.
            StoreError: if the save is incomplete or a file is corrupt.
        """
        from semrag._version import __version__

        directory = Path(directory)

        def read(saved: Saved) -> SemanticIndex:
            index = cls(
                chunker, embedder, theme_llm=theme_llm, **saved_options(saved.manifest, dense)
            )
            index._restore(directory, saved, dense, allow_embedder_mismatch)
            return index

        return load_saved(
            directory, read, kind=KIND, format_version=FORMAT_VERSION, library_version=__version__
        )

    def _restore(
        self, directory: Path, saved: Saved, dense: VectorClient | None, allow_mismatch: bool
    ) -> None:
        """Fill this fresh index from the ``saved`` version of ``directory`` (see :meth:`load`)."""
        m = saved.manifest
        try:
            self._adopt_fingerprint(
                m.get("fingerprint"),
                dim=int(m["dim"]),
                name=str(m["embedder"]),
                what=f"the index saved in {directory}",
                allow_mismatch=allow_mismatch,
            )
            restore(
                saved.folder,
                m,
                self._corpus,
                self._part_set,
                embedder=self.embedder,
                tokenizer=self.chunker.tokenizer,
                sentence_dtype=self._ingestion.sentence_dtype,
                client=dense,
            )
            self._publish_view()
            self._share_vectors(())
        except (KeyError, IndexError, TypeError, ValueError, OSError, StoreError) as exc:
            if isinstance(exc, ConfigError):
                raise
            raise StoreError(
                f"{saved.folder} does not hold a consistent index ({type(exc).__name__}: "
                f"{exc}); it was edited or written by something else"
            ) from exc
        self._generations[directory.resolve()] = saved.generation
        self._home = directory

    if not TYPE_CHECKING:  # the names that moved in 0.3 still answer, with a warning

        def __getattr__(self, name: str) -> Any:
            why = "what retrievers read is on the index's reader"
            if name == "delete_many":
                where, value = "delete(ids)", lambda: self._delete_many
                why = "delete takes a list of ids"
            elif name in MOVED_TO_READER:
                where, value = f"reader().{name}", lambda: getattr(self._reader, name)
            elif name in MOVED_TO_VIEW:
                attr = MOVED_TO_VIEW[name]
                where = f"reader().ssg_view().{attr}"
                value = lambda: getattr(self._reader.ssg_view(), attr)  # noqa: E731
            else:
                raise AttributeError(f"'SemanticIndex' object has no attribute {name!r}")
            warnings.warn(
                f"SemanticIndex.{name} moved to index.{where} in semrag 0.3 ({why}); "
                "the old name goes in 0.4",
                DeprecationWarning,
                stacklevel=2,
            )
            return value()

    def __repr__(self) -> str:
        return (
            f"SemanticIndex(documents={len(self)}, chunks={self._corpus.n_chunks}, "
            f"chunker={self.chunker!r}, ssg={self._ingestion.ssg_config is not None})"
        )
