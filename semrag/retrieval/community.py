"""SemRAG community search over a knowledge graph: local (eq. 4) and global (eq. 5).

* ``strategy="local"``: entities ``v`` whose name is similar to the query (``sim(v, Q) >
  tau_e``, the ``max_entities`` best), then the chunks ``g`` that mention them and are
  similar to them (``sim(g, v) > tau_d``); chunks are ranked by ``sim(g, Q) + sim(v, Q)``
  and cut at ``k`` items or ``window`` tokens (the paper's window ``L``).
* ``strategy="global"``: community reports ranked by ``relevance + centrality_weight * rank``
  (relevance = similarity of the query to the report's title and summary; rank = the
  community's PageRank share), the top ``top_communities``; then their *points*: the
  sentences of the chunks that mention their members (each community's ``max_chunks``
  chunks that mention the most of its members, so a query's cost does not grow with a
  community of thousands of entities), ranked by similarity to the query; the top ``k``
  are returned as sentence-sized chunks with exact offsets.

Every result's provenance names the entities (local) or the community and its report
(global) that led to it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np

from semrag._rwlock import ProvidesReader, as_reader
from semrag._steps import Call, call, drive, twin
from semrag._validation import (
    INT,
    REAL,
    Interval,
    Options,
    RenamedAttribute,
    offers,
    renamed,
)
from semrag._versioned import Versioned
from semrag.errors import ConfigError
from semrag.graph.communities import report_text
from semrag.graph.types import AsyncGraphReads, GraphReads, ReportReads
from semrag.index.reader import (
    AsyncVersion,
    CorpusReader,
    documents_read,
    overlapping_read,
)
from semrag.postprocess.stitch import covering_sentences
from semrag.retrieval.base import IndexRetriever
from semrag.retrieval.strategies import register
from semrag.types import Chunk, ScoredChunk

if TYPE_CHECKING:
    from semrag.graph.knowledge import KnowledgeGraph
__all__ = ["CommunityRetriever"]

_ENTITY_CANDIDATES = 200
"""The fewest candidates asked of a vector index of entity names (ranked exactly here).

