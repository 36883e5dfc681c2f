"""LlamaIndex ``BaseRetriever`` subclasses over the semrag retrievers."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from semrag.retrieval import SSGRetriever as CoreSSGRetriever
from semrag.types import ScoredChunk

__all__ = ["SSGRetriever", "to_nodes"]

_HIDDEN = [
    "semrag_provenance",
    "semrag_channels",
    "semrag_score",
    "semrag_token_count",
    "semrag_chunk_index",
    "semrag_sentence_start",
    "semrag_sentence_end",
]


def to_nodes(hits: list[ScoredChunk]) -> list[NodeWithScore]:
    """ScoredChunks as scored TextNodes with exact offsets, scores and provenance in metadata."""
    out = []
    for h in hits:
        c = h.chunk
        node = TextNode(
            id_=f"{c.doc_id}:{c.start}-{c.end}",
            text=c.text,
            start_char_idx=c.start,
            end_char_idx=c.end,
            metadata=h.to_metadata(),
            excluded_embed_metadata_keys=list(_HIDDEN),
            excluded_llm_metadata_keys=list(_HIDDEN),
        )
        out.append(NodeWithScore(node=node, score=h.score))
    return out


class SSGRetriever(BaseRetriever):
    """Semantic-similarity-graph traversal (Lester) as a LlamaIndex retriever.

    Works inside a ``RetrieverQueryEngine``; ``aretrieve`` is truly asynchronous.

    Args:
        index: a :class:`semrag.SemanticIndex` with its graph.
        algorithm: one of ``semrag.retrieval.ALGORITHMS``.
        k: nodes returned.
        **options: more keyword arguments of :class:`semrag.SSGRetriever`.
    """

    def __init__(
        self, *, index: Any, algorithm: str = "query_traversal", k: int = 10, **options: Any
    ) -> None:
        self._core = CoreSSGRetriever(index, algorithm=algorithm, k=k, **options)
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return to_nodes(self._core.retrieve(query_bundle.query_str))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return to_nodes(await self._core.aretrieve(query_bundle.query_str))
