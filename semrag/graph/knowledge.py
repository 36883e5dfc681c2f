"""The knowledge graph of a :class:`SemanticIndex`: extraction, resolution, store, communities."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import threading
import time
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from semrag._buffers import GrowingRows
from semrag._steps import Call, acall, adrive, call, drive
from semrag._validation import INT, REAL, Interval, Options, validate_params
from semrag.errors import ConfigError, StoreError
from semrag.graph.communities import (
    community_reports,
    detect_communities,
    relation_order,
    report_text,
)
from semrag.graph.extract import (
    Extraction,
    HeuristicGraphExtractor,
    merge_extractions,
    resolve_entities,
)
from semrag.graph.ledger import GraphDiff, GraphLedger
from semrag.graph.memory import InMemoryGraphStore
from semrag.graph.types import ChunkRef, Community, Entity, Mention, Relation, entity_key
from semrag.index.persist import atomic_directory, read_manifest
from semrag.llm import LLM
from semrag.types import Chunk

if TYPE_CHECKING:
    from semrag.index.change import Change, IndexedDocument

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
        store: where the graph lives (default a new :class:`InMemoryGraphStore`).
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

    def __init__(self, store: Any = None, *, index: Any = None, embedder: Any = None) -> None:
        self.store = store if store is not None else InMemoryGraphStore()
        self.index = index
        if embedder is None and index is not None:
            embedder = index.embedder
        self.embedder = embedder
        self.timings: dict[str, float] = {}
        self.notes: list[str] = []
        self.algorithm = ""
        self._vectors: tuple[list[Entity], np.ndarray] | None = None
        self._vectors_at: Any = None  # the current_version() they were computed at
        self._rows: _EntityRows | None = None  # kept per change while following
        self._lock = threading.RLock()
        self.version = 0
        """Changes with every ingest and community build: retrievers key caches by it."""
        self.communities_stale = False
        """Whether the graph changed since communities were last built (see
        :meth:`refresh_communities`)."""
        self._ledger: GraphLedger | None = None
        self._extractor: Any = None
        self._community_args: dict[str, Any] = {}
        self._unsynced = False
        self._show_progress = False

    # -- building ----------------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        index: Any,
        *,
        extractor: Any = None,
        store: Any = None,
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
        steps = cls._build_steps(
            index,
            extractor=extractor,
            store=store,
            resolve=resolve,
            resolution_threshold=resolution_threshold,
            name_search=name_search,
            communities=communities,
            community_levels=community_levels,
            community_algorithm=community_algorithm,
            community_llm=community_llm,
            show_progress=show_progress,
        )
        return drive(steps, functools.partial(call, None))

    @classmethod
    async def abuild(cls, index: Any, **options: Any) -> KnowledgeGraph:
        """Async twin of :meth:`build` (the same arguments).

        An LLM extractor's calls run concurrently (up to its limit) before the graph is
        built from their replies; the rest runs in a worker thread.
        """
        steps = cls._build_steps(index, **options)
        return await adrive(steps, functools.partial(acall, None))

    @classmethod
    def _build_steps(
        cls,
        index: Any,
        *,
        extractor: Any = None,
        store: Any = None,
        resolve: bool = True,
        resolution_threshold: float = RESOLUTION_THRESHOLD,
        name_search: str = "auto",
        communities: bool = True,
        community_levels: int = 2,
        community_algorithm: str = "auto",
        community_llm: LLM | None = None,
        show_progress: bool = False,
    ) -> Generator[Call, Any, KnowledgeGraph]:
        """:meth:`build`, written once: it yields the extraction the async driver runs ahead."""
        _check_build(
            resolve,
            resolution_threshold,
            name_search,
            communities,
            community_levels,
            community_algorithm,
        )
        kg = cls(store, index=index)
        extractor = extractor or HeuristicGraphExtractor()
        yield Call("prefetch", (index.chunks(),), on=_Prefetch(extractor))
        kg._follow(index, extractor, resolve, resolution_threshold, name_search, show_progress)
        if communities:
            kg.build_communities(
                levels=community_levels, algorithm=community_algorithm, llm=community_llm
            )
        return kg

    # -- following an index -------------------------------------------------------------------
    def _follow(
        self,
        index: Any,
        extractor: Any,
        resolve: bool,
        threshold: float,
        name_search: str,
        show_progress: bool,
    ) -> None:
        self._ledger = GraphLedger(
            self.embedder, resolve=resolve, threshold=threshold, name_search=name_search
        )
        self._extractor = extractor or HeuristicGraphExtractor()
        self._show_progress = show_progress
        if not self.store.counts().get("entities"):  # entity vectors kept from the start
            self._rows = _EntityRows(self.embedder.dim)
        index.follow(self, replay=True)
        self._show_progress = False

    def save_ledger(self, directory: str | Path) -> Path:
        """Save what each document contributed, so a reopened graph can follow again.

        Written atomically (like every semrag save). The store saves itself
        (``InMemoryGraphStore.save``; Neo4j keeps its data); see :meth:`resume`.

        Raises:
            ConfigError: if the graph does not follow an index.
        """
        from semrag._version import __version__

        if self._ledger is None:
            raise ConfigError(
                "only a graph built over an index (KnowledgeGraph.build) has a ledger"
            )
        manifest = {"kind": _LEDGER_KIND, "format_version": 1, "library_version": __version__}
        spelled, vectors = self._ledger.name_vectors()
        with atomic_directory(directory, manifest) as tmp:
            (tmp / "ledger.json").write_text(
                json.dumps(self._ledger.to_json(), ensure_ascii=False), encoding="utf-8"
            )
            # the names' vectors, so a resumed graph embeds no name again
            (tmp / "names.json").write_text(json.dumps(spelled, ensure_ascii=False), "utf-8")
            np.save(tmp / "names.npy", vectors, allow_pickle=False)
        return Path(directory)

    @classmethod
    def resume(
        cls, index: Any, store: Any, ledger: str | Path, *, extractor: Any = None
    ) -> KnowledgeGraph:
        """Reopen a saved graph over ``index`` and follow it again.

        The store holds the graph as it was when ``ledger`` was saved (give the same
        extractor as then). Documents the index changed meanwhile (added, deleted,
        replaced, or moved by a re-add) are caught up in one change before the graph
        follows, so it ends equal to a fresh build over the index's documents.
        Communities are marked stale.

        Raises:
            ConfigError: if ``ledger`` is not a saved ledger.
            StoreError: if it is damaged.
        """
        from semrag._version import __version__

        directory = Path(ledger)
        read_manifest(directory, kind=_LEDGER_KIND, format_version=1, library_version=__version__)
        kg = cls(store, index=index)
        try:
            data = json.loads((directory / "ledger.json").read_text(encoding="utf-8"))
            names = None
            if (directory / "names.json").exists():  # older saves: names are embedded again
                spelled = json.loads((directory / "names.json").read_text(encoding="utf-8"))
                names = (spelled, np.load(directory / "names.npy", allow_pickle=False))
            kg._ledger = GraphLedger.from_json(data, kg.embedder, names)
        except (KeyError, TypeError, ValueError, OSError) as exc:
            raise StoreError(f"{directory} does not hold a consistent ledger ({exc})") from exc
        kg._extractor = extractor or HeuristicGraphExtractor()
        index.follow(kg, replay=kg._catch_up)
        kg.communities_stale = True
        return kg

    def _catch_up(self, docs: list[IndexedDocument], version: int) -> Change:
        """The change from what the ledger recorded to the index's documents now."""
        from semrag.index.change import Change

        assert self._ledger is not None
        ledger = self._ledger
        recorded = {d: i for i, d in enumerate(ledger.doc_ids)}
        last = -1
        keep: set[str] = set()
        for doc in docs:  # unchanged documents must also keep their order
            i = recorded.get(doc.id)
            if i is not None and i > last and ledger.fingerprints.get(doc.id) == _print(doc):
                keep.add(doc.id)
                last = i
        added = tuple(d for d in docs if d.id not in keep)
        gone = {d for d in ledger.doc_ids if d not in keep}
        removed = tuple(_Recorded(d) for d in ledger.doc_ids if d in gone)
        return Change(version, added=added, removed=removed)  # type: ignore[arg-type]

    @property
    def following(self) -> bool:
        """Whether the graph follows its index (every change of the index reaches it)."""
        return self._ledger is not None and self.index is not None and self.index.follows(self)

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
        if self._ledger is None:
            raise ConfigError(
                "this KnowledgeGraph does not follow an index: build it with "
                "KnowledgeGraph.build(index)"
            )
        t0 = time.perf_counter()
        chunks = [c for d in change.added for c in d.chunks]
        show = self._show_progress
        found = iter([self._extractor.extract(c) for c in _progress(chunks, show, "extracting")])
        added = [(d.id, merge_extractions([next(found) for _ in d.chunks])) for d in change.added]
        self.timings["extract_s"] = time.perf_counter() - t0
        return lambda: self._commit(change, added)

    def _commit(self, change: Change, added: list[tuple[str, Extraction]]) -> None:
        t0 = time.perf_counter()
        diff = self._ledger.apply(added, change.removed_ids)
        stored = self._stored_vectors(diff.entities)
        vector_of = self._ledger_vector
        if stored is not None:
            row_of = {e.id: i for i, e in enumerate(diff.entities)}
            vector_of = lambda e: stored[row_of[e.id]]  # noqa: E731
        with self._lock:  # the entities' vectors follow the ledger (a failed write is
            if self._rows is not None:  # repaired from it)
                self._rows.update(diff.drop_entities, diff.entities, vector_of)
        for d in change.added:
            self._ledger.fingerprints[d.id] = _print(d)
        for _, extraction in added:
            self.notes.extend(extraction.notes)
        self.timings["resolve_s"] = time.perf_counter() - t0  # resolution and derivation
        t0 = time.perf_counter()
        self._write(diff, stored)
        self.timings["write_s"] = time.perf_counter() - t0
        with self._lock:
            self._vectors = None
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

    def _write(self, diff: GraphDiff, vectors: np.ndarray | None) -> None:
        if self._unsynced:
            self.repair()
            return
        try:
            self.store.update(**diff.as_kwargs(), **_vectors_kwarg(vectors))
        except Exception:
            self._unsynced = True
            raise

    def repair(self) -> None:
        """Rewrite the whole graph from the ledger (after a store failure)."""
        if self._ledger is None:
            raise ConfigError("repair() needs a graph that follows an index (it has no ledger)")
        everything = self._ledger.everything()
        vectors = self._stored_vectors(everything.entities)
        self.store.clear()
        self.store.update(**everything.as_kwargs(), **_vectors_kwarg(vectors))
        self._unsynced = False
        self.communities_stale = True
        self._follow_communities()

    def _stored_vectors(self, entities: Sequence[Entity]) -> np.ndarray | None:
        """The entities' name vectors for a store that keeps them (``None`` for others).

        A store with ``search_entities`` (:class:`~semrag.neo4j.Neo4jGraphStore`) keeps
        them, so a process that serves queries from it never embeds the graph's names.
        The vectors name resolution made are reused; only other names are embedded.
        """
        if self.embedder is None or not callable(getattr(self.store, "search_entities", None)):
            return None
        out = np.zeros((len(entities), self.embedder.dim), np.float32)
        todo = []
        for i, e in enumerate(entities):
            vec = self._ledger_vector(e)
            if vec is None:
                todo.append(i)
            else:
                out[i] = vec
        if todo:
            out[todo] = self.embedder.embed([entities[i].name for i in todo])
        return out

    def refresh_communities(self) -> list[Community]:
        """Rebuild the communities with the settings last used (after changes)."""
        return self.build_communities(**self._community_args)

    def add_chunks(
        self, chunks: Sequence[Chunk], extractor: Any = None, *, resolve: bool = True
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
        vectors = self._stored_vectors(extraction.entities)
        self.store.upsert(
            extraction.entities,
            extraction.relations,
            extraction.mentions,
            **_vectors_kwarg(vectors),
        )
        self.timings["write_s"] = time.perf_counter() - t0
        self.notes.extend(extraction.notes)
        with self._lock:
            self._vectors = self._rows = None  # rebuilt from the store at the next read
            self.version += 1

    def add_graph_documents(self, graph_documents: Iterable[Any], *, resolve: bool = False) -> int:
        """Ingest LangChain ``GraphDocument``s (e.g. from ``LLMGraphTransformer``).

        Nodes become entities (``id`` as the name, ``type``, a ``description`` property if
        any); relationships become relations (``type``, an ``evidence`` property if any);
        each document's source (``metadata["doc_id"]`` or ``"source"``, and
        ``start_index``) gives the chunk every node is mentioned in. Duck-typed: the core
        does not import LangChain. Returns the number of documents ingested.
        """
        parts = []
        n = 0
        for gd in graph_documents:
            n += 1
            src = getattr(gd, "source", None)
            meta = dict(getattr(src, "metadata", {}) or {})
            text = getattr(src, "page_content", "") or ""
            doc_id = str(meta.get("doc_id", meta.get("source", "")))
            start = meta.get("start_index")
            start = int(start) if isinstance(start, int) else 0
            ref = ChunkRef(doc_id, start, start + len(text))
            ents = []
            for node in gd.nodes:
                props = dict(getattr(node, "properties", {}) or {})
                ents.append(
                    Entity.of(str(node.id), str(node.type or ""), str(props.get("description", "")))
                )
            rels = []
            for rel in gd.relationships:
                props = dict(getattr(rel, "properties", {}) or {})
                a, b = entity_key(str(rel.source.id)), entity_key(str(rel.target.id))
                if a and b and a != b:
                    rels.append(
                        Relation(
                            a, b, str(rel.type or "RELATED_TO"), str(props.get("evidence", ""))
                        )
                    )
            ments = [Mention(e.id, ref) for e in ents] if doc_id else []
            parts.append(Extraction(ents, rels, ments))
        self._ingest(merge_extractions(parts), resolve, RESOLUTION_THRESHOLD)
        return n

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
        if self.embedder is not None and callable(getattr(self.store, "read_reports", None)):
            # a store that keeps the reports' vectors: global search embeds none of them
            vectors = self.embedder.embed([report_text(c) for c in comms]) if comms else None
            self.store.write_communities(comms, report_vectors=vectors)
        else:
            self.store.write_communities(comms)
        self.timings["reports_s"] = time.perf_counter() - t0
        with self._lock:
            self.version += 1
            self.communities_stale = False
        return comms

    # -- lookups --------------------------------------------------------------------------------
    def _served(self) -> bool:
        """Whether changes may come from elsewhere: no ledger here, and a store with a stamp."""
        return self._ledger is None and callable(getattr(self.store, "change_stamp", None))

    def current_version(self) -> Any:
        """The graph's version, as a key for what is derived from it.

        :attr:`version` counts the changes made through this object. A graph that follows
        no index here, over a store that stamps its writes (:class:`Neo4jGraphStore`: the
        graph a serving process reads while another process writes it), adds the store's
        change stamp (one read), so its caches see those changes too.
        """
        if not self._served():
            return self.version
        return (self.version, self.store.change_stamp())

    async def acurrent_version(self) -> Any:
        """Async twin of :meth:`current_version` (the stamp awaited on the async driver)."""
        if not self._served():
            return self.version
        return (self.version, await acall(self.store, Call("change_stamp", ())))

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
            if self._vectors_at != version:
                self._vectors = None
            if self._vectors is None and self._ledger is not None:
                if self._rows is None:  # a resumed graph, or one changed by hand
                    self._rows = _EntityRows(self.embedder.dim)
                    self._rows.update((), self.store.entities(), self._ledger_vector)
                self._vectors = self._rows.read(self.embedder)
            if self._vectors is None:
                ents = self.store.entities()
                vecs = (
                    self.embedder.embed([e.name for e in ents])
                    if ents
                    else np.zeros((0, self.embedder.dim), np.float32)
                )
                self._vectors = (ents, np.asarray(vecs, dtype=np.float32))
            self._vectors_at = version
            return self._vectors

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
        if self._served() and callable(getattr(self.store, "search_entities", None)):
            found = self.store.search_entities(vector, n, keep=keep)
            if found is not None:
                return self._with_bare(*found)
        return self.entity_vectors()

    async def asearch_entities(
        self, vector: np.ndarray, n: int, *, keep: int | None = None
    ) -> tuple[list[Entity], np.ndarray]:
        """Async twin of :meth:`search_entities` (the store's search awaited)."""
        if self._served() and callable(getattr(self.store, "search_entities", None)):
            call = Call("search_entities", (vector, n), kwargs={"keep": keep})
            found = await acall(self.store, call)
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

    def _ledger_vector(self, entity: Entity) -> np.ndarray | None:
        return None if self._ledger is None else self._ledger.name_vector(entity.id, entity.name)

    def __repr__(self) -> str:
        return f"KnowledgeGraph(store={self.store!r})"


_LEDGER_KIND = "semrag.GraphLedger"


def _vectors_kwarg(vectors: np.ndarray | None) -> dict[str, Any]:
    """``entity_vectors=`` for a store write, when there are vectors to store."""
    return {} if vectors is None else {"entity_vectors": vectors}


class _EntityRows:
    """The entities of a followed graph and their names' vectors, kept change by change.

    An entity a change re-derives under its id keeps its row (rewritten in place); a
    dropped entity's row is dead until the next :meth:`read` compacts the rows. A row
    gets the vector name resolution made for its name (:meth:`GraphLedger.name_vector`);
    a row with none (a new spelling, or a graph built with ``resolve=False``) is embedded
    at the next read, and only those rows are. So a change costs its own entities, and
    no query embeds the graph's names.
    """

    def __init__(self, dim: int) -> None:
        self.ents: list[Entity | None] = []
        self.row: dict[str, int] = {}
        self.vectors = GrowingRows(np.zeros((0, dim), np.float32))
        self.todo: set[int] = set()
        self.dead = 0

    def update(
        self,
        dropped: Iterable[str],
        entities: Sequence[Entity],
        vector_of: Callable[[Entity], np.ndarray | None],
    ) -> None:
        """Drop ``dropped``; set (or add) ``entities``."""
        for eid in dropped:
            i = self.row.pop(eid, None)
            if i is not None:
                self.ents[i] = None
                self.todo.discard(i)
                self.dead += 1
        fresh: list[np.ndarray] = []
        for e in entities:
            vec = vector_of(e)
            i = self.row.get(e.id)
            if i is None:
                i = self.row[e.id] = len(self.ents)
                self.ents.append(e)
                if vec is None:
                    vec = np.zeros(self.vectors.buf.shape[1], np.float32)
                    self.todo.add(i)
                fresh.append(vec)
                continue
            old, self.ents[i] = self.ents[i], e
            if vec is not None:
                self.vectors.buf[i] = vec  # rows are only read inside a followers read
                self.todo.discard(i)
            elif old is None or old.name != e.name:
                self.todo.add(i)
        if fresh:
            self.vectors.append(np.asarray(fresh, np.float32))

    def read(self, embedder: Any) -> tuple[list[Entity], np.ndarray]:
        """Every live entity and its vector: embeds the rows still without one, compacts."""
        if self.todo:
            rows = sorted(self.todo)
            names = [self.ents[i].name for i in rows]  # type: ignore[union-attr]
            self.vectors.buf[rows] = embedder.embed(names)
            self.todo.clear()
        if self.dead:
            keep = np.array([e is not None for e in self.ents], bool)
            self.vectors.keep(keep)
            self.ents = [e for e in self.ents if e is not None]
            self.row = {e.id: i for i, e in enumerate(self.ents)}  # type: ignore[union-attr]
            self.dead = 0
        return list(self.ents), self.vectors.view  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class _Recorded:
    """A document the ledger recorded, as a change's ``removed`` entry (only its id)."""

    id: str


def _print(doc: IndexedDocument) -> str:
    """A fingerprint of one version of a document: its text and chunk offsets."""
    h = hashlib.sha256(doc.doc.text.encode("utf-8", "surrogatepass"))
    h.update(json.dumps([[c.start, c.end] for c in doc.chunks]).encode())
    return h.hexdigest()


def _progress(items: Sequence[Any], show: bool, desc: str) -> Iterable[Any]:
    if not show:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, unit="chunk")


