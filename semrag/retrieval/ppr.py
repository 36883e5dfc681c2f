"""Multi-hop retrieval by personalized PageRank over passages and the entities they mention.

The strategy follows HippoRAG / HippoRAG 2 (Gutiérrez et al., 2024, 2025) without an LLM
by default:

* **Graph** (built once per index version): one node per *passage*, a document or, in a
  long one, a section of consecutive chunks (about 2,000 characters, see
  :data:`~semrag.index.parts._passage_graph.SECTION_CHARS`), so how finely the chunker cuts does
  not change the graph; and one node per entity phrase. A passage links to every phrase
  its chunks mention (capitalised runs and quoted titles from
  :func:`semrag.text.phrases.entities`, plus the document's title: its ``title`` metadata
  or a title line at its start). Phrases whose name vectors are close (cosine >=
  ``synonym_threshold``, at most ``synonym_k`` per phrase, an exact search) are linked by
  *synonym* edges, so "Rohmer" reaches "Éric Rohmer". With ``graph=`` (a
  :class:`~semrag.graph.KnowledgeGraph`, e.g. built with an LLM extractor) its entities,
  mentions and relations are the phrase layer instead.
* **Seeds**: the query's entities, each linked to its phrase node by exact name or, failing
  that, to the nearest phrase names (cosine >= ``link_threshold``), weighted by their
  specificity (1 / number of passages that mention them, as in HippoRAG); plus the
  ``dense_seeds`` passages the query's dense search finds, each weighted by its best
  chunk's normalised similarity times ``passage_weight`` (HippoRAG 2's passage seeds).
  With ``llm=`` an LLM names the query's entities (JSON), with the rules as the fallback.
* **Walk**: personalized PageRank with restart probability ``1 - damping`` over the
  weighted, undirected graph.
* **Hits**: chunks, ranked by their passage's PageRank mass times ``exp(
  similarity_weight * (cosine - 1))`` of the chunk and the query (at most the mass).
  HippoRAG ranks by mass alone; the walk then loses to plain dense search on questions
  that name everything they need: the similarity keeps what dense search is sure of. A
  passage gives its chunks the dense search ranks first, then the one mentioning the
  phrases the walk reached most; at most ``per_passage`` hits per passage (no limit by
  default; 1: the first ``k`` hits are ``k`` passages). Then each passage is followed by
  the best-ranked passage whose title it names (``follow_titles``).

Each hit's ``score`` is its *relevance* (the chunk's cosine with the query in [0, 1], what
a vector store's threshold reads); the walk's score is the provenance's ``walk_score``, the
passage's mass ``channel_scores["graph"]``. Each hit is a distinct chunk with exact offsets;
its provenance says how the walk reached it: ``hop`` 0 (``link`` ``"query_entity"`` or
``"dense"``), ``hop`` 1 through an entity (``via``) from a passage (``from``), or moved
behind the passage that names its title (``link="title"``).
"""

from __future__ import annotations

import asyncio
import logging
import numbers
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
import numpy.typing as npt

from semrag._rwlock import ProvidesReader, reading
from semrag._steps import Call, twin
from semrag._validation import (
    HasMethods,
    Interval,
    Options,
    offers,
)
from semrag._versioned import Versioned
from semrag.errors import ConfigError, NotIndexedError, StoreError
from semrag.index.derived import derived
from semrag.index.parts._passage_graph import (
    TITLE_WEIGHT,
    PassageGraph,
    achunks_at,
    assemble,
    chunks_at,
)
from semrag.index.parts.passages import (
    NAMES,
    DocPhrases,
    NameRegistry,
    PassagePhrases,
    phrase_key,
)
from semrag.index.reader import (
    AsyncReads,
    CorpusReader,
    CorpusSearch,
    HoldsRecords,
    KeptParts,
    KeptPhrases,
    need,
)
from semrag.llm import LLM, LLMFailed, aask_json, ask_json
from semrag.retrieval._pagerank import local_pagerank, personalized_pagerank
from semrag.retrieval._ppr_hits import Walk, as_hits, dense_passages, rank, similarities
from semrag.retrieval.base import IndexRetriever, Steps
from semrag.retrieval.strategies import register
from semrag.text.phrases import entities as find_entities
from semrag.types import Floats, Ints

