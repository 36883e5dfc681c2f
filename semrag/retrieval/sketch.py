"""SKETCH hybrid retrieval: a knowledge graph plus vector search over small semantic chunks.

Mahalingam et al. (2024), §3.2.2:

* **Structured side.** The query's entities (an LLM's NER, or, without one, the query's
  entity phrases matched fuzzily and its key phrases matched exactly against the store's
  entity names) seed a neighbourhood of up to ``depth`` hops in the
  :class:`~semrag.graph.GraphStore`; its relations are the *facts*. The neighbours most
  tied to the query's entities (relation weight, discounted for entities mentioned
  everywhere) are *bridges*: the chunks mentioning a query entity or a bridge are
  candidates, and each bridge gets its own query, the original with its entity phrases
  replaced by the bridge's name ("When was the performer of Sexy Back born?" ->
  "When was the performer of born? Justin Timberlake"), so a second-hop passage is
  judged by what the question asks of the bridge. A chunk's graph score is the sum over
  the query entities and bridges it mentions of ``hop_decay ** hop``, capped at 1.
  An entity mentioned in more than ``max_entity_chunks`` chunks (a pronoun the extractor
  took for a name, a novel's hero in every chapter) says little about which of them
  matters and would make a query's cost grow with the corpus: it is left out of the
  structured side (no candidates, not a bridge; the result's provenance notes it).
* **Unstructured side.** Vector search over the index's chunks cut again into small
  pieces (the paper: 100 tokens with a 16-token overlap; ``split=None`` searches the
  index's own chunks).
* **Merge.** Every candidate's score is its best cosine similarity to the query or to the
  query of a bridge it mentions, plus ``graph_weight`` times its graph score, plus
  ``boost`` when both sides found it (a small piece inside a graph chunk confirms it; the
  piece is kept). Duplicates and pieces inside
  a kept item are dropped, and the list is cut at ``k`` items or ``token_budget`` tokens.

Each result's provenance says which side found it (``"structured"``, ``"unstructured"``
or ``"both"``), through which entities (with their hop), and the facts among them.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, cast

import numpy as np

from semrag._rwlock import ProvidesReader, as_reader
from semrag._steps import Call, Together, call, twin
from semrag._validation import (
    INT,
    REAL,
    HasMethods,
    Interval,
    Options,
    RenamedAttribute,
    renamed,
)
from semrag.errors import ConfigError
from semrag.graph.types import AsyncGraphReads, Entity
from semrag.index.derived import derived
from semrag.index.parts.pieces import PieceIndex, check_split
from semrag.index.reader import (
    AsyncDenseSearch,
    CorpusReader,
    DenseReads,
    HoldsRecords,
    KeptPieces,
    PieceReads,
    need,
    overlapping_read,
)
from semrag.llm import LLM, LLMFailed, aask_json, ask_json
from semrag.retrieval.base import IndexRetriever
from semrag.retrieval.strategies import register
from semrag.text.phrases import content_words, entities, key_phrases
from semrag.types import Chunk, ScoredChunk

if TYPE_CHECKING:
    from semrag.graph.knowledge import KnowledgeGraph
__all__ = ["SketchRetriever", "query_phrases"]

_T = TypeVar("_T")
_Reads = Generator[Call | Together, Any, _T]
"""Steps that yield the store and index reads they need (:class:`~semrag._steps.Call`)."""

_NER_SCHEMA = {
    "type": "object",
    "required": ["entities"],
    "properties": {"entities": {"type": "array", "items": {"type": "string"}, "maxItems": 20}},
}
_NER_PROMPT = """List the named entities (people, organisations, places, works, events,
products) and key concepts in the query, as written.
QUERY: {query}
Reply with JSON only: {{"entities": ["...", "..."]}}
Your response:"""


def query_phrases(query: str, *, max_ngram: int = 3) -> tuple[list[str], list[str]]:
    """The query's phrases to look up: entities (fuzzily) and key phrases and n-grams (exactly).

    Examples:
        >>> query_phrases("When was the performer of Sexy Back born?")[0]
        ['Sexy Back']
    """
    fuzzy = [p.text for p in entities(query) if p.kind != "number"]
    exact = [p.text for p in key_phrases(query)]
    words = content_words(query)
    for n in range(1, max_ngram + 1):
        exact += [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)]
    return list(dict.fromkeys(fuzzy)), list(dict.fromkeys(e for e in exact if e not in fuzzy))


@dataclass(slots=True)
class _Item:
    chunk: Chunk
    vector: np.ndarray
    structured: bool = False
    unstructured: bool = False
    graph: float = 0.0
    entities: dict[str, int] = field(default_factory=dict)
    piece_of: int | None = None  # index chunk id a small piece came from


_V = TypeVar("_V", covariant=True)


class _Lookup(Protocol[_V]):
    """What the merge reads of the pieces and their parents: one by id."""

    def __getitem__(self, key: int, /) -> _V: ...


class _Chunks:
    """The index's chunks by id (the pieces of ``split=None`` are the chunks)."""

    def __init__(self, index: CorpusReader) -> None:
        self.index = index

    def __getitem__(self, cid: int) -> Chunk:
        return self.index.chunks_of([cid])[0]


