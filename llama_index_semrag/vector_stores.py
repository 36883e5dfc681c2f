"""A LlamaIndex vector store over a :class:`semrag.SemanticIndex`.

``VectorStoreIndex.from_vector_store(SemanticVectorStore(), embed_model=SemragEmbedding())``
(or a ``StorageContext`` with ``vector_store=``) puts semrag's index under a LlamaIndex
app; the same index then serves semrag's graph, intent-aware and SPC retrievers.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
from fsspec import AbstractFileSystem
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import (
    BaseNode,
    MetadataMode,
    NodeRelationship,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores.simple import (
    DEFAULT_VECTOR_STORE,
    NAMESPACE_SEP,
    build_metadata_filter_fn,
)
from llama_index.core.vector_stores.types import (
    DEFAULT_PERSIST_DIR,
    DEFAULT_PERSIST_FNAME,
    BasePydanticVectorStore,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)

from llama_index_semrag.embeddings import to_embedder
from semrag import SemanticIndex
from semrag._validation import check_query
from semrag.embeddings import Embedder, Vectors
from semrag.errors import ConfigError
from semrag.identity import chunk_document_id
from semrag.index.ingest.presplit import NODE_KEY, remove_pieces, upsert_pieces
from semrag.types import Chunk, ScoredChunk

__all__ = ["SemanticVectorStore", "VectorStoreClient"]

_DENSE = (VectorStoreQueryMode.DEFAULT, VectorStoreQueryMode.MMR)
_SPARSE = (VectorStoreQueryMode.SPARSE, VectorStoreQueryMode.TEXT_SEARCH)


class SemanticVectorStore(BasePydanticVectorStore):
    """LlamaIndex's vector-store interface on a :class:`~semrag.SemanticIndex`.

    Nodes cut from one document are stored as one semrag document (named by
    :func:`semrag.identity.chunk_document_id`: the node's ``ref_doc_id``), each node a
    chunk at its ``start_char_idx``, so SPC repairs a node from the text around it and
    the graph retrievers see documents, not loose nodes. A node without a source document
    is a document of its own. Adding a node id that is stored replaces that node
    (LlamaIndex's upsert); nodes of a stored document that arrive in a later ``add`` (an
    ``insert``, or the next batch of a large one) join it. ``delete(ref_doc_id)``
    removes the document; ``update_ref_doc`` and an ``IngestionPipeline`` with a docstore
    replace it.

    Queries embed ``query_str`` with the index's own embedder (so the vectors always come
    from one model); a query with only ``query_embedding`` is searched by that vector.
    Modes: ``default`` (exact dense), ``mmr`` (``mmr_threshold`` is the relevance weight,
    default 0.5), ``sparse`` / ``text_search`` (the index's BM25). ``filters``,
    ``doc_ids`` and ``node_ids`` (when not empty) restrict the dense modes; for
    the other hybrid modes use semrag's ``IntentAwareRetriever`` over ``store.index``.

    ``storage_context.persist(persist_dir)`` saves the index beside LlamaIndex's files;
    :meth:`from_persist_dir` loads it in a new process (give it to
    ``StorageContext.from_defaults(persist_dir=..., vector_store=...)`` and
    ``load_index_from_storage``).

    Args:
        embed_model: the embedder for the index it creates: a LlamaIndex
            ``BaseEmbedding`` or a semrag embedder; default the packaged MiniLM.
        index: an existing index to serve instead.
        **index_kwargs: passed to :class:`~semrag.SemanticIndex` when it is created.

    Examples:
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
        embed_model: BaseEmbedding | Embedder | None = None,
        *,
        index: SemanticIndex | None = None,
        **index_kwargs: Any,
    ) -> None:
        super().__init__(stores_text=True)
        if index is None:
            index = SemanticIndex(embedder=to_embedder(embed_model), **index_kwargs)
        elif index_kwargs or embed_model is not None:
            raise ConfigError(
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
    def _merged(self, nodes: Sequence[BaseNode]) -> list[Chunk]:
        """The chunks of every document ``nodes`` touch: its stored ones, then the nodes."""
        index = self._index
        stored = lambda doc_id: index.chunks(doc_id) if doc_id in index else []  # noqa: E731
        return upsert_pieces([_chunk(n) for n in nodes], stored, NODE_KEY)

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Store ``nodes`` (grouped into their documents); returns their ids."""
        self._index.add_chunks(self._merged(nodes), on_conflict="replace")
        return [n.node_id for n in nodes]

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """Async twin of :meth:`add`."""
        chunks = await asyncio.to_thread(self._merged, nodes)
        await self._index.aadd_chunks(chunks, on_conflict="replace")
        return [n.node_id for n in nodes]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Remove the document ``ref_doc_id`` and all its nodes (absent: nothing happens)."""
        self._index.delete([ref_doc_id])

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Async twin of :meth:`delete` (off the event loop)."""
        await asyncio.to_thread(self.delete, ref_doc_id)

    def delete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """Remove the nodes ``node_ids`` that ``filters`` accepts (all nodes if both are None).

        A document keeps its other nodes; one left without nodes is removed.
        """
        gone = {c.metadata[NODE_KEY] for c in self._chunks(node_ids, filters)}
        if not gone:
            return
        left, emptied = remove_pieces(self._index.chunks(), gone, NODE_KEY)
        if left:
            self._index.add_chunks(left, on_conflict="replace")
        self._index.delete(emptied)

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
        self._index.delete(self._index.doc_ids)

    async def aclear(self) -> None:
        """Async twin of :meth:`clear`."""
        await asyncio.to_thread(self.clear)

    # -- persistence ----------------------------------------------------------------------
    def persist(self, persist_path: str, fs: AbstractFileSystem | None = None) -> None:
        """Save the index (``StorageContext.persist`` calls this with its file name).

        The index is a directory beside LlamaIndex's files: ``persist_path`` without its
        ``.json`` suffix (``storage/default__vector_store``).

        Raises:
            ConfigError: for an fsspec filesystem other than the local one.
        """
        _check_local(fs)
        self._index.save(_index_dir(persist_path))

    @classmethod
    def from_persist_path(
        cls,
        persist_path: str,
        embed_model: BaseEmbedding | Embedder | None = None,
        fs: AbstractFileSystem | None = None,
    ) -> SemanticVectorStore:
        """The store saved at ``persist_path`` (as :meth:`persist` was given it).

        ``embed_model`` must be the model the index was built with (default the packaged
        MiniLM; the saved index records its model and refuses another).
        """
        _check_local(fs)
        index = SemanticIndex.load(_index_dir(persist_path), embedder=to_embedder(embed_model))
        return cls(index=index)

    @classmethod
    def from_persist_dir(
        cls,
        persist_dir: str = DEFAULT_PERSIST_DIR,
        namespace: str = DEFAULT_VECTOR_STORE,
        embed_model: BaseEmbedding | Embedder | None = None,
        fs: AbstractFileSystem | None = None,
    ) -> SemanticVectorStore:
        """The store that ``storage_context.persist(persist_dir)`` saved (one namespace)."""
        path = Path(persist_dir) / f"{namespace}{NAMESPACE_SEP}{DEFAULT_PERSIST_FNAME}"
        return cls.from_persist_path(str(path), embed_model=embed_model, fs=fs)

    # -- reads ----------------------------------------------------------------------------
    def _chunks(self, node_ids: list[str] | None, filters: MetadataFilters | None) -> list[Chunk]:
        accept = _accept(filters)
        wanted = None if node_ids is None else set(node_ids)
        return [
            c
            for c in self._index.chunks()
            if (wanted is None or c.metadata.get(NODE_KEY) in wanted) and accept(c.metadata)
        ]

    def get_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """The stored nodes ``node_ids`` that ``filters`` accepts (missing ids skipped)."""
        return [_node(c) for c in self._chunks(node_ids, filters)]

    async def aget_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """Async twin of :meth:`get_nodes`."""
        return await asyncio.to_thread(self.get_nodes, node_ids, filters)

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The ``similarity_top_k`` best nodes for ``query`` (see the class docs for modes).

        Raises:
            ConfigError: for a mode the store does not serve, a query with neither text
                nor vector, or a query text that is empty, whitespace or not valid Unicode.
        """
        k = query.similarity_top_k
        if query.query_str is not None:  # an empty or broken query is refused, as elsewhere
            check_query("SemanticVectorStore.query", query.query_str)
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
            vector = self._index.reader().embed_query(query.query_str)
        elif query.query_embedding is not None:
            vector = np.asarray(query.query_embedding, np.float32)
        else:
            raise ConfigError("the query has neither query_str nor query_embedding")
        accept = _accept(query.filters, query.node_ids)
        # An empty node_ids restricts nothing: VectorStoreIndex passes its own node list,
        # which is empty for a store that keeps the text.
        doc_ids = query.doc_ids or None
        if query.mode == VectorStoreQueryMode.MMR:
            weight = kwargs.get("mmr_threshold", query.mmr_threshold)
            hits = self._index.search_mmr(
                vector,
                k,
                fetch_k=max(20, 4 * k),
                lambda_mult=0.5 if weight is None else weight,
                filter=accept,
                doc_ids=doc_ids,
            )
        else:
            hits = self._index.search_vector(vector, k, filter=accept, doc_ids=doc_ids)
        return _result(hits)

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Async twin of :meth:`query` (off the event loop)."""
        if query.query_str and query.mode in _DENSE:
            vector = await self._index.reader().aembed_query(query.query_str)
            query = dataclasses.replace(query, query_embedding=vector.tolist(), query_str=None)
        return await asyncio.to_thread(self.query, query, **kwargs)


def _doc_of(node: BaseNode) -> str:
    """The semrag document a node belongs to (its own id when it names none)."""
    return chunk_document_id(node.metadata, node.ref_doc_id) or node.node_id


def _chunk(node: BaseNode) -> Chunk:
    """A node as a semrag chunk of its document, its node id kept in the metadata."""
    text = node.get_content(MetadataMode.NONE)
    start = node.start_char_idx if isinstance(node, TextNode) else None
    start = start if isinstance(start, int) and start >= 0 else -1
    end = start + len(text) if start >= 0 else -1
    meta = {**node.metadata, NODE_KEY: node.node_id}
    return Chunk(_doc_of(node), start, end, text, 0, metadata=meta)


def _accept(
    filters: MetadataFilters | None, node_ids: Sequence[str] | None = None
) -> Callable[[Mapping[str, Any]], bool]:
    """One predicate on stored metadata for LlamaIndex's filters and ``node_ids``."""
    # LlamaIndex's own evaluation of MetadataFilters, given the metadata as the lookup key.
    # (its signature names a node-id lookup; any key works)
    lookup: Any = lambda meta: meta  # noqa: E731
    by_filters: Callable[[Mapping[str, Any]], bool] = cast(
        Callable[[Mapping[str, Any]], bool], build_metadata_filter_fn(lookup, filters)
    )
    if not node_ids:
        return by_filters
    wanted = set(node_ids)
    return lambda meta: meta.get(NODE_KEY) in wanted and by_filters(meta)


def _node(chunk: Chunk) -> TextNode:
    """A stored chunk as the node it was added as (its id, metadata and source)."""
    meta = {k: v for k, v in chunk.metadata.items() if k != NODE_KEY}
    return TextNode(
        id_=str(chunk.metadata.get(NODE_KEY, chunk.doc_id)),
        text=chunk.text,
        metadata=meta,
        start_char_idx=chunk.start if chunk.has_offsets else None,
        end_char_idx=chunk.end if chunk.has_offsets else None,
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=chunk.doc_id)},
    )