if TYPE_CHECKING:
    from semrag.graph.knowledge import KnowledgeGraph
__all__ = ["PassageGraph", "PPRRetriever", "local_pagerank", "personalized_pagerank"]

logger = logging.getLogger(__name__)


_NO_HITS: tuple[Floats, Ints] = (np.zeros(0, np.float32), np.zeros(0, np.int64))
_RACES = 3
"""Walks a query gets when a writer's new versions remove its chunks under each one."""


_NO_PHRASES = (
    "it holds no passage phrases for this retriever (a database reader serves the ones its "
    "writer kept: write with Neo4jIndexStore(store, passages=True), the default, or give the "
    "writing index SemanticIndex(passages=True) or index.enable('passages'); and use "
    "titles=True and no graph= here)"
)

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


@register("ppr")
class PPRRetriever(IndexRetriever):
    r"""Multi-hop retrieval: personalized PageRank over passages and entities (HippoRAG-style).

    See the module docstring for the method.

    Args:
        index: the index to read (a :class:`~semrag.index.reader.CorpusReader` that holds
            its documents in process: the passage graph is built from them).
        graph: an optional :class:`~semrag.graph.KnowledgeGraph` whose entities, mentions
            and relations form the phrase layer (default: phrases found by rules).
        k: results returned (distinct chunks).
        damping: probability of following an edge per step (HippoRAG: 0.5).
        epsilon: the walk is computed by forward push (:func:`local_pagerank`): work
            near the seeds only, each score short of the exact one by at most
            ``epsilon`` times its node's degree; with unit edge weights it pushes along
            at most ``1 / (epsilon * (1 - damping))`` edges, whatever the corpus. The default was
            chosen on the development sets (2Wiki, MuSiQue: the same recall as 1e-6 with
            a tenth of the work bound). ``None``: power iteration over the whole graph
            (:func:`personalized_pagerank`, to an L1 change below 1e-6).
        passage_weight: weight of the dense passage seeds against the entity seeds
            (HippoRAG 2: 0.05; here 0.005, fitted with ``similarity_weight``: with the
            query's similarity in every hit's score, stronger dense seeds only hold the
            walk near the passages dense search finds anyway).
        dense_seeds: how many dense hits seed the walk.
        link_threshold: least cosine for linking a query entity to a phrase by its vector
            (names are embedded by the packaged static model,
            :data:`~semrag.index.parts.passages.NAMES`, not by the index's embedder).
        link_k: phrase nodes linked per query entity by vector.
        synonym_threshold: least cosine between two phrase names for a synonym edge.
        synonym_k: most synonym edges per phrase (0: none).
        entity_seeds: seed the walk with the query's entities (off: dense seeds only).
        titles: a document's title is a phrase of each of its passages.
        title_weight: weight of the edges between passages and a title phrase (every
            other passage edge weighs 1): a passage that names another's title leads to it
            (see :data:`~semrag.index.parts._passage_graph.TITLE_WEIGHT` for how the
            default was chosen; 1: unweighted, as HippoRAG).
        follow_titles: behind each passage in the ranking, the best-ranked passage whose
            title it names (:func:`~semrag.retrieval._ppr_hits.follow_titles`; 2Wiki dev
            R@2 0.69 -> 0.75, the single-hop check unchanged: ``benchmarks/multihop.py``).
        llm: optional LLM naming the query's entities (the rules are the fallback).
        on_llm_error: ``"fallback"`` (rules, noted in the provenance) or ``"raise"``.
        similarity_weight: how much a chunk's own similarity to the query counts beside
            its passage's PageRank mass: hits score ``mass * exp(similarity_weight *
            (cosine - 1))`` (0: by mass alone, as HippoRAG). The two weights were chosen by
            ``benchmarks/multihop.py --parts fit``: of the pairs at which a single-hop
            check (SQuAD paragraphs) is within one question of dense search at every
            rank, the one 2Wiki scores best, checked on MuSiQue (see
            ``docs/retrievers.md``).
        per_passage: at most this many hits from one passage (``None``, the default: no
            limit). A limit of 1 makes the first ``k`` hits ``k`` distinct passages (the
            default before 0.3): on long documents, where a passage is a ~2,000-character
            section, it keeps a section's second chunk out of the context, and the walk
            fell below plain dense search at every context budget (``benchmarks/
            corpus_shapes.py``); without a limit it is above dense search on every corpus
            shape there, with the same multi-hop ``R@k``.

    Examples:
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
        "index": [object],
        "graph": [object],
        "k": [Interval(numbers.Integral, 1, None)],
        "damping": [Interval(numbers.Real, 0.0, 1.0, closed="neither")],
        "epsilon": [Interval(numbers.Real, 0.0, 1.0, closed="neither"), None],
        "passage_weight": [Interval(numbers.Real, 0.0, None)],
        "dense_seeds": [Interval(numbers.Integral, 1, None)],
        "link_threshold": [Interval(numbers.Real, -1.0, 1.0)],
        "link_k": [Interval(numbers.Integral, 1, None)],
        "synonym_threshold": [Interval(numbers.Real, -1.0, 1.0)],
        "synonym_k": [Interval(numbers.Integral, 0, None)],
        "entity_seeds": [bool],
        "titles": [bool],
        "title_weight": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "follow_titles": [bool],
        "llm": [HasMethods("complete", "acomplete"), None],
        "on_llm_error": [Options("fallback", "raise")],
        "similarity_weight": [Interval(numbers.Real, 0.0, None)],
        "per_passage": [Interval(numbers.Integral, 1, None), None],
    }

    def __init__(
        self,
        index: CorpusReader | ProvidesReader,
        graph: KnowledgeGraph | None = None,
        *,
        k: int = 10,
        damping: float = 0.8,
        epsilon: float | None = 1e-5,
        passage_weight: float = 0.005,
        dense_seeds: int = 50,
        link_threshold: float = 0.8,
        link_k: int = 2,
        synonym_threshold: float = 0.8,
        synonym_k: int = 0,
        entity_seeds: bool = True,
        titles: bool = True,
        title_weight: float = TITLE_WEIGHT,
        follow_titles: bool = True,
        llm: LLM | None = None,
        on_llm_error: str = "fallback",
        similarity_weight: float = 10.0,
        per_passage: int | None = None,
    ) -> None:
        p = self._check_params(locals())
        super().__init__(index, k=p["k"])
        self._search = need(self.index, CorpusSearch, by="PPRRetriever")
        self.graph = graph
        self.follows_graph = graph is not None  # its knowledge graph at the index's version
        self.damping = float(p["damping"])
        self.epsilon = None if epsilon is None else float(p["epsilon"])
        self.passage_weight = float(p["passage_weight"])
        self.dense_seeds = p["dense_seeds"]
        self.link_threshold = float(p["link_threshold"])
        self.link_k = p["link_k"]
        self.synonym_threshold = float(p["synonym_threshold"])
        self.synonym_k = p["synonym_k"]
        self.entity_seeds = p["entity_seeds"]
        self.titles = p["titles"]
        self.title_weight = float(p["title_weight"])
        self.follow_titles = p["follow_titles"]
        self.llm = llm
        self.on_llm_error = on_llm_error
        self.similarity_weight = float(p["similarity_weight"])
        self.per_passage = p["per_passage"]
        self._built: Versioned[PassageGraph] = Versioned()  # by (index, graph) version
        # The knowledge graph's names (graph=), kept across versions, so a change costs the
        # new names only: a name's vector never changes.
        self._registry = NameRegistry()
        if not offers(self.index, HoldsRecords) and self._kept_phrases() is None:
            self._records()  # the reader can give this retriever no phrases: say so now

    def _records(self) -> HoldsRecords:
        """The reader's records, from which the phrases are derived.

        Raises:
            MissingCapabilityError: naming :class:`~semrag.index.reader.HoldsRecords`, the
                capability a reader without the kept phrases lacks.
        """
        return need(self.index, HoldsRecords, by="PPRRetriever", why=_NO_PHRASES)

    # -- the graph ------------------------------------------------------------------------
    def passage_graph(self) -> PassageGraph:
        """The graph of the index's current version (assembled on first use after a change).

        The passages' phrases come from the index's ``passages`` part
        (``SemanticIndex(passages=True)`` or ``index.enable("passages")``: found as each
        change is indexed and saved with the index). Over an index without it (or with
        ``titles=False``, which the part does not share), they are derived from the index's
        records for every retriever over it (:mod:`semrag.index.derived`): a full
        extraction once per index and process, then the changed documents only.
        """
        # Lock order: the index's read first, then this retriever's lock (never the reverse).
        # With a knowledge graph, its read too: the graph at the index's version, never one
        # that has not applied the index's last change yet.
        with reading(self.index, followers=self.graph is not None):
            version = self.index.current_version()
            return self._built.get((version, self._graph_version()), self._build)

    async def _apassage_graph(self) -> PassageGraph:
        """Async twin of :meth:`passage_graph` (a built version found by an awaited read)."""
        if offers(self.index, AsyncReads) and self.graph is None:
            built = self._built.peek((await self.index.acurrent_version(), None))
            if built is not None:
                return built
        return await asyncio.to_thread(self.passage_graph)

    def _graph_version(self) -> Any:
        """The knowledge graph's version (``None`` without one): a change of it alone counts."""
        return None if self.graph is None else self.graph.current_version()

    def _kept_phrases(self) -> KeptPhrases | None:
        """The index's passage phrases when it keeps them with this retriever's settings."""
        if self.graph is not None or not offers(self.index, KeptParts):
            return None
        part = need(self.index, KeptParts, by="PPRRetriever").parts.get("passages")
        if isinstance(part, KeptPhrases) and part.titles == self.titles:
            return part
        return None

    def _phrases(self) -> KeptPhrases:
        """The passage phrases: the index's kept part, else derived for its retrievers."""
        kept = self._kept_phrases()
        if kept is not None:
            return kept
        titles = self.titles
        return derived(
            self.index,
            ("passages", titles),
            lambda _records: PassagePhrases(titles=titles),
            by="PPRRetriever",
            why=_NO_PHRASES,
        )

    def _phrases_from_graph(
        self,
    ) -> tuple[list[DocPhrases], tuple[Ints, Ints], list[tuple[str, str, float]]]:
        """Passages, the graph's entities in store order (slots, name ids), its relations."""
        if self.graph is None:  # pragma: no cover - asked only with a graph
            raise ConfigError("PPRRetriever: the phrases come from the graph, and it has none")
        store, reg = self.graph.store, self._registry
        ents = sorted(store.entities(), key=lambda e: e.id)  # one order: ties rank alike
        entity_slots = np.asarray([reg.slot(e.id) for e in ents], np.int64)
        name_of_slot = {reg.slot(e.id): reg.name(e.name) for e in ents}
        by_chunk: dict[int, list[str]] = {}
        refs = store.chunks_for([e.id for e in ents])
        mentions = [(e, (r.doc_id, r.start, r.end)) for e, found in refs.items() for r in found]
        overlaps = self.index.overlapping_chunks_many([span for _, span in mentions])
        for (ent_id, _), cids in zip(mentions, overlaps, strict=True):
            for cid in cids:
                by_chunk.setdefault(cid, []).append(ent_id)
        docs = []
        records = self._records()
        for doc_id in self.index.doc_ids:
            ids = records.chunk_ids(doc_id)
            per_chunk = [[reg.slot(e) for e in dict.fromkeys(by_chunk.get(c, []))] for c in ids]
            flat = [s for chunk in per_chunk for s in chunk]
            record = records.indexed(doc_id)
            chunks = list(record.chunks)
            docs.append(
                DocPhrases(
                    record,
                    np.asarray(ids, np.int64),
                    chunks,
                    np.asarray([c.start for c in chunks], np.int64),
                    np.asarray([len(c) for c in per_chunk], np.int64),
                    np.asarray(flat, np.int64),
                    np.asarray([name_of_slot[s] for s in flat], np.int64),
                )
            )
        relations = [(r.source, r.target, float(r.weight)) for r in store.relations()]
        entity_names = np.asarray([name_of_slot[s] for s in entity_slots.tolist()], np.int64)
        return docs, (entity_slots, entity_names), relations

    def _build(self) -> PassageGraph:
        # one version of the index (and of its knowledge graph) for the whole graph
        with reading(self.index, followers=self.graph is not None):
            if self.graph is None:  # found and embedded per document, kept or derived
                return self._phrases().graph(
                    self.index.doc_ids,
                    synonym_k=self.synonym_k,
                    synonym_threshold=self.synonym_threshold,
                    title_weight=self.title_weight,
                )
            version = self.index.current_version()
            docs, phrases, relations = self._phrases_from_graph()
        reg = self._registry
        reg.embed_new()
        g = assemble(
            version,
            docs,
            reg,
            phrases=phrases,
            relations=relations,
            synonym_k=self.synonym_k,
            synonym_threshold=self.synonym_threshold,
        )
        if len(reg.names) > 2 * len(g.names) + 1024:  # mostly names no longer in the graph
            self._registry = NameRegistry()
        return g

    # -- query ----------------------------------------------------------------------------
    def ask(self, query: str) -> Call | None:
        """The LLM's naming of the query's entities (JSON); ``None`` without one or seeds."""
        if self.llm is None or not self.entity_seeds:
            return None
        prompt, on_error = _NER_PROMPT.format(query=query), {"on_error": self.on_llm_error}
        return Call(ask_json, (self.llm, prompt, _ENTITY_SCHEMA), on_error, aask_json)

    def _entities(self, query: str, reply: object = None) -> tuple[list[str], str]:
        """The query's entities and how they were found: the LLM's ``reply``, else the rules."""
        if not self.entity_seeds:
            return [], "off"
        how = "rules" if reply is None else "llm"
        if isinstance(reply, LLMFailed):
            how = f"LLM entity extraction failed ({reply.reason}); used the rules"
        if how != "llm":
            return [p.text for p in find_entities(query) if p.kind in ("entity", "quoted")], how
        names = cast(Mapping[str, list[object]], reply)["entities"]
        return [n for n in names if isinstance(n, str) and n.strip()], how

    @staticmethod
    def _to_embed(g: PassageGraph, names: Sequence[str]) -> list[str]:
        """The entity names with no exact phrase node (embedded by :data:`NAMES`)."""
        return list(dict.fromkeys(n for n in names if phrase_key(n) not in g.keys))

    def _seeds(
        self,
        g: PassageGraph,
        dense: Mapping[int, float],
        names: Sequence[str],
        vectors: dict[str, Floats],
    ) -> tuple[npt.NDArray[np.float64], dict[int, str]]:
        n = g.n_passages + len(g.names)
        seeds = np.zeros(n, dtype=np.float64)
        linked: dict[int, str] = {}
        for name in names:
            key = phrase_key(name)
            hits: list[tuple[int, float]] = []
            if key in g.keys:
                hits = [(g.keys[key], 1.0)]
            elif len(g.names):
                sims, ids = g.nearest_phrases(vectors[name], self.link_k)
                hits = [
                    (int(j), float(s))
                    for s, j in zip(sims, ids, strict=True)
                    if s >= self.link_threshold
                ]
            for j, s in hits:
                seeds[g.n_passages + j] = max(seeds[g.n_passages + j], s / g.df[j])
                linked.setdefault(j, name)
        entity_mass = seeds.sum()
        if dense:
            sims = np.fromiter(dense.values(), np.float64, len(dense))
            lo, hi = float(sims.min()), float(sims.max())
            norm = (sims - lo) / (hi - lo) if hi > lo else np.ones_like(sims)
            nodes = np.fromiter(dense, np.int64, len(dense))
            seeds[nodes] += self.passage_weight * norm * (entity_mass or 1.0)
        total = seeds.sum()
        if total > 0:
            seeds /= total
        return seeds, linked

    def _dense(self, g: PassageGraph, q: Floats) -> Call:
        """The dense seeds' search: the index's nearest chunks to the query.

        Enough chunks for about ``dense_seeds`` passages (a passage holds
        ``len(chunk_ids) / n_passages`` chunks on average). Answered with
        :func:`~semrag._steps.call`, or :func:`~semrag._steps.acall`, which awaits a
        reader's ``adense_search`` (a database) or runs the search in a thread.
        """
        chunks_each = -(-g.chunk_ids.size // max(g.n_passages, 1))
        n = min(self.dense_seeds * chunks_each, g.chunk_ids.size)
        index = self.index
        return Call(
            self._search.dense_search,
            (q, n),
            twin=twin(index, AsyncReads, lambda r: r.adense_search),
        )

    def _walk(
        self,
        g: PassageGraph,
        q: Floats,
        by_name: dict[str, Floats],
        names: list[str],
        found: tuple[Floats, Ints],
        k: int,
    ) -> Walk | None:
        """Seed and walk: the ``k`` passages ranked first (``None``: nothing seeded).

        ``q``: the query's vector; ``by_name``: the vectors of the names with no exact
        phrase node.
        """
        if g.n_passages == 0:
            return None
        dense, dense_chunks = dense_passages(g, found, self.dense_seeds)
        seeds, linked = self._seeds(g, dense, names, by_name)
        if not seeds.any():
            return None
        if self.epsilon is None:
            scores = personalized_pagerank(g.transition, seeds, self.damping)
        else:
            scores = local_pagerank(
                g.transition, g.degree, seeds, self.damping, epsilon=self.epsilon
            )
        passage = scores[: g.n_passages]
        ranked = rank(
            g,
            passage,
            scores[g.n_passages :],
            dense_chunks,
            k,
            similarity_weight=self.similarity_weight,
            per_passage=self.per_passage,
        )
        similarity = similarities(g, ranked, dense_chunks, self.index.vectors_of, q)
        return Walk(
            ranked, passage, scores[g.n_passages :], linked, dense, dense_chunks, similarity
        )

    def steps(self, query: str, q: Floats, k: int, asked: object = None) -> Steps:
        """The ``k`` chunks with the most PageRank mass for ``query`` (``asked``: see :meth:`ask`).

        Over a database a writer changes (:class:`~semrag.neo4j.Neo4jIndex`), a walk whose
        chunks a newer version removed is walked again on that version.
        """
        names, how = self._entities(query, asked)
        attempt = 0
        while True:  # _raced raises on the last attempt
            g = yield Call(self.passage_graph, twin=self._apassage_graph)
            try:
                texts = self._to_embed(g, names)
                vectors = yield Call(NAMES.embed, (texts,), twin=NAMES.aembed)
                found = (yield self._dense(g, q)) if g.n_passages else _NO_HITS
                by_name = dict(zip(texts, vectors, strict=True))
                walk = self._walk(g, q, by_name, names, found, k)
                at = [pos for _, pos, _ in walk.ranked] if walk else []
                chunks = (yield Call(chunks_at, (g, at), twin=achunks_at)) if at else []
                return as_hits(g, walk, chunks, names, how, k, follow=self.follow_titles)
            except NotIndexedError as exc:
                self._raced(g, attempt, exc)
                attempt += 1

    def _raced(self, g: PassageGraph, attempt: int, exc: NotIndexedError) -> None:
        """After a walk's chunk went missing: return to walk again, or raise.

        Raises:
            NotIndexedError: when the reader is still at the graph's version (the chunk
                is really not there).
            StoreError: when a newer version removed chunks under each of the attempts.
        """
        if self.index.current_version() == g.version:
            raise exc
        if attempt + 1 == _RACES:
            raise StoreError(
                f"the index changed under each of {_RACES} walks (a writer is busy); try again"
            ) from None