class _Prefetch:
    """An LLM extractor's replies fetched ahead: concurrently when asked async.

    Only an extractor that caches its replies (``_cached``, the LLM extractor's) gains from
    it; the sync build extracts chunk by chunk as it goes.
    """

    def __init__(self, extractor: Any) -> None:
        self.extractor = extractor

    def prefetch(self, chunks: Sequence[Chunk]) -> None:
        """Nothing to do: the build asks the extractor itself."""

    async def aprefetch(self, chunks: Sequence[Chunk]) -> None:
        many = getattr(self.extractor, "aextract_many", None)
        if many is not None and hasattr(self.extractor, "_cached"):
            await many(chunks)


def _check_build(
    resolve: Any, threshold: Any, name_search: Any, communities: Any, levels: Any, algorithm: Any
) -> None:
    validate_params(
        "KnowledgeGraph.build",
        {
            "resolve": [bool],
            "resolution_threshold": [Interval(REAL, -1, 1)],
            "name_search": [Options("auto", "exact", "hnsw")],
            "communities": [bool],
            "community_levels": [Interval(INT, 1, None)],
            "community_algorithm": [Options("auto", "leiden", "louvain")],
        },
        {
            "resolve": resolve,
            "resolution_threshold": threshold,
            "name_search": name_search,
            "communities": communities,
            "community_levels": levels,
            "community_algorithm": algorithm,
        },
    )