class _Same:
    """Every chunk is its own parent."""

    def __getitem__(self, cid: int) -> int:
        return cid


@register("sketch", needs_graph=True)
class SketchRetriever(IndexRetriever):
    """SKETCH: knowledge-graph facts and chunks merged with small-chunk vector search.

    Args:
        index: the index to read (a :class:`~semrag.index.reader.CorpusReader`).
        graph: the :class:`~semrag.graph.KnowledgeGraph` built from it (``kg=`` before
            0.3, still accepted with a ``DeprecationWarning`` until 0.4).
        k: results returned.
        depth: hops around the query's entities.
        llm: an LLM for query NER; without one, phrase matching.
        split: ``(max_tokens, overlap_tokens)`` of the small pieces searched by vector
            (the paper: ``(100, 16)``), or ``None`` to search the index's chunks.
        n_vector: pieces the unstructured side returns (default ``2 * k``).
        max_entities: query entities kept.
        max_graph_chunks: structured candidates kept (by similarity plus graph score).
        max_bridges: neighbours used as bridges (each costs one query embedding).
        max_entity_chunks: entities mentioned in more chunks than this are left out of
            the structured side (``None``: none is), so a query's cost does not grow with
            the mentions of the corpus's most common entities.
        fuzzy_matches: fuzzy matches kept per query entity without an exact match.
        hop_decay: weight of an entity ``h`` hops from a query entity: ``hop_decay ** h``.
        graph_weight: weight of the graph score against cosine similarity.
        boost: added to items both sides found.
        token_budget: stop adding results past this many tokens (``None``: only ``k``).
        max_facts: facts (relations) reported in provenance.
        on_llm_error: ``"fallback"`` (phrase matching, noted) or ``"raise"``.
    """

    kg = RenamedAttribute("graph")
    follows_graph = True  # the index and its graph at one version

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "index": [object],
        "graph": [object],
        "k": [Interval(INT, 1, None)],
        "depth": [Interval(INT, 0, None)],
        "llm": [HasMethods("complete", "acomplete"), None],
        "split": [tuple, None],
        "n_vector": [Interval(INT, 1, None), None],
        "max_entities": [Interval(INT, 1, None)],
        "max_graph_chunks": [Interval(INT, 1, None)],
        "max_bridges": [Interval(INT, 0, None)],
        "max_entity_chunks": [Interval(INT, 1, None), None],
        "fuzzy_matches": [Interval(INT, 0, None)],
        "hop_decay": [Interval(REAL, 0, 1)],
        "graph_weight": [Interval(REAL, 0, None)],
        "boost": [Interval(REAL, 0, None)],
        "token_budget": [Interval(INT, 1, None), None],
        "max_facts": [Interval(INT, 0, None)],
        "on_llm_error": [Options("fallback", "raise")],
    }

    def __init__(
        self,
        index: CorpusReader | ProvidesReader,
        graph: KnowledgeGraph | None = None,
        *,
        k: int = 10,
        depth: int = 1,
        llm: LLM | None = None,
        split: tuple[int, int] | None = (100, 16),
        n_vector: int | None = None,
        max_entities: int = 10,
        max_graph_chunks: int = 50,
        max_bridges: int = 20,
        max_entity_chunks: int | None = 1000,
        fuzzy_matches: int = 2,
        hop_decay: float = 0.5,
        graph_weight: float = 0.05,
        boost: float = 0.1,
        token_budget: int | None = None,
        max_facts: int = 20,
        on_llm_error: str = "fallback",
        **old_names: object,
    ) -> None:
        index = as_reader(index)
        p = self._check_params(
            renamed("SketchRetriever", old_names, locals(), {"kg": "graph"}, {"graph": None})
        )
        if p["graph"] is None:
            raise ConfigError("SketchRetriever needs graph=: the KnowledgeGraph of its index")
        if split is not None:
            split = check_split("SketchRetriever", split)
        super().__init__(index, k=p["k"])
        self.graph = p["graph"]
        self.llm = llm
        self.split = split
        self.depth, self.n_vector = p["depth"], p["n_vector"]
        self.max_entities, self.max_graph_chunks = p["max_entities"], p["max_graph_chunks"]
        self.max_bridges, self.max_entity_chunks = p["max_bridges"], p["max_entity_chunks"]
        self.fuzzy_matches, self.hop_decay = p["fuzzy_matches"], p["hop_decay"]
        self.graph_weight, self.boost = p["graph_weight"], p["boost"]
        self.token_budget, self.max_facts = p["token_budget"], p["max_facts"]
        self.on_llm_error = on_llm_error
        self._piece_reads = need(index, PieceReads, by="SketchRetriever")
        if split is not None and self._kept_pieces() is None:
            need(index, HoldsRecords, by="SketchRetriever", why=self._no_pieces())  # say so now

    def _no_pieces(self) -> str:
        return (
            f"it keeps no pieces of split {self.split}: search its chunks with "
            "SketchRetriever(..., split=None)"
        )

    def _kept_pieces(self) -> KeptPieces | None:
        """The reader's pieces when it keeps them with this retriever's split, or ``None``."""
        kept = self._piece_reads.piece_index
        return kept if kept is not None and kept.split == self.split else None

    # -- the small pieces ------------------------------------------------------------------------
    def pieces(self) -> tuple[_Lookup[Chunk], _Lookup[int], DenseReads]:
        """The small pieces searched by vector, the index chunk each came from, their index.

        Pieces and parents are keyed by the ids the dense index returns. They are the
        index's own (``SemanticIndex(pieces=split)`` or ``index.enable("pieces",
        split=split)`` with this split: made when each change was indexed), or the
        index's chunks (``split=None``), or else derived from the index's records for
        every retriever over it (:mod:`semrag.index.derived`): on first use after a
        change, the pieces of removed or replaced documents leave and the new documents
        are split and embedded (:meth:`PieceIndex.sync`). Read them under
        ``index.read()`` to keep one version.
        """
        index, pieces = self.index, self._piece_reads
        if self.split is None:
            return _Chunks(index), _Same(), pieces.dense
        kept = self._kept_pieces()
        if kept is None:  # derived from the records for every retriever over the index
            split, embedder = self.split, index.embedder
            kept = derived(
                index,
                ("pieces", split),
                lambda records: PieceIndex(split, index.tokenizer, embedder, records.dense_kind),
                by="SketchRetriever",
                why=self._no_pieces(),
            )
        return kept.pieces, kept.parents, kept.dense

    # -- query entities --------------------------------------------------------------------------
    def query_entities(self, query: str) -> tuple[list[Entity], str]:
        """The store's entities the query names, and a note (LLM fallback) or ``""``."""
        fuzzy, exact, note = self._names(query, self._asked(query))
        return self._entities(fuzzy, exact), note

    async def aquery_entities(self, query: str) -> tuple[list[Entity], str]:
        """Async twin of :meth:`query_entities`."""
        fuzzy, exact, note = self._names(query, await self._aasked(query))
        return await asyncio.to_thread(self._entities, fuzzy, exact), note

    def _entities(self, fuzzy: Sequence[str], exact: Sequence[str]) -> list[Entity]:
        return self.graph.store.get_entities(self._match(fuzzy, exact))

    def ask(self, query: str) -> Call | None:
        """The LLM's naming of the query's entities (JSON); ``None`` without an LLM."""
        if self.llm is None:
            return None
        prompt, on_error = _NER_PROMPT.format(query=query), {"on_error": self.on_llm_error}
        return Call(ask_json, (self.llm, prompt, _NER_SCHEMA), on_error, aask_json)

    @staticmethod
    def _names(query: str, reply: object = None) -> tuple[list[str], list[str], str]:
        """The query's entity phrases, ``(fuzzy, exact, note)``: the LLM's, else the rules'."""
        if reply is None:
            return *query_phrases(query), ""
        if isinstance(reply, LLMFailed):
            return *query_phrases(query), f"NER: {reply.reason}; phrases used"
        return list(cast(Mapping[str, list[str]], reply)["entities"]), [], ""

    def _match(self, fuzzy: Sequence[str], exact: Sequence[str]) -> list[str]:
        """Each entity phrase's exact match (else its best fuzzy ones), then n-gram matches."""
        return self._seeds(call(self._lookup(fuzzy, exact)), len(fuzzy))

    def _lookup(self, fuzzy: Sequence[str], exact: Sequence[str]) -> Call:
        """One store lookup for every phrase (one round trip on a server)."""
        limits = [self.fuzzy_matches] * len(fuzzy) + [0] * len(exact)
        store = self.graph.store
        found = twin(store, AsyncGraphReads, lambda s: s.alookup)
        return Call(store.lookup, ([*fuzzy, *exact],), {"fuzzy_limit": limits}, found)

    def _seeds(self, per: Sequence[Sequence[str]], fuzzy: int) -> list[str]:
        """The query's entities from the lookup of ``fuzzy`` phrases, then n-grams (``per``)."""
        found = dict.fromkeys(e for ids in per[:fuzzy] for e in ids)
        if len(found) < self.max_entities:
            ngrams = sorted({e for ids in per[fuzzy:] for e in ids})
            found.update(dict.fromkeys(e for e in ngrams[: self.max_entities] if e not in found))
        return list(found)[: self.max_entities]

    # -- retrieval ---------------------------------------------------------------------------------
    def steps(
        self, query: str, q: np.ndarray, k: int, asked: object = None
    ) -> _Reads[list[ScoredChunk]]:
        """The merge of the top ``k`` items, asking for the reads that may be round trips.

        ``asked``: the LLM's reply to :meth:`ask`. On an index with async reads (e.g.
        :class:`~semrag.neo4j.Neo4jIndex`) each lookup, search and expansion is awaited
        by ``aretrieve`` and only the scoring runs in worker threads.
        """
        fuzzy, exact, note = self._names(query, asked)
        index = self.index
        pieces, parents, dense = self.pieces()
        # the lookup and the vector search at once (one round trip on one database)
        near = twin(dense, AsyncDenseSearch, lambda d: d.asearch)
        search = Call(dense.search, (q, self.n_vector or 2 * k), twin=near)
        per, (_, ids) = yield Together((self._lookup(fuzzy, exact), search))
        seed_ids = self._seeds(per, len(fuzzy))
        items: dict[tuple[str, int, int], _Item] = {}
        # unstructured side: -1 slots mean an empty index
        found = [int(i) for i in ids[0] if i >= 0]
        for i, vec in zip(found, dense.vectors_of(found), strict=True):
            c = pieces[i]
            items[(c.doc_id, c.start, c.end)] = _Item(
                c, vec, unstructured=True, piece_of=parents[i]
            )
        # structured side
        store = self.graph.store
        sub, refs = yield Call(
            store.expand,
            (seed_ids,),
            {"depth": self.depth, "max_chunks": self.max_entity_chunks},
            twin(store, AsyncGraphReads, lambda s: s.aexpand),
        )
        by_id = {e.id: e for e in sub.entities}
        seeds = [by_id[e] for e in seed_ids if e in by_id]
        crowded = [e.name for e in sub.entities if e.id not in refs]  # over max_entity_chunks
        if crowded:
            shown = ", ".join(sorted(crowded)[:5]) + (", ..." if len(crowded) > 5 else "")
            left = f"entities in over {self.max_entity_chunks} chunks left out: {shown}"
            note = f"{note}; {left}" if note else left
        facts = sorted(sub.relations, key=lambda r: -r.weight)[: self.max_facts]
        name_of = {e.id: e.name for e in sub.entities}
        bridges = self._bridges(sub, refs)
        bridge_q = self._bridge_queries(query, seeds, [name_of[b] for b in bridges])
        bridge_vec = dict(zip(bridges, bridge_q, strict=True))
        mentions = [(eid, ref) for eid, chunk_refs in refs.items() for ref in chunk_refs]
        # Only chunks that mention a seed or a bridge can score: only those are looked up.
        # Then every mention in them is placed, as if all mentions had been looked up.
        scoring = [
            (ref.doc_id, ref.start, ref.end)
            for eid, ref in mentions
            if sub.hops[eid] == 0 or eid in bridge_vec
        ]
        found = yield overlapping_read(index, scoring)
        by_doc: dict[str, list[tuple[int, int, int]]] = {}  # (start, id, end), in doc order
        met = sorted({c for cids in found for c in cids})
        for cid, chunk in zip(met, index.chunks_of(met), strict=True):
            by_doc.setdefault(chunk.doc_id, []).append((chunk.start, cid, chunk.end))
        for group in by_doc.values():
            group.sort()
        per_chunk: dict[int, dict[str, int]] = {}
        for eid, ref in mentions:
            for start, cid, end in by_doc.get(ref.doc_id, ()):
                if start < ref.end and end > ref.start:
                    per_chunk.setdefault(cid, {})[eid] = sub.hops[eid]
        graph_score = {
            cid: min(
                1.0, sum(self.hop_decay**h for e, h in ents.items() if h == 0 or e in bridge_vec)
            )
            for cid, ents in per_chunk.items()
        }
        cids = [c for c, g in graph_score.items() if g > 0]
        if cids:
            vecs, chunks = index.vectors_of(cids), index.chunks_of(cids)
            best = [self._sim(vecs[j], q, per_chunk[c], bridge_vec) for j, c in enumerate(cids)]
            order = sorted(
                range(len(cids)), key=lambda j: -best[j] - self.graph_weight * graph_score[cids[j]]
            )
            confirmed = {it.piece_of: key for key, it in items.items()}
            for j in order[: self.max_graph_chunks]:
                cid = cids[j]
                if cid in confirmed:  # a small piece of this chunk was found by vector
                    it = items[confirmed[cid]]
                    it.structured, it.graph, it.entities = True, graph_score[cid], per_chunk[cid]
                    continue
                c = chunks[j]
                items[(c.doc_id, c.start, c.end)] = _Item(
                    c, vecs[j], structured=True, graph=graph_score[cid], entities=per_chunk[cid]
                )
        return self._ranked(q, list(items.values()), name_of, facts, seeds, bridge_vec, note, k)

    def _bridges(self, sub: Any, refs: Mapping[str, list[Any]]) -> list[str]:
        """Neighbours most tied to the query's entities, rare entities first among equals."""
        strength: dict[str, float] = {}
        for r in sub.relations:
            a, b = sub.hops.get(r.source, 99), sub.hops.get(r.target, 99)
            if a == b:
                continue
            far, near = (r.target, a) if b > a else (r.source, b)
            if far not in refs:  # mentioned in too many chunks (max_entity_chunks)
                continue
            strength[far] = strength.get(far, 0.0) + r.weight * self.hop_decay**near
        score = {e: w / math.log(2 + len(refs.get(e, ()))) for e, w in strength.items()}
        return sorted(score, key=lambda e: (-score[e], e))[: self.max_bridges]

    def _bridge_queries(
        self, query: str, seeds: list[Entity], names: list[str]
    ) -> list[np.ndarray]:
        """The query with its entity phrases replaced by each bridge entity's name."""
        if not names:
            return []
        rest = query
        for phrase in query_phrases(query)[0]:
            rest = rest.replace(phrase, " ")
        for e in seeds:
            rest = re.sub(re.escape(e.name), " ", rest, flags=re.IGNORECASE)
        rest = " ".join(rest.split())
        return list(self.index.embedder.embed([f"{rest} {n}".strip() for n in names]))

    @staticmethod
    def _sim(
        vec: np.ndarray,
        q: np.ndarray,
        ents: Mapping[str, int],
        bridge_vec: Mapping[str, np.ndarray],
    ) -> float:
        sims = [float(vec @ q)] + [float(vec @ bridge_vec[e]) for e in ents if e in bridge_vec]
        return max(sims)

    def _ranked(
        self,
        q: np.ndarray,
        items: list[_Item],
        names: Mapping[str, str],
        facts: list[Any],
        seeds: list[Entity],
        bridge_vec: Mapping[str, np.ndarray],
        note: str,
        k: int,
    ) -> list[ScoredChunk]:
        scored = []
        for it in items:
            sim = self._sim(it.vector, q, it.entities, bridge_vec)
            both = it.structured and it.unstructured
            score = sim + self.graph_weight * it.graph + (self.boost if both else 0.0)
            scored.append((score, sim, it))
        scored.sort(key=lambda t: -t[0])
        out: list[ScoredChunk] = []
        tokens = 0
        for score, sim, it in scored:
            c = it.chunk
            if any(
                h.chunk.doc_id == c.doc_id and h.chunk.start <= c.start and c.end <= h.chunk.end
                for h in out
            ):
                continue
            if self.token_budget is not None and out and tokens + c.token_count > self.token_budget:
                break
            side = (
                "both"
                if it.structured and it.unstructured
                else ("structured" if it.structured else "unstructured")
            )
            in_chunk = set(it.entities)
            prov = {
                "channel": "sketch",
                "side": side,
                "entities": [
                    {"id": e, "name": names.get(e, e), "hop": h, "bridge": e in bridge_vec}
                    for e, h in it.entities.items()
                ],
                "query_entities": [e.name for e in seeds],
                "facts": [
                    {
                        "source": names.get(r.source, r.source),
                        "type": r.type,
                        "target": names.get(r.target, r.target),
                        "evidence": r.evidence,
                    }
                    for r in facts
                    if r.source in in_chunk or r.target in in_chunk
                ],
            }
            if note:
                prov["note"] = note
            channels = {"dense": float(it.vector @ q), "graph": it.graph, "sim": sim}
            out.append(ScoredChunk(c, score, channels, (prov,)))
            tokens += c.token_count
            if len(out) >= k:
                break
        return out
