"""The read side of a :class:`~semrag.SemanticIndex`: documents, chunks, vectors and spans by id."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag.index.change import Floats, IndexedDocument
from semrag.index.corpus import Corpus
from semrag.index.dense import DenseIndex
from semrag.index.external import StoreBackedDense
from semrag.index.part_set import PartSet
from semrag.index.sparse import BM25Index
from semrag.types import Chunk, Document, Span


class Reads:
    """What retrievers and SPC read of a :class:`~semrag.SemanticIndex`.

    The :class:`~semrag.index.reader.CorpusReader` side, one version at a time.
    """

    # -- read access ----------------------------------------------------------------------
    @property
    def corpus(self) -> Corpus:
        """The versioned corpus: the records, chunk ids, version, followers and locks."""
        return self._corpus

    @property
    def part_set(self) -> PartSet:
        """The parts (dense, BM25, and the graph, pieces and phrases kept), as one object."""
        return self._part_set

    @property
    def version(self) -> int:
        """A number that changes with every add or delete: retrievers key caches by it."""
        return self._corpus.version

    def current_version(self) -> int:
        """:attr:`version` as a method (as a database reader offers it)."""
        return self._corpus.version

    def __len__(self) -> int:
        return len(self._corpus)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._corpus

    @property
    def doc_ids(self) -> list[str]:
        """Ids of the indexed documents, in insertion order."""
        return self._corpus.doc_ids

    def _entry(self, doc_id: str) -> IndexedDocument:
        return self._corpus.entry(doc_id)

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
        return [c for e in self._corpus.records() for c in e.chunks]

    def chunk(self, chunk_id: int) -> Chunk:
        """The chunk stored under an integer id of the dense/BM25 indexes."""
        with self._corpus.lock.read():
            return self._corpus.chunk(chunk_id)

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
        with self._corpus.lock.read():
            return self.dense.vectors_of(chunk_ids)

    def sentence_vectors(self, doc_id: str) -> Floats:
        """Unit vectors of ``doc_id``'s sentences, aligned with :meth:`sentences`.

        Float32, or float16 when the index holds its SSG rows so
        (``SSGConfig(vector_dtype="float16")``).
        """
        return self._corpus.entry(doc_id).sentence_vectors

    def overlapping_chunks(self, doc_id: str, start: int, end: int) -> list[int]:
        """Ids of ``doc_id``'s chunks that share a character with ``[start, end)``.

        In the document's chunk order. Two binary searches bound the candidates (chunks
        by start, and the furthest end reached so far), so a document of many chunks
        costs a lookup ``log`` of them plus the chunks found, whatever their layout
        (chunks of a splitter may overlap).
        """
        return self._corpus.overlapping_chunks(doc_id, start, end)

    def overlapping_chunks_many(self, spans: Sequence[tuple[str, int, int]]) -> list[list[int]]:
        """:meth:`overlapping_chunks` of each ``(doc_id, start, end)`` (one read on a server)."""
        return [self.overlapping_chunks(d, a, b) for d, a, b in spans]

    def fetch_documents(self, doc_ids: Sequence[str]) -> None:
        """Nothing to fetch: the documents are in memory.

        A retriever about to read several documents' sentences says so here; an index
        on a server (:class:`~semrag.neo4j.Neo4jIndex`) fetches them in one round trip.
        """

    def sparse_scores(self, query: str, chunk_ids: Sequence[int]) -> npt.NDArray[np.float64]:
        """BM25 scores of ``query`` for the given chunks (0 where no term matches)."""
        with self._corpus.lock.read():
            return self.sparse.scores_of(query, chunk_ids)

    def search_channels(
        self, vectors: npt.ArrayLike, queries: Sequence[str], k: int
    ) -> tuple[npt.NDArray[np.int64], list[list[tuple[int, float]]]]:
        """Dense top-``k`` ids of each vector (``-1`` pads) and BM25 top ``k`` of each query.

        One read of one version (a database index answers both in one round trip).
        """
        with self._corpus.lock.read():
            _, ids = self.dense.search(vectors, k)
            return ids, self.sparse.search_many(list(queries), k)

    def sparse_scores_many(
        self, queries: Sequence[str], chunk_ids: Sequence[int]
    ) -> npt.NDArray[np.float64]:
        """:meth:`sparse_scores` of each query: shape ``(len(queries), len(chunk_ids))``."""
        with self._corpus.lock.read():
            rows = [self.sparse_scores(q, chunk_ids) for q in queries]
        return np.array(rows, np.float64).reshape(len(queries), len(chunk_ids))

    def sentence_vectors_of(self, chunk_ids: Sequence[int]) -> list[Floats]:
        """The vectors of each chunk's sentences (``sentence_start .. sentence_end``)."""
        with self._corpus.lock.read():
            out = []
            for i in chunk_ids:
                c = self._corpus.chunk(int(i))
                vectors = self._corpus.entry(c.doc_id).sentence_vectors
                out.append(vectors[c.sentence_start : c.sentence_end])
            return out

    @property
    def tokenizer(self) -> Any:
        """What counts a chunk's tokens: the chunker's tokenizer."""
        return self.chunker.tokenizer

    def themes(self, doc_id: str) -> list[str]:
        """Themes of ``doc_id`` (keywords, or the theme LLM's)."""
        return list(self._corpus.entry(doc_id).themes)

    @property
    def dense(self) -> DenseIndex | StoreBackedDense:
        """The dense part: chunk vectors searched in process, or by the user's vector store."""
        return self._part_set.dense

    @property
    def sparse(self) -> BM25Index:
        """The BM25 part."""
        return self._part_set.sparse
