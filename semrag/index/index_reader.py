"""What the retrievers read of a :class:`~semrag.SemanticIndex`: its reader.

The index's own API is what users call (add, delete, search, save, load, enable,
reembed); ``index.reader()`` is the service interface retrievers, the storage functions
and the post-processors read through (:class:`~semrag.index.reader.CorpusReader`, and the
capabilities :class:`~semrag.index.reader.HoldsRecords`,
:class:`~semrag.index.reader.PieceReads` and :class:`~semrag.index.reader.KeptParts`).
The reader is a live view of the index: it holds the index's corpus, parts and searches
(the same objects), so a change of the index is a change of its reader; hold
``reader.read()`` to read one version across several calls.

Examples:
    >>> from semrag import SemanticIndex
    >>> from semrag.testing import FakeEmbedder
    >>> index = SemanticIndex(embedder=FakeEmbedder())
    >>> index.add_documents(["Bees make honey. They dance."])
    >>> reader = index.reader()
    >>> with reader.read():
    ...     ids = reader.overlapping_chunks(index.doc_ids[0], 0, 5)
    >>> [c.text[:4] for c in reader.chunks_of(ids)]
    ['Bees']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from semrag.chunking.base import BoundaryChunker
from semrag.embeddings import BaseEmbedder
from semrag.errors import ConfigError
from semrag.fingerprint import EmbedderFingerprint
from semrag.index.change import Follower, IndexedDocument, StagedPart
from semrag.index.corpus import Corpus
from semrag.index.derived import DerivedParts
from semrag.index.parts._ssg_view import SSGView
from semrag.index.parts.dense import DenseIndex
from semrag.index.parts.external import StoreBackedDense
from semrag.index.parts.part_set import PartSet
from semrag.index.parts.pieces import PieceIndex
from semrag.index.parts.sparse import BM25Index
from semrag.index.parts.ssg import SSGConfig
from semrag.index.reader import DocumentRecord, aquery_vector, query_vector
from semrag.index.search import IndexSearch
from semrag.llm import LLM
from semrag.text.tokens import Tokenizer
from semrag.types import Chunk, Floats, Span

if TYPE_CHECKING:
    from semrag.index.ingest.ingestion import Ingestion
    from semrag.index.reader import (
        CorpusReader,
        CorpusSearch,
        HoldsRecords,
        KeptParts,
        PieceReads,
        SimilarityGraphReads,
    )

__all__ = ["IndexReader"]


class IndexReader:
    """The reads of one :class:`~semrag.SemanticIndex`, as retrievers take them.

    Made by the index (``index.reader()``), never by hand: it shares the index's corpus,
    parts and searches, and asks the index for the settings a re-embedding replaces.

    Args:
        corpus: the index's records, chunk ids, version and locks.
        part_set: the index's parts.
        search: the searches over both.
        settings: the index's current ingestion settings (embedder, chunker, ...).
        fingerprint: the index's current fingerprint.
        dense_kind: the dense part's kind (``"auto"``, ``"flat"``, ...).
    """

    def __init__(
        self,
        corpus: Corpus,
        part_set: PartSet,
        search: IndexSearch,
        *,
        settings: Callable[[], Ingestion],
        fingerprint: Callable[[], EmbedderFingerprint],
        dense_kind: str,
    ) -> None:
        self.corpus = corpus
        self.part_set = part_set
        self._search = search
        self._settings = settings
        self._fingerprint = fingerprint
        self.dense_kind = dense_kind
        self.derived_parts = DerivedParts()  # what retrievers derive from the records

    # -- settings ---------------------------------------------------------------------
    @property
    def embedder(self) -> BaseEmbedder:
        """The embedder of the index's vectors and of queries."""
        return self._settings().embedder

    @property
    def chunker(self) -> BoundaryChunker:
        """The chunker of documents the index adds."""
        return self._settings().chunker

    @property
    def tokenizer(self) -> Tokenizer:
        """What counts a chunk's tokens: the chunker's tokenizer."""
        return self._settings().chunker.tokenizer

    @property
    def ssg_config(self) -> SSGConfig | None:
        """The similarity graph's settings, or ``None`` without a graph."""
        return self._settings().ssg_config

    @property
    def chunk_vectors(self) -> str:
        """``"embed"`` or ``"mean"``: how a chunk's vector is made."""
        return self._settings().chunk_vectors

    @property
    def sentence_dtype(self) -> str:
        """How the sentence vectors are held (``"float16"`` or ``"float32"``)."""
        return self._settings().sentence_dtype

    @property
    def theme_llm(self) -> LLM | None:
        """The LLM that names document themes, or ``None`` (keyword themes)."""
        return self._settings().theme_llm

    @property
    def on_llm_error(self) -> str:
        """What a failing theme LLM leads to: ``"fallback"`` or ``"raise"``."""
        return self._settings().on_llm_error

    @property
    def show_progress(self) -> bool | None:
        """Whether the index's long builds show a progress bar (``None``: when it helps)."""
        return self._settings().show_progress

    @property
    def fingerprint(self) -> EmbedderFingerprint:
        """The fingerprint of the model that made the index's vectors."""
        return self._fingerprint()

    # -- one version ------------------------------------------------------------------
    @property
    def version(self) -> int:
        """A number that changes with every add or delete: retrievers key caches by it."""
        return self.corpus.version

    def current_version(self) -> int:
        """:attr:`version` as a method (as a database reader offers it)."""
        return self.corpus.version

    def read(self, *, followers: bool = False) -> AbstractContextManager[None]:
        """Read one version for the length of a ``with`` block (:meth:`SemanticIndex.read`)."""
        return self.corpus.read(followers=followers)

    def can_commit(self) -> bool:
        """Whether the calling thread may make a change now (it holds no read)."""
        return self.corpus.can_commit()

    @property
    def followers(self) -> tuple[Follower, ...]:
        """The parts that get the index's changes after its own."""
        return self.corpus.followers

    def follows(self, part: object) -> bool:
        """Whether ``part`` gets the index's changes."""
        return self.corpus.follows(part)

    # -- documents and chunks ---------------------------------------------------------
    @property
    def doc_ids(self) -> list[str]:
        """Ids of the indexed documents, in insertion order."""
        return self.corpus.doc_ids

    def documents(self, doc_ids: Sequence[str]) -> dict[str, DocumentRecord]:
        """The records of these documents (their :meth:`indexed` records); absent ids left out."""
        with self.corpus.read():
            return {d: self.corpus.entry(d) for d in doc_ids if d in self.corpus}

    def indexed(self, doc_id: str) -> IndexedDocument:
        """The record ingestion made of ``doc_id``: its sentences, chunks and vectors.

        The same object until the document is replaced or deleted, so a cache keyed by it
        (``record is reader.indexed(doc_id)``) knows whether the document changed.
        """
        return self.corpus.entry(doc_id)

    def sentences(self, doc_id: str) -> list[Span]:
        """Sentence spans of ``doc_id``."""
        return self.corpus.entry(doc_id).sentences

    def sentence_vectors(self, doc_id: str) -> Floats:
        """Unit vectors of ``doc_id``'s sentences (float32, or float16: :attr:`sentence_dtype`)."""
        return self.corpus.entry(doc_id).sentence_vectors

    def themes(self, doc_id: str) -> list[str]:
        """Themes of ``doc_id`` (keywords, or the theme LLM's)."""
        return list(self.corpus.entry(doc_id).themes)

    def chunks(self, doc_id: str | None = None) -> list[Chunk]:
        """Chunks of one document, or of all documents in order."""
        if doc_id is not None:
            return list(self.corpus.entry(doc_id).chunks)
        return [c for e in self.corpus.records() for c in e.chunks]

    def chunks_of(self, chunk_ids: Sequence[int]) -> list[Chunk]:
        """The chunks stored under these integer ids of the dense/BM25 indexes, in order."""
        with self.corpus.read():
            return [self.corpus.chunk(int(i)) for i in chunk_ids]

    def chunk_ids(self, doc_id: str) -> list[int]:
        """Integer ids of ``doc_id``'s chunks, in document order."""
        return list(self.corpus.entry(doc_id).chunk_ids)

    def overlapping_chunks(self, doc_id: str, start: int, end: int) -> list[int]:
        """Ids of ``doc_id``'s chunks that share a character with ``[start, end)``.

        In the document's chunk order; two binary searches bound the candidates, so a
        document of many chunks costs a lookup ``log`` of them plus the chunks found.
        """
        return self.corpus.overlapping_chunks(doc_id, start, end)

    def overlapping_chunks_many(self, spans: Sequence[tuple[str, int, int]]) -> list[list[int]]:
        """:meth:`overlapping_chunks` of each ``(doc_id, start, end)``."""
        return [self.corpus.overlapping_chunks(d, a, b) for d, a, b in spans]

    # -- vectors and scores -----------------------------------------------------------
    def embed_query(self, query: str) -> Floats:
        """The query's vector (:func:`~semrag.index.reader.query_vector`)."""
        return query_vector(self, query)

    async def aembed_query(self, query: str) -> Floats:
        """Async twin of :meth:`embed_query`."""
        return await aquery_vector(self, query)

    def vectors_of(self, chunk_ids: Sequence[int]) -> Floats:
        """Stored unit vectors of the given chunks, shape ``(len(chunk_ids), dim)``."""
        return self._search.vectors_of(chunk_ids)

    def sentence_vectors_of(self, chunk_ids: Sequence[int]) -> list[Floats]:
        """The vectors of each chunk's sentences (``sentence_start .. sentence_end``)."""
        return self._search.sentence_vectors_of(chunk_ids)

    def dense_search(self, vector: Floats, k: int) -> tuple[Floats, npt.NDArray[np.int64]]:
        """Dense top-``k`` as arrays: cosine similarities and chunk ids, best first."""
        return self._search.dense(vector, k)

    def search_channels(
        self, vectors: npt.ArrayLike, queries: Sequence[str], k: int
    ) -> tuple[npt.NDArray[np.int64], list[list[tuple[int, float]]]]:
        """Dense top-``k`` ids of each vector (``-1`` pads) and BM25 top ``k`` of each query."""
        return self._search.channels(vectors, queries, k)

    def sparse_scores(self, query: str, chunk_ids: Sequence[int]) -> npt.NDArray[np.float64]:
        """BM25 scores of ``query`` for the given chunks (0 where no term matches)."""
        return self._search.sparse_scores(query, chunk_ids)

    def sparse_scores_many(
        self, queries: Sequence[str], chunk_ids: Sequence[int]
    ) -> npt.NDArray[np.float64]:
        """:meth:`sparse_scores` of each query: shape ``(len(queries), len(chunk_ids))``."""
        return self._search.sparse_scores_many(queries, chunk_ids)

    # -- parts ------------------------------------------------------------------------
    @property
    def parts(self) -> dict[str, StagedPart]:
        """The index's own parts, by name."""
        return self.part_set.named()

    @property
    def dense(self) -> DenseIndex | StoreBackedDense:
        """The dense part: chunk vectors searched in process, or by the user's vector store."""
        return self.part_set.dense

    @property
    def sparse(self) -> BM25Index:
        """The BM25 part."""
        return self.part_set.sparse

    @property
    def piece_index(self) -> PieceIndex | None:
        """The small pieces kept with the index (``pieces=``), or ``None``."""
        return self.part_set.pieces

    def ssg_view(self) -> SSGView:
        """The current consistent version of the similarity graph and its documents.

        Raises:
            ConfigError: if the index keeps no graph (``ssg=False``; ``index.enable("ssg")``).
        """
        view = self.part_set.view
        if view is None:
            raise ConfigError("this index was built with ssg=False")
        return view

    def __repr__(self) -> str:
        return f"IndexReader(documents={len(self.corpus)}, version={self.version})"


if TYPE_CHECKING:  # mypy checks that the reader keeps the contract it offers

    def _keeps_the_contract(
        r: IndexReader,
    ) -> tuple[
        CorpusReader, CorpusSearch, SimilarityGraphReads, HoldsRecords, PieceReads, KeptParts
    ]:
        return r, r, r, r, r, r
