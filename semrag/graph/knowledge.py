"""The knowledge graph of a :class:`SemanticIndex`: extraction, resolution, store, communities."""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Callable, Generator, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from semrag._steps import Call, acall, adrive, call, drive
from semrag._validation import offers
from semrag._versioned import Versioned
from semrag.errors import ConfigError
from semrag.graph._following import Extracted, GraphFollower, stored_vectors
from semrag.graph._graph_rows import EntityRows, check_build, vectors_kwarg
from semrag.graph.communities import (
    community_reports,
    detect_communities,
    relation_order,
    report_text,
)
from semrag.graph.extract import (
    Extraction,
    GraphExtractor,
    HeuristicGraphExtractor,
    graph_documents_extraction,
    merge_extractions,
    resolve_entities,
)
from semrag.graph.ledger import GraphLedger
from semrag.graph.memory import InMemoryGraphStore
from semrag.graph.types import (
    AsyncGraphReads,
    ChangeStamped,
    Community,
    Entity,
    EntityNameSearch,
    GraphReads,
    GraphStore,
    GraphWrites,
    ReportReads,
)
from semrag.index.reader import require
from semrag.llm import LLM
from semrag.types import Chunk

if TYPE_CHECKING:
    from semrag.embeddings import Embedder
    from semrag.index.change import Change, IndexedDocument
    from semrag.index.semantic_index import SemanticIndex

__all__ = ["RESOLUTION_THRESHOLD", "KnowledgeGraph"]

RESOLUTION_THRESHOLD = 0.92
"""Cosine similarity of two entity names' vectors above which they are one entity."""