def _result(hits: list[ScoredChunk]) -> VectorStoreQueryResult:
    nodes: list[BaseNode] = [_node(h.chunk) for h in hits]
    return VectorStoreQueryResult(
        nodes=nodes, similarities=[h.score for h in hits], ids=[n.node_id for n in nodes]
    )


def _index_dir(persist_path: str) -> Path:
    path = Path(persist_path)
    return path.with_suffix("") if path.suffix == ".json" else path


def _check_local(fs: AbstractFileSystem | None) -> None:
    if fs is not None and "file" not in (getattr(fs, "protocol", None) or ()):
        raise ConfigError(
            f"SemanticVectorStore saves to the local filesystem only, not {fs!r}; persist "
            "to a local directory and copy it"
        )


class VectorStoreClient:
    """A LlamaIndex vector store as the dense channel of a :class:`~semrag.SemanticIndex`.

    ``SemanticIndex(dense=VectorStoreClient(store))`` keeps BM25 and the graphs in process
    and the chunk vectors (semrag's own, passed as node embeddings) in ``store``, which
    answers the nearest-neighbour searches. Each entry is a ``TextNode`` whose id and
    source document are the chunk id, so ``delete`` works on every store.

    Args:
        store: any LlamaIndex ``BasePydanticVectorStore``.

    Examples:
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
            raise ConfigError(f"expected a LlamaIndex vector store, got {type(store).__name__}")
        self.store = store

    def upsert(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        vectors: Vectors,
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

    def search(self, vector: Vectors, k: int) -> list[str]:
        """Ids of the ``k`` entries nearest ``vector``."""
        query = VectorStoreQuery(query_embedding=[float(x) for x in vector], similarity_top_k=k)
        result = self.store.query(query)
        if result.ids is not None:
            return [str(i) for i in result.ids]
        return [n.node_id for n in result.nodes or []]

    def __repr__(self) -> str:
        return f"VectorStoreClient({type(self.store).__name__})"
