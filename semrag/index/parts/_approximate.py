"""The two approximate structures a :class:`~semrag.index.parts.dense.DenseIndex` keeps rows in.

Both are FAISS indexes over inner products that hold each row once, in float16 by default,
read in place by :class:`~semrag._buffers.StoredRows`, and number their rows in the order
they were added (a row's serial); a search skips rows by a bitmap of serials. They differ
in how a search finds candidates:

* :class:`GraphLayout`: an HNSW graph (``IndexHNSWSQ``/``IndexHNSWFlat``). Inserting a row
  searches the graph, so a build's cost per row grows with the graph: on the scale corpus's
  chunk vectors (2 cores) 12.0 s for 99,917 rows and 234 s for 999,172, n^1.29; at
  999,172 rows a search finds 88.5% of the exact top 10 in 0.69 ms (``ef_search`` 128).
* :class:`ListsLayout`: an inverted file (``IndexIVFPQFastScan``: rows assigned to the
  nearest of ``lists`` k-means centroids, each kept as a 4-bit product-quantised code)
  whose candidates are re-ranked on the float16 rows (``IndexRefine``). The centroids and
  codebooks are trained once, on a seeded sample of the rows there are when it is made;
  adding a row costs its distances to the centroids, whatever the size: 5.0 s for 99,917
  rows and 20.8 s for 999,172 (n^0.62; the training is most of the smaller build), and at
  999,172 rows a search finds 92.4% of the exact top 10 in 1.5 ms (``nprobe`` 256; 96.7%
  in 2.7 ms with 512) (benchmarks/RESULTS.md, "Dense build growth").
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

from semrag._buffers import FaissIndex, hnsw_graph
from semrag._deps import faiss as _faiss
from semrag.errors import ConfigError

__all__ = [
    "MIN_LIST_ROWS",
    "MOST_RERANKED",
    "TRAIN_ROWS",
    "GraphLayout",
    "Layout",
    "ListsLayout",
    "layout_of_saved",
]

Floats = npt.NDArray[np.floating]
Bitmap = npt.NDArray[np.uint8]
"""One bit a stored row, packed (``np.packbits``): the rows a search may return."""

MIN_LIST_ROWS = 39
"""Training rows per list FAISS asks for (fewer: it warns that its k-means is underfed)."""
TRAIN_ROWS = 16 * MIN_LIST_ROWS
"""The fewest rows an inverted file trains on: 4-bit codes, 16 centroids a sub-vector."""
_TRAIN_PER_LIST = 40  # rows sampled per list to train the centroids (as FAISS suggests)
MOST_RERANKED = 2048
"""Candidates an inverted-file search re-ranks at most. A search for hundreds of hits (the
walk's dense seeds) would otherwise re-rank ``refine * k`` of them: at 98,431 rows a search
for 540 hits took 4.9 ms re-ranking 32 a hit and 1.1 ms re-ranking 4 (94.3% of the exact
540 against 96.7%); a search for 10 re-ranks its 320 as before."""


class Layout(Protocol):
    """What the dense index asks of the structure holding its approximate rows."""

    name: str

    @property
    def train_rows(self) -> int:
        """The rows it trains on, at most (a sample of the rows)."""
        ...

    def empty(self, dim: int, sample: Floats) -> FaissIndex:
        """A new FAISS index for rows like ``sample`` (what it trains on, if it trains)."""
        ...

    def params(self, bitmap: Bitmap, k: int) -> FaissIndex:
        """FAISS search parameters: search ``k`` hits among the serials ``bitmap`` marks."""
        ...

    def storage(self, index: FaissIndex) -> FaissIndex:
        """The FAISS index within ``index`` whose codes are its rows, one after another."""
        ...


class GraphLayout:
    """An HNSW graph (``m`` links a node, ``ef_construction``/``ef_search`` breadths)."""

    name = "hnsw"
    train_rows = 0

    def __init__(self, m: int, ef_construction: int, ef_search: int, dtype: str) -> None:
        self.m, self.ef_construction = m, ef_construction
        self.ef_search, self.dtype = ef_search, dtype

    def empty(self, dim: int, sample: Floats) -> FaissIndex:  # noqa: ARG002 - a graph trains nothing
        graph = hnsw_graph(dim, self.m, self.ef_construction, self.dtype)
        graph.hnsw.efSearch = self.ef_search
        return graph

    def params(self, bitmap: Bitmap, k: int) -> FaissIndex:
        faiss = _faiss()
        return faiss.SearchParametersHNSW(
            sel=faiss.IDSelectorBitmap(bitmap), efSearch=max(self.ef_search, k)
        )

    def storage(self, index: FaissIndex) -> FaissIndex:
        return _faiss().downcast_index(index.storage)


class ListsLayout:
    """An inverted file of ``lists`` lists of 4-bit codes, re-ranked on the stored rows.

    A search scans the ``nprobe`` lists nearest the query and re-ranks its best
    ``refine * k`` codes on the rows (``dtype``), :data:`MOST_RERANKED` at most (``k`` at
    least). Fewer lists are made when the sample is
    small (:data:`MIN_LIST_ROWS` training rows a list); it needs a few hundred rows to
    train its codebooks at all.

    Raises:
        ConfigError: if ``lists``, ``nprobe`` or ``refine`` is below 1, or the rows'
            dimension is odd (a code holds two values a byte).
    """

    name = "ivf"

    def __init__(self, lists: int, nprobe: int, refine: int, dtype: str) -> None:
        for what, value in (("ivf_lists", lists), ("nprobe", nprobe), ("refine_factor", refine)):
            if value < 1:
                raise ConfigError(f"{what} must be >= 1, got {value}")
        self.lists, self.nprobe, self.refine, self.dtype = lists, nprobe, refine, dtype

    @property
    def train_rows(self) -> int:
        return max(TRAIN_ROWS, self.lists * _TRAIN_PER_LIST)

    def empty(self, dim: int, sample: Floats) -> FaissIndex:
        if dim % 4:
            raise ConfigError(f"an inverted file codes 4 values a sub-vector, not dim {dim}")
        rows = int(sample.shape[0])
        if rows < TRAIN_ROWS:
            raise ConfigError(f"an inverted file trains on at least {TRAIN_ROWS} rows, got {rows}")
        lists = max(1, min(self.lists, rows // MIN_LIST_ROWS))
        rows_kept = "SQfp16" if self.dtype == "float16" else "Flat"
        faiss = _faiss()
        index = faiss.index_factory(
            dim, f"IVF{lists},PQ{dim // 4}x4fs,Refine({rows_kept})", faiss.METRIC_INNER_PRODUCT
        )
        index.train(np.ascontiguousarray(sample, np.float32))
        return index

    def params(self, bitmap: Bitmap, k: int) -> FaissIndex:
        faiss = _faiss()
        lists = faiss.SearchParametersIVF(nprobe=self.nprobe, sel=faiss.IDSelectorBitmap(bitmap))
        factor = max(1.0, min(float(self.refine), MOST_RERANKED / max(k, 1)))
        return faiss.IndexRefineSearchParameters(k_factor=factor, base_index_params=lists)

    def storage(self, index: FaissIndex) -> FaissIndex:
        return _faiss().downcast_index(index.refine_index)


def layout_of_saved(index: FaissIndex, graph: GraphLayout, lists: ListsLayout) -> Layout | None:
    """Which of the two layouts a FAISS index read from a save is (``None``: neither).

    (A save of the second format wrapped its HNSW graph in an id map: neither.)
    """
    faiss = _faiss()
    if isinstance(index, faiss.IndexRefine):
        return lists
    if isinstance(index, faiss.IndexHNSW):
        return graph
    return None
