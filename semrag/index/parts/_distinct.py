"""Identical vectors stored once in an HNSW graph: which stored row holds each index row.

Corpora repeat themselves: boilerplate (licences, footers, navigation), one text filed under
two ids, a document added again after an edit with most of its chunks unchanged. The dense
index's HNSW graph (:class:`~semrag.index.parts.dense.DenseIndex` with ``kind="hnsw"``) stores
and links a vector once, however many index rows hold it: a row reads its vector from the
graph's stored row ``serials[row]`` (:class:`~semrag._buffers.StoredRows`), a search finds
stored rows, and each found stored row stands for every live index row that holds it.

Equal vectors are found by a 64-bit hash of their bytes and confirmed byte for byte before
they share a stored row (two vectors whose hashes collide are both stored: a collision
costs a row, never a wrong vector).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from semrag.types import Floats, Ints

__all__ = ["DistinctRows", "row_hashes"]

Hashes = npt.NDArray[np.uint64]

_BLOCK = 1 << 13  # rows hashed (or compared) at a time: the 64-bit words stay small
# one odd multiplier per 32-bit word of a row: rows that differ in any word hash apart
# unless the differences cancel mod 2**64 (checked byte for byte before trusted)
_MIX = (np.random.default_rng(20261127).integers(0, 2**63, 4096, dtype=np.uint64) << 1) | 1


def row_hashes(rows: npt.ArrayLike) -> Hashes:
    """A 64-bit hash of each row's float32 bytes (equal rows, equal hashes)."""
    words = np.ascontiguousarray(rows, np.float32)
    words = words.reshape(words.shape[0], -1).view(np.uint32)
    mix = np.resize(_MIX, words.shape[1])
    out = np.empty(words.shape[0], np.uint64)
    for a in range(0, words.shape[0], _BLOCK):
        block = words[a : a + _BLOCK].astype(np.uint64)
        out[a : a + _BLOCK] = (block * mix).sum(axis=1, dtype=np.uint64)
    return out


