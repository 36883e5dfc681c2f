"""LlamaIndex ``BaseRetriever`` subclasses over the semrag retrievers.

Each class builds its core retriever once and turns results into scored ``TextNode``s with
exact offsets, scores and provenance in metadata (:func:`to_nodes`).
"""

from __future__ import annotations

import inspect
from contextvars import ContextVar
from typing import Any, ClassVar

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.llms import LLM as LIBaseLLM
from llama_index.core.schema import (
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    QueryType,
    RelatedNodeInfo,
    TextNode,
)

from llama_index_semrag.embeddings import to_llm
from semrag import SemanticIndex
from semrag._validation import named_arguments
from semrag.index.reader import CorpusReader
from semrag.llm import LLM
from semrag.postprocess import SPC
from semrag.retrieval import CommunityRetriever as CoreCommunityRetriever
from semrag.retrieval import GraphRetriever as CoreGraphRetriever
from semrag.retrieval import IntentAwareRetriever as CoreIntentAwareRetriever
from semrag.retrieval import RetrieveAndCheck, construct, parameters
from semrag.retrieval import SketchRetriever as CoreSketchRetriever
from semrag.retrieval import SSGRetriever as CoreSSGRetriever
from semrag.types import Retriever, ScoredChunk

__all__ = [
    "CommunityRetriever",
    "GraphRetriever",
    "IntentAwareRetriever",
    "RetrieveAndCheckRetriever",
    "SSGRetriever",
    "SketchRetriever",
    "retriever_for",
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
    """Shared plumbing: the core retriever is built from the keyword arguments given.

    A subclass names its core class (``_core_class``); it takes every parameter of that
    class under the same name and default (:func:`semrag.retrieval.parameters`, which is
    also its ``inspect.signature``), passes on those given, and the core checks them (an
    invalid one raises semrag's ``ConfigError``). ``retrieve`` / ``aretrieve`` take ``k=``
    for one call (the constructor's ``k`` otherwise); the value travels in a context
    variable, so concurrent calls never see each other's.
    """

    _core: Retriever
    _core_class: ClassVar[type]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_core_class" in cls.__dict__:  # its signature is the core's
            core = inspect.signature(cls._core_class).parameters.values()
            positional = {p.name for p in core if p.kind is p.POSITIONAL_OR_KEYWORD}
            params = [
                p if p.name in positional else p.replace(kind=p.KEYWORD_ONLY)
                for p in parameters(cls._core_class)
            ]
            cls.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]

    def __init__(self, *args: Any, **params: Any) -> None:
        params = named_arguments(self._core_class, type(self).__name__, args, params)
        if "llm" in params:
            params["llm"] = to_llm(params["llm"])
        self._core = construct(self._core_class, **params)
        super().__init__()

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


def retriever_for(core: type) -> type[BaseRetriever]:
    """A LlamaIndex retriever class over a semrag retriever class (yours, or one of ours).

    It takes every parameter of ``core``, same names and defaults, those the core takes by
    position (``index``) by position too (its ``inspect.signature`` is the core's), and
    returns scored ``TextNode``s with exact offsets, scores and provenance
    (:func:`to_nodes`); ``retrieve(query, k=...)``
    overrides ``k`` for one call, and ``aretrieve`` is the core's async twin. It is what
    the built-in classes of this module are: a subclass naming its core class.

    Examples:
        >>> from semrag import Document, SemanticIndex
        >>> from semrag.retrieval import PPRRetriever
        >>> from semrag.testing import FakeEmbedder
        >>> index = SemanticIndex(embedder=FakeEmbedder())
        >>> index.add_documents([Document("a", "Bees dance. Bees make honey.")])
        >>> PPR = retriever_for(PPRRetriever)
        >>> [n.node.metadata["doc_id"] for n in PPR(index=index, k=1).retrieve("bees")]
        ['a']
    """
    doc = f"{core.__name__} as a LlamaIndex retriever (see :func:`retriever_for`)."
    return type(
        core.__name__,
        (_CoreRetriever,),
        {"_core_class": core, "__module__": __name__, "__doc__": doc},
    )


