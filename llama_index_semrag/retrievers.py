"""LlamaIndex ``BaseRetriever`` subclasses over the semrag retrievers.

Each class builds its core retriever once and turns results into scored ``TextNode``s with
exact offsets, scores and provenance in metadata (:func:`to_nodes`).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import (
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    QueryType,
    RelatedNodeInfo,
    TextNode,
)

from llama_index_semrag.embeddings import to_llm
from semrag.postprocess import SPC
from semrag.retrieval import CommunityRetriever as CoreCommunityRetriever
from semrag.retrieval import GraphRetriever as CoreGraphRetriever
from semrag.retrieval import IntentAwareRetriever as CoreIntentAwareRetriever
from semrag.retrieval import RetrieveAndCheck
from semrag.retrieval import SketchRetriever as CoreSketchRetriever
from semrag.retrieval import SSGRetriever as CoreSSGRetriever
from semrag.types import ScoredChunk

__all__ = [
    "CommunityRetriever",
    "GraphRetriever",
    "IntentAwareRetriever",
    "RetrieveAndCheckRetriever",
    "SSGRetriever",
    "SketchRetriever",
    "to_nodes",
]

_HIDDEN = [
    "semrag_provenance",
    "semrag_channels",
    "semrag_score",
    "semrag_token_count",
    "semrag_chunk_index",
    "semrag_sentence_start",
    "semrag_sentence_end",
    "semrag_spc",
    "semrag_coverage",
]


def to_nodes(hits: list[ScoredChunk]) -> list[NodeWithScore]:
    """ScoredChunks as scored TextNodes with exact offsets, scores and provenance in metadata."""
    out = []
    for h in hits:
        c = h.chunk
        node = TextNode(
            id_=f"{c.doc_id}:{c.start}-{c.end}",
            text=c.text,
            start_char_idx=c.start if c.has_offsets else None,
            end_char_idx=c.end if c.has_offsets else None,
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=c.doc_id)},
            metadata=h.to_metadata(),
            excluded_embed_metadata_keys=list(_HIDDEN),
            excluded_llm_metadata_keys=list(_HIDDEN),
        )
        out.append(NodeWithScore(node=node, score=h.score))
    return out


# ``k`` of the call in progress (LlamaIndex's retrieve() has no such parameter to pass on).
_CALL_K: ContextVar[int | None] = ContextVar("semrag_call_k", default=None)


class _CoreRetriever(BaseRetriever):
    """Shared plumbing: the core retriever is built by the subclass's ``__init__``.

    ``retrieve`` / ``aretrieve`` take ``k=`` for one call (the constructor's ``k`` otherwise);
    the value travels in a context variable, so concurrent calls never see each other's.
    """

    _core: Any

    def retrieve(
        self, str_or_query_bundle: QueryType, *, k: int | None = None
    ) -> list[NodeWithScore]:
        """LlamaIndex's ``retrieve``, with ``k`` nodes for this call when given."""
        token = _CALL_K.set(k)
        try:
            return super().retrieve(str_or_query_bundle)
        finally:
            _CALL_K.reset(token)

    async def aretrieve(
        self, str_or_query_bundle: QueryType, *, k: int | None = None
    ) -> list[NodeWithScore]:
        """Async twin of :meth:`retrieve`."""
        token = _CALL_K.set(k)
        try:
            return await super().aretrieve(str_or_query_bundle)
        finally:
            _CALL_K.reset(token)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return to_nodes(self._core.retrieve(query_bundle.query_str, k=_CALL_K.get()))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return to_nodes(await self._core.aretrieve(query_bundle.query_str, k=_CALL_K.get()))


class SSGRetriever(_CoreRetriever):
    """Semantic-similarity-graph traversal (Lester) as a LlamaIndex retriever.

    Works inside a ``RetrieverQueryEngine``; ``aretrieve`` is truly asynchronous.

    Args:
        index: a :class:`semrag.SemanticIndex` with its graph.
        strategy: one of ``semrag.retrieval.ALGORITHMS`` (``algorithm=`` before 0.3, still
            accepted with a ``DeprecationWarning`` until 0.4).
        k: nodes returned; ``retrieve(query, k=...)`` overrides it for one call.
        **options: more keyword arguments of :class:`semrag.SSGRetriever` (``llm`` may
            be a LlamaIndex LLM).
    """

    def __init__(
        self, *, index: Any, strategy: str = "query_traversal", k: int = 10, **options: Any
    ) -> None:
        options["llm"] = to_llm(options.get("llm"))
        self._core = CoreSSGRetriever(index, strategy=strategy, k=k, **options)
        super().__init__()


class IntentAwareRetriever(_CoreRetriever):
    """Intent-aware hybrid retrieval (dense + BM25 + graph, per-query weights; InSemRAG).

    Args:
        index: a :class:`semrag.SemanticIndex`.
        k: nodes returned; ``retrieve(query, k=...)`` overrides it for one call.
        m: candidates kept after fusion, before refinement.
        llm: a LlamaIndex LLM (or semrag LLM) for query enrichment and weights.
        graph: a :class:`semrag.graph.KnowledgeGraph`: SKETCH becomes the extended channel.
        **options: more keyword arguments of :class:`semrag.retrieval.IntentAwareRetriever`.
    """

    def __init__(
        self,
        *,
        index: Any,
        k: int = 10,
        m: int = 20,
        llm: Any = None,
        graph: Any = None,
        **options: Any,
    ) -> None:
        self._core = CoreIntentAwareRetriever(
            index, k=k, m=m, llm=to_llm(llm), graph=graph, **options
        )
        super().__init__()


class RetrieveAndCheckRetriever(_CoreRetriever):
    """The retrieve-and-check loop (IAR + SPC, re-querying missing elements) as a retriever.

    Args:
        index: a :class:`semrag.SemanticIndex`.
        k: results per retrieval and chunks kept by SPC.
        llm: a LlamaIndex LLM (or semrag LLM) used by both IAR and SPC.
        max_rounds: rounds of the loop.
        retriever_options: keyword arguments of the core ``IntentAwareRetriever``.
        spc_options: keyword arguments of :class:`semrag.postprocess.SPC`.
    """

    def __init__(
        self,
        *,
        index: Any,
        k: int = 10,
        llm: Any = None,
        max_rounds: int = 3,
        retriever_options: dict[str, Any] | None = None,
        spc_options: dict[str, Any] | None = None,
    ) -> None:
        llm = to_llm(llm)
        retriever = CoreIntentAwareRetriever(index, k=k, llm=llm, **(retriever_options or {}))
        spc = SPC(index, k=k, llm=llm, **(spc_options or {}))
        self._core = RetrieveAndCheck(retriever, spc, max_rounds)
        super().__init__()


class SketchRetriever(_CoreRetriever):
    """SKETCH: knowledge-graph facts and chunks merged with small-chunk vector search.

    Args:
        index: a :class:`semrag.SemanticIndex`.
        graph: the :class:`semrag.graph.KnowledgeGraph` built from it.
        k: nodes returned; ``retrieve(query, k=...)`` overrides it for one call.
        llm: a LlamaIndex LLM (or semrag LLM) for query NER.
        **options: more keyword arguments of :class:`semrag.retrieval.SketchRetriever`.
    """

    def __init__(
        self, *, index: Any, graph: Any = None, k: int = 10, llm: Any = None, **options: Any
    ) -> None:
        self._core = CoreSketchRetriever(index, graph, k=k, llm=to_llm(llm), **options)
        super().__init__()


class CommunityRetriever(_CoreRetriever):
    """SemRAG community search, ``strategy="local"`` (eq. 4) or ``"global"`` (eq. 5).

    Args:
        index: a :class:`semrag.SemanticIndex`.
        graph: the :class:`semrag.graph.KnowledgeGraph`.
        strategy: ``"local"`` or ``"global"`` (``mode=`` before 0.3, still accepted with a
            ``DeprecationWarning`` until 0.4).
        k: nodes returned; ``retrieve(query, k=...)`` overrides it for one call.
        **options: more keyword arguments of :class:`semrag.retrieval.CommunityRetriever`.
    """

    def __init__(
        self,
        *,
        index: Any,
        graph: Any = None,
        strategy: str = "local",
        k: int = 10,
        **options: Any,
    ) -> None:
        self._core = CoreCommunityRetriever(index, graph, strategy=strategy, k=k, **options)
        super().__init__()


class GraphRetriever(_CoreRetriever):
    """Every graph strategy behind one retriever.

    Strategies: ``"ppr"`` (the default: personalized PageRank over passages and entities,
    the best multi-hop strategy on the development sets), ``"sketch"``, ``"local"``,
    ``"global"`` or ``"ssg:<algorithm>"``.

    Args:
        index: a :class:`semrag.SemanticIndex`.
        graph: the :class:`semrag.graph.KnowledgeGraph` (not needed for ``ppr`` and
            ``ssg:*``).
        strategy: the strategy.
        k: nodes returned; ``retrieve(query, k=...)`` overrides it for one call.
        **options: more keyword arguments of the retriever the strategy selects.
    """

    def __init__(
        self,
        *,
        index: Any,
        graph: Any = None,
        strategy: str = "ppr",
        k: int = 10,
        **options: Any,
    ) -> None:
        if "llm" in options:
            options["llm"] = to_llm(options["llm"])
        self._core = CoreGraphRetriever(index, graph, strategy=strategy, k=k, **options)
        super().__init__()
