"""The approximate structure of a :class:`~semrag.index.parts.dense.DenseIndex`, and its writer.

:class:`ApproximateRows` owns what a dense index keeps once it is approximate: the two
layouts it may build (:mod:`semrag.index.parts._approximate`, their search breadths), the
newest structure (an HNSW graph or an inverted file; "graph" below for either), which of its
stored rows holds each row (:class:`~semrag.index.parts._distinct.DistinctRows`: a vector it
holds already is not stored again), and the readers-writer lock that searches and reads share
and an insert holds alone (FAISS cannot search while it inserts). It makes the versions
whose rows live in a graph; the dense index keeps the ids, the exact rows and which version
is published.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from semrag._buffers import FaissIndex, StoredRows, insert_rows, stored_dtype
from semrag._deps import faiss as _faiss
from semrag._rwlock import RWLock
from semrag.errors import StoreError
from semrag.index.parts._approximate import GraphLayout, Layout, ListsLayout, layout_of_saved
from semrag.index.parts._dense_version import DenseVersion
from semrag.index.parts._distinct import DistinctRows
from semrag.types import Floats, Ints

__all__ = ["ApproximateRows"]

Dead = npt.NDArray[np.bool_] | None  # rows removed since the last compaction

_BLOCK = 1 << 16  # rows placed in a graph at a time


class ApproximateRows:
    """The graph a dense index of ``dim`` values a row keeps its rows in, once approximate.

    Args:
        dim: values per row.
        graph: the HNSW layout (its ``ef_search`` is the index's).
        lists: the inverted-file layout (its ``nprobe`` is the index's).
        new: which of the two a new graph is: ``"hnsw"`` or ``"ivf"``.
    """

    def __init__(self, dim: int, graph: GraphLayout, lists: ListsLayout, new: str) -> None:
        self.dim = dim
        self.graph_layout, self.lists_layout = graph, lists
        self.new_layout: Layout = graph if new == "hnsw" else lists
        self.lock = RWLock()  # searches share it; an insert holds it alone
        self._distinct: DistinctRows | None = None  # which stored row holds each row

    def breadth(self, layout: Layout) -> tuple[str, int]:
        """What a search of ``layout``'s graph scans: ``("ef_search", n)`` or ``("nprobe", n)``."""
        if layout is self.graph_layout:
            return "ef_search", self.graph_layout.ef_search
        return "nprobe", self.lists_layout.nprobe

    def search(self, v: DenseVersion, q: Floats, k: int) -> tuple[Ints, Floats]:
        """The rows and scores of the ``k`` best hits in ``v``'s graph, its live rows only."""
        params = v.layout.params(v.bitmap, k)
        with self.lock.read():
            top, found = v.graph.search(q, k, params=params)
        found, top = found.astype(np.int64), top.astype(np.float32)
        if v.distinct is None:  # no rows
            return found, top
        return v.distinct.rows_of(found, top, k, v.n, v.dead)

    def version(
        self, base: DenseVersion | None, ids: Ints, new: Floats | StoredRows, dead: Dead, live: int
    ) -> DenseVersion:
        """The version whose rows are ``base``'s then ``new``, their vectors in a graph.

        ``base``'s graph takes the new vectors when nothing was stored past ``base`` (a
        dropped stage may have stored some); otherwise, and without ``base``, a new graph
        holds them all, and versions that read the old one keep it. Its selector of live
        rows is not made yet (the dense index finishes it).
        """
        graph = base.graph if base is not None else None
        held: list[Ints]
        if (
            base is not None
            and graph is not None
            and base.layout is not None
            and base.serials is not None
            and graph.ntotal == base.stored
        ):
            layout: Layout = base.layout
            state = self._distinct
            if state is None or state.graph is not graph or state.rows != base.n:
                # loaded, or a dropped stage placed rows it stored nothing for: state again
                state = DistinctRows.of(
                    graph, base.serials, self.reader(graph, layout), base.stored
                )
            held = [base.serials, self.placed(state, layout, new, locked=True)]
        else:
            if base is None:
                graph, layout = self.new_graph(new)
            else:  # trained on the rows before and the new ones
                graph, layout = self.new_graph(base.vectors, new)
            state = DistinctRows(graph)
            held = []
            if base is not None:
                rows_before = base.vectors
                held = [
                    self.placed(state, layout, rows_before[a : a + _BLOCK], locked=False)
                    for a in range(0, base.n, _BLOCK)
                ]
            held.append(self.placed(state, layout, new, locked=False))
        self._distinct = state
        serials = np.concatenate(held)
        rows = self.stored(graph, layout, serials)
        v = DenseVersion(ids, rows, dead, live, graph, serials=serials, stored=state.stored)
        return replace(v, distinct=state, layout=layout)

    def new_graph(
        self, rows: Floats | StoredRows, more: Floats | StoredRows | None = None
    ) -> tuple[FaissIndex, Layout]:
        """An empty graph for ``rows`` (then ``more``), and its layout.

        An inverted file trains on a seeded sample of them.
        """
        layout = self.new_layout
        total = rows.shape[0] + (0 if more is None else more.shape[0])
        take = min(total, layout.train_rows)
        pick = np.sort(np.random.default_rng(0).choice(total, take, replace=False))
        first = pick[pick < rows.shape[0]]
        sample = np.asarray(rows[first], np.float32)
        if more is not None:
            sample = np.concatenate([sample, more[pick[first.size :] - rows.shape[0]]])
        return layout.empty(self.dim, sample), layout

    def placed(
        self, state: DistinctRows, layout: Layout, vectors: np.ndarray | StoredRows, *, locked: bool
    ) -> Ints:
        """The stored rows of ``vectors`` (the next rows); inserts the ones the graph lacks.

        ``locked``: insert under the lock searches share (the graph is being read).
        """
        storage = layout.storage(state.graph)
        out, dtype = [np.zeros(0, np.int64)], stored_dtype(state.graph, self.dim, storage=storage)
        for a in range(0, vectors.shape[0], _BLOCK):
            block = np.ascontiguousarray(vectors[a : a + _BLOCK], dtype=np.float32)
            if dtype != block.dtype:  # as the graph stores them, so equal rows hash equal
                block = block.astype(dtype).astype(np.float32)
            serials, novel = state.place(block, self.reader(state.graph, layout))
            if novel.size and locked:
                with self.lock.write():  # FAISS cannot search a graph while it inserts
                    insert_rows(state.graph, block[novel])
            elif novel.size:
                insert_rows(state.graph, block[novel])
            out.append(serials)
        return np.concatenate(out)

    def stored(self, graph: FaissIndex, layout: Layout, serials: Ints) -> StoredRows:
        """The rows ``serials`` of ``graph``, read in place, as the graph stores them."""
        storage = layout.storage(graph)
        dtype = stored_dtype(graph, self.dim, storage=storage)
        return StoredRows(graph, self.lock, serials, dtype, self.dim, storage=storage)

    def reader(self, graph: FaissIndex, layout: Layout) -> Callable[[Ints], Floats]:
        """Reads a graph's stored rows as float32 (a copy of the rows asked for)."""
        return lambda serials: np.asarray(self.stored(graph, layout, serials), np.float32)

    # -- files ----------------------------------------------------------------------------------
    def write(self, v: DenseVersion, faiss_file: Path) -> Ints:
        """Write ``v``'s graph to ``faiss_file``; returns its stored row of each row.

        A graph that holds a staged change's vectors too is written anew, with ``v``'s rows.
        """
        with self.lock.read():
            graph, serials = v.graph, v.serials
            if serials is None or graph.ntotal != v.stored:
                graph, layout = self.new_graph(v.vectors)
                serials = self.placed(DistinctRows(graph), layout, v.vectors, locked=False)
            _faiss().write_index(graph, str(faiss_file))
        return serials

    def loaded(
        self,
        faiss_file: Path,
        serials_file: Path,
        ids: Ints,
        vectors: Floats,
        dead: Dead,
        live: int,
    ) -> DenseVersion:
        """The version a save wrote: its graph read back, checked against ``vectors``.

        A save without ``dense_serials.npy`` (before identical vectors were stored once)
        stored one row per row; one without a graph the layouts read (the second format
        wrapped it in an id map), or without one at all, is built again.

        Raises:
            StoreError: if the graph or its serials disagree with the rows.
        """
        if not faiss_file.exists():
            return self.version(None, ids, vectors, dead, live)
        graph = _faiss().read_index(str(faiss_file))  # comes back as its own class
        layout = layout_of_saved(graph, self.graph_layout, self.lists_layout)
        if layout is None:
            return self.version(None, ids, vectors, dead, live)
        rows = ids.size
        serials = np.arange(rows, dtype=np.int64)
        if serials_file.exists():
            serials = np.load(serials_file, allow_pickle=False)
        elif graph.ntotal != rows:
            raise StoreError(f"{faiss_file} holds {graph.ntotal} vectors, expected {rows}")
        if serials.shape != (rows,) or serials.dtype != np.int64:
            raise StoreError(f"{serials_file} does not match the ids")
        if rows and (serials.min() < 0 or serials.max() >= graph.ntotal):
            raise StoreError(f"{faiss_file} holds {graph.ntotal} vectors, fewer than its rows name")
        read = self.reader(graph, layout)
        for a in range(0, rows, _BLOCK):  # the graph holds the rows: the same ones
            if not np.array_equal(read(serials[a : a + _BLOCK]), vectors[a : a + _BLOCK]):
                raise StoreError(f"{faiss_file} and the saved rows hold other vectors")
        state = DistinctRows.of(graph, serials, read, int(graph.ntotal))
        self._distinct = state
        held = self.stored(graph, layout, serials)
        v = DenseVersion(ids, held, dead, live, graph, serials=serials, stored=state.stored)
        return replace(v, distinct=state, layout=layout)