class DistinctRows:
    """The writer's map from vectors to the stored rows of one HNSW graph.

    Index rows are numbered in order of addition (a version holds the first ``n``); stored
    rows are the graph's, in order of insertion. The state belongs to one graph and grows
    with it; versions that read the graph keep a reference to it and read only what lies
    below their own counts, so a change never alters what an earlier version sees.

    Attributes:
        graph: the FAISS graph whose stored rows these are.
        rows: index rows placed so far.
        first: stored row -> the first index row holding it (entries past a version's
            stored rows are not that version's; the array is replaced when it grows).
        twins: stored row -> every index row holding it, in increasing order, for the
            stored rows held by more than one index row (a tuple, replaced whole).
    """

    def __init__(self, graph: object) -> None:
        self.graph = graph
        self.rows = 0
        self.first = np.zeros(0, np.int64)
        self.twins: dict[int, tuple[int, ...]] = {}
        self._hashes = np.zeros(0, np.uint64)  # sorted
        self._serials = np.zeros(0, np.int64)  # the stored row of each hash

    @property
    def stored(self) -> int:
        """Rows the graph stores."""
        return int(self.graph.ntotal)  # type: ignore[attr-defined]

    @classmethod
    def of(
        cls, graph: object, serials: Ints, read: Callable[[Ints], Floats], stored: int
    ) -> DistinctRows:
        """The state of a graph already built: its first ``stored`` rows, held as ``serials``.

        For a graph loaded from disk, or when a staged change was dropped after placing
        rows. Costs a hash of every stored row.
        """
        state = cls(graph)
        hashes = np.concatenate(
            [
                row_hashes(read(np.arange(a, min(a + _BLOCK, stored))))
                for a in range(0, stored, _BLOCK)
            ]
            or [np.zeros(0, np.uint64)]
        )
        order = np.argsort(hashes, kind="stable")
        keep = np.ones(order.size, bool)  # a colliding hash keeps its first stored row
        keep[1:] = hashes[order][1:] != hashes[order][:-1]
        state._hashes, state._serials = hashes[order][keep], order[keep].astype(np.int64)
        state.first = np.full(stored, -1, np.int64)
        held, first = np.unique(serials, return_index=True)
        state.first[held] = first
        state._add_twins(serials, np.arange(serials.size), stored_before=0)
        state.rows = int(serials.size)
        return state

    def place(self, vectors: Floats, read: Callable[[Ints], Floats]) -> tuple[Ints, Ints]:
        """The stored rows of ``vectors``, the next index rows: ``(serials, novel)``.

        ``novel`` are the positions of the vectors the graph does not hold yet, in order;
        the caller inserts ``vectors[novel]`` into the graph, where they become stored rows
        ``stored, stored + 1, ...``. ``read(serials)`` gives stored rows, to confirm a match.
        """
        b, start = int(vectors.shape[0]), self.stored
        hashes = row_hashes(vectors)
        unique, rep, inv = np.unique(hashes, return_index=True, return_inverse=True)
        inv = inv.ravel()
        same = np.ones(b, bool)  # equal to its hash's first vector in the batch
        for a in range(0, b, _BLOCK):
            same[a : a + _BLOCK] = (
                vectors[a : a + _BLOCK] == vectors[rep[inv[a : a + _BLOCK]]]
            ).all(axis=1)
        found = np.full(unique.size, -1, np.int64)  # the stored row already holding it
        seen = np.zeros(unique.size, bool)  # its hash is in the table
        if self._hashes.size:
            pos = np.minimum(np.searchsorted(self._hashes, unique), self._hashes.size - 1)
            seen = self._hashes[pos] == unique
            hit = np.flatnonzero(seen)
            cand = self._serials[pos[hit]]
            equal = np.concatenate(
                [
                    (read(cand[a : a + _BLOCK]) == vectors[rep[hit[a : a + _BLOCK]]]).all(axis=1)
                    for a in range(0, hit.size, _BLOCK)
                ]
                or [np.zeros(0, bool)]
            )
            found[hit[equal]] = cand[equal]
        serials = np.where(same, found[inv], -1)
        lead = np.zeros(b, bool)
        lead[rep] = True
        novel = np.flatnonzero(~same | (lead & (serials < 0)))
        serials[novel] = start + np.arange(novel.size)
        follow = serials < 0  # a later copy of a vector new in this batch
        serials[follow] = serials[rep[inv[follow]]]
        fresh = ~seen  # new hashes go in the table (a colliding one keeps its first row)
        fresh_h, fresh_s = unique[fresh], serials[rep[fresh]]
        at = np.searchsorted(self._hashes, fresh_h)
        self._hashes = np.insert(self._hashes, at, fresh_h)
        self._serials = np.insert(self._serials, at, fresh_s)
        rows = self.rows + np.arange(b)
        if start + novel.size > self.first.size:
            grown = np.full(max(start + novel.size, 2 * self.first.size, 64), -1, np.int64)
            grown[: self.first.size] = self.first
            self.first = grown
        self.first[start + np.arange(novel.size)] = rows[novel]
        self._add_twins(serials, rows, stored_before=start)
        self.rows += b
        return serials, novel

    def _add_twins(self, serials: Ints, rows: Ints, *, stored_before: int) -> None:
        """Record the rows of stored rows held more than once.

        ``rows`` hold ``serials``; stored rows below ``stored_before`` were held before
        (by their first row at least), the others only by these rows.
        """
        if not serials.size:
            return
        order = np.argsort(serials, kind="stable")
        held, rows = serials[order], rows[order]
        cuts = np.flatnonzero(held[1:] != held[:-1]) + 1
        starts = np.concatenate([[0], cuts])
        ends = np.concatenate([cuts, [held.size]])
        many = (ends - starts > 1) | (held[starts] < stored_before)
        twins, first = self.twins, self.first
        for s, a, z in zip(
            held[starts[many]].tolist(), starts[many].tolist(), ends[many].tolist(), strict=True
        ):
            before = twins.get(s)
            if before is None:
                before = (int(first[s]),) if s < stored_before else ()
            twins[s] = before + tuple(rows[a:z].tolist())

    def rows_of(
        self, found: Ints, top: Floats, k: int, n: int, dead: npt.NDArray[np.bool_] | None
    ) -> tuple[Ints, Floats]:
        """The rows of the stored rows a search found, best first, ``-1`` past the hits.

        For a version of ``n`` rows with ``dead`` removed: a stored row held by several of its
        live rows stands for each of them (equal scores: the lower row first).
        """
        rows = np.where(found >= 0, self.first[np.maximum(found, 0)], -1)
        twins = self.twins
        if not twins:
            return rows, top
        for i in range(found.shape[0]):
            hits = found[i].tolist()
            if not any(s in twins for s in hits):
                continue
            pairs: list[tuple[float, int]] = []
            for s, score in zip(hits, top[i].tolist(), strict=True):
                held = twins.get(s, (int(self.first[s]),)) if s >= 0 else ()
                pairs += [(-score, r) for r in held if r < n and (dead is None or not dead[r])]
            pairs.sort()
            best = pairs[:k]
            rows[i], top[i] = -1, -np.inf
            rows[i, : len(best)] = [r for _, r in best]
            top[i, : len(best)] = [-score for score, _ in best]
        return rows, top
