"""The unit vectors of entity names, for the range searches of name resolution."""

from __future__ import annotations

from typing import Any

import numpy as np

from semrag._buffers import GrowingRows
from semrag.index.parts.knn import NodeANN

__all__ = ["NameIndex"]


class NameIndex:
    """Unit vectors of the names present, for range searches.

    Rows are appended and a removed name's row is marked dead (compacted once half the
    rows are dead), so a change costs its own names, never a copy of every vector.

    ``mode="exact"`` compares the asked names with every name. ``mode="hnsw"`` finds the
    candidates in an HNSW index over the rows (a name costs ``log`` of the names); it can
    miss a pair that a fresh build finds, and the graph then depends on the order of the
    changes. ``mode="auto"`` is exact while a search compares at most :attr:`BUDGET` pairs
    (asked names x names) and builds the HNSW index the first time one would compare more
    (a large fresh build), keeping it from then on.

    Each row is held once: as float64 in a buffer while the search is exact, and in the
    HNSW index's storage (float32, read in place) once that index is built; the buffer is
    then dropped. Similarities are computed in float64 from the rows as held, so in HNSW
    mode from their float32 values (a difference below 1e-7 from the float64 rows).
    """

    _DEPTH = 32  # first HNSW search depth; doubled while every hit is above the threshold
    BUDGET = 10**9  # most pairs an "auto" search compares exactly (about 30k x 30k names)

    def __init__(self, *, mode: str = "exact") -> None:
        self._row: dict[str, int] = {}
        self._keys: list[str | None] = []
        self._vectors: GrowingRows | None = None  # the rows while there is no HNSW index
        self._dead: list[int] = []
        self._mode = mode
        self._ann: NodeANN | None = None  # once built: row i is its serial i, held by it

    def __contains__(self, key: object) -> bool:
        return key in self._row

    def add(self, keys: list[str], vectors: np.ndarray) -> None:
        rows = np.asarray(vectors, dtype=np.float64)
        first = len(self._keys)
        if self._mode == "hnsw" and self._ann is None and self._vectors is None:
            self._ann = NodeANN(rows.shape[1])
        if self._ann is not None:
            known, rows32 = self._ann, rows.astype(np.float32)
            self._ann, serials = known.added(rows32)
            if serials.size and serials[0] != first:  # out of step (a failed change): rebuild
                old = np.asarray(known.rows(np.arange(first, dtype=np.int64)), np.float32)
                self._ann = known.rebuild(np.concatenate([old, rows32]))
                self._ann = self._ann.removed(np.asarray(self._dead, np.int64))
        else:
            if self._vectors is None:
                self._vectors = GrowingRows(rows[:0])
            self._vectors.append(rows)
        self._row.update((k, first + i) for i, k in enumerate(keys))
        self._keys += keys

    def _read(self, rows: Any) -> np.ndarray:
        """The rows numbered ``rows`` (an int, or row numbers of any shape) as float64."""
        at = np.asarray(rows, np.int64)
        if self._ann is not None:
            read = np.asarray(self._ann.rows(at.ravel()), np.float64)
            return read.reshape(*at.shape, self._ann.dim)
        assert self._vectors is not None
        return self._vectors.view[at]

    def vector(self, key: str) -> np.ndarray | None:
        """The unit vector of ``key``'s name, or ``None`` if the key is not here."""
        row = self._row.get(key)
        return None if row is None else self._read(row)

    def rows(self) -> tuple[list[str], np.ndarray]:
        """The keys present and their vectors (a copy of the live rows, in row order)."""
        alive = [i for i, k in enumerate(self._keys) if k is not None]
        if not alive:
            return [], np.zeros((0, 0))
        return [self._keys[i] for i in alive], self._read(alive)  # type: ignore[misc]

    def held_bytes(self) -> tuple[int, int]:
        """Bytes of the name vectors held as rows, and of the HNSW index (full capacity)."""
        rows = self._vectors.buf.nbytes if self._vectors is not None else 0
        return rows, self._ann.nbytes if self._ann is not None else 0

    @property
    def approximate(self) -> bool:
        """Whether searches use the HNSW index (``"hnsw"``, or ``"auto"`` once it is built)."""
        return self._ann is not None

    def remove(self, key: str) -> None:
        row = self._row.pop(key, None)
        if row is None:
            return
        self._keys[row] = None
        self._dead.append(row)
        if self._ann is not None:
            self._ann = self._ann.removed(np.array([row]))
        if 2 * len(self._row) < len(self._keys):  # half the rows dead: compact
            keep = np.ones(len(self._keys), bool)
            keep[self._dead] = False
            live = np.flatnonzero(keep)
            if self._ann is not None:
                self._ann = self._ann.rebuild(np.asarray(self._ann.rows(live), np.float32))
            elif self._vectors is not None:
                self._vectors.keep(keep)
            kept = [k for k in self._keys if k is not None]
            self._keys = list(kept)
            self._row = {k: i for i, k in enumerate(kept)}
            self._dead = []

    def _build_ann(self) -> None:
        """Move the rows into an HNSW index (from now on their one home)."""
        if self._vectors is None:
            return
        ann = NodeANN(self._vectors.view.shape[1]).rebuild(self._vectors.view.astype(np.float32))
        self._ann = ann.removed(np.asarray(self._dead, np.int64))
        self._vectors = None

    def within(self, keys: list[str], threshold: float) -> dict[str, list[str]]:
        """For each key, the other names at least ``threshold`` similar (in row order)."""
        asked = [k for k in keys if k in self._row]
        if not asked:
            return {}
        if self._ann is None and self._mode == "auto" and len(asked) * len(self._row) > self.BUDGET:
            self._build_ann()  # a search too large to run exactly: from now on, HNSW
        if self._ann is not None:
            return self._within_ann(asked, threshold)
        assert self._vectors is not None
        base = self._vectors.view
        alive = np.ones(base.shape[0], bool)
        alive[self._dead] = False
        out: dict[str, list[str]] = {}
        step = max(1, (1 << 22) // max(base.shape[0], 1))
        for a in range(0, len(asked), step):
            part = asked[a : a + step]
            sims = base[[self._row[k] for k in part]] @ base.T
            for key, row in zip(part, sims >= threshold, strict=True):
                hits = np.flatnonzero(row & alive)
                out[key] = [k for j in hits if (k := self._keys[j]) is not None and k != key]
        return out

    _READ = 1 << 15  # most hit rows read from the HNSW index at once (100 MB as float64)

    def _within_ann(self, asked: list[str], threshold: float) -> dict[str, list[str]]:
        """:meth:`within` from the HNSW index: hits checked in float64, deepened as needed."""
        assert self._ann is not None
        out: dict[str, list[str]] = {}
        rows = np.array([self._row[k] for k in asked], np.int64)
        todo, depth = np.arange(rows.size), self._DEPTH
        live = len(self._row)
        while todo.size:
            deeper: list[int] = []
            block = max(1, self._READ // depth)
            for a in range(0, todo.size, block):
                part = todo[a : a + block]
                queries = self._read(rows[part])
                hits, fast = self._ann.search(queries.astype(np.float32), depth)
                hit_rows = self._read(np.maximum(hits, 0))  # one read for the block
                for i, query, hit, score, rows_of_hit in zip(
                    part.tolist(), queries, hits, fast, hit_rows, strict=True
                ):
                    found = hit >= 0
                    sims = rows_of_hit[found] @ query
                    near = sorted(int(j) for j in hit[found][sims >= threshold])
                    key = asked[i]
                    out[key] = [k for j in near if (k := self._keys[j]) is not None and k != key]
                    if found.sum() == depth and score[-1] >= threshold - 1e-4 and depth < live:
                        deeper.append(i)  # every hit is near: there may be more
            todo, depth = np.asarray(deeper, np.int64), 2 * depth
        return out
