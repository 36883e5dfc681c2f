"""Helpers of the knowledge graph: entity vector rows, progress, prefetching, build checks."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from semrag._buffers import GrowingRows
from semrag._validation import INT, REAL, Interval, Options, validate_params
from semrag.graph.types import Entity

if TYPE_CHECKING:
    from semrag.embeddings import Embedder
    from semrag.index.change import IndexedDocument


LEDGER_KIND = "semrag.GraphLedger"


def vectors_kwarg(vectors: np.ndarray | None) -> dict[str, Any]:
    """``entity_vectors=`` for a store write, when there are vectors to store."""
    return {} if vectors is None else {"entity_vectors": vectors}


class EntityRows:
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

    def read(self, embedder: Embedder) -> tuple[list[Entity], np.ndarray]:
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
class Recorded:
    """A document the ledger recorded, as a change's ``removed`` entry (only its id)."""

    id: str


def doc_print(doc: IndexedDocument) -> str:
    """A fingerprint of one version of a document: its text and chunk offsets."""
    h = hashlib.sha256(doc.doc.text.encode("utf-8", "surrogatepass"))
    h.update(json.dumps([[c.start, c.end] for c in doc.chunks]).encode())
    return h.hexdigest()


def progress_over(items: Sequence[Any], show: bool, desc: str) -> Iterable[Any]:
    if not show:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, unit="chunk")


def check_build(
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
