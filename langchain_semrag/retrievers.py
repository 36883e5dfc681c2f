"""LangChain ``BaseRetriever`` subclasses over the semrag retrievers.

Each class is a few lines: its fields are the core retriever's arguments, the core object
is built once after validation, and results become LangChain documents with exact
offsets, scores and provenance in metadata (:func:`to_lc_documents`).
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, PrivateAttr, create_model

from langchain_semrag.embeddings import to_llm
from semrag._validation import check_keywords, named_arguments, renamed, with_options
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
    """Shared plumbing: check the arguments, build the core retriever once, translate results.

    Every argument is checked by the core retriever (an invalid one raises semrag's
    ``ConfigError``, never a pydantic error); only the arguments given are passed on, so
    the core's defaults apply to the rest.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    k: Any = 10
    options: dict[str, Any] = {}
    """More keyword arguments of the core retriever (the way to pass them before 0.3)."""
    _core: Retriever = PrivateAttr()
    _core_class: ClassVar[type | None] = None
    _renamed: ClassVar[dict[str, str]] = {}  # a field's old name -> its name (until 0.4)

    def __init__(self, *args: Any, **data: Any) -> None:
        name = type(self).__name__
        data = named_arguments(self._core_class or type(self), name, args, data)
        old = {n: data.pop(n) for n in self._renamed if n in data}
        if old:
            defaults = {n: type(self).model_fields[n].default for n in self._renamed.values()}
            data = renamed(name, old, data, self._renamed, defaults)
        fields = type(self).model_fields
        extra = {n: data.pop(n) for n in list(data) if n not in fields}
        if self._core_class is None:  # no core class of its own: nothing to pass extras to
            check_keywords(f"{name}()", [n for n in fields if n != "options"], [*extra, *data])
        data["options"] = {**data.get("options", {}), **extra}
        with_options(name, {n: v for n, v in data.items() if n != "options"}, data["options"])
        super().__init__(**data)
        self._core = self._build()

    def _given(self) -> dict[str, Any]:
        """The core retriever's arguments this object was given (``llm`` made a semrag LLM)."""
        names = {p.name for p in parameters(self._core_class)} if self._core_class else set()
        fields = vars(self)  # pydantic keeps the field values here
        given = {n: fields[n] for n in self.model_fields_set if n in names}
        given.update(self.options)
        if "llm" in given:
            given["llm"] = to_llm(given["llm"])
        return given

    def _build(self) -> Any:
        assert self._core_class is not None
        return construct(self._core_class, **{"k": self.k, **self._given()})

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


def retriever_for(core: type) -> type[BaseRetriever]:
    """A LangChain retriever class over a semrag retriever class (yours, or one of ours).

    Its fields are every parameter of ``core``, same names, same defaults (declared once,
    in the core's signature: :func:`semrag.retrieval.parameters`); they are untyped for
    pydantic, so the core checks every value; what the core takes by position (``index``)
    is taken by position too. ``invoke`` / ``ainvoke`` return LangChain
    documents with exact offsets, scores and provenance (:func:`to_lc_documents`), and
    ``invoke(query, k=...)`` overrides ``k`` for one call. Every retriever class of this
    module is made this way.

    Examples:
        >>> from semrag import Document, SemanticIndex
        >>> from semrag.retrieval import PPRRetriever
        >>> from semrag.testing import FakeEmbedder
        >>> index = SemanticIndex(embedder=FakeEmbedder())
        >>> index.add_documents([Document("a", "Bees dance. Bees make honey.")])
        >>> PPR = retriever_for(PPRRetriever)
        >>> [d.metadata["doc_id"] for d in PPR(index=index, k=1).invoke("bees")]
        ['a']
    """
    fields: dict[str, Any] = {
        p.name: (Any, ... if p.default is p.empty else p.default) for p in parameters(core)
    }
    made = create_model(  # type: ignore[call-overload]
        core.__name__, __base__=_CoreRetriever, __module__=__name__, **fields
    )
    made._core_class = core
    return cast(type[BaseRetriever], made)


class SSGRetriever(retriever_for(CoreSSGRetriever)):  # type: ignore[misc]
    """Semantic-similarity-graph traversal (Lester) as a LangChain retriever.

    Takes every parameter of :class:`semrag.retrieval.SSGRetriever` under the same name
    and default (``index``, ``strategy``, ``k``, ``max_sentences``, ``early_stop``,
    ``llm``, ``max_llm_calls``, ...); ``llm`` may be a LangChain model. ``algorithm=`` is
    the old name of ``strategy`` (a ``DeprecationWarning`` until 0.4);
    ``invoke(query, k=...)`` overrides ``k`` per call.
    """

    _renamed: ClassVar[dict[str, str]] = {"algorithm": "strategy"}


