"""Exact (and, for big batches, HNSW) top-k neighbour lists that other groups provide.

The semantic similarity graph keeps, for every window node, its best neighbours in other
documents, and for every document its best theme bridges. Both are "top ``k`` rows of
another group above a floor", kept up to date as rows come and go. These functions are
the one implementation the fresh build and every incremental change share, so that an
index grown by many small changes equals one built in a single pass:

* a float32 matrix product shortlists candidates; their similarities are then computed
  in float64 and rounded to float32, so a pair has the same value whatever the shape of
  the batch it was computed in (BLAS results may differ in the last bit between shapes);
* ties are broken by the lower row number (a total order), so the top ``k`` of a union
  equals the top ``k`` of the union of each part's top ``k`` (what :func:`merge_top`
  relies on).

Lists are fixed-width arrays: ``cols`` (``-1`` for an empty slot) and ``vals`` (``-inf``
for an empty slot), best first.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from semrag._buffers import StoredRows, hnsw_graph, insert_rows
from semrag._deps import faiss as _faiss
from semrag._rwlock import RWLock
from semrag.errors import StoreError
from semrag.types import Floats, Ints

__all__ = ["NodeANN", "empty_lists", "hnsw_top", "merge_top", "top_neighbours"]


_CELLS = 1 << 23  # float32 similarity cells per block (32 MB)
_ROWS = 1024  # most query rows per block
FLOAT32_TOLERANCE = 5e-5  # bound on a float32 dot product's error for unit vectors (d * eps32)


def empty_lists(n: int, k: int) -> tuple[Ints, Floats]:
    """``n`` empty lists of width ``k``."""
    return np.full((n, k), -1, np.int64), np.full((n, k), -np.inf, np.float32)


def exact_similarities(queries: Floats, base: Floats) -> Floats:
    """``queries[i] . base[i, j]`` in float64, rounded to float32: the stored value of a pair.

    Args:
        queries: shape ``(m, d)``.
        base: shape ``(m, c, d)``, the candidates of each query.
    """
    q = queries.astype(np.float64)
    return np.einsum("id,icd->ic", q, base.astype(np.float64)).astype(np.float32)


def _select(
    sims: Floats, queries: Floats, base: Floats, k: int, floor: float
) -> tuple[Ints, Floats]:
    """Per row, the columns of the ``k`` largest finite exact values ``>= floor``.

    ``sims`` is the float32 ``queries @ base.T`` with excluded cells set to ``-inf``.

    The float32 product only shortlists: every cell within its error of the ``k``-th value
    is a candidate, and candidates are ranked by :func:`exact_similarities` (ties: lower
    column). So a pair ranks the same in any batch.
    """
    rows, n = sims.shape
    cols, vals = empty_lists(rows, k)
    kk = min(k, n)
    if not rows or kk == 0:
        return cols, vals
    cand = (
        np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
        if kk < n
        else np.tile(np.arange(n), (rows, 1))
    )
    t = np.take_along_axis(sims, cand, axis=1).min(axis=1)
    cut = np.maximum(
        np.where(np.isfinite(t), t - FLOAT32_TOLERANCE, -np.inf), floor - FLOAT32_TOLERANCE
    )
    # With cut = -inf the k-th value is -inf: every finite cell is already in cand.
    width = np.where(np.isfinite(cut), (sims >= cut[:, None]).sum(axis=1), kk)
    wide = np.flatnonzero(width > kk)  # near-ties at the boundary: shortlist more
    if wide.size:
        w = int(width[wide].max())
        extra = np.argpartition(-sims[wide], w - 1, axis=1)[:, :w] if w < n else None
        padded = np.full((rows, w), -1, np.int64)
        padded[:, :kk] = cand
        padded[wide] = extra if extra is not None else np.arange(n)
        cand = padded
    fast = np.where(cand >= 0, np.take_along_axis(sims, np.maximum(cand, 0), axis=1), -np.inf)
    exact = np.where(
        np.isfinite(fast), exact_similarities(queries, base[np.maximum(cand, 0)]), -np.inf
    )
    order = np.lexsort((np.where(cand >= 0, cand, n), -exact), axis=1)[:, :kk]
    cand = np.take_along_axis(cand, order, axis=1)
    exact = np.take_along_axis(exact, order, axis=1)
    ok = np.isfinite(exact) & (exact >= floor) & (cand >= 0)
    cols[:, :kk] = np.where(ok, cand, -1)
    vals[:, :kk] = np.where(ok, exact, -np.inf)
    return cols, vals


def top_neighbours(
    queries: Floats,
    query_groups: Ints,
    base: Floats,
    base_groups: Ints,
    k: int,
    floor: float,
) -> tuple[Ints, Floats]:
    """Exact top-``k`` rows of ``base`` in another group than each query, ``>= floor``.

    Args:
        queries: unit vectors, shape ``(m, d)``.
        query_groups: the group of each query (a row of the same group is never a
            neighbour).
        base: unit vectors, shape ``(n, d)``.
        base_groups: the group of each base row.
        k: list width.
        floor: least similarity kept.

    Returns:
        ``(cols, vals)`` of shape ``(m, k)``: rows of ``base``, best first.
    """
    m, n = queries.shape[0], base.shape[0]
    cols, vals = empty_lists(m, k)
    if not m or not n or not k:
        return cols, vals
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    base = np.ascontiguousarray(base, dtype=np.float32)
    sorted_groups = bool((base_groups[1:] >= base_groups[:-1]).all())
    step = max(1, min(_ROWS, _CELLS // n))
    for a in range(0, m, step):
        b = min(m, a + step)
        sims = queries[a:b] @ base.T
        _exclude_own_group(sims, query_groups[a:b], base_groups, sorted_groups)
        cols[a:b], vals[a:b] = _select(sims, queries[a:b], base, k, floor)
    return cols, vals


def _exclude_own_group(
    sims: Floats, query_groups: Ints, base_groups: Ints, sorted_groups: bool
) -> None:
    """Set ``sims[i, j] = -inf`` where query ``i`` and base row ``j`` share a group."""
    if not sorted_groups:
        sims[query_groups[:, None] == base_groups[None, :]] = -np.inf
        return
    for g in np.unique(query_groups):  # a group is one run of columns: slice it
        lo, hi = (
            np.searchsorted(base_groups, [g, g], side="left")[0],
            np.searchsorted(base_groups, g, side="right"),
        )
        if hi > lo:
            sims[np.flatnonzero(query_groups == g)[:, None], np.arange(lo, hi)] = -np.inf


def merge_top(
    cols: Ints, vals: Floats, more_cols: Ints, more_vals: Floats, k: int
) -> tuple[Ints, Floats]:
    """The top ``k`` of two sets of lists, row by row (ties: lower column)."""
    c = np.concatenate([cols, more_cols], axis=1)
    v = np.concatenate([vals, more_vals], axis=1)
    key_cols = np.where(c >= 0, c, np.iinfo(np.int64).max)
    order = np.lexsort((key_cols, -v), axis=1)[:, :k]
    return np.take_along_axis(c, order, axis=1), np.take_along_axis(v, order, axis=1)


def hnsw_top(
    queries: Floats,
    query_groups: Ints,
    base: Floats,
    base_groups: Ints,
    k: int,
    floor: float,
) -> tuple[Ints, Floats]:
    """Approximate :func:`top_neighbours` with a FAISS HNSW index, for very big batches.

    ``base_groups`` must be contiguous runs (the rows of a document are adjacent). One
    batched search goes deep enough to see past a query's own group; the few rows still
    short of ``k`` are searched again with their group's row range excluded.
    """
    faiss = _faiss()
    m, n = queries.shape[0], base.shape[0]
    cols, vals = empty_lists(m, k)
    if not m or not n or not k:
        return cols, vals
    index = faiss.IndexHNSWFlat(base.shape[1], 16, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 40
    index.add(np.ascontiguousarray(base, dtype=np.float32))
    starts = np.flatnonzero(np.r_[True, base_groups[1:] != base_groups[:-1]])
    ends = np.r_[starts[1:], n]
    run_of = {int(base_groups[s]): (int(s), int(e)) for s, e in zip(starts, ends, strict=True)}
    depth = min(n, k + min(int((ends - starts).max()) - 1, 64))
    index.hnsw.efSearch = max(64, depth)
    q = np.ascontiguousarray(queries, dtype=np.float32)
    v, c = index.search(q, depth)
    other = (c >= 0) & (base_groups[np.maximum(c, 0)] != query_groups[:, None])
    take = other & (np.cumsum(other, axis=1) <= k) & (v >= floor)
    for r in range(m):  # compact each row's kept hits to the front
        got = np.flatnonzero(take[r])
        cols[r, : got.size], vals[r, : got.size] = c[r, got], v[r, got]
    own = np.array([run_of.get(int(g), (0, 0)) for g in query_groups]).reshape(-1, 2)
    short = np.flatnonzero(other.sum(axis=1) < np.minimum(k, n - (own[:, 1] - own[:, 0])))
    for r in short.tolist():
        a, b = int(own[r, 0]), int(own[r, 1])
        params = faiss.SearchParametersHNSW(sel=faiss.IDSelectorNot(faiss.IDSelectorRange(a, b)))
        params.efSearch = max(64, 4 * k)
        v2, c2 = index.search(q[r : r + 1], k, params=params)
        keep = (c2[0] >= 0) & (v2[0] >= floor)
        cols[r], vals[r] = -1, -np.inf
        cols[r, : keep.sum()], vals[r, : keep.sum()] = c2[0][keep], v2[0][keep]
    return cols, vals


class HNSWGraph(Protocol):
    """What semrag uses of a FAISS HNSW index (FAISS ships no type stubs)."""

    d: int
    ntotal: int
    hnsw: Any
    storage: Any

    def add(self, x: Floats) -> None:
        """Insert rows."""

    def search(self, x: Floats, k: int, *, params: Any = None) -> tuple[Floats, Ints]:
        """``(scores, ids)`` of the ``k`` nearest rows of each query."""
        ...

    def reconstruct_n(self, i0: int, ni: int) -> Floats:
        """Rows ``i0 .. i0 + ni - 1`` as stored."""
        ...


class NodeANN:
    """A persistent HNSW index over rows that come and go, for approximate neighbour lists.

    Rows are numbered by *serials*: the FAISS row each was inserted as. The caller keeps the
    serials of its rows (they increase along its rows, because rows are appended in order
    and removals keep the order), so a hit maps back with one ``searchsorted``. Removed
    rows are masked (a bitmap selector) until they are a quarter of the graph, when
    :meth:`needs_compaction` asks the caller to :meth:`rebuild` from its live rows.

    The methods that change it return a new object and leave this one as it was, except
    that inserting writes into the shared FAISS graph: rows past :attr:`n` that an object
    does not know of (a staged change that was dropped) are masked as removed by the next
    insert. Only one change may be staged at a time (the index's commit lock). Searches
    share a lock that an insert holds alone, so a published version is searched safely
    while the next change is staged.

    Args:
        dim: vector dimension.
        m: HNSW graph degree.
        ef_construction: HNSW build breadth.
        ef_search: least HNSW search breadth.
        dtype: ``"float32"`` (``IndexHNSWFlat``) or ``"float16"`` (``IndexHNSWSQ`` with
            FAISS's fp16 scalar quantizer: half the memory, and lossless for rows that are
            float16 values already).
    """

    def __init__(
        self,
        dim: int,
        *,
        m: int = 16,
        ef_construction: int = 40,
        ef_search: int = 64,
        dtype: str = "float32",
    ) -> None:
        self.dim, self.m, self.dtype = dim, m, dtype
        self.ef_construction, self.ef_search = ef_construction, ef_search
        self._graph: HNSWGraph | None = None
        self.dead = np.zeros(0, bool)
        # Every object over one graph shares the lock: searches share it and an insert
        # holds it alone, so an older version is searched safely while a change is staged.
        self._lock = RWLock()
        self._bits: npt.NDArray[np.uint8] | None = None  # this version's live rows, packed

    @property
    def n(self) -> int:
        """FAISS rows this object knows of (removed ones included)."""
        return int(self.dead.size)

    def _new_graph(self) -> HNSWGraph:
        return hnsw_graph(self.dim, self.m, self.ef_construction, self.dtype)

    def _with(self, graph: HNSWGraph | None, dead: npt.NDArray[np.bool_]) -> NodeANN:
        out = copy.copy(self)
        out._graph, out.dead, out._bits = graph, dead, None
        return out

    def removed(self, serials: Ints) -> NodeANN:
        """This index with ``serials`` masked."""
        if not serials.size:
            return self
        dead = self.dead.copy()
        dead[serials] = True
        return self._with(self._graph, dead)

    def added(self, vectors: Floats) -> tuple[NodeANN, Ints]:
        """This index with ``vectors`` inserted; returns it and their serials."""
        graph = self._graph if self._graph is not None else self._new_graph()
        with self._lock.write():
            stale = graph.ntotal - self.n  # rows a dropped stage inserted
            insert_rows(graph, vectors)
        dead = np.concatenate([self.dead, np.ones(stale, bool), np.zeros(vectors.shape[0], bool)])
        first = self.n + stale
        return self._with(graph, dead), np.arange(first, first + vectors.shape[0])

    @property
    def holder(self) -> HNSWGraph | None:
        """The FAISS graph that holds the rows (``None`` before the first insert)."""
        return self._graph

    def rows(self, serials: Ints) -> StoredRows:
        """The stored rows ``serials``, read in place (see :class:`StoredRows`)."""
        return StoredRows(self._graph, self._lock, serials, self.dtype, self.dim)

    @property
    def nbytes(self) -> int:
        """Bytes of the FAISS graph: its stored vectors (codes) and its links."""
        if self._graph is None:
            return 0
        faiss = _faiss()
        storage = faiss.downcast_index(self._graph.storage)
        hnsw = self._graph.hnsw
        links = hnsw.neighbors.size() * 4 + hnsw.offsets.size() * 8
        return int(storage.ntotal * storage.code_size + links)

    def needs_compaction(self) -> bool:
        """True once removed rows are a quarter of the graph."""
        return bool(self.dead.sum() * 4 > self.n)

    def rebuild(self, vectors: Floats) -> NodeANN:
        """A new graph over ``vectors`` (the live rows in serial order; serials restart at 0)."""
        graph = self._new_graph()
        insert_rows(graph, vectors)
        return self._with(graph, np.zeros(vectors.shape[0], bool))

    def search(self, queries: Floats, depth: int) -> tuple[Ints, Floats]:
        """The ``depth`` nearest live serials of each query, ``(serials, float32 scores)``."""
        faiss = _faiss()
        m = queries.shape[0]
        live = self.n - int(self.dead.sum())
        depth = min(depth, live)
        if not m or depth <= 0 or self._graph is None:
            return np.full((m, 0), -1, np.int64), np.zeros((m, 0), np.float32)
        if self._bits is None:  # made once per version (a search costs no pass over rows)
            self._bits = np.packbits(~self.dead, bitorder="little")
        with self._lock.read():
            # rows a later staged change inserted are past this version's bitmap: pad it
            # (the selector reads a byte per 8 rows of the graph, unchecked)
            need = (self._graph.ntotal + 7) // 8
            bits = self._bits
            if bits.size < need:
                bits = np.concatenate([bits, np.zeros(need - bits.size, np.uint8)])
            params = faiss.SearchParametersHNSW(
                sel=faiss.IDSelectorBitmap(bits), efSearch=max(self.ef_search, depth)
            )
            scores, serials = self._graph.search(
                np.ascontiguousarray(queries, dtype=np.float32), depth, params=params
            )
        return serials.astype(np.int64), scores.astype(np.float32)

    def save(self, directory: Path, name: str) -> list[str]:
        """Write ``{name}.faiss`` and ``{name}_dead.npy`` (the rows this object knows of)."""
        faiss = _faiss()
        graph = self._graph if self._graph is not None else self._new_graph()
        if graph.ntotal != self.n:  # holds rows of a staged change: save a clean graph
            return self.rebuild_known().save(directory, name)
        faiss.write_index(graph, str(directory / f"{name}.faiss"))
        np.save(directory / f"{name}_dead.npy", self.dead, allow_pickle=False)
        return [f"{name}.faiss", f"{name}_dead.npy"]

    def rebuild_known(self) -> NodeANN:
        """A copy whose graph holds exactly the rows this object knows of."""
        graph = self._new_graph()
        if self.n and self._graph is not None:
            with self._lock.read():
                known = self._graph.reconstruct_n(0, self.n)
            graph.add(known)
        return self._with(graph, self.dead.copy())

    @classmethod
    def load(cls, directory: Path, name: str, dim: int, **options: Any) -> NodeANN:
        """Read what :meth:`save` wrote.

        Raises:
            StoreError: if the files do not fit together.
        """
        faiss = _faiss()
        graph = faiss.read_index(str(directory / f"{name}.faiss"))
        dead = np.load(directory / f"{name}_dead.npy", allow_pickle=False)
        ann = cls(dim, **options)
        kind = type(ann._new_graph()).__name__
        if type(graph).__name__ != kind or graph.d != dim:
            raise StoreError(
                f"{name}.faiss is a {type(graph).__name__} of dimension {graph.d}, "
                f"not the {kind} of dimension {dim} this configuration holds"
            )
        if dead.dtype != np.bool_ or dead.shape != (graph.ntotal,):
            raise StoreError(f"{name}_dead.npy does not match {name}.faiss")
        return ann._with(graph, dead)