class SSGRetriever(_CoreRetriever):
    """Semantic-similarity-graph traversal (Lester) as a LlamaIndex retriever.

    Takes every parameter of :class:`semrag.retrieval.SSGRetriever` under the
    same name and default (``index``, ``strategy``, ``k``, ``max_sentences``, ``llm``,
    ...; ``llm`` may be a LlamaIndex LLM). Works inside a ``RetrieverQueryEngine``;
    ``aretrieve`` is truly asynchronous; ``retrieve(query, k=...)`` overrides ``k`` for one
    call. ``algorithm=`` is the old name of ``strategy`` (until 0.4).
    """

    _core_class = CoreSSGRetriever


class IntentAwareRetriever(_CoreRetriever):
    """Intent-aware hybrid retrieval (dense + BM25 + graph, per-query weights; InSemRAG).

    Takes every parameter of :class:`semrag.retrieval.IntentAwareRetriever` under the same
    name and default (``index``, ``k``, ``m``, ``llm``, ``graph``, ...; ``llm`` may be a
    LlamaIndex LLM).
    """

    _core_class = CoreIntentAwareRetriever


class RetrieveAndCheckRetriever(_CoreRetriever):
    """The retrieve-and-check loop (IAR + SPC, re-querying missing elements) as a retriever.

    Args:
        index: a :class:`semrag.SemanticIndex`.
        k: results per retrieval and chunks kept by SPC.
        llm: a LlamaIndex LLM (or semrag LLM) used by both IAR and SPC.
        max_rounds: rounds of the loop.
        follow_up_k: repaired chunks each follow-up query may add.
        retriever_options: keyword arguments of the core ``IntentAwareRetriever``.
        spc_options: keyword arguments of :class:`semrag.postprocess.SPC`.
    """

    def __init__(
        self,
        *,
        index: CorpusReader | SemanticIndex,
        k: int = 10,
        llm: LIBaseLLM | LLM | None = None,
        max_rounds: int = 3,
        follow_up_k: int = 3,
        retriever_options: dict[str, Any] | None = None,
        spc_options: dict[str, Any] | None = None,
    ) -> None:
        llm = to_llm(llm)
        retriever = CoreIntentAwareRetriever(index, k=k, llm=llm, **(retriever_options or {}))
        spc = SPC(index, k=k, llm=llm, **(spc_options or {}))
        self._core = RetrieveAndCheck(retriever, spc, max_rounds, follow_up_k=follow_up_k)
        BaseRetriever.__init__(self)


class SketchRetriever(_CoreRetriever):
    """SKETCH: knowledge-graph facts and chunks merged with small-chunk vector search.

    Takes every parameter of :class:`semrag.retrieval.SketchRetriever` under
    the same name and default (``index``, ``graph``, ``k``, ``depth``, ``llm``, ...).
    """

    _core_class = CoreSketchRetriever


class CommunityRetriever(_CoreRetriever):
    """SemRAG community search, ``strategy="local"`` (eq. 4) or ``"global"`` (eq. 5).

    Takes every parameter of :class:`semrag.retrieval.CommunityRetriever` under the same
    name and default (``index``, ``graph``, ``strategy``, ``k``, ``tau_e``, ...).
    ``mode=`` is the old name of ``strategy`` (until 0.4).
    """

    _core_class = CoreCommunityRetriever


class GraphRetriever(_CoreRetriever):
    """Every graph strategy behind one retriever.

    Strategies: ``"ppr"`` (the default: personalized PageRank over passages and entities),
    ``"sketch"``, ``"local"``, ``"global"`` or ``"ssg:<algorithm>"``. Takes every
    parameter of :class:`semrag.retrieval.GraphRetriever` and of the default strategy's
    :class:`semrag.retrieval.PPRRetriever` under the same name and default
    (``index``, ``graph``, ``strategy``, ``k``, ``per_passage``, ``llm``, ...); another
    strategy's parameters too (``max_sentences=`` for ``"ssg:..."``), and one the strategy
    does not take is a ``ConfigError``.
    """

    _core_class = CoreGraphRetriever
