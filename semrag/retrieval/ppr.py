"""Multi-hop retrieval by personalized PageRank over passages and the entities they mention.

The strategy follows HippoRAG / HippoRAG 2 (Gutiérrez et al., 2024, 2025) without an LLM
by default:

* **Graph** (built once per index version): one node per chunk of the index (a *passage*)
  and one per entity phrase; a passage links to every phrase it mentions (capitalised runs
  and quoted titles from :func:`semrag.text.phrases.entities`, plus the document's title:
  its ``title`` metadata or a title line at its start). Phrases whose name vectors are
  close (cosine >= ``synonym_threshold``, at most ``synonym_k`` per phrase, found with
  FAISS) are linked by *synonym* edges, so "Rohmer" reaches "Éric Rohmer". With
  ``graph=`` (a :class:`~semrag.graph.KnowledgeGraph`, e.g. built with an LLM extractor)
  its entities, mentions and relations are the phrase layer instead.
* **Seeds**: the query's entities, each linked to its phrase node by exact name or, failing
  that, to the nearest phrase names (cosine >= ``link_threshold``), weighted by their
  specificity (1 / number of passages that mention them, as in HippoRAG); plus every
  dense hit of the query, weighted by its normalised similarity times
  ``passage_weight`` (HippoRAG 2's passage seeds). With ``llm=`` an LLM names the query's
  entities (JSON), with the rules as the fallback.
* **Walk**: personalized PageRank with restart probability ``1 - damping`` over the
  weighted, undirected graph; passages are ranked by their PageRank mass.

Every result is a distinct chunk of the index (chunks tile their documents, so no
sentence is repeated), and its provenance says how the walk reached it: ``hop`` 0 for a
passage the query found itself (it names a query entity, ``link="query_entity"``, or it is
among the top ``k`` dense hits, ``link="dense"``), ``hop`` 1 for a passage reached through
an entity (``via``) from a higher-ranked passage (``from``).
"""

from __future__ import annotations

import asyncio
import logging
import numbers
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from semrag._rwlock import reading
from semrag._validation import (
    HasMethods,
    Interval,
    Options,
    check_k,
    check_query,
    validate_params,
)
from semrag.llm import LLM, acomplete_json, complete_json, llm_failure
from semrag.text.phrases import entities as find_entities
from semrag.types import Chunk, ScoredChunk

__all__ = ["PassageGraph", "PPRRetriever", "personalized_pagerank"]

logger = logging.getLogger(__name__)

Floats = npt.NDArray[np.float32]

_ENTITY_SCHEMA = {
    "type": "object",
    "required": ["entities"],
    "properties": {"entities": {"type": "array", "items": {"type": "string"}}},
}

_NER_PROMPT = """Extract the named entities (people, places, organisations, works, dates, \
events) that the question mentions, exactly as written.
Respond ONLY with a JSON object: {{"entities": ["...", "..."]}}
Question: {query}
JSON:"""


def personalized_pagerank(
    transition: Any,
    seeds: npt.NDArray[np.float64],
    damping: float,
    *,
    tol: float = 1e-6,
    max_iter: int = 200,
) -> npt.NDArray[np.float64]:
    """Personalized PageRank by power iteration.

    Args:
        transition: a sparse column-stochastic matrix ``T`` (``T[i, j]`` = probability of
            stepping from ``j`` to ``i``); columns of nodes without edges may be zero.
        seeds: the personalization (restart) distribution, non-negative, summing to 1.
        damping: probability of following an edge at each step (the rest restarts).
        tol: stop when the L1 change of one step falls below this.
        max_iter: stop after this many steps.

    Returns:
        The stationary scores; mass lost at nodes without edges restarts at the seeds, so
        they sum to 1.

    Example:
        >>> import scipy.sparse as sp
        >>> t = sp.csc_matrix(np.array([[0.0, 1.0], [1.0, 0.0]]))
        >>> personalized_pagerank(t, np.array([1.0, 0.0]), 0.5).round(3).tolist()
        [0.667, 0.333]
    """
    p = seeds.copy()
    for _ in range(max_iter):
        step = damping * (transition @ p)
        nxt = step + (1.0 - step.sum()) * seeds
        if np.abs(nxt - p).sum() < tol:
            return nxt
        p = nxt
    return p


