"""What a knowledge graph keeps to follow an index: its ledger, extractor and store writes.

:class:`GraphFollower` owns the per-document ledger (:mod:`semrag.graph.ledger`), the
extractor that reads a change's added chunks, and whether the store missed a write. It
turns a change into a :class:`~semrag.graph.ledger.GraphDiff` and writes it;
:class:`~semrag.graph.KnowledgeGraph` (the part the index follows) keeps its entity
vectors, version and communities in step with what it returns.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from semrag._validation import offers
from semrag.errors import StoreError
from semrag.graph._doc_columns import DocColumns
from semrag.graph._graph_rows import (
    LEDGER_KIND,
    Recorded,
    doc_print,
    progress_over,
    vectors_kwarg,
)
from semrag.graph.extract import GraphExtractor, merge_extractions
from semrag.graph.ledger import GraphDiff, GraphLedger
from semrag.graph.types import Entity, EntityNameSearch, GraphStore
from semrag.index.storage.persist import Saved, atomic_directory, load_saved

if TYPE_CHECKING:
    from semrag.embeddings import Embedder
    from semrag.index.change import Change, IndexedDocument

Extracted = tuple[list[tuple[str, DocColumns]], list[str]]
"""A change's added documents as ledger columns, and the extractor's notes."""


def stored_vectors(
    store: GraphStore,
    embedder: Embedder | None,
    entities: Sequence[Entity],
    known: GraphLedger | None = None,
) -> np.ndarray | None:
    """The entities' name vectors for a store that keeps them (``None`` for others).

    A store with ``search_entities`` (:class:`~semrag.neo4j.Neo4jGraphStore`) keeps them,
    so a process that serves queries from it never embeds the graph's names. The vectors
    name resolution made (``known``'s) are reused; only other names are embedded.
    """
    if embedder is None or not offers(store, EntityNameSearch):
        return None
    out = np.zeros((len(entities), embedder.dim), np.float32)
    todo = []
    for i, e in enumerate(entities):
        vec = None if known is None else known.name_vector(e.id, e.name)
        if vec is None:
            todo.append(i)
        else:
            out[i] = vec
    if todo:
        out[todo] = embedder.embed([entities[i].name for i in todo])
    return out


class GraphFollower:
    """The ledger, extractor and store writes of a graph that follows an index.

    Args:
        store: the graph's store (written by :meth:`write`).
        embedder: embeds entity names (for a store that keeps their vectors).
        ledger: what each document contributed.
        extractor: reads the chunks of added documents.
        show_progress: a progress bar over the chunks of the next change.
    """

    def __init__(
        self,
        store: GraphStore,
        embedder: Embedder,
        ledger: GraphLedger,
        extractor: GraphExtractor,
        *,
        show_progress: bool = False,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.ledger = ledger
        self.extractor = extractor
        self.show_progress = show_progress
        self._unsynced = False  # a write failed: the next one rewrites the store whole

    def extract(self, change: Change) -> Extracted:
        """Read the change's added chunks (the expensive part; it reads nothing kept)."""
        chunks = [c for d in change.added for c in d.chunks]
        found = iter(progress_over(chunks, self.show_progress, "extracting"))
        added, notes = [], []
        for d in change.added:  # a document's records as columns once it is extracted
            merged = merge_extractions([self.extractor.extract(next(found)) for _ in d.chunks])
            added.append((d.id, DocColumns(0, merged)))
            notes.extend(merged.notes)
        next(found, None)  # the end of the chunks (closes the progress bar)
        return added, notes

    def diff(self, change: Change, added: list[tuple[str, DocColumns]]) -> GraphDiff:
        """Record ``change`` in the ledger; what the store must change for it."""
        diff = self.ledger.apply(added, change.removed_ids)
        for d in change.added:
            self.ledger.fingerprints[d.id] = doc_print(d)
        return diff

    def vectors(self, entities: Sequence[Entity]) -> np.ndarray | None:
        """The entities' name vectors for the store (see :func:`stored_vectors`)."""
        return stored_vectors(self.store, self.embedder, entities, self.ledger)

    def write(self, diff: GraphDiff, vectors: np.ndarray | None) -> bool:
        """Write ``diff`` to the store; ``True`` when it rewrote the store whole instead.

        After a failed write the store is rewritten whole from the ledger.

        Raises:
            StoreError: (or the store's error) if the write fails; the next write repairs.
        """
        if self._unsynced:
            self.rewrite()
            return True
        try:
            self.store.update(**diff.as_kwargs(), **vectors_kwarg(vectors))
        except Exception:
            self._unsynced = True
            raise
        return False

    def rewrite(self) -> None:
        """Rewrite the whole store from the ledger."""
        everything = self.ledger.everything()
        vectors = self.vectors(everything.entities)
        self.store.clear()
        self.store.update(**everything.as_kwargs(), **vectors_kwarg(vectors))
        self._unsynced = False

    def name_vector(self, entity: Entity) -> np.ndarray | None:
        """The vector name resolution made for ``entity``'s name, if any."""
        return self.ledger.name_vector(entity.id, entity.name)

    def catch_up(self, docs: list[IndexedDocument], version: int) -> Change:
        """The change from what the ledger recorded to the index's documents now."""
        from semrag.index.change import Change

        ledger = self.ledger
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

    def save(self, directory: str | Path, communities: dict[str, Any] | None) -> Path:
        """Write the ledger, its names' vectors and the community settings, atomically."""
        from semrag._version import __version__

        manifest = {"kind": LEDGER_KIND, "format_version": 1, "library_version": __version__}
        spelled, vectors = self.ledger.name_vectors()
        with atomic_directory(directory, manifest) as draft:
            tmp = draft.folder
            (tmp / "ledger.json").write_text(
                json.dumps(self.ledger.to_json(), ensure_ascii=False), encoding="utf-8"
            )
            # the names' vectors, so a resumed graph embeds no name again
            (tmp / "names.json").write_text(json.dumps(spelled, ensure_ascii=False), "utf-8")
            np.save(tmp / "names.npy", vectors, allow_pickle=False)
            if communities is not None:  # so a resumed graph keeps its communities following
                (tmp / "communities.json").write_text(json.dumps(communities), encoding="utf-8")
        return Path(directory)

    @classmethod
    def load(
        cls, directory: str | Path, store: GraphStore, embedder: Embedder, extractor: GraphExtractor
    ) -> tuple[GraphFollower, dict[str, Any] | None]:
        """A follower from a :meth:`save`, and the saved community settings (or ``None``).

        Raises:
            ConfigError: if ``directory`` is not a saved ledger.
            StoreError: if it is damaged.
        """
        from semrag._version import __version__

        def read(saved: Saved) -> tuple[GraphLedger, dict[str, Any] | None]:
            folder = saved.folder
            try:
                data = json.loads((folder / "ledger.json").read_text(encoding="utf-8"))
                names = None
                if (folder / "names.json").exists():  # older saves: names are embedded again
                    spelled = json.loads((folder / "names.json").read_text(encoding="utf-8"))
                    names = (spelled, np.load(folder / "names.npy", allow_pickle=False))
                ledger = GraphLedger.from_json(data, embedder, names)
                settings = None
                if (folder / "communities.json").exists():
                    settings = json.loads((folder / "communities.json").read_text("utf-8"))
            except (KeyError, TypeError, ValueError, OSError) as exc:
                raise StoreError(f"{folder} does not hold a consistent ledger ({exc})") from exc
            return ledger, settings

        ledger, settings = load_saved(
            directory, read, kind=LEDGER_KIND, format_version=1, library_version=__version__
        )
        return cls(store, embedder, ledger, extractor), settings
