"""The reader contract: what a retriever and SPC may read from an index, as capabilities.

Each capability is a small typed :class:`~typing.Protocol` of primitives, batched where a
database answers in one round trip:

* :class:`CorpusReader` (every reader; ten members): the embedder and tokenizer, the
  version and ``read()``, the document ids, and the batched reads of documents
  (:class:`DocumentRecord`), chunks, their vectors, their sentences' vectors and the chunks
  overlapping spans;
* :class:`CorpusSearch`: dense top-k, the dense and BM25 channels at once, BM25 scores;

and optional capabilities, which a reader declares by having their members:

* :class:`AsyncReads`: its ``read()`` may span awaits and each batched read has an awaited
  twin (:class:`~semrag.neo4j.Neo4jIndex`);
* :class:`SimilarityGraphReads`: the semantic similarity graph the SSG traversals walk;
* :class:`KeptParts`: derived structures kept with the index (``parts``), e.g. the PPR
  passage phrases a database reader serves;
* :class:`HoldsRecords`: the ingestion records in process (``indexed``), from which a
  retriever derives what the index does not keep;
* :class:`PieceReads`: SKETCH's small pieces (``piece_index``) and the chunk dense index.

What retrievers share on top of the primitives is written once here, not per backend: the
query's vector (:func:`query_vector`, :func:`aquery_vector`) and the reads as steps with
their async twins (:func:`documents_read`, :func:`overlapping_read`).

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

from collections.abc import Generator, Hashable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol, TypeVar, cast, runtime_checkable

import numpy as np
import numpy.typing as npt

from semrag._steps import Call, twin
from semrag._validation import check_query, missing_members, offers
from semrag.embeddings import Embedder
from semrag.errors import ConfigError
from semrag.text.tokens import Tokenizer
from semrag.types import Chunk, Document, Floats, Ints, Span

if TYPE_CHECKING:
    from semrag.index.change import IndexedDocument
    from semrag.index.derived import DerivedParts
    from semrag.index.parts._passage_graph import PassageGraph
    from semrag.index.parts.ssg import SSGConfig

_P = TypeVar("_P")

__all__ = [
    "AsyncDenseSearch",
    "AsyncReads",
    "AsyncVersion",
    "CorpusReader",
    "CorpusSearch",
    "DenseReads",
    "DocumentRecord",
    "HoldsRecords",
    "KeptParts",
    "KeptPhrases",
    "KeptPieces",
    "MissingCapabilityError",
    "PieceReads",
    "FetchedRows",
    "GraphWalk",
    "NodeSearch",
    "SimilarityGraphReads",
    "SimilarityGraphView",
    "StepwiseGraphView",
    "aquery_vector",
    "capabilities",
    "documents_read",
    "need",
    "offers",
    "overlapping_read",
    "query_vector",
    "require",
]

_T = TypeVar("_T")
_D = TypeVar("_D", bound=np.generic, covariant=True)


@runtime_checkable
class DocumentRecord(Protocol):
    """One indexed document as a retriever reads it: text, sentences, their vectors, themes."""

    @property
    def doc(self) -> Document:
        """The document as indexed (id, text, metadata)."""
        ...

    @property
    def sentences(self) -> Sequence[Span]:
        """Its sentence spans, in text order."""
        ...

    @property
    def sentence_vectors(self) -> Floats:
        """Its sentences' unit vectors, one row per span (float32 or float16)."""
        ...

    @property
    def themes(self) -> Sequence[str]:
        """Its themes (keywords, or an LLM's)."""
        ...


