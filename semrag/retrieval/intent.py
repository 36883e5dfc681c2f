"""Intent-aware hybrid retrieval (IAR, InSemRAG §3.2.1) over a :class:`SemanticIndex`.

The query is *enriched* into dense sub-queries ``P_d`` (the query and its paraphrases) and
sparse sub-queries ``P_s`` (keywords, entities, rare terms), and *weighted*: a per-query
``w = [dense, sparse, extended]`` sums to 1. Each channel scores the candidates by the max
over its sub-queries (eqs. 6-7), the scores are normalised per channel and fused with
``w`` (eq. 8); the top ``m`` are refined to the top ``k``.

Without an LLM both steps are rules (:func:`plan_query`, :func:`classify_intent`,
:data:`INTENT_WEIGHTS`; the table of intents is in ``docs/retrievers.md``); the intent
weights beat fixed equal weights on the multi-hop development sets and tie on SQuAD
(``benchmarks/intent.py``). With an LLM, one JSON call returns paraphrases, keywords,
intent and weights; an invalid reply (after one retry) falls back to the rules and says so
in the metadata (or raises :class:`~semrag.errors.LLMOutputError` with
``on_llm_error="raise"``).

The *extended* channel is any retriever with ``retrieve``/``aretrieve``: SKETCH over the
knowledge graph when ``graph=`` is given, else personalized PageRank
(:class:`~semrag.retrieval.PPRRetriever`); its hits are mapped onto the index's chunks by
offsets and count by their order (PageRank mass says little beyond the order, and a hit's
``score`` is its relevance, the cosine with the query, which would make the channel a
second dense search).
"""

from __future__ import annotations

import logging
import numbers
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
import numpy.typing as npt

from semrag._rwlock import ProvidesReader
from semrag._steps import Call, Together, twin
from semrag._validation import (
    HasMethods,
    Interval,
    Options,
    check_query,
    offers,
)
from semrag.errors import ConfigError, LLMOutputError
from semrag.index.fusion import fuse_weighted, normalise_scores, normalise_weights
from semrag.index.reader import (
    AsyncReads,
    CorpusReader,
    CorpusSearch,
    HoldsRecords,
    KeptParts,
    SimilarityGraphReads,
    need,
    overlapping_read,
)
from semrag.llm import LLM, LLMFailed, aask_json, ask_json
from semrag.retrieval._query_plan import (
    CHANNELS,
    INTENT_WEIGHTS,
    INTENTS,
    PLAN_PROMPT,
    PLAN_SCHEMA,
    QueryPlan,
    classify_intent,
    plan_query,
    relation_hops,
)
from semrag.retrieval.base import IndexRetriever
from semrag.types import Retriever, ScoredChunk

if TYPE_CHECKING:
    from semrag.graph.knowledge import KnowledgeGraph
__all__ = [
    "CHANNELS",
    "INTENTS",
    "INTENT_WEIGHTS",
    "IntentAwareRetriever",
    "QueryPlan",
    "classify_intent",
    "plan_query",
    "relation_hops",
]

logger = logging.getLogger(__name__)


ExtendedChannel = Retriever
"""What IAR asks of its extended channel: a :class:`~semrag.types.Retriever`."""


def default_extended(index: CorpusReader, graph: Any) -> str | None:
    """IAR's extended channel for ``extended="auto"``.

    SKETCH with a knowledge graph; else PPR when the reader can give it the passage
    phrases (it holds its records, or keeps the ``passages`` part: a database reader whose
    writer kept them); else none.
    """
    if graph is not None:
        return "sketch"
    if offers(index, HoldsRecords) or (offers(index, KeptParts) and "passages" in index.parts):
        return "ppr"
    return None


@dataclass(slots=True)
class _Candidates:
    ids: list[int] = field(default_factory=list)
    extended: dict[int, float] = field(default_factory=dict)