@dataclass(frozen=True, slots=True)
class PassageGraph:
    """Passages (chunks) and entity phrases of one index version, as one sparse graph.

    Nodes ``0 .. n_passages - 1`` are passages, the rest phrases.
    """

    version: int
    """The index version the graph was built from."""
    chunk_ids: npt.NDArray[np.int64]
    """The index's chunk id of each passage node."""
    chunks: list[Chunk]
    """The chunk of each passage node (of this version: hits never look up a later one)."""
    names: list[str]
    """Display name of each phrase node (node ``n_passages + i``)."""
    keys: dict[str, int]
    """Lower-cased name -> phrase number."""
    passage_phrases: list[npt.NDArray[np.int64]]
    """Phrase numbers each passage mentions."""
    df: npt.NDArray[np.float64]
    """Passages mentioning each phrase (at least 1)."""
    transition: Any
    """Column-stochastic transition matrix over all nodes (scipy CSR, for fast products)."""
    node_of: dict[int, int]
    """Chunk id -> passage node."""
    phrase_vectors: Floats
    """Unit vectors of the phrase names (rows align with :attr:`names`)."""
    phrase_index: Any
    """FAISS inner-product index over :attr:`phrase_vectors`."""
    synonym_edges: int
    """How many synonym edges were added."""

    @property
    def n_passages(self) -> int:
        """Number of passage nodes."""
        return len(self.chunk_ids)


def _key(name: str) -> str:
    return " ".join(name.lower().split())


def _title_of(doc: Any) -> str:
    title = doc.metadata.get("title") if isinstance(doc.metadata, dict) else None
    if isinstance(title, str) and title.strip():
        return " ".join(title.split())
    head = doc.text.lstrip()
    first = head.split("\n", 1)[0].strip()
    rest = head[len(first) :]
    if (
        first
        and rest.startswith("\n")
        and first[:1].isupper()
        and first[-1:] not in ".!?;:,"
        and len(first.split()) <= 10
    ):
        return first
    return ""


