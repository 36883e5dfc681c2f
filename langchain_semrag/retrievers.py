"""LangChain ``BaseRetriever`` subclasses over the semrag retrievers.

Each class is a few lines: its fields are the core retriever's arguments, the core object
is built once after validation, and results become LangChain documents with exact
offsets, scores and provenance in metadata (:func:`to_lc_documents`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, PrivateAttr, model_validator

from langchain_semrag.embeddings import to_llm
from semrag._validation import renamed
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
    "to_lc_documents",
]


def to_lc_documents(hits: list[ScoredChunk]) -> list[LCDocument]:
    """ScoredChunks as LangChain documents with offsets, scores and provenance in metadata."""
    out = []
    for h in hits:
        metadata = h.to_metadata()
        known = h.chunk.has_offsets
        metadata.update(
            start_index=h.chunk.start if known else None,
            end_index=h.chunk.end if known else None,
        )
        out.append(LCDocument(page_content=h.chunk.text, metadata=metadata))
    return out


class _CoreRetriever(BaseRetriever):
    """Shared plumbing: build the core retriever once, translate its results."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    k: int = 10
    _core: Any = PrivateAttr()
    _renamed: ClassVar[dict[str, str]] = {}  # a field's old name -> its name (until 0.4)

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        """Fields given by their old names, moved to the new ones (with a warning)."""
        if not isinstance(data, dict) or not cls._renamed:
            return data
        old = {name: data[name] for name in cls._renamed if name in data}
        rest = {name: value for name, value in data.items() if name not in old}
        defaults = {name: cls.model_fields[name].default for name in cls._renamed.values()}
        return renamed(cls.__name__, old, rest, cls._renamed, defaults)

    def model_post_init(self, __context: Any) -> None:
        """Build the core retriever (validates the arguments)."""
        self._core = self._build()

    def _build(self) -> Any:
        raise NotImplementedError

    def _k(self, k: int | None) -> int | None:
        """The ``k`` handed to the core: the call's, else the retriever's."""
        return self.k if k is None else k

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[LCDocument]:
        return to_lc_documents(self._core.retrieve(query, k=self._k(k)))

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
    ) -> list[LCDocument]:
        return to_lc_documents(await self._core.aretrieve(query, k=self._k(k)))


class SSGRetriever(_CoreRetriever):
    """Semantic-similarity-graph traversal (Lester) as a LangChain retriever.

    Args:
        index: a :class:`semrag.SemanticIndex` with its graph.
        strategy: one of ``semrag.retrieval.ALGORITHMS`` (``algorithm=`` before 0.3, still
            accepted with a ``DeprecationWarning`` until 0.4).
        k: documents returned; ``invoke(query, k=...)`` overrides it per call.
        options: more keyword arguments of :class:`semrag.SSGRetriever`
            (``max_sentences``, ``early_stop``, ``llm``, ``max_llm_calls``, ...).
    """

    index: Any
    strategy: str = "query_traversal"
    options: dict[str, Any] = {}
    _renamed: ClassVar[dict[str, str]] = {"algorithm": "strategy"}

    def _build(self) -> Any:
        options = {**self.options, "llm": to_llm(self.options.get("llm"))}
        return CoreSSGRetriever(self.index, strategy=self.strategy, k=self.k, **options)


class IntentAwareRetriever(_CoreRetriever):
    """Intent-aware hybrid retrieval (dense + BM25 + graph, per-query weights; InSemRAG).

    Each document's metadata holds the query's plan (``semrag_provenance[0]``: intent,
    weights, sub-queries) and its per-channel scores (``semrag_channels``).

    Args:
        index: a :class:`semrag.SemanticIndex`.
        k: documents returned; ``invoke(query, k=...)`` overrides it per call.
        m: candidates kept after fusion, before refinement.
        llm: a LangChain chat model or LLM (or a semrag LLM) for query enrichment and
            weights; without one, the documented rules decide.
        graph: a :class:`semrag.graph.KnowledgeGraph`: SKETCH becomes the extended channel.
        options: more keyword arguments of :class:`semrag.retrieval.IntentAwareRetriever`.
    """

    index: Any
    m: int = 20
    llm: Any = None
    graph: Any = None
    options: dict[str, Any] = {}

    def _build(self) -> Any:
        return CoreIntentAwareRetriever(
            self.index, k=self.k, m=self.m, llm=to_llm(self.llm), graph=self.graph, **self.options
        )


