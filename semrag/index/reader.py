"""The reader contract: what a retriever and SPC may read from an index, as capabilities.

A reader is split into the capabilities retrievers really use, each a typed
:class:`~typing.Protocol`:

* :class:`CorpusReads`: documents, chunks, vectors and spans, one version at a time;
* :class:`QueryEmbedding`: the query's vector by the index's model;
* :class:`CorpusSearch`: dense and BM25 searches (and the query embedding);
* :class:`SimilarityGraphReads`: the semantic similarity graph (``ssg_config``,
  ``ssg_view()``);
* :class:`CorpusReader`: all three, what every reader offers and most retrievers need;

and optional capabilities, which a reader declares by having their members:

* :class:`AsyncReads`: its ``read()`` may span awaits and its ``a...`` reads await a
  database (:class:`~semrag.neo4j.Neo4jIndex`);
* :class:`KeptParts`: derived structures kept with the index (``parts``), e.g. the PPR
  passage phrases a database reader serves;
* :class:`HoldsRecords`: the ingestion records in process (``indexed``), from which a
  retriever derives what the index does not keep;
* :class:`PieceReads`: SKETCH's small pieces (``piece_index``) and the chunk dense index.

Two classes implement them: the embedded index's reader
(:class:`~semrag.index.index_reader.IndexReader`, ``SemanticIndex.reader()``: all of them
but :class:`AsyncReads`; with its own dense search, or a vector store's through
:class:`~semrag.index.parts.external.StoreBackedDense`), and :class:`~semrag.neo4j.Neo4jIndex`
(all but :class:`HoldsRecords`). A retriever given a ``SemanticIndex`` reads its reader
(:func:`semrag._rwlock.as_reader`). A retriever checks what it needs
once, at construction (:func:`require`, a :class:`MissingCapabilityError` naming the
capability), and uses a protocol check, never attribute probing, for what it can use.
:func:`semrag.testing.check_reader` checks that a reader keeps the contract.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast, runtime_checkable

import numpy as np
import numpy.typing as npt

from semrag._steps import Call, twin
from semrag._validation import missing_members, offers
from semrag.embeddings import Embedder
from semrag.errors import ConfigError
from semrag.text.tokens import Tokenizer
from semrag.types import Chunk, Document, ScoredChunk, Span

if TYPE_CHECKING:
    from semrag.index.change import IndexedDocument
    from semrag.index.derived import DerivedParts
    from semrag.index.parts.ssg import SSGConfig

_P = TypeVar("_P")

__all__ = [
    "AsyncDenseSearch",
    "AsyncReads",
    "AsyncVersion",
    "CorpusReader",
    "CorpusReads",
    "CorpusSearch",
    "HoldsRecords",
    "KeptParts",
    "MissingCapabilityError",
    "PieceReads",
    "QueryEmbedding",
    "SimilarityGraphReads",
    "StepwiseGraphView",
    "capabilities",
    "need",
    "offers",
    "overlapping_read",
    "require",
]

Floats = npt.NDArray[np.float32]


@runtime_checkable
class CorpusReads(Protocol):
    """Documents, chunks, vectors and spans of one version of the corpus.

    Chunk ids are the index's integers; document ids follow :mod:`semrag.identity`. Every
    read sees one version of the corpus: hold :meth:`read` around several reads that must
    agree (``with index.read(): ...``).
    """

    @property
    def embedder(self) -> Embedder:
        """The embedder the index was built with (queries must use it)."""
        ...

    @property
    def version(self) -> int:
        """The number of changes made so far (a new number after every add or delete)."""
        ...

    @property
    def doc_ids(self) -> list[str]:
        """The ids of the indexed documents, in the order they were added."""
        ...

    @property
    def tokenizer(self) -> Tokenizer:
        """The token counter the chunks were measured with."""
        ...

    def current_version(self) -> int:
        """:attr:`version` as a method (a round trip on a database reader: a cache key)."""
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


@runtime_checkable
class QueryEmbedding(Protocol):
    """The query's vector, by the model that embedded the index."""

    @property
    def embedder(self) -> Embedder:
        """The embedder the index was built with (queries must use it)."""
        ...

    def embed_query(self, query: str) -> Floats:
        """The query's vector, by the index's embedder."""
        ...

    async def aembed_query(self, query: str) -> Floats:
        """Async twin of :meth:`embed_query`."""
        ...


