"""A LlamaIndex vector store over a :class:`semrag.SemanticIndex`.

``VectorStoreIndex.from_vector_store(SemanticVectorStore(), embed_model=SemragEmbedding())``
(or a ``StorageContext`` with ``vector_store=``) puts semrag's index under a LlamaIndex
app; the same index then serves semrag's graph, intent-aware and SPC retrievers.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import (
    BaseNode,
    MetadataMode,
    NodeRelationship,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores.simple import build_metadata_filter_fn
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)

from llama_index_semrag.embeddings import to_embedder
from semrag import Document, SemanticIndex
from semrag.errors import ConfigError
from semrag.types import ScoredChunk

__all__ = ["REF_DOC_KEY", "SemanticVectorStore", "VectorStoreClient"]

REF_DOC_KEY = "semrag_ref_doc_id"
"""Metadata key that keeps a node's source document id in the index (not shown to users)."""

_DENSE = (VectorStoreQueryMode.DEFAULT, VectorStoreQueryMode.MMR)
_SPARSE = (VectorStoreQueryMode.SPARSE, VectorStoreQueryMode.TEXT_SEARCH)


class SemanticVectorStore(BasePydanticVectorStore):
    """LlamaIndex's vector-store interface on a :class:`~semrag.SemanticIndex`.

    Each node is stored as it is, one entry under its ``node_id`` (re-adding a node id
    replaces it), with its text, metadata and source document (``ref_doc_id``, restored as
    the SOURCE relationship). ``delete(ref_doc_id)`` removes every node of that document.

    Queries embed ``query_str`` with the index's own embedder (so the vectors always come
    from one model); a query with only ``query_embedding`` is searched by that vector.
    Modes: ``default`` (exact dense), ``mmr`` (``mmr_threshold`` is the relevance weight,
    default 0.5), ``sparse`` / ``text_search`` (the index's BM25). ``filters``,
    ``doc_ids`` and ``node_ids`` (when not empty) restrict the dense modes; for
    the other hybrid modes use semrag's ``IntentAwareRetriever`` over ``store.index``.

    Args:
        embed_model: the embedder for the index it creates: a LlamaIndex
            ``BaseEmbedding`` or a semrag embedder; default the packaged MiniLM.
        index: an existing index to serve instead.
        **index_kwargs: passed to :class:`~semrag.SemanticIndex` when it is created.

    Example:
        >>> from llama_index.core.schema import TextNode
        >>> from semrag.testing import FakeEmbedder
        >>> store = SemanticVectorStore(embed_model=FakeEmbedder())
        >>> nodes = [TextNode(id_="b", text="Bees dance."), TextNode(id_="r", text="Rockets fly.")]
        >>> store.add(nodes)
        ['b', 'r']
        >>> store.query(VectorStoreQuery(query_str="rockets", similarity_top_k=1)).ids
        ['r']
    """

    stores_text: bool = True
    is_embedding_query: bool = True
    _index: SemanticIndex = PrivateAttr()

    def __init__(
        self,
        embed_model: Any = None,
        *,
        index: SemanticIndex | None = None,
        **index_kwargs: Any,
    ) -> None:
        super().__init__()
        if index is None:
            index = SemanticIndex(embedder=to_embedder(embed_model), **index_kwargs)
        elif index_kwargs or embed_model is not None:
            raise TypeError(
                "embed_model and index_kwargs apply only when the store creates its index"
            )
        self._index = index

    @property
    def index(self) -> SemanticIndex:
        """The semrag index underneath."""
        return self._index

    @property
    def client(self) -> SemanticIndex:
        """LlamaIndex's name for the store's backend: the index."""
        return self._index

    # -- writes ---------------------------------------------------------------------------
    @staticmethod
    def _documents(nodes: Sequence[BaseNode]) -> list[Document]:
        docs = []
        for node in nodes:
            meta = dict(node.metadata)
            if node.ref_doc_id is not None:
                meta[REF_DOC_KEY] = node.ref_doc_id
            docs.append(Document(node.node_id, node.get_content(MetadataMode.NONE), meta))
        return docs

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Store ``nodes`` (each as one entry); returns their ids."""
        docs = self._documents(nodes)
        self._index.add_documents(docs, split=False)
        return [d.id for d in docs]

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """Async twin of :meth:`add`."""
        docs = await asyncio.to_thread(self._documents, nodes)
        await self._index.aadd_documents(docs, split=False)
        return [d.id for d in docs]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Remove every node whose source document is ``ref_doc_id``."""
        self._index.delete_many(self._index.doc_ids_where(_accept(None, [ref_doc_id])))

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Async twin of :meth:`delete` (off the event loop)."""
        await asyncio.to_thread(self.delete, ref_doc_id)

    def delete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """Remove the nodes ``node_ids`` that ``filters`` accepts (all nodes if both are None)."""
        self._index.delete_many(self._index.doc_ids_where(_accept(filters), node_ids))

    async def adelete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """Async twin of :meth:`delete_nodes`."""
        await asyncio.to_thread(self.delete_nodes, node_ids, filters)

    def clear(self) -> None:
        """Remove every node."""
        self._index.delete_many(self._index.doc_ids)

    async def aclear(self) -> None:
        """Async twin of :meth:`clear`."""
        await asyncio.to_thread(self.clear)

    # -- reads ----------------------------------------------------------------------------
    def get_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """The stored nodes ``node_ids`` that ``filters`` accepts (missing ids skipped)."""
        return [
            _node(self._index.document(i))
            for i in self._index.doc_ids_where(_accept(filters), node_ids)
        ]

    async def aget_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """Async twin of :meth:`get_nodes`."""
        return await asyncio.to_thread(self.get_nodes, node_ids, filters)

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The ``similarity_top_k`` best nodes for ``query`` (see the class docs for modes).

        Raises:
            ConfigError: for a mode the store does not serve, or a query with neither
                text nor vector.
        """
        k = query.similarity_top_k
        if query.mode in _SPARSE:
            if not query.query_str:
                raise ConfigError(f"a {query.mode.value} query needs query_str")
            return _result(self._index.search_sparse(query.query_str, k))
        if query.mode not in _DENSE:
            raise ConfigError(
                f"SemanticVectorStore serves the modes default, mmr, sparse and text_search, "
                f"not {query.mode.value}; for hybrid search use semrag's "
                "IntentAwareRetriever(store.index)"
            )
        if query.query_str:
            vector = self._index.embed_query(query.query_str)
        elif query.query_embedding is not None:
            vector = query.query_embedding
        else:
            raise ConfigError("the query has neither query_str nor query_embedding")
        accept = _accept(query.filters, query.doc_ids)
        # An empty node_ids restricts nothing: VectorStoreIndex passes its own node list,
        # which is empty for a store that keeps the text.
        restrict = dict(filter=accept, doc_ids=query.node_ids or None)
        if query.mode == VectorStoreQueryMode.MMR:
            weight = kwargs.get("mmr_threshold", query.mmr_threshold)
            hits = self._index.search_mmr(
                vector,
                k,
                fetch_k=max(20, 4 * k),
                lambda_mult=0.5 if weight is None else weight,
                **restrict,
            )
        else:
            hits = self._index.search_vector(vector, k, **restrict)
        return _result(hits)

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Async twin of :meth:`query` (off the event loop)."""
        if query.query_str and query.mode in _DENSE:
            vector = await self._index.aembed_query(query.query_str)
            query = dataclasses.replace(query, query_embedding=vector.tolist(), query_str=None)
        return await asyncio.to_thread(self.query, query, **kwargs)


def _accept(
    filters: MetadataFilters | None, ref_doc_ids: Sequence[str] | None = None
) -> Callable[[Mapping[str, Any]], bool]:
    """One predicate on stored metadata for LlamaIndex's filters and ``doc_ids``."""
    # LlamaIndex's own evaluation of MetadataFilters, given the metadata as the lookup key.
    by_filters = build_metadata_filter_fn(lambda meta: meta, filters)
    if ref_doc_ids is None:
        return by_filters
    refs = set(ref_doc_ids)
    return lambda meta: meta.get(REF_DOC_KEY) in refs and by_filters(meta)