class RetrieveAndCheckRetriever(_CoreRetriever):
    """The retrieve-and-check loop (IAR + SPC, re-querying missing elements) as a retriever.

    Args:
        index: a :class:`semrag.SemanticIndex`.
        k: chunks per retrieval and kept by SPC in each round; ``invoke`` returns all the
            evidence the rounds gathered (round 1's chunks, then each round's additions)
            unless the call passes ``k=`` to cut it.
        llm: a LangChain model (or semrag LLM) used by both IAR and SPC.
        max_rounds: rounds of the loop.
        retriever_options: keyword arguments of the core ``IntentAwareRetriever``.
        spc_options: keyword arguments of :class:`semrag.postprocess.SPC`.
    """

    index: Any
    llm: Any = None
    max_rounds: int = 3
    retriever_options: dict[str, Any] = {}
    spc_options: dict[str, Any] = {}

    def _build(self) -> Any:
        llm = to_llm(self.llm)
        retriever = CoreIntentAwareRetriever(
            self.index, k=self.k, llm=llm, **self.retriever_options
        )
        spc = SPC(self.index, k=self.k, llm=llm, **self.spc_options)
        return RetrieveAndCheck(retriever, spc, self.max_rounds)

    def _k(self, k: int | None) -> int | None:
        # Round 1 already holds k chunks: the loop's added evidence is the point, so all of
        # it is returned unless the call asks for a cut (as the LlamaIndex adapter does).
        return k


class SketchRetriever(_CoreRetriever):
    """SKETCH: knowledge-graph facts and chunks merged with small-chunk vector search.

    Each document's ``semrag_provenance[0]`` says which side found it (``structured``,
    ``unstructured`` or ``both``), through which entities, and the facts among them.

    Args:
        index: a :class:`semrag.SemanticIndex`.
        graph: the :class:`semrag.graph.KnowledgeGraph` built from it.
        k: documents returned; ``invoke(query, k=...)`` overrides it per call.
        llm: a LangChain model (or semrag LLM) for query NER.
        options: more keyword arguments of :class:`semrag.retrieval.SketchRetriever`.
    """

    index: Any
    graph: Any
    llm: Any = None
    options: dict[str, Any] = {}

    def _build(self) -> Any:
        return CoreSketchRetriever(
            self.index, self.graph, k=self.k, llm=to_llm(self.llm), **self.options
        )


class CommunityRetriever(_CoreRetriever):
    """SemRAG community search: ``strategy="local"`` (eq. 4) or ``"global"`` (eq. 5).

    Local: entities similar to the query, then their chunks. Global: community reports,
    then their sentences.

    Args:
        index: a :class:`semrag.SemanticIndex`.
        graph: the :class:`semrag.graph.KnowledgeGraph` (with communities for global).
        strategy: ``"local"`` or ``"global"`` (``mode=`` before 0.3, still accepted with a
            ``DeprecationWarning`` until 0.4).
        k: documents returned.
        options: more keyword arguments of :class:`semrag.retrieval.CommunityRetriever`.
    """

    index: Any
    graph: Any
    strategy: str = "local"
    options: dict[str, Any] = {}
    _renamed: ClassVar[dict[str, str]] = {"mode": "strategy"}

    def _build(self) -> Any:
        return CoreCommunityRetriever(
            self.index, self.graph, strategy=self.strategy, k=self.k, **self.options
        )


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
        k: documents returned.
        options: more keyword arguments of the retriever the strategy selects.
    """

    index: Any
    graph: Any = None
    strategy: str = "ppr"
    options: dict[str, Any] = {}

    def _build(self) -> Any:
        options = dict(self.options)
        if "llm" in options:
            options["llm"] = to_llm(options["llm"])
        return CoreGraphRetriever(
            self.index, self.graph, strategy=self.strategy, k=self.k, **options
        )