class IntentAwareRetriever(IndexRetriever):
    """Hybrid dense + BM25 + graph retrieval with per-query weights (InSemRAG IAR).

    Args:
        index: the index to search (a :class:`~semrag.index.reader.CorpusReader`: the
            embedded index, or a ``Neo4jIndex``).
        k: results returned.
        m: candidates kept after fusion, before refinement (the paper: 20).
        llm: an :class:`~semrag.llm.LLM` for query enrichment and weights; without one the
            rules of :func:`plan_query` are used.
        extended: the extended channel: ``"auto"`` (SKETCH over ``graph`` when one is
            given, else ``"ppr"``; none on a :class:`~semrag.neo4j.Neo4jIndex`), ``"ppr"``
            (the personalized-PageRank :class:`~semrag.retrieval.PPRRetriever`, the default
            because it wins on the multi-hop development sets), ``"ssg"`` (the SSG query
            traversal), ``"sketch"``, ``None`` (off; its weight is shared out to the other
            two), or any object with ``retrieve(query, k=...)`` and ``aretrieve``.
        graph: a :class:`~semrag.graph.KnowledgeGraph` of the index, for the SKETCH channel.
        weights: fixed ``{"dense", "sparse", "extended"}`` weights for every query (turns
            intent weighting off; for ablations).
        intent_weights: override rows of :data:`INTENT_WEIGHTS`.
        n_candidates: candidates each sub-query contributes to the pool that is scored.
        refine: ``"sentence"`` blends the fused score with the best sentence similarity in
            the chunk (a finer-grained second look at the top ``m``); ``"none"`` keeps the
            fused order; ``"auto"`` (default) refines every intent but ``multi_hop``: a
            bridge passage (the second hop) is rarely similar to the question, so sentence
            similarity pushes it out (measured on the development sets, see the README).
        refine_weight: weight of the sentence score in ``"sentence"`` refinement.
        max_paraphrases: dense sub-queries taken from the LLM.
        max_keywords: the most sparse sub-queries, from the LLM or the rules.
        on_llm_error: ``"fallback"`` (use the rules, note it in the metadata) or
            ``"raise"``.

    Each hit's ``channel_scores`` hold the normalised ``dense``, ``sparse`` and
    ``extended`` scores, the ``fused`` score and (with refinement) ``sentence``; its first
    provenance entry holds the :class:`QueryPlan` (intent, weights, sub-queries).

    Examples:
        >>> from semrag import Document, SemanticIndex
        >>> from semrag.testing import FakeEmbedder
        >>> index = SemanticIndex(embedder=FakeEmbedder())
        >>> index.add_documents([Document("a", "Paris is in France."),
        ...                      Document("b", "Tides follow the Moon.")])
        >>> hit = IntentAwareRetriever(index, k=1).retrieve("Where is Paris?")[0]
        >>> hit.chunk.doc_id, hit.provenance[0]["intent"]
        ('a', 'entity')
    """

    normalisation: ClassVar[Mapping[str, str]] = {
        "dense": "minmax",
        "sparse": "max",
        "extended": "rank",
    }
    """How each channel's scores are mapped to [0, 1] before fusion (see
    :func:`~semrag.index.fusion.normalise_scores`): the extended channel by rank, since a
    graph retriever's scores (PageRank mass, SSG similarities) differ in scale by strategy."""

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "index": [object],
        "extended": [object],
        "graph": [object],
        "k": [Interval(numbers.Integral, 1, None)],
        "m": [Interval(numbers.Integral, 1, None)],
        "llm": [HasMethods("complete", "acomplete"), None],
        "weights": [Mapping, None],
        "intent_weights": [Mapping, None],
        "n_candidates": [Interval(numbers.Integral, 1, None)],
        "refine": [Options("auto", "sentence", "none")],
        "refine_weight": [Interval(numbers.Real, 0, 1)],
        "max_paraphrases": [Interval(numbers.Integral, 0, None)],
        "max_keywords": [Interval(numbers.Integral, 1, None)],
        "on_llm_error": [Options("fallback", "raise")],
    }

    def __init__(
        self,
        index: CorpusReader | ProvidesReader,
        *,
        k: int = 10,
        m: int = 20,
        llm: LLM | None = None,
        extended: ExtendedChannel | str | None = "auto",
        graph: KnowledgeGraph | None = None,
        weights: Mapping[str, float] | None = None,
        intent_weights: Mapping[str, tuple[float, float, float]] | None = None,
        n_candidates: int = 50,
        refine: str = "auto",
        refine_weight: float = 0.5,
        max_paraphrases: int = 3,
        max_keywords: int = 8,
        on_llm_error: str = "fallback",
    ) -> None:
        p = self._check_params(locals())
        k, m, n_candidates, refine_weight = p["k"], p["m"], p["n_candidates"], p["refine_weight"]
        max_paraphrases, max_keywords = p["max_paraphrases"], p["max_keywords"]
        for intent in intent_weights or {}:
            if intent not in INTENTS:
                raise ConfigError(f"unknown intent {intent!r}; intents are {INTENTS}")
        super().__init__(index, k=k)
        self._search = need(self.index, CorpusSearch, by="IntentAwareRetriever")
        self.m = m
        self.llm = llm
        self.weights = (
            normalise_weights({c: weights.get(c, 0.0) for c in CHANNELS}) if weights else None
        )
        self.intent_weights = dict(intent_weights) if intent_weights else None
        self.n_candidates = n_candidates
        self.refine = refine
        self.refine_weight = refine_weight
        self.max_paraphrases = max_paraphrases
        self.max_keywords = max_keywords
        self.on_llm_error = on_llm_error
        self.graph = graph
        self.extended = self._extended_channel(extended, graph)
        self.follows_graph = self.extended is not None  # the walk's graph at the index's version

    def _extended_channel(self, extended: Any, graph: Any) -> Any:
        if extended == "auto":  # an index that serves from a database may have no PPR
            extended = default_extended(self.index, graph)
        if extended == "ppr":
            from semrag.retrieval.ppr import PPRRetriever

            return PPRRetriever(self.index, k=self.m)
        if extended == "sketch":
            if graph is None:
                raise ConfigError("extended='sketch' needs graph=<KnowledgeGraph>")
            from semrag.retrieval.sketch import SketchRetriever

            return SketchRetriever(self.index, graph, k=self.m)
        if extended == "ssg":
            if need(self.index, SimilarityGraphReads, by="extended='ssg'").ssg_config is None:
                raise ConfigError(
                    "extended='ssg' walks the semantic similarity graph, which this index does "
                    "not keep: build it with SemanticIndex(ssg=True) or call index.enable('ssg')"
                )
            from semrag.retrieval.ssg import SSGRetriever

            return SSGRetriever(self.index, strategy="query_traversal", k=self.m)
        if extended is not None and not isinstance(extended, ExtendedChannel):
            raise ConfigError(
                "extended must be 'auto', 'ppr', 'ssg', 'sketch', None or a retriever with "
                "retrieve/aretrieve"
            )
        return extended

    # -- planning -----------------------------------------------------------------------------
    def plan(self, query: str) -> QueryPlan:
        """The sub-queries, intent and weights for ``query`` (LLM when given).

        With ``on_llm_error="fallback"`` any failure of the LLM step (an invalid reply or
        an exception from the model) falls back to the rules, and the plan's ``note``
        says why; with ``"raise"`` it propagates.
        """
        return self._planned(query, self._asked(check_query("IntentAwareRetriever", query)))

    async def aplan(self, query: str) -> QueryPlan:
        """Async twin of :meth:`plan`."""
        query = check_query("IntentAwareRetriever", query)
        return self._planned(query, await self._aasked(query))

    def ask(self, query: str) -> Call | None:
        """The LLM's plan of the query (JSON); ``None`` without an LLM (the rules plan)."""
        if self.llm is None:
            return None
        on_error = {"on_error": self.on_llm_error}
        return Call(ask_json, (self.llm, self._prompt(query), PLAN_SCHEMA), on_error, aask_json)

    def _prompt(self, query: str) -> str:
        return PLAN_PROMPT.format(query=query, n_para=self.max_paraphrases, n_kw=self.max_keywords)

    def _planned(self, query: str, reply: object = None) -> QueryPlan:
        """The LLM's plan (its ``reply``), else the rules' (noting why the LLM step failed)."""
        if reply is None:
            return self._finish(
                plan_query(query, weights=self.intent_weights, max_sparse=self.max_keywords)
            )
        if not isinstance(reply, LLMFailed):
            return self._finish(self._from_llm(query, cast(Mapping[str, Any], reply)))
        logger.warning("IAR: %s; using the rules instead", reply.reason)
        plan = plan_query(query, weights=self.intent_weights, max_sparse=self.max_keywords)
        return self._finish(replace(plan, note=f"{reply.reason}; rules used"))

    def _from_llm(self, query: str, reply: Mapping[str, Any]) -> QueryPlan:
        source, note = "llm", ""
        w: Mapping[str, float]
        try:
            w = normalise_weights({c: reply["weights"][c] for c in CHANNELS})
        except ConfigError as exc:  # all zero or NaN: the reply says nothing usable
            if self.on_llm_error == "raise":
                raise LLMOutputError(f"the LLM's channel weights are unusable: {exc}") from exc
            w = plan_query(query, weights=self.intent_weights, max_sparse=self.max_keywords).weights
            source = "llm+rule_weights"
            note = f"LLM weights unusable ({exc}); the rules' weights used"
        dense = [query] + [p for p in reply["paraphrases"] if p.strip()][: self.max_paraphrases]
        sparse = [s for s in reply["keywords"] if s.strip()][: self.max_keywords]
        intent = str(reply["intent"]) if reply.get("intent") in INTENTS else "general"
        return QueryPlan(
            query,
            tuple(dict.fromkeys(dense)),
            tuple(dict.fromkeys(sparse or [query])),
            intent,
            w,
            ("llm",),
            source,
            note,
        )

    def _finish(self, plan: QueryPlan) -> QueryPlan:
        w = dict(self.weights) if self.weights else dict(plan.weights)
        source = "fixed" if self.weights else plan.source
        if self.extended is None and w.get("extended", 0.0) > 0 and (w["dense"] + w["sparse"]) > 0:
            w["extended"] = 0.0
        return replace(plan, weights=normalise_weights(w), source=source)

    # -- retrieval ------------------------------------------------------------------------------
    def steps(
        self, query: str, q: npt.NDArray[np.float32], k: int, asked: object = None
    ) -> Generator[Call | Together, Any, list[ScoredChunk]]:
        """The top ``k`` chunks for ``query``, fused with the weights of its plan.

        ``asked``: the LLM's reply to :meth:`ask`. Over a database (an index with async
        reads, e.g. :class:`~semrag.neo4j.Neo4jIndex`) the extended channel's walk runs
        beside the embedding of the plan's queries; in process it runs after the dense
        channel, whose search it reuses.
        """
        plan, index = self._planned(query, asked), self.index
        embedder = index.embedder
        embed = Call(embedder.embed, (list(plan.dense_queries),), twin=embedder.aembed)
        if self._use_extended(plan) and offers(index, AsyncReads):
            walk = self.extended
            ext_call = Call(walk.retrieve, (plan.query,), {"k": self.m}, walk.aretrieve)
            vectors, ext = yield Together((embed, ext_call))
        else:
            vectors, ext = (yield embed), (None if self._use_extended(plan) else [])
        return (yield from self._fuse_steps(plan, vectors, ext, k))

    def _use_extended(self, plan: QueryPlan) -> bool:
        return self.extended is not None and plan.weights.get("extended", 0.0) > 0

    def _fuse_steps(
        self,
        plan: QueryPlan,
        vectors: npt.NDArray[np.float32],
        ext: Sequence[ScoredChunk] | None,
        k: int,
    ) -> Generator[Call | Together, Any, list[ScoredChunk]]:
        """The fusion, asking for the index reads that may be round trips (:class:`Call`).

        ``ext``: the extended channel's hits, or ``None`` to ask for them (after the dense
        and sparse searches, so a walk seeded by the same dense query reuses that search).
        Over a database (:class:`~semrag.index.reader.AsyncReads`) the walk runs first
        instead: the reader keeps its dense ranking for the read, and the dense channel's
        search of the same vector fetches that ranking's head by id; with the walk's hits
        known, the chunks they cover are asked :class:`Together` with the channels.
        """
        index = self.index
        cands = yield from self._candidates(plan, vectors, ext)
        ids = cands.ids
        if not ids:  # an empty index
            return []
        dense = (index.vectors_of(ids) @ vectors.T).max(axis=1).astype(np.float64)
        sparse = np.zeros(len(ids))
        if plan.sparse_queries:
            many = twin(index, AsyncReads, lambda r: r.asparse_scores_many)
            scored = self._search.sparse_scores_many
            scores = yield Call(scored, (plan.sparse_queries, ids), twin=many)
            sparse = np.maximum(sparse, scores.max(0))
        extended = np.array([cands.extended.get(i, np.nan) for i in ids])
        raw = {"dense": dense, "sparse": sparse, "extended": extended}
        methods = self.normalisation
        norm = {c: normalise_scores(raw[c], methods[c]) for c in CHANNELS}
        fused = fuse_weighted(raw, plan.weights, methods=methods)
        top = np.argsort(-fused, kind="stable")[: self.m]
        final = fused[top]
        sentence = np.full(len(top), np.nan)
        refine = self.refine
        if refine == "auto":
            refine = "none" if plan.intent == "multi_hop" else "sentence"
        if refine == "sentence" and len(top) > 1:
            sentence = yield from self._sentence_scores([ids[i] for i in top], vectors[0])
            final = final + self.refine_weight * normalise_scores(sentence)
        order = np.argsort(-final, kind="stable")[:k]
        meta = plan.to_metadata()
        hits = []
        chunks = index.chunks_of([ids[top[j]] for j in order])
        for rank, j in enumerate(order):
            i = top[j]
            scores = {c: float(norm[c][i]) for c in CHANNELS}
            scores["fused"] = float(fused[i])
            if not np.isnan(sentence[j]):
                scores["sentence"] = float(sentence[j])
            prov = {
                "channel": "iar",
                **meta,
                "rank": rank,
                "fused_rank": int(j),
                "raw": {c: (None if np.isnan(raw[c][i]) else float(raw[c][i])) for c in CHANNELS},
            }
            hits.append(ScoredChunk(chunks[rank], float(final[j]), scores, (prov,)))
        return hits

    def _candidates(
        self,
        plan: QueryPlan,
        vectors: npt.NDArray[np.float32],
        ext: Sequence[ScoredChunk] | None,
    ) -> Generator[Call | Together, Any, _Candidates]:
        index = self.index
        channels = Call(
            self._search.search_channels,
            (vectors, list(plan.sparse_queries), self.n_candidates),
            twin=twin(index, AsyncReads, lambda r: r.asearch_channels),
        )
        if ext is None:  # in process: the walk after the channels, whose search it may reuse
            found, sparse_hits = yield channels
            walk = self.extended
            ext = yield Call(walk.retrieve, (plan.query,), {"k": self.m}, walk.aretrieve)
            spans = _spans(ext)
            covered = (yield overlapping_read(index, spans)) if spans else []
        elif spans := _spans(ext):  # the walk's hits known: their chunks and the channels at once
            (found, sparse_hits), covered = yield Together(
                (channels, overlapping_read(index, spans))
            )
        else:
            (found, sparse_hits), covered = (yield channels), []
        pool: dict[int, None] = {}
        for row in found:
            pool.update((int(i), None) for i in row if i >= 0)
        for hits in sparse_hits:
            pool.update((i, None) for i, _ in hits)
        cands = _Candidates()
        # the extended channel counts by its order, not its hits' scores: a walk's order is
        # its ranking, while its hits' scores are their relevance (the cosine with the query)
        for rank, ids in enumerate(covered):  # one read for every hit's chunks
            for i in ids:
                cands.extended[i] = max(cands.extended.get(i, -np.inf), -float(rank))
                pool[i] = None
        cands.ids = list(pool)
        return cands

    def _sentence_scores(
        self, ids: list[int], q: npt.NDArray[np.float32]
    ) -> Generator[Call, Any, npt.NDArray[np.float64]]:
        out = np.empty(len(ids))
        index = self.index
        of = twin(index, AsyncReads, lambda r: r.asentence_vectors_of)
        for j, vecs in enumerate((yield Call(index.sentence_vectors_of, (ids,), twin=of))):
            out[j] = float((vecs @ q).max()) if len(vecs) else np.nan
        return out


def _spans(hits: Sequence[ScoredChunk]) -> list[tuple[str, int, int]]:
    """Where each hit's chunk lies: ``(doc_id, start, end)``."""
    return [(h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in hits]