Measured on 2Wiki's 31k names (200 queries, the top 20 above ``tau_e``): Neo4j's HNSW
index missed 1.1% of them with 100 candidates, 0.1% with 200."""
_T = TypeVar("_T")
_Reads = Generator[Call, Any, _T]
"""Steps that yield the store and index reads they need (:class:`~semrag._steps.Call`)."""


def best_above(sims: np.ndarray, key_of: Callable[[int], str], k: int, floor: float) -> list[int]:
    """Positions of the ``k`` largest ``sims`` above ``floor``, best first.

    Ties go to the smaller ``key_of(position)``, so the input's order never decides. Only
    the positions tied with the last place or better are sorted (a partition finds
    them), never all of them.
    """
    top = np.flatnonzero(sims > floor)
    if top.size > k:
        last = np.partition(sims[top], top.size - k)[-k]
        top = top[sims[top] >= last]
    return sorted(top.tolist(), key=lambda i: (-sims[i], key_of(i)))[:k]


def _ranked(scored: dict[Any, tuple[Any, ...]], k: int | None = None) -> list[tuple[Any, Any]]:
    """``scored.items()`` best first; scores within 1e-6 of each other tie, broken by key.

    The score is each value's first item; the key is the index order.

    Two chunks of the same text score the same up to the order a backend sums in (float32
    noise near 1e-8); without the tolerance the embedded and the Neo4j-served graph could
    rank them apart.
    """
    items = sorted(scored.items(), key=lambda kv: (-kv[1][0], kv[0]))
    out: list[tuple[Any, Any]] = []
    i = 0
    while i < len(items) and (k is None or len(out) < k):
        j = i + 1
        while j < len(items) and items[i][1][0] - items[j][1][0] <= 1e-6:
            j += 1
        out += sorted(items[i:j], key=lambda kv: kv[0])
        i = j
    return out if k is None else out[:k]


@register("global", needs_graph=True, strategy="global")
@register("local", needs_graph=True, strategy="local")
class CommunityRetriever(IndexRetriever):
    """Local or global community search (SemRAG §3.2.3).

    Args:
        index: the index to read (a :class:`~semrag.index.reader.CorpusReader`).
        graph: the :class:`~semrag.graph.KnowledgeGraph` (with communities for
            ``"global"``).
        strategy: ``"local"`` or ``"global"``.

    ``kg=`` and ``mode=`` (before 0.3) still work, with a ``DeprecationWarning``, until 0.4.
        k: results returned.
        tau_e: least query-entity similarity (local).
        tau_d: least chunk-entity similarity (local).
        max_entities: entities kept (local).
        window: token budget of the results (local; ``None``: only ``k``).
        top_communities: reports kept (global).
        centrality_weight: weight of a community's rank against its relevance (global).
        level: community level searched (global; default all levels).
        max_chunks: chunks read per community (global): those mentioning the most of its
            members (ties: document order). ``None`` reads every chunk.
    """

    kg = RenamedAttribute("graph")
    mode = RenamedAttribute("strategy")
    follows_graph = True  # the index and its graph at one version

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "index": [object],
        "graph": [object],
        "strategy": [Options("local", "global")],
        "k": [Interval(INT, 1, None)],
        "tau_e": [Interval(REAL, -1, 1)],
        "tau_d": [Interval(REAL, -1, 1)],
        "max_entities": [Interval(INT, 1, None)],
        "window": [Interval(INT, 1, None), None],
        "top_communities": [Interval(INT, 1, None)],
        "centrality_weight": [Interval(REAL, 0, 1)],
        "level": [Interval(INT, 0, None), None],
        "max_chunks": [Interval(INT, 1, None), None],
    }

    def __init__(
        self,
        index: CorpusReader | ProvidesReader,
        graph: KnowledgeGraph | None = None,
        *,
        strategy: str = "local",
        k: int = 10,
        tau_e: float = 0.3,
        tau_d: float = 0.2,
        max_entities: int = 20,
        window: int | None = None,
        top_communities: int = 5,
        centrality_weight: float = 0.2,
        level: int | None = None,
        max_chunks: int | None = 64,
        **old_names: object,
    ) -> None:
        index = as_reader(index)
        given = renamed(
            "CommunityRetriever",
            old_names,
            locals(),
            {"kg": "graph", "mode": "strategy"},
            {"graph": None, "strategy": "local"},
        )
        p = self._check_params(given)
        if p["graph"] is None:
            raise ConfigError("CommunityRetriever needs graph=: the KnowledgeGraph of its index")
        k, tau_e, tau_d, max_entities = p["k"], p["tau_e"], p["tau_d"], p["max_entities"]
        window, top_communities, level = p["window"], p["top_communities"], p["level"]
        centrality_weight = p["centrality_weight"]
        super().__init__(index, k=k)
        self.graph = p["graph"]
        self.strategy = p["strategy"]
        self.tau_e = tau_e
        self.tau_d = tau_d
        self.max_entities = max_entities
        self.window = window
        self.top_communities = top_communities
        self.centrality_weight = centrality_weight
        self.level = level
        self.max_chunks = p["max_chunks"]
        # communities, their reports' vectors, ranks and ids (one version, one tuple)
        self._reports: Versioned[tuple[list[Any], np.ndarray, np.ndarray, list[str]]]
        self._reports = Versioned()  # by the graph's version
        self._points: Versioned[dict[str, list[tuple[str, int, int]]]] = Versioned()
        """Community -> its sentence runs, by the versions of the index and the graph."""

    def steps(self, query: str, q: np.ndarray, k: int) -> _Reads[list[ScoredChunk]]:
        """The search, asking for the reads that may be round trips (:class:`Call`).

        Over a Neo4j store each read is awaited by ``aretrieve`` and only the scoring runs
        in worker threads, as does the first global query after a change, which reads the
        reports (embedding them where the store keeps no vectors).
        """
        if self.strategy == "local":
            return (yield from self._local(q, k))
        return (yield from self._global(q, k))

    # -- local (eq. 4) -------------------------------------------------------------------------
    def _local(self, q: np.ndarray, k: int) -> _Reads[list[ScoredChunk]]:
        # the nearest names by a store that keeps their vectors, else every entity's
        n = max(_ENTITY_CANDIDATES, 10 * self.max_entities)
        # (only the index's best 2 * max_entities travel with their vectors, as dense search)
        keep = {"keep": 2 * self.max_entities}
        graph = self.graph
        ents, vecs = yield Call(graph.search_entities, (q, n), keep, graph.asearch_entities)
        if not ents:
            return []
        sims = vecs @ q
        order = best_above(sims, lambda i: ents[i].id, self.max_entities, self.tau_e)
        chosen = {ents[i].id: (ents[i], float(sims[i]), vecs[i]) for i in order}
        best: dict[int, tuple[float, float, list[dict[str, Any]]]] = {}
        found = yield _chunks_for(self.graph.store, list(chosen))
        spans = [(r.doc_id, r.start, r.end) for refs in found.values() for r in refs]
        overlaps = iter((yield overlapping_read(self.index, spans)))
        for eid, refs in found.items():
            ent, e_sim, e_vec = chosen[eid]
            cids = sorted({c for _ in refs for c in next(overlaps)})
            if not cids:
                continue
            cvecs = self.index.vectors_of(cids)
            for cid, g_v, g_q in zip(cids, cvecs @ e_vec, cvecs @ q, strict=True):
                if g_v <= self.tau_d:
                    continue
                score = float(g_q) + e_sim
                why = {"id": eid, "name": ent.name, "sim_query": e_sim, "sim_chunk": float(g_v)}
                old = best.get(cid)
                if old is None:
                    best[cid] = (score, float(g_q), [why])
                else:
                    best[cid] = (max(old[0], score), old[1], [*old[2], why])
        ranked = _ranked(best, k)  # each turn below keeps its chunk or stops
        out: list[ScoredChunk] = []
        tokens = 0
        chunks = self.index.chunks_of([cid for cid, _ in ranked])
        for c, (_, (score, g_q, why)) in zip(chunks, ranked, strict=True):
            if self.window is not None and out and tokens + c.token_count > self.window:
                break
            prov = {"channel": "community", "mode": "local", "entities": why}
            out.append(
                ScoredChunk(c, score, {"dense": g_q, "entity": why[0]["sim_query"]}, (prov,))
            )
            tokens += c.token_count
        return out

    # -- global (eq. 5) ------------------------------------------------------------------------
    def reports(self) -> tuple[list[Any], np.ndarray]:
        """The stored communities (of ``level``) and the vectors of their reports.

        Cached until the knowledge graph changes (keyed by its ``current_version()``, which
        sees the changes another process writes to a Neo4j store).
        """
        version = drive(_current_version(self.graph), call)
        comms, vecs, _, _ = self._report_state(version)
        return comms, vecs

    def _report_state(self, version: Any) -> tuple[list[Any], np.ndarray, np.ndarray, list[str]]:
        """Communities, their reports' vectors, ranks and ids: one version, one tuple."""
        return self._reports.get(version, self._read_reports)

    def _read_reports(self) -> tuple[list[Any], np.ndarray, np.ndarray, list[str]]:
        store = self.graph.store
        if offers(store, ReportReads):  # with their stored vectors
            comms, vecs = store.read_reports(self.level)
        else:
            comms, vecs = store.read_communities(self.level), None
        if vecs is not None and vecs.shape[1] != self.index.embedder.dim:
            raise ConfigError(
                f"the stored report vectors have dimension {vecs.shape[1]}; the index's "
                f"embedder has {self.index.embedder.dim}"
            )
        if vecs is None:
            vecs = (
                self.index.embedder.embed([report_text(c) for c in comms])
                if comms
                else np.zeros((0, self.index.embedder.dim), np.float32)
            )
        ranks = np.array([c.rank for c in comms], np.float64)
        return comms, np.asarray(vecs, np.float32), ranks, [c.id for c in comms]

    def _sentence_runs(
        self, comms: list[Any], version: tuple[Any, int]
    ) -> _Reads[list[list[tuple[str, int, int]]]]:
        """``(doc_id, first, end)`` sentence runs of each community's chunks that are read.

        The ``max_chunks`` chunks mentioning the most members; kept per version of the
        index and the graph (``version``), so a community's mentions are read once (the
        communities not kept yet in one round trip, their documents in one more).
        """
        points = self._points.get(version, dict)
        todo = [c for c in comms if c.id not in points]
        if todo:
            members = sorted({e for c in todo for e in c.entity_ids})
            refs = yield _chunks_for(self.graph.store, members)
            picked: dict[str, list[tuple[str, int, int]]] = {}
            for comm in todo:
                count: dict[tuple[str, int, int], int] = {}
                for e in comm.entity_ids:
                    for r in {(r.doc_id, r.start, r.end) for r in refs.get(e, ())}:
                        count[r] = count.get(r, 0) + 1
                picked[comm.id] = sorted(count, key=lambda c: (-count[c], c))[: self.max_chunks]
            docs = sorted({d for chunks in picked.values() for d, _, _ in chunks})
            records = yield documents_read(self.index, docs)
            for comm in todo:
                found = []
                for doc_id, start, end in sorted(picked[comm.id]):
                    if doc_id not in records:  # the graph still mentions a document the index lost
                        continue
                    spans = records[doc_id].sentences
                    found.append((doc_id, *covering_sentences(spans, start, end)))
                points[comm.id] = found
        return [points[c.id] for c in comms]

    def _global(self, q: np.ndarray, k: int) -> _Reads[list[ScoredChunk]]:
        graph_version = yield from _current_version(self.graph)
        comms, vecs, ranks, ids = self._report_state(graph_version)
        if not comms:
            if self.graph.communities_built:
                return []  # built over a graph with no entities yet: nothing to find
            raise ConfigError(
                "global search needs communities: build the graph with communities=True"
            )
        relevance = vecs @ q
        score = relevance + self.centrality_weight * ranks
        best = best_above(score, ids.__getitem__, self.top_communities, -np.inf)
        top = [comms[i] for i in best]
        rel = {comms[i].id: float(relevance[i]) for i in best}
        points: dict[tuple[str, int], tuple[float, Any]] = {}
        index_version = yield from _current_version(self.index)
        runs = yield from self._sentence_runs(top, (graph_version, index_version))
        records = yield documents_read(self.index, sorted({d for run in runs for d, _, _ in run}))
        for comm, found in zip(top, runs, strict=True):
            for doc_id, a, b in found:
                sims = records[doc_id].sentence_vectors[a:b] @ q
                for j, s in enumerate(sims, start=a):
                    key = (doc_id, j)
                    if key not in points or points[key][0] < s:
                        points[key] = (float(s), comm)
        ranked = _ranked(points, k)
        out = []
        for (doc_id, j), (s, comm) in ranked:
            record = records[doc_id]
            span = record.sentences[j]
            text = span.of(record.doc.text)
            chunk = Chunk(
                doc_id,
                span.start,
                span.end,
                text,
                int(self.index.tokenizer.count([text])[0]),
                index=j,
                sentence_start=j,
                sentence_end=j + 1,
                metadata=record.doc.metadata,
            )
            prov = {
                "channel": "community",
                "mode": "global",
                "community": comm.id,
                "level": comm.level,
                "title": comm.title,
                "summary": comm.summary,
                "relevance": rel[comm.id],
                "rank": comm.rank,
            }
            if self.graph.communities_stale:
                prov["note"] = (
                    "the graph changed since these communities were built (LLM reports are "
                    "not rewritten per change): call graph.refresh_communities()"
                )
            out.append(ScoredChunk(chunk, s, {"dense": s, "community": rel[comm.id]}, (prov,)))
        return out


def _current_version(source: Any) -> _Reads[Any]:
    """The version of an index or a graph (a cache key).

    Both offer ``current_version()``: a round trip for one served from a database.
    """
    version = twin(source, AsyncVersion, lambda s: s.acurrent_version)
    return (yield Call(source.current_version, twin=version))


def _chunks_for(store: GraphReads, entity_ids: list[str]) -> Call:
    """The read of the chunks mentioning each entity (awaited on a database's store)."""
    return Call(
        store.chunks_for, (entity_ids,), twin=twin(store, AsyncGraphReads, lambda s: s.achunks_for)
    )
