"""``CorpusReader``: what a retriever and SPC may read from an index.

Three classes implement it: the embedded :class:`~semrag.index.SemanticIndex` (with its
own dense search, or a vector store's through
:class:`~semrag.index.external.StoreBackedDense`), and
:class:`~semrag.neo4j.Neo4jIndex`, which serves an index written to Neo4j. A
retriever that reads only these members works on all three; one contract suite
(``tests/graph/test_reader_contract.py``) runs every member on each and checks they agree.

Members a reader may have beyond these are optional capabilities, and a retriever that
uses one checks for it (``getattr(index, "extended", ...)``, ``index.ssg_config``) and
says what is missing when it is absent.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from semrag.types import Chunk, Document, ScoredChunk, Span

__all__ = ["CorpusReader"]

Floats = npt.NDArray[np.float32]


@runtime_checkable
class CorpusReader(Protocol):
    """The read side of an index: documents, chunks, vectors, searches and the SSG view.

    Chunk ids are the index's integers; document ids follow :mod:`semrag.identity`. Every
    read sees one version of the corpus: hold :meth:`read` around several reads that must
    agree (``with index.read(): ...``).
    """

    embedder: Any
    """The embedder the index was built with (queries must use it)."""

    @property
    def version(self) -> int:
        """The number of changes made so far (a new number after every add or delete)."""
        ...

    @property
    def doc_ids(self) -> list[str]:
        """The ids of the indexed documents, in the order they were added."""
        ...

    @property
    def tokenizer(self) -> Any:
        """The token counter the chunks were measured with."""
        ...

    def __contains__(self, doc_id: object) -> bool: ...

    def __len__(self) -> int: ...

    def read(self, *, followers: bool = False) -> AbstractContextManager[None]:
        """Hold one version for the reads in the ``with`` block."""
        ...

    # -- documents and chunks -------------------------------------------------------------
    def document(self, doc_id: str) -> Document:
        """The document as indexed (text and metadata)."""
        ...

    def sentences(self, doc_id: str) -> list[Span]:
        """The document's sentence spans."""
        ...

    def sentence_vectors(self, doc_id: str) -> Floats:
        """The document's sentence vectors, one row per sentence."""
        ...

    def themes(self, doc_id: str) -> list[str]:
        """The document's themes (keywords, or an LLM's)."""
        ...

    def chunks(self, doc_id: str) -> list[Chunk]:
        """The document's chunks in text order."""
        ...

    def chunk(self, chunk_id: int) -> Chunk:
        """One chunk by id."""
        ...

    def vectors_of(self, chunk_ids: Sequence[int]) -> Floats:
        """The chunks' vectors, one row each, in the order given."""
        ...

    def sentence_vectors_of(self, chunk_ids: Sequence[int]) -> list[Floats]:
        """Each chunk's sentence vectors."""
        ...

    def overlapping_chunks(self, doc_id: str, start: int, end: int) -> list[int]:
        """Ids of the document's chunks that overlap ``[start, end)``."""
        ...

    def overlapping_chunks_many(self, spans: Sequence[tuple[str, int, int]]) -> list[list[int]]:
        """:meth:`overlapping_chunks` for many ``(doc_id, start, end)`` at once."""
        ...

    def fetch_documents(self, doc_ids: Sequence[str]) -> None:
        """Make these documents' reads cheap (a remote reader fetches them in one trip)."""
        ...

    # -- search ---------------------------------------------------------------------------
    def embed_query(self, query: str) -> Floats:
        """The query's vector, by the index's embedder."""
        ...

    async def aembed_query(self, query: str) -> Floats:
        """Async twin of :meth:`embed_query`."""
        ...

    def search(self, query: str, k: int = 10) -> list[ScoredChunk]:
        """The ``k`` chunks nearest the query (dense), best first."""
        ...

    async def asearch(self, query: str, k: int = 10) -> list[ScoredChunk]:
        """Async twin of :meth:`search`."""
        ...

    def search_vector(self, vector: Floats, k: int) -> list[ScoredChunk]:
        """The ``k`` chunks nearest a query vector."""
        ...

    def search_sparse(self, query: str, k: int = 10) -> list[ScoredChunk]:
        """The ``k`` best chunks by BM25."""
        ...

    def search_channels(
        self, vectors: npt.ArrayLike, queries: Sequence[str], k: int
    ) -> tuple[npt.NDArray[np.int64], list[list[tuple[int, float]]]]:
        """Dense top-``k`` ids of each vector and BM25 top ``k`` of each query, one version."""
        ...

    def sparse_scores(self, query: str, chunk_ids: Sequence[int]) -> npt.NDArray[np.float64]:
        """BM25 scores of the query against these chunks."""
        ...

    def sparse_scores_many(
        self, queries: Sequence[str], chunk_ids: Sequence[int]
    ) -> npt.NDArray[np.float64]:
        """:meth:`sparse_scores` of each query: shape ``(len(queries), len(chunk_ids))``."""
        ...

    def ssg_view(self) -> Any:
        """The semantic similarity graph as the SSG traversals read it."""
        ...