class KnowledgeGraph:
    """Entities, relations and communities of an index's chunks, in a :class:`GraphStore`.

    Build one with :meth:`build`: the graph then *follows* the index. Every later
    ``add_documents`` / ``delete`` of the index reaches it as one change, which it applies
    in place (relations keep what each document contributed, so a delete subtracts
    exactly that; new names are resolved against the entities already there;
    communities are marked stale, see :meth:`refresh_communities`). :meth:`detach` stops
    following. ``KnowledgeGraph(store, index=index)`` opens an existing store for
    reading; it does not follow the index.

    Args:
        store: where the graph lives (default a new :class:`InMemoryGraphStore`): a
            :class:`GraphReads` and :class:`GraphWrites` (a :class:`MissingCapabilityError`
            names what a store lacks).
        index: the :class:`~semrag.index.SemanticIndex` whose chunks the graph describes
            (its embedder embeds entity names).
        embedder: embedder for entity names when there is no index.

    Examples:
        >>> from semrag import Document, SemanticIndex
        >>> from semrag.testing import FakeEmbedder
        >>> index = SemanticIndex(embedder=FakeEmbedder())
        >>> index.add_documents([Document("a", "Ada Lovelace met Charles Babbage in London.")])
        >>> kg = KnowledgeGraph.build(index)
        >>> sorted(e.name for e in kg.store.entities())
        ['Ada Lovelace', 'Charles Babbage', 'London']
    """

    def __init__(
        self,
        store: GraphStore | None = None,
        *,
        index: SemanticIndex | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        if store is not None:
            require(store, GraphReads, GraphWrites, by="KnowledgeGraph", what="store")
        self.store: GraphStore = store if store is not None else InMemoryGraphStore()
        self.index = index
        if embedder is None and index is not None:
            embedder = index.embedder
        self.embedder = embedder
        self.timings: dict[str, float] = {}
        self.notes: list[str] = []
        self.algorithm = ""
        self._vectors: Versioned[tuple[list[Entity], np.ndarray]] = Versioned()
        """The entities' name vectors, by the current_version() they were computed at."""
        self._rows: EntityRows | None = None  # kept per change while following
        self._lock = threading.RLock()
        self.version = 0
        """Changes with every ingest and community build: retrievers key caches by it."""
        self.communities_stale = False
        """Whether the graph changed since communities were last built (see
        :meth:`refresh_communities`)."""
        self._follower: GraphFollower | None = None  # while it follows an index (build)
        self._community_args: dict[str, Any] = {}

    # -- building ----------------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        index: SemanticIndex,
        *,
        extractor: GraphExtractor | None = None,
        store: GraphStore | None = None,
        resolve: bool = True,
        resolution_threshold: float = RESOLUTION_THRESHOLD,
        name_search: str = "auto",
        communities: bool = True,
        community_levels: int = 2,
        community_algorithm: str = "auto",
        community_llm: LLM | None = None,
        show_progress: bool = False,
    ) -> KnowledgeGraph:
        """Extract, resolve and store the graph of ``index``'s chunks; then communities.

        Args:
            index: the :class:`~semrag.index.SemanticIndex`.
            extractor: :class:`HeuristicGraphExtractor` (default) or :class:`LLMGraphExtractor`.
            store: the :class:`GraphStore` (default in memory).
            resolve: merge entities whose names embed closer than ``resolution_threshold``.
            resolution_threshold: cosine similarity needed to merge two entity names.
            name_search: how a name finds the names it may merge with: ``"exact"`` (a
                range search against every name: the graph equals a fresh build after any
                changes), ``"hnsw"`` (an HNSW index over the names: a name costs ``log`` of
                the names, not all of them; a pair the HNSW search misses stays two
                entities, so the graph can depend on the order of the changes) or
                ``"auto"`` (exact while one search compares at most 10^9 name pairs, about
                30k names against 30k; the HNSW index from the first larger one on).
            communities: detect communities and write their reports.
            community_levels: levels of the community hierarchy.
            community_algorithm: ``"auto"``, ``"leiden"`` or ``"louvain"``.
            community_llm: an LLM for community reports (extractive without one).
            show_progress: a progress bar over the chunks.

        Raises:
            ConfigError: for a parameter outside what is allowed.
        """
        return drive(cls._build_steps(dict(locals())), call)

    @classmethod
    async def abuild(cls, index: SemanticIndex, **options: Any) -> KnowledgeGraph:
        """Async twin of :meth:`build` (the same arguments).

        An LLM extractor's calls run concurrently (up to its limit) before the graph is
        built from their replies; the rest runs in a worker thread.
        """
        try:
            given = inspect.signature(cls.build).bind(index, **options)
        except TypeError as exc:
            raise ConfigError(f"KnowledgeGraph.abuild: {exc} (it takes build's)") from None
        given.apply_defaults()
        return await adrive(cls._build_steps(given.arguments), acall)

    @classmethod
    def _build_steps(cls, a: dict[str, Any]) -> Generator[Call, Any, KnowledgeGraph]:
        """:meth:`build`, written once: it yields the extraction the async driver runs ahead."""
        check_build(
            a["resolve"],
            a["resolution_threshold"],
            a["name_search"],
            a["communities"],
            a["community_levels"],
            a["community_algorithm"],
        )
        index = a["index"]
        kg = cls(a["store"], index=index)
        extractor = a["extractor"] or HeuristicGraphExtractor()
        yield Call(lambda _chunks: None, (index.chunks(),), twin=extractor.aprefetch)
        ledger = GraphLedger(
            kg.embedder,
            resolve=a["resolve"],
            threshold=a["resolution_threshold"],
            name_search=a["name_search"],
        )
        kg._follow(index, ledger, extractor, a["show_progress"])
        if a["communities"]:
            kg.build_communities(
                levels=a["community_levels"],
                algorithm=a["community_algorithm"],
                llm=a["community_llm"],
            )
        return kg

    def add_chunks(
        self,
        chunks: Sequence[Chunk],
        extractor: GraphExtractor | None = None,
        *,
        resolve: bool = True,
    ) -> None:
        """Extract and add the graph of more chunks (communities are not recomputed).

        These records are not the index's: a graph that follows an index gets its
        documents from the index, and a later change of those entities may rewrite them.
        """
        extractor = extractor or HeuristicGraphExtractor()
        self._ingest(
            merge_extractions([extractor.extract(c) for c in chunks]), resolve, RESOLUTION_THRESHOLD
        )

    def _ingest(self, extraction: Extraction, resolve: bool, threshold: float) -> None:
        if resolve and self.embedder is not None and len(extraction.entities) > 1:
            t0 = time.perf_counter()
            vectors = self.embedder.embed([e.name for e in extraction.entities])
            extraction = resolve_entities(extraction, vectors, threshold=threshold)
            self.timings["resolve_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        ledger = None if self._follower is None else self._follower.ledger
        stored = stored_vectors(self.store, self.embedder, extraction.entities, ledger)
        self.store.upsert(
            extraction.entities, extraction.relations, extraction.mentions, **vectors_kwarg(stored)
        )
        self.timings["write_s"] = time.perf_counter() - t0
        self.notes.extend(extraction.notes)
        with self._lock:
            self._rows = None  # rebuilt from the store at the next read (a new version)
            self.version += 1

    def add_graph_documents(self, graph_documents: Iterable[Any], *, resolve: bool = False) -> int:
        """Ingest LangChain ``GraphDocument``s (e.g. from ``LLMGraphTransformer``).

        Nodes become entities (``id`` as the name, ``type``, a ``description`` property if
        any); relationships become relations (``type``, an ``evidence`` property if any);
        each document's source (``metadata["doc_id"]`` or ``"source"``, and
        ``start_index``) gives the chunk every node is mentioned in. Duck-typed: the core
        does not import LangChain. Returns the number of documents ingested.
        """
        extraction, n = graph_documents_extraction(graph_documents)
        self._ingest(extraction, resolve, RESOLUTION_THRESHOLD)
        return n

    # -- following an index -----------------------------------------------------------------
    def _follow(
        self,
        index: SemanticIndex,
        ledger: GraphLedger,
        extractor: GraphExtractor,
        show_progress: bool,
    ) -> None:
        embedder = index.embedder
        self._follower = GraphFollower(
            self.store, embedder, ledger, extractor, show_progress=show_progress
        )
        if not self.store.counts().get("entities"):  # entity vectors kept from the start
            self._rows = EntityRows(embedder.dim)
        index.follow(self, replay=True)
        self._follower.show_progress = False

    def _following_only(self, what: str) -> GraphFollower:
        if self._follower is None:
            raise ConfigError(what)
        return self._follower

    def save_ledger(self, directory: str | Path) -> Path:
        """Save what each document contributed, so a reopened graph can follow again.

        Written atomically (like every semrag save). The store saves itself
        (``InMemoryGraphStore.save``; Neo4j keeps its data); see :meth:`resume`.

        Raises:
            ConfigError: if the graph does not follow an index.
        """
        follower = self._following_only(
            "only a graph built over an index (KnowledgeGraph.build) has a ledger"
        )
        settings = None
        if self.communities_built:  # so a resumed graph keeps its communities following
            settings = {k: v for k, v in self._community_args.items() if k != "llm"}
            settings["llm"] = self._community_args.get("llm") is not None
        return follower.save(directory, settings)

    @classmethod
    def resume(
        cls,
        index: SemanticIndex,
        store: GraphStore,
        ledger: str | Path,
        *,
        extractor: GraphExtractor | None = None,
    ) -> KnowledgeGraph:
        """Reopen a saved graph over ``index`` and follow it again.

        The store holds the graph as it was when ``ledger`` was saved (give the same
        extractor as then). Documents the index changed meanwhile (added, deleted,
        replaced, or moved by a re-add) are caught up in one change before the graph
        follows, so it ends equal to a fresh build over the index's documents.
        Communities built with extractive reports follow again (detected with the saved
        settings, as a fresh build would); those whose reports came from an LLM are marked
        stale until :meth:`refresh_communities`.

        Raises:
            ConfigError: if ``ledger`` is not a saved ledger.
            StoreError: if it is damaged.
        """
        kg = cls(store, index=index)
        follower, settings = GraphFollower.load(
            ledger, kg.store, index.embedder, extractor or HeuristicGraphExtractor()
        )
        kg._follower = follower
        caught_up: list[Change] = []

        def replay(docs: list[IndexedDocument], version: int) -> Change:
            caught_up.append(follower.catch_up(docs, version))
            return caught_up[-1]

        index.follow(kg, replay=replay)
        changed = any(c.added or c.removed for c in caught_up)
        if settings is None or settings.pop("llm"):
            kg.communities_stale = True
        elif changed:  # the catch-up changed the graph: detect them again
            kg.build_communities(**settings)
        else:  # the stored communities (and their reports' vectors) are current
            kg._community_args = {**settings, "llm": None}
            kg.communities_stale = False
        return kg

    @property
    def following(self) -> bool:
        """Whether the graph follows its index (every change of the index reaches it)."""
        index = self.index
        return self._follower is not None and index is not None and index.reader().follows(self)

    def detach(self) -> None:
        """Stop following the index: later changes of the index no longer reach the graph."""
        if self.index is not None:
            self.index.unfollow(self)

    def apply(self, change: Change) -> None:
        """Follow one change of the index (called by the index; see :meth:`build`).

        :meth:`stage` then the function it returns.
        """
        self.stage(change)()

    def stage(self, change: Change) -> Callable[[], None]:
        """Extract the change's added chunks; the returned function writes the change.

        The extraction (the expensive part, an LLM's with an LLM extractor) reads nothing
        the graph holds, so the index runs it before it locks anything. The returned
        function re-derives what the change touches from the per-document ledger
        (:mod:`semrag.graph.ledger`) and writes it to the store in one ``update``;
        communities are marked stale. The index calls it while graph readers wait (see
        :meth:`SemanticIndex.read`), so they never see the index and the graph at two
        different versions.

        Raises:
            ConfigError: if the graph was not built over an index with :meth:`build`.
            StoreError: (from the returned function) if the store fails; the graph is
                rewritten whole on the next change or :meth:`repair`.
        """
        follower = self._following_only(
            "this KnowledgeGraph does not follow an index: build it with "
            "KnowledgeGraph.build(index)"
        )
        t0 = time.perf_counter()
        extracted = follower.extract(change)
        self.timings["extract_s"] = time.perf_counter() - t0
        return lambda: self._commit(follower, change, extracted)

    def _commit(self, follower: GraphFollower, change: Change, extracted: Extracted) -> None:
        added, notes = extracted
        t0 = time.perf_counter()
        diff = follower.diff(change, added)
        stored = follower.vectors(diff.entities)
        vector_of: Callable[[Entity], np.ndarray | None] = follower.name_vector
        if stored is not None:
            row_of = {e.id: i for i, e in enumerate(diff.entities)}
            vector_of = lambda e: stored[row_of[e.id]]  # noqa: E731
        with self._lock:  # the entities' vectors follow the ledger (a failed write is
            if self._rows is not None:  # repaired from it)
                self._rows.update(diff.drop_entities, diff.entities, vector_of)
        self.notes.extend(notes)
        self.timings["resolve_s"] = time.perf_counter() - t0  # resolution and derivation
        t0 = time.perf_counter()
        follower.write(diff, stored)
        self.timings["write_s"] = time.perf_counter() - t0
        with self._lock:
            self.version += 1
            self.communities_stale = True
        self._follow_communities()

    def _follow_communities(self) -> None:
        """Recompute built communities after a change, as a fresh build would make them.

        Extractive reports are recomputed with the change (detection runs over the whole
        graph in a canonical order with the same seed, so the partition and the reports
        equal a fresh build's). Reports by an LLM are not rewritten on every change: the
        communities stay marked stale (:attr:`communities_stale`; community search says so
        in its provenance) until :meth:`refresh_communities`.
        """
        if self._community_args and self._community_args.get("llm") is None:
            self.build_communities(**self._community_args)

    def repair(self) -> None:
        """Rewrite the whole graph from the ledger (after a store failure)."""
        follower = self._following_only(
            "repair() needs a graph that follows an index (it has no ledger)"
        )
        follower.rewrite()
        self.communities_stale = True
        self._follow_communities()

    def refresh_communities(self) -> list[Community]:
        """Rebuild the communities with the settings last used (after changes)."""
        return self.build_communities(**self._community_args)

    # -- communities --------------------------------------------------------------------------
    def build_communities(
        self,
        *,
        levels: int = 2,
        algorithm: str = "auto",
        llm: LLM | None = None,
        resolution: float = 1.0,
        on_llm_error: str = "fallback",
    ) -> list[Community]:
        """Detect communities, write their reports, store them; returns them.

        ``on_llm_error``: ``"fallback"`` (an extractive report, noted in :attr:`notes`) or
        ``"raise"`` when the report LLM fails.
        """
        self._community_args = {
            "levels": levels,
            "algorithm": algorithm,
            "llm": llm,
            "resolution": resolution,
            "on_llm_error": on_llm_error,
        }
        t0 = time.perf_counter()
        ents = sorted(self.store.entities(), key=lambda e: e.id)
        rels = sorted(self.store.relations(), key=relation_order)
        comms, self.algorithm = detect_communities(
            [e.id for e in ents], rels, algorithm=algorithm, levels=levels, resolution=resolution
        )
        self.timings["communities_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        comms, notes = community_reports(comms, ents, rels, llm=llm, on_llm_error=on_llm_error)
        self.notes.extend(notes)
        store = self.store
        if self.embedder is not None and offers(store, ReportReads):
            # a store that keeps the reports' vectors: global search embeds none of them
            vectors = self.embedder.embed([report_text(c) for c in comms]) if comms else None
            store.write_communities(comms, report_vectors=vectors)
        else:
            self.store.write_communities(comms)
        self.timings["reports_s"] = time.perf_counter() - t0
        with self._lock:
            self.version += 1
            self.communities_stale = False
        return comms

    @property
    def communities_built(self) -> bool:
        """Whether this graph detected its communities (so none found means an empty graph)."""
        return bool(self._community_args)

    # -- lookups --------------------------------------------------------------------------------
    def _served(self) -> bool:
        """Whether changes may come from elsewhere: no ledger here, and a store with a stamp."""
        return self._follower is None and offers(self.store, ChangeStamped)

    def current_version(self) -> Any:
        """The graph's version, as a key for what is derived from it.

        :attr:`version` counts the changes made through this object. A graph that follows
        no index here, over a store that stamps its writes (:class:`Neo4jGraphStore`: the
        graph a serving process reads while another process writes it), adds the store's
        change stamp (one read), so its caches see those changes too.
        """
        store = self.store
        if not self._served() or not offers(store, ChangeStamped):
            return self.version
        return (self.version, store.change_stamp())

    async def acurrent_version(self) -> Any:
        """Async twin of :meth:`current_version` (the stamp awaited on the async driver)."""
        store = self.store
        if not self._served() or not offers(store, ChangeStamped):
            return self.version
        if offers(store, AsyncGraphReads):  # a database's stamp, awaited
            return (self.version, await store.achange_stamp())
        return (self.version, await asyncio.to_thread(store.change_stamp))

    def entity_vectors(self, version: Any = None) -> tuple[list[Entity], np.ndarray]:
        """Every entity and the unit vector of its name.

        A graph that follows an index keeps them change by change, from the vectors name
        resolution made (saved with the ledger): a change costs its own entities, and
        only names resolution never embedded are embedded (at this call). Otherwise they
        are computed once per :meth:`current_version` (``version``: as the caller read
        it; read here when not given), so a serving process sees the changes another
        writes. The arrays hold until the next change; read them inside
        ``index.read(followers=True)``.
        """
        if self.embedder is None:
            raise ConfigError("this KnowledgeGraph has no embedder (give index= or embedder=)")
        if version is None:
            version = self.current_version()
        with self._lock:
            return self._vectors.get(version, self._entity_vectors)

    def _entity_vectors(self) -> tuple[list[Entity], np.ndarray]:
        """:meth:`entity_vectors` made now (under the graph's lock)."""
        assert self.embedder is not None  # checked by entity_vectors
        if self._follower is not None:
            if self._rows is None:  # a resumed graph, or one changed by hand
                self._rows = EntityRows(self.embedder.dim)
                self._rows.update((), self.store.entities(), self._follower.name_vector)
            return self._rows.read(self.embedder)
        ents = self.store.entities()
        if not ents:
            return ents, np.zeros((0, self.embedder.dim), np.float32)
        return ents, np.asarray(self.embedder.embed([e.name for e in ents]), np.float32)

    def search_entities(
        self, vector: np.ndarray, n: int, *, keep: int | None = None
    ) -> tuple[list[Entity], np.ndarray]:
        """Candidates for the entities whose names are nearest ``vector``, with their vectors.

        Where the graph is served from a store that keeps name vectors (a Neo4j store
        another process writes; see :meth:`current_version`): the ``n`` nearest by the
        store's vector index (approximate), plus every entity stored without a vector (at
        most 1,024; their names are embedded here). Every entity
        (:meth:`entity_vectors`) otherwise, or when more are stored without one. The
        caller ranks the candidates exactly. ``keep``: of the ``n``, only the best ``keep``
        by the index's scores are returned (see the store's method).
        """
        if self._served() and offers(self.store, EntityNameSearch):
            found = self.store.search_entities(vector, n, keep=keep)
            if found is not None:
                return self._with_bare(*found)
        return self.entity_vectors()

    async def asearch_entities(
        self, vector: np.ndarray, n: int, *, keep: int | None = None
    ) -> tuple[list[Entity], np.ndarray]:
        """Async twin of :meth:`search_entities` (the store's search awaited)."""
        store = self.store
        if self._served() and offers(store, EntityNameSearch):
            if offers(store, AsyncGraphReads):  # a database's search, awaited
                found = await store.asearch_entities(vector, n, keep=keep)
            else:
                found = await asyncio.to_thread(store.search_entities, vector, n, keep=keep)
            if found is not None:
                return await asyncio.to_thread(self._with_bare, *found)
        version = await self.acurrent_version()
        return await asyncio.to_thread(self.entity_vectors, version)

    def _with_bare(
        self, ents: list[Entity], vecs: np.ndarray, bare: list[Entity]
    ) -> tuple[list[Entity], np.ndarray]:
        """The candidates, and the entities stored without a vector with theirs embedded."""
        if not bare:
            return ents, vecs
        if self.embedder is None:
            raise ConfigError("this KnowledgeGraph has no embedder (give index= or embedder=)")
        fresh = np.asarray(self.embedder.embed([e.name for e in bare]), np.float32)
        return [*ents, *bare], np.concatenate([vecs, fresh])

    def held_bytes(self) -> dict[str, int]:
        """Bytes of the vectors this object holds, by holder (their buffers' capacity).

        The store's own memory is not counted (an in-memory store's records, a server's).
        """
        rows = self._rows.vectors.buf.nbytes if self._rows is not None else 0
        names, ann = (0, 0) if self._follower is None else self._follower.ledger.held_bytes()
        return {
            "entity name vectors": rows,
            "name vectors for resolution": names,
            "their HNSW index": ann,
        }

    def __repr__(self) -> str:
        return f"KnowledgeGraph(store={self.store!r})"