@runtime_checkable
class CorpusReader(Protocol):
    """The reads every retriever makes: ten primitives, the batched ones with async twins.

    Chunk ids are the index's integers; document ids follow :mod:`semrag.identity`. Every
    read sees one version of the corpus: hold :meth:`read` around several reads that must
    agree (``with reader.read(): ...``). What retrievers share on top of these (the query's
    vector, the read steps with their async twins) is written once, below.
    """

    @property
    def embedder(self) -> Embedder:
        """The embedder the index was built with (queries must use it)."""
        ...

    @property
    def tokenizer(self) -> Tokenizer:
        """The token counter the chunks were measured with."""
        ...

    @property
    def doc_ids(self) -> list[str]:
        """The ids of the indexed documents, in the order they were added."""
        ...

    def current_version(self) -> int:
        """The number of changes made so far (a round trip on a database: a cache key)."""
        ...

    def read(self, *, followers: bool = False) -> AbstractContextManager[None]:
        """Hold one version for the reads in the ``with`` block."""
        ...

    def documents(self, doc_ids: Sequence[str]) -> Mapping[str, DocumentRecord]:
        """The records of these documents (one round trip); ids not indexed are left out."""
        ...

    def chunks_of(self, chunk_ids: Sequence[int]) -> list[Chunk]:
        """The chunks, in the order given (:class:`~semrag.errors.NotIndexedError` if absent)."""
        ...

    def vectors_of(self, chunk_ids: Sequence[int]) -> Floats:
        """The chunks' vectors, one row each, in the order given."""
        ...

    def sentence_vectors_of(self, chunk_ids: Sequence[int]) -> list[Floats]:
        """Each chunk's sentence vectors."""
        ...

    def overlapping_chunks_many(self, spans: Sequence[tuple[str, int, int]]) -> list[list[int]]:
        """Ids of the chunks that overlap each ``(doc_id, start, end)``, in text order."""
        ...


@runtime_checkable
class CorpusSearch(Protocol):
    """Dense and BM25 scores over one version of the corpus (PPR's seeds, IAR's channels)."""

    def dense_search(self, vector: Floats, k: int) -> tuple[Floats, npt.NDArray[np.int64]]:
        """Dense top-``k`` as arrays: cosine similarities and chunk ids, best first."""
        ...

    def search_channels(
        self, vectors: npt.ArrayLike, queries: Sequence[str], k: int
    ) -> tuple[npt.NDArray[np.int64], list[list[tuple[int, float]]]]:
        """Dense top-``k`` ids of each vector and BM25 top ``k`` of each query, one version."""
        ...

    def sparse_scores_many(
        self, queries: Sequence[str], chunk_ids: Sequence[int]
    ) -> npt.NDArray[np.float64]:
        """BM25 scores of each query against these chunks: ``(len(queries), len(chunk_ids))``."""
        ...


class FetchedRows(Protocol[_D]):
    """Rows by position, fetched as they are asked for (a database view's).

    Indexed as an array is: one row by an ``int``, several by a list of them.
    """

    def __getitem__(self, rows: int | Sequence[int] | Ints, /) -> npt.NDArray[_D]: ...


class GraphWalk(Protocol):
    """What a traversal reads of the similarity graph: window nodes and their edges."""

    @property
    def node_vectors(self) -> Floats | FetchedRows[np.float32]:
        """One unit vector per window node."""
        ...

    @property
    def node_sentences(self) -> Ints | FetchedRows[np.int64]:
        """Each node's ``(first, end)`` global sentence range."""
        ...

    def neighbours(self, node: int) -> tuple[Ints, Floats, npt.NDArray[np.int8]]:
        """``(nodes, scores, kinds)`` of the edges leaving ``node`` (kind 0: intra)."""
        ...

    def project_3d(self, vectors: Floats) -> Floats:
        """The vectors in the graph's 3-D PCA space (``triangulation_geometric_3d``)."""
        ...


class NodeSearch(Protocol):
    """The anchor search over the window nodes."""

    def search(self, query: Floats, k: int) -> tuple[Floats, Ints]:
        """``(scores, ids)`` of shape ``(1, k)``, best first."""
        ...


class SimilarityGraphView(Protocol):
    """One version of the similarity graph and its sentences, as the traversals read it."""

    @property
    def version(self) -> int:
        """The index version the view is of."""
        ...

    @property
    def graph(self) -> GraphWalk:
        """The graph's nodes and edges."""
        ...

    @property
    def node_index(self) -> NodeSearch:
        """The anchor search."""
        ...

    @property
    def sentence_matrix(self) -> Floats | FetchedRows[np.float32]:
        """Every sentence's vector, by global sentence number."""
        ...

    def sentence_location(self, global_index: int) -> tuple[str, Span]:
        """``(doc_id, span)`` of a sentence."""
        ...

    def sentence_text(self, global_index: int) -> str:
        """A sentence's text."""
        ...

    def node_chunk(self, node: int) -> Chunk:
        """A window node as a chunk with exact offsets."""
        ...

    def sentences_chunk(self, first: int, end: int, *, index: int = 0) -> Chunk:
        """The sentences ``first .. end`` (of one document) as a chunk."""
        ...