class IntentAwareRetriever(retriever_for(CoreIntentAwareRetriever)):  # type: ignore[misc]
    """Intent-aware hybrid retrieval (dense + BM25 + graph, per-query weights; InSemRAG).

    Takes every parameter of :class:`semrag.retrieval.IntentAwareRetriever` under the same
    name and default (``index``, ``k``, ``m``, ``llm``, ``graph``, ``weights``, ...);
    ``llm`` may be a LangChain model. Each document's metadata holds the query's plan
    (``semrag_provenance[0]``: intent, weights, sub-queries) and its per-channel scores
    (``semrag_channels``).
    """


class RetrieveAndCheckRetriever(_CoreRetriever):
    """The retrieve-and-check loop (IAR + SPC, re-querying missing elements) as a retriever.

    Args:
        index: a :class:`semrag.SemanticIndex`.
        k: chunks per retrieval and kept by SPC in each round; ``invoke`` returns all the
            evidence the rounds gathered (round 1's chunks, then each round's additions)
            unless the call passes ``k=`` to cut it.
        llm: a LangChain model (or semrag LLM) used by both IAR and SPC.
        max_rounds: rounds of the loop.
        follow_up_k: repaired chunks each follow-up query may add.
        retriever_options: keyword arguments of the core ``IntentAwareRetriever``.
        spc_options: keyword arguments of :class:`semrag.postprocess.SPC`.
    """

    index: Any
    llm: Any = None
    max_rounds: Any = 3
    follow_up_k: Any = 3
    retriever_options: dict[str, Any] = {}
    spc_options: dict[str, Any] = {}

    def _build(self) -> Any:
        llm = to_llm(self.llm)
        retriever = CoreIntentAwareRetriever(
            self.index, k=self.k, llm=llm, **self.retriever_options
        )
        spc = SPC(self.index, k=self.k, llm=llm, **self.spc_options)
        return RetrieveAndCheck(retriever, spc, self.max_rounds, follow_up_k=self.follow_up_k)

    def _k(self, k: int | None) -> int | None:
        # Round 1 already holds k chunks: the loop's added evidence is the point, so all of
        # it is returned unless the call asks for a cut (as the LlamaIndex adapter does).
        return k


class SketchRetriever(retriever_for(CoreSketchRetriever)):  # type: ignore[misc]
    """SKETCH: knowledge-graph facts and chunks merged with small-chunk vector search.

    Takes every parameter of :class:`semrag.retrieval.SketchRetriever` under the same name
    and default (``index``, ``graph``, ``k``, ``depth``, ``llm``, ``split``, ...); ``llm``
    may be a LangChain model. Each document's ``semrag_provenance[0]`` says which side
    found it (``structured``, ``unstructured`` or ``both``), through which entities, and
    the facts among them.
    """


class CommunityRetriever(retriever_for(CoreCommunityRetriever)):  # type: ignore[misc]
    """SemRAG community search: ``strategy="local"`` (eq. 4) or ``"global"`` (eq. 5).

    Takes every parameter of :class:`semrag.retrieval.CommunityRetriever` under the same
    name and default (``index``, ``graph``, ``strategy``, ``k``, ``tau_e``, ``tau_d``,
    ...). ``mode=`` is the old name of ``strategy`` (a ``DeprecationWarning`` until 0.4).
    """

    _renamed: ClassVar[dict[str, str]] = {"mode": "strategy"}


class GraphRetriever(retriever_for(CoreGraphRetriever)):  # type: ignore[misc]
    """Every graph strategy behind one retriever.

    Strategies: ``"ppr"`` (the default: personalized PageRank over passages and entities),
    ``"sketch"``, ``"local"``, ``"global"`` or ``"ssg:<algorithm>"``. Takes every
    parameter of :class:`semrag.retrieval.GraphRetriever` and of the default strategy's
    :class:`semrag.retrieval.PPRRetriever` under the same name and default (``index``,
    ``graph``, ``strategy``, ``k``, ``per_passage``, ``damping``, ``llm``, ...); another
    strategy's parameters are taken as keywords too (``max_sentences=`` for
    ``"ssg:..."``), and one the strategy does not take is a ``ConfigError``.

    Examples:
        >>> from semrag import Document, SemanticIndex
        >>> from semrag.testing import FakeEmbedder
        >>> index = SemanticIndex(embedder=FakeEmbedder())
        >>> index.add_documents([Document("a", "Bees dance. Bees make honey.")])
        >>> retriever = GraphRetriever(index=index, k=2, per_passage=2)
        >>> [d.metadata["doc_id"] for d in retriever.invoke("bees")]
        ['a']
    """
