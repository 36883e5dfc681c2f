"""A knowledge graph that follows an index: stage and commit each change, keep its ledger."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from semrag._validation import offers
from semrag.errors import ConfigError, StoreError
from semrag.graph._doc_columns import DocColumns
from semrag.graph.extract import (
    HeuristicGraphExtractor,
    merge_extractions,
)
from semrag.graph.ledger import GraphDiff, GraphLedger
from semrag.graph.types import Community, Entity, EntityNameSearch
from semrag.index.persist import atomic_directory, read_manifest

if TYPE_CHECKING:
    from semrag.graph.knowledge import KnowledgeGraph
    from semrag.index.change import Change, IndexedDocument
from semrag.graph._graph_rows import (
    LEDGER_KIND,
    EntityRows,
    Recorded,
    doc_print,
    progress_over,
    vectors_kwarg,
)


class Following:
    """The half of :class:`~semrag.graph.KnowledgeGraph` that follows an index's changes."""

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
            self._rows = EntityRows(self.embedder.dim)
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
        manifest = {"kind": LEDGER_KIND, "format_version": 1, "library_version": __version__}
        spelled, vectors = self._ledger.name_vectors()
        with atomic_directory(directory, manifest) as tmp:
            (tmp / "ledger.json").write_text(
                json.dumps(self._ledger.to_json(), ensure_ascii=False), encoding="utf-8"
            )
            # the names' vectors, so a resumed graph embeds no name again
            (tmp / "names.json").write_text(json.dumps(spelled, ensure_ascii=False), "utf-8")
            np.save(tmp / "names.npy", vectors, allow_pickle=False)
            if self.communities_built:  # so a resumed graph keeps its communities following
                settings = {k: v for k, v in self._community_args.items() if k != "llm"}
                settings["llm"] = self._community_args.get("llm") is not None
                (tmp / "communities.json").write_text(json.dumps(settings), encoding="utf-8")
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
        Communities built with extractive reports follow again (detected with the saved
        settings, as a fresh build would); those whose reports came from an LLM are marked
        stale until :meth:`refresh_communities`.

        Raises:
            ConfigError: if ``ledger`` is not a saved ledger.
            StoreError: if it is damaged.
        """
        from semrag._version import __version__

        directory = Path(ledger)
        read_manifest(directory, kind=LEDGER_KIND, format_version=1, library_version=__version__)
        kg = cls(store, index=index)
        try:
            data = json.loads((directory / "ledger.json").read_text(encoding="utf-8"))
            names = None
            if (directory / "names.json").exists():  # older saves: names are embedded again
                spelled = json.loads((directory / "names.json").read_text(encoding="utf-8"))
                names = (spelled, np.load(directory / "names.npy", allow_pickle=False))
            kg._ledger = GraphLedger.from_json(data, kg.embedder, names)
            settings = None
            if (directory / "communities.json").exists():
                settings = json.loads((directory / "communities.json").read_text("utf-8"))
        except (KeyError, TypeError, ValueError, OSError) as exc:
            raise StoreError(f"{directory} does not hold a consistent ledger ({exc})") from exc
        kg._extractor = extractor or HeuristicGraphExtractor()
        caught_up: list[Change] = []

        def replay(docs: list[IndexedDocument], version: int) -> Change:
            caught_up.append(kg._catch_up(docs, version))
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
            if i is not None and i > last and ledger.fingerprints.get(doc.id) == doc_print(doc):
                keep.add(doc.id)
                last = i
        added = tuple(d for d in docs if d.id not in keep)
        gone = {d for d in ledger.doc_ids if d not in keep}
        removed = tuple(Recorded(d) for d in ledger.doc_ids if d in gone)
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
        found = iter(progress_over(chunks, self._show_progress, "extracting"))
        added, notes = [], []
        for d in change.added:  # a document's records as columns once it is extracted
            merged = merge_extractions([self._extractor.extract(next(found)) for _ in d.chunks])
            added.append((d.id, DocColumns(0, merged)))
            notes.extend(merged.notes)
        next(found, None)  # the end of the chunks (closes the progress bar)
        self.timings["extract_s"] = time.perf_counter() - t0
        return lambda: self._commit(change, added, notes)

    def _commit(
        self, change: Change, added: list[tuple[str, DocColumns]], notes: list[str]
    ) -> None:
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
            self._ledger.fingerprints[d.id] = doc_print(d)
        self.notes.extend(notes)
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
            self.store.update(**diff.as_kwargs(), **vectors_kwarg(vectors))
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
        self.store.update(**everything.as_kwargs(), **vectors_kwarg(vectors))
        self._unsynced = False
        self.communities_stale = True
        self._follow_communities()

    def _stored_vectors(self, entities: Sequence[Entity]) -> np.ndarray | None:
        """The entities' name vectors for a store that keeps them (``None`` for others).

        A store with ``search_entities`` (:class:`~semrag.neo4j.Neo4jGraphStore`) keeps
        them, so a process that serves queries from it never embeds the graph's names.
        The vectors name resolution made are reused; only other names are embedded.
        """
        if self.embedder is None or not offers(self.store, EntityNameSearch):
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