@runtime_checkable
class SimilarityGraphReads(Protocol):
    """The semantic similarity graph the SSG traversals walk, and the model of its vectors."""

    @property
    def embedder(self) -> Embedder:
        """The embedder of the graph's vectors (queries must use it)."""
        ...

    @property
    def ssg_config(self) -> SSGConfig | None:
        """The graph's :class:`~semrag.index.parts.ssg.SSGConfig`, or ``None`` when none is kept."""
        ...

    def ssg_view(self) -> SimilarityGraphView:
        """The semantic similarity graph as the SSG traversals read it.

        Raises:
            ConfigError: when the reader keeps no graph (``ssg_config is None``).
        """
        ...


def query_vector(reader: CorpusReader | SimilarityGraphReads, query: str) -> Floats:
    """The query's vector, by the model that embedded the index (checked: :func:`check_query`)."""
    return reader.embedder.embed([check_query("query", query)])[0]


async def aquery_vector(reader: CorpusReader | SimilarityGraphReads, query: str) -> Floats:
    """Async twin of :func:`query_vector` (the embedder's own ``aembed``)."""
    return (await reader.embedder.aembed([check_query("query", query)]))[0]


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
        """Async twin of :meth:`CorpusReader.current_version`."""
        ...

    async def adocuments(self, doc_ids: Sequence[str]) -> Mapping[str, DocumentRecord]:
        """Async twin of :meth:`CorpusReader.documents`."""
        ...

    async def achunks_of(self, chunk_ids: Sequence[int]) -> list[Chunk]:
        """Async twin of :meth:`CorpusReader.chunks_of`."""
        ...

    async def aoverlapping_chunks_many(
        self, spans: Sequence[tuple[str, int, int]]
    ) -> list[list[int]]:
        """Async twin of :meth:`CorpusReader.overlapping_chunks_many`."""
        ...

    async def asentence_vectors_of(self, chunk_ids: Sequence[int]) -> list[Floats]:
        """Async twin of :meth:`CorpusReader.sentence_vectors_of`."""
        ...

    async def adense_search(self, vector: Floats, k: int) -> tuple[Floats, npt.NDArray[np.int64]]:
        """Async twin of :meth:`CorpusSearch.dense_search`."""
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


def overlapping_read(reader: CorpusReader, spans: Sequence[tuple[str, int, int]]) -> Call:
    """The step that reads the chunks overlapping each span (awaited on a database reader)."""
    over = twin(reader, AsyncReads, lambda r: r.aoverlapping_chunks_many)
    return Call(reader.overlapping_chunks_many, (spans,), twin=over)


def documents_read(reader: CorpusReader, doc_ids: Sequence[str]) -> Call:
    """The step that reads these documents' records (one round trip on a database)."""
    fetch = twin(reader, AsyncReads, lambda r: r.adocuments)
    return Call(reader.documents, (doc_ids,), twin=fetch)


@runtime_checkable
class KeptParts(Protocol):
    """Derived structures kept with the index and following its changes, by name."""

    @property
    def parts(self) -> Mapping[str, object]:
        """The kept parts (``"passages"``, ``"pieces"``, ``"ssg"``, ...), by name."""
        ...


@runtime_checkable
class KeptPhrases(Protocol):
    """PPR's passage phrases as an index keeps them (its ``parts["passages"]``)."""

    @property
    def titles(self) -> bool:
        """Whether a document's title is a phrase of each of its passages."""
        ...

    def graph(
        self,
        doc_ids: Sequence[str],
        *,
        synonym_k: int = 0,
        synonym_threshold: float = 0.8,
        title_weight: float = ...,
    ) -> PassageGraph:
        """The passage graph of the kept version (title edges weighing ``title_weight``)."""
        ...


