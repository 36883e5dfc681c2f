"""A LangChain ``VectorStore`` over a :class:`semrag.SemanticIndex`.

Swap it in for ``InMemoryVectorStore`` or ``FAISS`` by changing the class name; the same
index then also serves semrag's graph, intent-aware and SPC components.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
from langchain_core.documents import Document as LCDocument
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from langchain_semrag.embeddings import SemragEmbeddings, to_embedder
from semrag import Document, SemanticIndex
from semrag.embeddings import Vectors, as_embedder
from semrag.errors import ConfigError
from semrag.fingerprint import check_embedder
from semrag.identity import OnConflict, entry_id
from semrag.types import MetadataFilter, ScoredChunk

__all__ = ["SemanticVectorStore", "VectorStoreClient"]


class SemanticVectorStore(VectorStore):
    """LangChain's vector-store interface on a :class:`~semrag.SemanticIndex`.

    Each document added is stored as it is, one entry under its id (``add_documents``
    never re-chunks: split first, with any splitter). An entry is named by its
    ``Document.id`` (then an add is an upsert: re-adding the id replaces it), else by
    :func:`semrag.identity.entry_id` (``source`` and ``start_index``, else the content;
    adding an id that is stored then raises unless ``on_conflict=`` says otherwise).
    Searches are exact (the index's ``flat`` dense search), ``filter`` is a mapping the
    metadata must hold or a callable on the metadata, and MMR is supported. Metadata comes
    back exactly as given.

    The index underneath is a full semrag index (sentence vectors, BM25 and the semantic
    similarity graph), so ``store.index`` can be handed to every semrag retriever.

    Args:
        embedding: any LangChain ``Embeddings``; default the packaged all-MiniLM-L6-v2
            (offline). With ``index``, it must be the model that embedded the index
            (checked: :class:`~semrag.errors.EmbedderMismatchError` otherwise); queries
            are embedded by the index's own embedder.
        index: an existing index to serve (its documents, if it was filled with
            ``add_documents``, come back as chunks, each under its document's id).
        **index_kwargs: passed to :class:`~semrag.SemanticIndex` when it is created
            (e.g. ``sparse="lucene"``, ``dense="hnsw"``).

    Examples:
        >>> from semrag.testing import FakeEmbedder
        >>> store = SemanticVectorStore(SemragEmbeddings(FakeEmbedder()))
        >>> store.add_texts(["Bees dance.", "Rockets fly."], ids=["b", "r"])
        ['b', 'r']
        >>> [d.id for d in store.similarity_search("rockets", k=1)]
        ['r']
    """

    def __init__(
        self,
        embedding: Embeddings | None = None,
        *,
        index: SemanticIndex | None = None,
        **index_kwargs: Any,
    ) -> None:
        if index is None:
            index = SemanticIndex(embedder=to_embedder(embedding), **index_kwargs)
        elif index_kwargs:
            raise ConfigError("index_kwargs apply only when the store creates its index")
        elif embedding is not None:  # it must be the model of the index's vectors
            check_embedder(
                index.fingerprint, as_embedder(to_embedder(embedding)), what="the given index"
            )
        self.index = index
        self._embedding = embedding

    @property
    def embeddings(self) -> Embeddings:
        """The embedding model (a :class:`SemragEmbeddings` over the index's embedder)."""
        return self._embedding or SemragEmbeddings(self.index.embedder)

    # -- writes ---------------------------------------------------------------------------
    @staticmethod
    def _documents(
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None,
        ids: Sequence[str | None] | None,
    ) -> list[Document]:
        texts = list(texts)
        metas = metadatas if metadatas is not None else [{} for _ in texts]
        ids = ids if ids is not None else [None] * len(texts)
        if not len(texts) == len(metas) == len(ids):
            raise ConfigError("texts, metadatas and ids differ in length")
        return [
            Document(str(i) if i else entry_id(t, m or {}), t, dict(m or {}))
            for t, m, i in zip(texts, metas, ids, strict=True)
        ]

    @staticmethod
    def _policy(ids: Sequence[str | None] | None, on_conflict: OnConflict | None) -> OnConflict:
        """LangChain's upsert where ids are given; else semrag's ``"error"`` default."""
        if on_conflict is not None:
            return on_conflict
        return "replace" if ids is not None and any(ids) else "error"

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        on_conflict: OnConflict | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Store each text as one entry; returns the ids.

        Entries without an id are named by :func:`semrag.identity.entry_id` (``source``
        with its page / ``start_index``, else the content), never at random, so a second
        run of the same ingestion finds its entries. With ``ids`` (or ``Document.id``) an
        add is LangChain's upsert: an entry of that id is replaced. Otherwise an id that is
        already stored raises :class:`~semrag.errors.DocumentConflictError` unless
        ``on_conflict="replace"`` or ``"skip"``.
        """
        docs = self._documents(texts, metadatas, ids)
        self.index.add_documents(docs, split=False, on_conflict=self._policy(ids, on_conflict))
        return [d.id for d in docs]

    async def aadd_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        on_conflict: OnConflict | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Async twin of :meth:`add_texts`."""
        docs = await asyncio.to_thread(self._documents, texts, metadatas, ids)
        policy = self._policy(ids, on_conflict)
        await self.index.aadd_documents(docs, split=False, on_conflict=policy)
        return [d.id for d in docs]

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Remove the entries ``ids`` (all entries when ``None``) in one change.

        Returns ``True`` when every id was stored; unknown ids are reported by ``False``
        and in ``store.index.notes``.
        """
        return self.index.delete(self.index.doc_ids if ids is None else ids)

    def get_by_ids(self, ids: Sequence[str], /) -> list[LCDocument]:
        """The stored entries of ``ids`` that exist (missing ids are skipped)."""
        return [
            LCDocument(doc.text, metadata=dict(doc.metadata), id=doc.id)
            for doc in (self.index.document(i) for i in ids if i in self.index)
        ]

    # -- searches -------------------------------------------------------------------------
    @staticmethod
    def _to_lc(hit: ScoredChunk) -> LCDocument:
        return LCDocument(hit.chunk.text, metadata=dict(hit.chunk.metadata), id=hit.chunk.doc_id)

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: MetadataFilter | None = None, **kwargs: Any
    ) -> list[tuple[LCDocument, float]]:
        """The ``k`` nearest entries with their cosine similarities, best first."""
        return [(self._to_lc(h), h.score) for h in self.index.search(query, k, filter=filter)]

    async def asimilarity_search_with_score(
        self, query: str, k: int = 4, filter: MetadataFilter | None = None, **kwargs: Any
    ) -> list[tuple[LCDocument, float]]:
        """Async twin of :meth:`similarity_search_with_score`."""
        hits = await self.index.asearch(query, k, filter=filter)
        return [(self._to_lc(h), h.score) for h in hits]

    def similarity_search(
        self, query: str, k: int = 4, filter: MetadataFilter | None = None, **kwargs: Any
    ) -> list[LCDocument]:
        """The ``k`` nearest entries, best first."""
        return [d for d, _ in self.similarity_search_with_score(query, k, filter)]

    async def asimilarity_search(
        self, query: str, k: int = 4, filter: MetadataFilter | None = None, **kwargs: Any
    ) -> list[LCDocument]:
        """Async twin of :meth:`similarity_search`."""
        return [d for d, _ in await self.asimilarity_search_with_score(query, k, filter)]

    def similarity_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        filter: MetadataFilter | None = None,
        **kwargs: Any,
    ) -> list[LCDocument]:
        """The ``k`` nearest entries to a query vector."""
        vector = np.asarray(embedding, np.float32)
        return [self._to_lc(h) for h in self.index.search_vector(vector, k, filter=filter)]

    def max_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: MetadataFilter | None = None,
        **kwargs: Any,
    ) -> list[LCDocument]:
        """``k`` diverse entries of the ``fetch_k`` nearest (``SemanticIndex.search_mmr``)."""
        hits = self.index.search_mmr(
            np.asarray(embedding, np.float32),
            k,
            fetch_k=fetch_k,
            lambda_mult=lambda_mult,
            filter=filter,
        )
        return [self._to_lc(h) for h in hits]

    def max_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: MetadataFilter | None = None,
        **kwargs: Any,
    ) -> list[LCDocument]:
        """MMR for a query text."""
        vector = self.index.reader().embed_query(query).tolist()
        return self.max_marginal_relevance_search_by_vector(vector, k, fetch_k, lambda_mult, filter)

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        """The cosine similarity itself as the relevance, below 0 counted as 0.

        What a cosine store's relevance is (``1 - cosine distance``, as Chroma's; a
        LlamaIndex ``VectorStoreIndex`` score), and what every semrag retriever's hits carry
        as their score, so one threshold means one thing across them.
        """
        return lambda score: min(max(score, 0.0), 1.0)

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> SemanticVectorStore:
        """A new store holding ``texts``; ``kwargs`` go to :class:`~semrag.SemanticIndex`."""
        store = cls(embedding, **kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store


@runtime_checkable
class _TakesVectors(Protocol):
    """A LangChain store that stores given vectors (``FAISS``, ``InMemoryVectorStore``, ...).

    ``VectorStore`` declares no such method; the integrations that take vectors name it so.
    """

    def add_embeddings(
        self,
        text_embeddings: Iterable[tuple[str, list[float]]],
        metadatas: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> list[str]: ...


class VectorStoreClient:
    """A LangChain ``VectorStore`` as the dense channel of a :class:`~semrag.SemanticIndex`.

    ``SemanticIndex(dense=VectorStoreClient(store))`` keeps BM25, the graph and the
    knowledge graph in process and the chunk vectors in ``store`` (PGVector, Qdrant,
    Chroma, ``Neo4jVector``, FAISS, ...), which answers the nearest-neighbour searches.
    Stores with ``add_embeddings`` (FAISS) take semrag's vectors as they are; any other
    store embeds the chunk texts itself, so give it ``SemragEmbeddings(index.embedder)``
    (or the index's model) for results equal to the embedded index. Entries carry
    ``semrag_doc_id`` and ``semrag_chunk_id`` metadata; their ids are the chunk ids.

    Args:
        store: the vector store.

    Examples:
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> from semrag import Document, SemanticIndex
        >>> from semrag.testing import FakeEmbedder
        >>> emb = FakeEmbedder()
        >>> store = InMemoryVectorStore(SemragEmbeddings(emb))
        >>> index = SemanticIndex(embedder=emb, dense=VectorStoreClient(store))
        >>> index.add_documents([Document("b", "Bees dance."), Document("r", "Rockets fly.")])
        >>> [h.chunk.doc_id for h in index.search("rockets", k=1)]
        ['r']
    """

    def __init__(self, store: VectorStore) -> None:
        if not isinstance(store, VectorStore):
            raise ConfigError(f"expected a LangChain VectorStore, got {type(store).__name__}")
        self.store = store

    def upsert(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        vectors: Vectors,
        metadatas: Sequence[dict[str, Any]],
    ) -> None:
        """Add (or replace) entries; semrag's vectors where the store takes them."""
        if isinstance(self.store, _TakesVectors):
            pairs = list(zip(texts, [list(map(float, v)) for v in vectors], strict=True))
            self.store.add_embeddings(pairs, metadatas=[dict(m) for m in metadatas], ids=list(ids))
            return
        docs = [
            LCDocument(t, metadata=dict(m), id=i)
            for t, m, i in zip(texts, metadatas, ids, strict=True)
        ]
        self.store.add_documents(docs, ids=list(ids))

    def delete(self, ids: Sequence[str]) -> None:
        """Remove entries."""
        self.store.delete(list(ids))

    def search(self, vector: Vectors, k: int) -> list[str]:
        """Ids of the ``k`` entries nearest ``vector``."""
        docs = self.store.similarity_search_by_vector([float(x) for x in vector], k=k)
        return [str(d.id or d.metadata["semrag_chunk_id"]) for d in docs]

    def __repr__(self) -> str:
        return f"VectorStoreClient({type(self.store).__name__})"