def _node(doc: Document) -> TextNode:
    meta = {k: v for k, v in doc.metadata.items() if k != REF_DOC_KEY}
    ref = doc.metadata.get(REF_DOC_KEY)
    relationships = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=ref)} if ref else {}
    return TextNode(id_=doc.id, text=doc.text, metadata=meta, relationships=relationships)


def _result(hits: list[ScoredChunk]) -> VectorStoreQueryResult:
    nodes: list[BaseNode] = []
    for h in hits:
        node = _node(Document(h.chunk.doc_id, h.chunk.text, dict(h.chunk.metadata)))
        node.start_char_idx, node.end_char_idx = h.chunk.start, h.chunk.end
        nodes.append(node)
    return VectorStoreQueryResult(
        nodes=nodes, similarities=[h.score for h in hits], ids=[h.chunk.doc_id for h in hits]
    )


class VectorStoreClient:
    """A LlamaIndex vector store as the dense channel of a :class:`~semrag.SemanticIndex`.

    ``SemanticIndex(dense=VectorStoreClient(store))`` keeps BM25 and the graphs in process
    and the chunk vectors (semrag's own, passed as node embeddings) in ``store``, which
    answers the nearest-neighbour searches. Each entry is a ``TextNode`` whose id and
    source document are the chunk id, so ``delete`` works on every store.

    Args:
        store: any LlamaIndex ``BasePydanticVectorStore``.

    Example:
        >>> from llama_index.core.vector_stores import SimpleVectorStore
        >>> from semrag import Document, SemanticIndex
        >>> from semrag.testing import FakeEmbedder
        >>> client = VectorStoreClient(SimpleVectorStore())
        >>> index = SemanticIndex(embedder=FakeEmbedder(), dense=client)
        >>> index.add_documents([Document("b", "Bees dance."), Document("r", "Rockets fly.")])
        >>> [h.chunk.doc_id for h in index.search("rockets", k=1)]
        ['r']
    """

    def __init__(self, store: BasePydanticVectorStore) -> None:
        if not isinstance(store, BasePydanticVectorStore):
            raise TypeError(f"expected a LlamaIndex vector store, got {type(store).__name__}")
        self.store = store

    def upsert(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        vectors: Any,
        metadatas: Sequence[Mapping[str, Any]],
    ) -> None:
        """Add (or replace) entries with semrag's vectors."""
        nodes = [
            TextNode(
                id_=i,
                text=t,
                embedding=[float(x) for x in v],
                metadata=dict(m),
                relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=i)},
            )
            for i, t, v, m in zip(ids, texts, vectors, metadatas, strict=True)
        ]
        self.store.add(nodes)

    def delete(self, ids: Sequence[str]) -> None:
        """Remove entries (each is its own source document)."""
        for i in ids:
            self.store.delete(i)

    def search(self, vector: Any, k: int) -> list[str]:
        """Ids of the ``k`` entries nearest ``vector``."""
        query = VectorStoreQuery(query_embedding=[float(x) for x in vector], similarity_top_k=k)
        result = self.store.query(query)
        if result.ids is not None:
            return [str(i) for i in result.ids]
        return [n.node_id for n in result.nodes or []]

    def __repr__(self) -> str:
        return f"VectorStoreClient({type(self.store).__name__})"