@runtime_checkable
class CorpusSearch(QueryEmbedding, Protocol):
    """Dense and BM25 searches over one version of the corpus, and the query embedding."""

    def search(self, query: str, k: int = 10) -> list[ScoredChunk]:
        """The ``k`` chunks nearest the query (dense), best first."""
        ...

    async def asearch(self, query: str, k: int = 10) -> list[ScoredChunk]:
        """Async twin of :meth:`search`."""
        ...

    def dense_search(self, vector: Floats, k: int) -> tuple[Floats, npt.NDArray[np.int64]]:
        """Dense top-``k`` as arrays: cosine similarities and chunk ids, best first."""
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


@runtime_checkable
class SimilarityGraphReads(Protocol):
    """The semantic similarity graph the SSG traversals walk."""

    @property
    def ssg_config(self) -> SSGConfig | None:
        """The graph's :class:`~semrag.index.parts.ssg.SSGConfig`, or ``None`` when none is kept."""
        ...

    def ssg_view(self) -> Any:
        """The semantic similarity graph as the SSG traversals read it.

        Raises:
            ConfigError: when the reader keeps no graph (``ssg_config is None``).
        """
        ...


@runtime_checkable
class CorpusReader(CorpusReads, CorpusSearch, SimilarityGraphReads, Protocol):
    """The read side of an index: reads, searches and the SSG view (every reader has it)."""


# -- optional capabilities --------------------------------------------------------------------
@runtime_checkable
class AsyncVersion(Protocol):
    """An index or a graph whose version is read from a database (awaited)."""

    async def acurrent_version(self) -> Hashable:
        """Async twin of ``current_version``."""
        ...


@runtime_checkable
class AsyncReads(Protocol):
    """Reads that await a database: ``read()`` is a context that may span awaits.

    A retriever's async path then awaits each round trip (the reader's ``a...`` twin of
    each read) and runs only the scoring in worker threads; over a reader without it (its
    ``read()`` is a lock held by one thread) it runs the whole search in one worker thread.
    """

    async def acurrent_version(self) -> int:
        """Async twin of :meth:`CorpusReads.current_version`."""
        ...

    async def afetch_documents(self, doc_ids: Sequence[str]) -> None:
        """Async twin of :meth:`CorpusReads.fetch_documents`."""
        ...

    async def aoverlapping_chunks_many(
        self, spans: Sequence[tuple[str, int, int]]
    ) -> list[list[int]]:
        """Async twin of :meth:`CorpusReads.overlapping_chunks_many`."""
        ...

    async def asentence_vectors_of(self, chunk_ids: Sequence[int]) -> list[Floats]:
        """Async twin of :meth:`CorpusReads.sentence_vectors_of`."""
        ...

    async def adense_search(self, vector: Floats, k: int) -> tuple[Floats, npt.NDArray[np.int64]]:
        """Async twin of the reader's ``dense_search`` (chunk ids and scores, best first)."""
        ...

    async def asearch_channels(
        self, vectors: npt.ArrayLike, queries: Sequence[str], k: int
    ) -> tuple[npt.NDArray[np.int64], list[list[tuple[int, float]]]]:
        """Async twin of :meth:`CorpusSearch.search_channels`."""
        ...

    async def asparse_scores_many(
        self, queries: Sequence[str], chunk_ids: Sequence[int]
    ) -> npt.NDArray[np.float64]:
        """Async twin of :meth:`CorpusSearch.sparse_scores_many`."""
        ...


@runtime_checkable
class AsyncDenseSearch(Protocol):
    """A dense index searched on a database: its batched search awaited."""

    async def asearch(self, queries: npt.ArrayLike, k: int) -> tuple[Floats, npt.NDArray[np.int64]]:
        """``(scores, ids)`` of shape ``(queries, k)``, best first (id -1 where none)."""
        ...