@runtime_checkable
class HoldsRecords(Protocol):
    """The ingestion records in process: what a retriever derives its own structures from."""

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


class DenseReads(Protocol):
    """A dense index of chunks (or of pieces): its batched search and stored vectors."""

    def search(self, queries: npt.ArrayLike, k: int) -> tuple[Floats, npt.NDArray[np.int64]]:
        """``(scores, ids)`` of shape ``(queries, k)``, best first (id -1 where none)."""
        ...

    def vectors_of(self, ids: Sequence[int]) -> Floats:
        """The stored vectors of these ids, one row each."""
        ...


class KeptPieces(Protocol):
    """SKETCH's small pieces as an index keeps them."""

    @property
    def split(self) -> tuple[int, int]:
        """The ``(size, overlap)`` in tokens they were cut with."""
        ...

    @property
    def pieces(self) -> Mapping[int, Chunk]:
        """The pieces, by the ids :attr:`dense` returns."""
        ...

    @property
    def parents(self) -> Mapping[int, int]:
        """The index chunk each piece came from, by the same ids."""
        ...

    @property
    def dense(self) -> DenseReads:
        """The pieces' dense index."""
        ...


@runtime_checkable
class PieceReads(Protocol):
    """SKETCH's small pieces as kept (``piece_index``: ``None`` without), and chunk search."""

    @property
    def piece_index(self) -> KeptPieces | None:
        """The kept pieces, or ``None``."""
        ...

    @property
    def dense(self) -> DenseReads:
        """The chunks' dense index."""
        ...


ViewSteps = Generator[object, list[dict[str, object]], _T]
"""A database view's read as steps: they yield statements and get their rows."""


@runtime_checkable
class StepwiseGraphView(Protocol):
    """An SSG view that reads as it goes (a database's): searches and loads are steps.

    Its ``ssg_view()`` holds no graph in process: the traversals ask it for the anchor
    search and for each node's sentences and edges as round trips (:mod:`semrag._steps`),
    each answered with :meth:`fetch` (or, awaited, ``afetch``).
    """

    def search_steps(
        self, query: Floats, k: int, *, pca: bool = False, load: int = 0, rank: str = "query"
    ) -> ViewSteps[tuple[Floats, Ints]]:
        """The anchor search as steps, loading the best ``load`` candidates with it."""
        ...

    def load_steps(
        self, nodes: Sequence[int], *, rank: str = "query", visited: Iterable[int] = ()
    ) -> ViewSteps[None]:
        """Load the nodes' sentences and out-edges (and likely next hops) as steps."""
        ...

    def fetch(self, ask: object) -> list[dict[str, object]]:
        """The rows of a statement a step asked for."""
        ...

    async def afetch(self, ask: object) -> list[dict[str, object]]:
        """Async twin of :meth:`fetch`."""
        ...


class MissingCapabilityError(ConfigError):
    """A reader (or graph store) lacks a capability its user needs (the message names it).

    Attributes:
        capability: the missing protocol (e.g. :class:`HoldsRecords`).
        members: its members the reader does not have.
    """

    def __init__(self, message: str, capability: type, members: Sequence[str]) -> None:
        super().__init__(message)
        self.capability = capability
        self.members = tuple(members)


CAPABILITIES: tuple[type, ...] = (
    CorpusReader,
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


def require(reader: object, *needed: type, by: str, why: str = "", what: str = "reader") -> None:
    """Fail unless ``reader`` (or a store: ``what``) offers every capability in ``needed``.

    The check looks at the reader's class and instance attributes (it reads no property,
    so it costs no round trip on a database reader).

    Raises:
        MissingCapabilityError: naming the first missing capability and its members.
    """
    for capability in needed:
        missing = missing_members(reader, capability)
        if missing:
            raise MissingCapabilityError(
                f"{by} needs a {what} with {capability.__name__} "
                f"({', '.join(missing)} missing on {type(reader).__name__})"
                + (f": {why}" if why else ""),
                capability,
                missing,
            )