class PPRRetriever:
    r"""Multi-hop retrieval: personalized PageRank over passages and entities (HippoRAG-style).

    See the module docstring for the method.

    Args:
        index: a :class:`~semrag.index.SemanticIndex`.
        graph: an optional :class:`~semrag.graph.KnowledgeGraph` whose entities, mentions
            and relations form the phrase layer (default: phrases found by rules).
        k: results returned (distinct chunks).
        damping: probability of following an edge per step (HippoRAG: 0.5).
        passage_weight: weight of the dense passage seeds against the entity seeds
            (HippoRAG 2: 0.05).
        dense_seeds: how many dense hits seed the walk.
        link_threshold: least cosine for linking a query entity to a phrase by its vector.
        link_k: phrase nodes linked per query entity by vector.
        synonym_threshold: least cosine between two phrase names for a synonym edge.
        synonym_k: most synonym edges per phrase (0: none).
        entity_seeds: seed the walk with the query's entities (off: dense seeds only).
        titles: a document's title is a phrase of each of its passages.
        llm: optional LLM naming the query's entities (the rules are the fallback).
        on_llm_error: ``"fallback"`` (rules, noted in the provenance) or ``"raise"``.

    Example:
        >>> from semrag import Document, SemanticIndex
        >>> from semrag.testing import FakeEmbedder
        >>> index = SemanticIndex(embedder=FakeEmbedder())
        >>> index.add_documents([
        ...     Document("a", "Ada Lovelace\n\nAda Lovelace worked with Charles Babbage."),
        ...     Document("b", "Charles Babbage\n\nCharles Babbage designed engines."),
        ... ])
        >>> hits = PPRRetriever(index, k=2).retrieve("Who did Ada Lovelace work with?")
        >>> sorted(h.chunk.doc_id for h in hits)
        ['a', 'b']
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "k": [Interval(numbers.Integral, 1, None)],
        "damping": [Interval(numbers.Real, 0.0, 1.0, closed="neither")],
        "passage_weight": [Interval(numbers.Real, 0.0, None)],
        "dense_seeds": [Interval(numbers.Integral, 1, None)],
        "link_threshold": [Interval(numbers.Real, -1.0, 1.0)],
        "link_k": [Interval(numbers.Integral, 1, None)],
        "synonym_threshold": [Interval(numbers.Real, -1.0, 1.0)],
        "synonym_k": [Interval(numbers.Integral, 0, None)],
        "entity_seeds": [bool],
        "titles": [bool],
        "llm": [HasMethods("complete", "acomplete"), None],
        "on_llm_error": [Options("fallback", "raise")],
    }

    def __init__(
        self,
        index: Any,
        graph: Any = None,
        *,
        k: int = 10,
        damping: float = 0.8,
        passage_weight: float = 0.05,
        dense_seeds: int = 50,
        link_threshold: float = 0.8,
        link_k: int = 2,
        synonym_threshold: float = 0.8,
        synonym_k: int = 0,
        entity_seeds: bool = True,
        titles: bool = True,
        llm: LLM | None = None,
        on_llm_error: str = "fallback",
    ) -> None:
        p = validate_params(
            "PPRRetriever",
            self._parameter_constraints,
            {
                "k": k,
                "damping": damping,
                "passage_weight": passage_weight,
                "dense_seeds": dense_seeds,
                "link_threshold": link_threshold,
                "link_k": link_k,
                "synonym_threshold": synonym_threshold,
                "synonym_k": synonym_k,
                "entity_seeds": entity_seeds,
                "titles": titles,
                "llm": llm,
                "on_llm_error": on_llm_error,
            },
        )
        self.index = index
        self.graph = graph
        self.k = p["k"]
        self.damping = float(p["damping"])
        self.passage_weight = float(p["passage_weight"])
        self.dense_seeds = p["dense_seeds"]
        self.link_threshold = float(p["link_threshold"])
        self.link_k = p["link_k"]
        self.synonym_threshold = float(p["synonym_threshold"])
        self.synonym_k = p["synonym_k"]
        self.entity_seeds = p["entity_seeds"]
        self.titles = p["titles"]
        self.llm = llm
        self.on_llm_error = on_llm_error
        self._built: PassageGraph | None = None
        self._lock = threading.Lock()
        # Kept across versions, so a change costs the new chunks and names only: a chunk id
        # is never reused, and a name's vector never changes.
        self._chunk_phrases: dict[int, list[tuple[str, str]]] = {}
        self._name_vectors: dict[str, Floats] = {}

    # -- the graph ------------------------------------------------------------------------
    def passage_graph(self) -> PassageGraph:
        """The graph of the index's current version (built on first use after a change)."""
        # Lock order: the index's read first, then this retriever's lock (never the reverse).
        with reading(self.index), self._lock:
            built = self._built
            if built is None or built.version != self.index.version:
                built = self._build()
                self._built = built
            return built

    def _phrases_by_rules(self) -> tuple[list[int], list[list[str]], dict[str, str]]:
        chunk_ids: list[int] = []
        mentions: list[list[str]] = []
        names: dict[str, str] = {}
        seen: dict[int, list[tuple[str, str]]] = {}
        for doc_id in self.index.doc_ids:
            title = _title_of(self.index.document(doc_id)) if self.titles else ""
            for cid, chunk in zip(
                self.index.chunk_ids(doc_id), self.index.chunks(doc_id), strict=True
            ):
                found = self._chunk_phrases.get(cid)
                if found is None:
                    found = [
                        (_key(p.text), p.text)
                        for p in find_entities(chunk.text)
                        if p.kind in ("entity", "quoted")
                    ]
                seen[cid] = found
                pairs = [*found, (_key(title), title)] if title else found
                for key, name in pairs:
                    names.setdefault(key, name)
                chunk_ids.append(cid)
                mentions.append(list(dict.fromkeys(key for key, _ in pairs)))
        self._chunk_phrases = seen  # chunks of deleted documents drop out
        return chunk_ids, mentions, names

    def _phrases_from_graph(
        self,
    ) -> tuple[list[int], list[list[str]], dict[str, str], list[tuple[str, str, float]]]:
        store = self.graph.store
        ents = store.entities()
        names = {e.id: e.name for e in ents}
        by_chunk: dict[int, list[str]] = {}
        for ent_id, refs in store.chunks_for([e.id for e in ents]).items():
            for ref in refs:
                for cid in self.index.overlapping_chunks(ref.doc_id, ref.start, ref.end):
                    by_chunk.setdefault(cid, []).append(ent_id)
        chunk_ids = [c for d in self.index.doc_ids for c in self.index.chunk_ids(d)]
        mentions = [list(dict.fromkeys(by_chunk.get(c, []))) for c in chunk_ids]
        relations = [(r.source, r.target, float(r.weight)) for r in store.relations()]
        return chunk_ids, mentions, names, relations

    def _build(self) -> PassageGraph:
        import faiss
        import scipy.sparse as sp

        relations: list[tuple[str, str, float]] = []
        with reading(self.index):  # one version of the index for the whole graph
            version = self.index.version
            if self.graph is None:
                chunk_ids, mentions, names = self._phrases_by_rules()
            else:
                chunk_ids, mentions, names, relations = self._phrases_from_graph()
            chunks = [self.index.chunk(int(c)) for c in chunk_ids]
        keys = {key: i for i, key in enumerate(names)}
        n_p, n_e = len(chunk_ids), len(keys)
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        passage_phrases = []
        for node, ms in enumerate(mentions):
            ids = np.array([keys[m] for m in ms], dtype=np.int64)
            passage_phrases.append(ids)
            rows += [node] * len(ids)
            cols += (ids + n_p).tolist()
            vals += [1.0] * len(ids)
        df = np.maximum(
            np.bincount(np.concatenate([*passage_phrases, np.zeros(0, np.int64)]), minlength=n_e), 1
        ).astype(np.float64)
        for a, b, w in relations:
            if a in keys and b in keys and a != b:
                rows.append(n_p + keys[a])
                cols.append(n_p + keys[b])
                vals.append(w)
        display = list(names.values())
        vectors = self._vectors_of(display)
        phrase_index = faiss.IndexFlatIP(self.index.embedder.dim)
        if n_e:
            phrase_index.add(vectors)
        n_syn = 0
        if n_e > 1 and self.synonym_k:
            depth = min(n_e, self.synonym_k + 1)
            sims, nbrs = phrase_index.search(vectors, depth)
            for i in range(n_e):
                for s, j in zip(sims[i].tolist(), nbrs[i].tolist(), strict=True):
                    if j > i and s >= self.synonym_threshold:
                        rows.append(n_p + i)
                        cols.append(n_p + j)
                        vals.append(float(s))
                        n_syn += 1
        n = n_p + n_e
        adj = sp.coo_matrix((vals, (rows, cols)), shape=(n, n)).tocsr()
        adj = (adj + adj.T).tocsc()
        degree = np.asarray(adj.sum(axis=0)).ravel()
        inv = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
        transition = (adj @ sp.diags(inv)).tocsr()
        return PassageGraph(
            version=version,
            chunk_ids=np.asarray(chunk_ids, dtype=np.int64),
            chunks=chunks,
            names=display,
            keys=keys,
            passage_phrases=passage_phrases,
            df=df,
            transition=transition,
            node_of={c: i for i, c in enumerate(chunk_ids)},
            phrase_vectors=vectors,
            phrase_index=phrase_index,
            synonym_edges=n_syn,
        )

    def _vectors_of(self, display: list[str]) -> Floats:
        """Unit vectors of the phrase names; only names new since the last build are embedded."""
        dim = self.index.embedder.dim
        new = [n for n in dict.fromkeys(display) if n not in self._name_vectors]
        if new:
            found = np.asarray(self.index.embedder.embed(new), dtype=np.float32)
            self._name_vectors.update(zip(new, found, strict=True))
        kept = {n: self._name_vectors[n] for n in display}
        self._name_vectors = kept  # names no longer in the corpus drop out
        if not display:
            return np.zeros((0, dim), np.float32)
        return np.stack([kept[n] for n in display]).astype(np.float32)

    # -- query ----------------------------------------------------------------------------
    def _query_entities_by_rules(self, query: str) -> list[str]:
        return [p.text for p in find_entities(query) if p.kind in ("entity", "quoted")]

    def _llm_entities(self, reply: Any, query: str) -> tuple[list[str], str]:
        if isinstance(reply, dict):
            names = [n for n in reply["entities"] if isinstance(n, str) and n.strip()]
            return names, "llm"
        note = f"LLM entity extraction failed ({reply}); used the rules"
        return self._query_entities_by_rules(query), note

    def _entities_without_llm(self, query: str) -> tuple[list[str], str] | None:
        """The query's entities when no LLM is asked (seeds off, or no LLM given)."""
        if not self.entity_seeds:
            return [], "off"
        if self.llm is None:
            return self._query_entities_by_rules(query), "rules"
        return None

    def _entities(self, query: str) -> tuple[list[str], str]:
        if (found := self._entities_without_llm(query)) is not None:
            return found
        try:
            reply: Any = complete_json(
                self.llm, _NER_PROMPT.format(query=query), schema=_ENTITY_SCHEMA
            )
        except Exception as exc:  # every LLM failure takes the documented path
            if self.on_llm_error == "raise":
                raise
            reply = llm_failure(exc)
        return self._llm_entities(reply, query)

    async def _aentities(self, query: str) -> tuple[list[str], str]:
        if (found := self._entities_without_llm(query)) is not None:
            return found
        try:
            reply: Any = await acomplete_json(
                self.llm, _NER_PROMPT.format(query=query), schema=_ENTITY_SCHEMA
            )
        except Exception as exc:  # every LLM failure takes the documented path
            if self.on_llm_error == "raise":
                raise
            reply = llm_failure(exc)
        return self._llm_entities(reply, query)

    @staticmethod
    def _to_embed(g: PassageGraph, query: str, names: Sequence[str]) -> list[str]:
        """The query and the entity names with no exact phrase node (one embedding batch)."""
        return [query, *dict.fromkeys(n for n in names if _key(n) not in g.keys)]

    def _seeds(
        self, g: PassageGraph, q: Floats, names: Sequence[str], vectors: dict[str, Floats]
    ) -> tuple[npt.NDArray[np.float64], dict[int, str], dict[int, float]]:
        n = g.n_passages + len(g.names)
        seeds = np.zeros(n, dtype=np.float64)
        linked: dict[int, str] = {}
        for name in names:
            key = _key(name)
            hits: list[tuple[int, float]] = []
            if key in g.keys:
                hits = [(g.keys[key], 1.0)]
            elif len(g.names):
                vec = vectors[name]
                sims, ids = g.phrase_index.search(vec[None, :], min(self.link_k, len(g.names)))
                hits = [
                    (int(j), float(s))
                    for s, j in zip(sims[0], ids[0], strict=True)
                    if j >= 0 and s >= self.link_threshold
                ]
            for j, s in hits:
                seeds[g.n_passages + j] = max(seeds[g.n_passages + j], s / g.df[j])
                linked.setdefault(j, name)
        entity_mass = seeds.sum()
        dense: dict[int, float] = {}
        if g.n_passages:
            scores, ids = self.index.dense_search(q, min(self.dense_seeds, g.n_passages))
            node_of = g.node_of
            if len(ids):
                lo, hi = float(scores.min()), float(scores.max())
                spread = hi - lo if hi > lo else 1.0
                for s, c in zip(scores.tolist(), ids.tolist(), strict=True):
                    node = node_of.get(int(c))
                    if node is not None:
                        dense[node] = float(s)
                        norm = (s - lo) / spread if hi > lo else 1.0
                        seeds[node] += self.passage_weight * norm * (entity_mass or 1.0)
        total = seeds.sum()
        if total > 0:
            seeds /= total
        return seeds, linked, dense

    def _rank(
        self, g: PassageGraph, texts: list[str], vectors: Floats, names: list[str], how: str, k: int
    ) -> list[ScoredChunk]:
        if g.n_passages == 0:
            return []
        q = np.asarray(vectors[0], dtype=np.float32)
        by_name = dict(zip(texts[1:], np.asarray(vectors[1:], dtype=np.float32), strict=True))
        seeds, linked, dense = self._seeds(g, q, names, by_name)
        if not seeds.any():
            return []
        scores = personalized_pagerank(g.transition, seeds, self.damping)
        passage = scores[: g.n_passages]
        order = np.argsort(-passage, kind="stable")[:k]
        order = [int(i) for i in order if passage[i] > 0]
        rank_of = {node: r for r, node in enumerate(order)}
        dense_rank = {node: r for r, node in enumerate(dense)}  # dense is best first
        phrase_mass = scores[g.n_passages :]
        holders: dict[int, list[int]] = {}
        for node in order:
            for j in g.passage_phrases[node].tolist():
                holders.setdefault(j, []).append(node)
        hits = []
        for node in order:
            phrases = g.passage_phrases[node]
            seeded = [g.names[j] for j in phrases.tolist() if j in linked]
            if seeded or dense_rank.get(node, k) < k:
                trail: dict[str, Any] = {
                    "hop": 0,
                    "link": "query_entity" if seeded else "dense",
                    "entities": seeded,
                }
            else:
                via = max(phrases.tolist(), key=lambda j: phrase_mass[j], default=-1)
                src = [m for m in holders.get(via, []) if rank_of[m] < rank_of[node]]
                trail = {
                    "hop": 1,
                    "link": "entity",
                    "via": g.names[via] if via >= 0 else None,
                    "from": g.chunks[src[0]].doc_id if src else None,
                }
            chunk = g.chunks[node]
            provenance = {
                "channel": "graph",
                "strategy": "ppr",
                **trail,
                "query_entities": list(names),
                "entity_source": how,
                "index_version": g.version,
            }
            channel = {"graph": float(passage[node])}
            if node in dense:
                channel["dense"] = dense[node]
            hits.append(ScoredChunk(chunk, float(passage[node]), channel, (provenance,)))
        return hits

    def retrieve(self, query: str, *, k: int | None = None) -> list[ScoredChunk]:
        """The ``k`` chunks with the most PageRank mass for ``query``."""
        k = check_k("PPRRetriever", k, self.k)
        query = check_query("PPRRetriever", query)
        names, how = self._entities(query)
        g = self.passage_graph()
        texts = self._to_embed(g, query, names)
        return self._rank(g, texts, self.index.embedder.embed(texts), names, how, k)

    async def aretrieve(self, query: str, *, k: int | None = None) -> list[ScoredChunk]:
        """Async twin of :meth:`retrieve` (LLM awaited, CPU work in a worker thread)."""
        k = check_k("PPRRetriever", k, self.k)
        query = check_query("PPRRetriever", query)
        names, how = await self._aentities(query)
        g = await asyncio.to_thread(self.passage_graph)
        texts = self._to_embed(g, query, names)
        vectors = await self.index.embedder.aembed(texts)
        return await asyncio.to_thread(self._rank, g, texts, vectors, names, how, k)

    def __repr__(self) -> str:
        return f"PPRRetriever(k={self.k}, damping={self.damping}, graph={self.graph is not None})"