def overlapping_read(reader: CorpusReads, spans: Sequence[tuple[str, int, int]]) -> Call:
    """The step that reads the chunks overlapping each span (awaited on a database reader)."""
    over = twin(reader, AsyncReads, lambda r: r.aoverlapping_chunks_many)
    return Call(reader.overlapping_chunks_many, (spans,), twin=over)


@runtime_checkable
class KeptParts(Protocol):
    """Derived structures kept with the index and following its changes, by name."""

    @property
    def parts(self) -> Mapping[str, Any]:
        """The kept parts (``"passages"``, ``"pieces"``, ``"ssg"``, ...), by name."""
        ...


@runtime_checkable
class HoldsRecords(Protocol):
    """The ingestion records in process: what a retriever derives its own structures from."""

    chunker: Any
    """The chunker the index was built with (its tokenizer splits SKETCH's pieces)."""

    dense_kind: str
    """The dense index kind (``"flat"``, ``"hnsw"``, ``"auto"``, ...) for derived ones."""

    derived_parts: DerivedParts
    """What retrievers derived from the records (:func:`semrag.index.derived.derived`): it
    lives as long as the reader."""

    def indexed(self, doc_id: str) -> IndexedDocument:
        """The record of ``doc_id``: the same object until the document changes."""
        ...

    def chunk_ids(self, doc_id: str) -> list[int]:
        """The ids of ``doc_id``'s chunks, in text order."""
        ...


@runtime_checkable
class PieceReads(Protocol):
    """SKETCH's small pieces as kept (``piece_index``: ``None`` without), and chunk search."""

    piece_index: Any
    """The kept pieces (``split``, ``pieces``, ``parents``, ``dense``), or ``None``."""

    dense: Any
    """The chunks' dense index (``search(vectors, k)`` and ``vectors_of(ids)``)."""


@runtime_checkable
class StepwiseGraphView(Protocol):
    """An SSG view that reads as it goes (a database's): searches and loads are steps.

    Its ``ssg_view()`` holds no graph in process: the traversals ask it for the anchor
    search and for each node's sentences and edges as round trips (:mod:`semrag._steps`).
    """

    def search_steps(
        self, query: Floats, k: int, *, pca: bool = False, load: int = 0, rank: str = "query"
    ) -> Any:
        """The anchor search as steps, loading the best ``load`` candidates with it."""
        ...

    def load_steps(self, nodes: Sequence[int], *, rank: str = "query", visited: Any = ()) -> Any:
        """Load the nodes' sentences and out-edges (and likely next hops) as steps."""
        ...


class MissingCapabilityError(ConfigError):
    """A reader lacks a capability a retriever needs (the message names it).

    Attributes:
        capability: the missing protocol (e.g. :class:`HoldsRecords`).
        members: its members the reader does not have.
    """

    def __init__(self, message: str, capability: type, members: Sequence[str]) -> None:
        super().__init__(message)
        self.capability = capability
        self.members = tuple(members)


CAPABILITIES: tuple[type, ...] = (
    CorpusReads,
    QueryEmbedding,
    CorpusSearch,
    SimilarityGraphReads,
    AsyncReads,
    KeptParts,
    HoldsRecords,
    PieceReads,
)


def capabilities(reader: object) -> list[type]:
    """The capabilities (protocols above) ``reader`` offers, in the order listed."""
    return [c for c in CAPABILITIES if offers(reader, c)]


def need(reader: object, capability: type[_P], *, by: str, why: str = "") -> _P:
    """``reader`` as a ``capability`` (typed so), or a :class:`MissingCapabilityError`."""
    require(reader, capability, by=by, why=why)
    return cast(_P, reader)


def require(reader: object, *needed: type, by: str, why: str = "") -> None:
    """Fail unless ``reader`` offers every capability in ``needed``.

    The check looks at the reader's class and instance attributes (it reads no property,
    so it costs no round trip on a database reader).

    Raises:
        MissingCapabilityError: naming the first missing capability and its members.
    """
    for capability in needed:
        missing = missing_members(reader, capability)
        if missing:
            raise MissingCapabilityError(
                f"{by} needs a reader with {capability.__name__} "
                f"({', '.join(missing)} missing on {type(reader).__name__})"
                + (f": {why}" if why else ""),
                capability,
                missing,
            )
