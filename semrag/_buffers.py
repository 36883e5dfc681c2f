"""Rows that published versions share: in a growing buffer, or in a FAISS index's storage."""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from semrag._deps import faiss as _faiss
from semrag._rwlock import RWLock
from semrag.errors import ConfigError

__all__ = [
    "HNSW_DTYPES",
    "FaissIndex",
    "GrowingRows",
    "StoredRows",
    "hnsw_graph",
    "insert_rows",
    "stored_dtype",
]

Floats = npt.NDArray[np.floating]
FaissIndex: TypeAlias = Any
"""A ``faiss.Index`` (FAISS ships no type hints)."""


class GrowingRows:
    """Rows in a buffer with room to grow: appending never moves or writes earlier rows.

    A published version holds ``view`` (the first ``n`` rows); an append writes past them
    (or into a new, larger buffer), so that view never changes. :meth:`keep` makes a new
    buffer. Appending one document costs its rows, amortised, not a copy of them all.
    """

    def __init__(self, rows: Floats, *, headroom: float = 0.0) -> None:
        self.n = rows.shape[0]
        if headroom:  # room for the next changes without a copy of every row
            self.buf = np.empty((self.n + int(self.n * headroom), rows.shape[1]), rows.dtype)
            self.buf[: self.n] = rows
        else:
            self.buf = rows

    @property
    def view(self) -> Floats:
        view = self.buf[: self.n]
        view.flags.writeable = False
        return view

    def append(self, rows: Floats) -> None:
        self.reserve(rows.shape[0])
        need = self.n + rows.shape[0]
        self.buf[self.n : need] = rows
        self.n = need

    def reserve(self, extra: int) -> None:
        """Room for ``extra`` more rows (appended in parts, they are copied once)."""
        need = self.n + extra
        if need > self.buf.shape[0]:
            shape = (max(need, 2 * self.buf.shape[0], 64), self.buf.shape[1])
            grown = np.empty(shape, self.buf.dtype)
            grown[: self.n] = self.buf[: self.n]
            self.buf = grown

    def keep(self, mask: npt.NDArray[np.bool_]) -> None:
        self.buf = self.buf[: self.n][mask]
        self.n = self.buf.shape[0]


HNSW_DTYPES = ("float16", "float32")  # what an HNSW graph stores its rows as


def hnsw_graph(dim: int, m: int, ef_construction: int, dtype: str) -> FaissIndex:
    """An empty FAISS HNSW graph over inner products that stores its rows as ``dtype``.

    ``"float32"``: ``IndexHNSWFlat``. ``"float16"``: ``IndexHNSWSQ`` with FAISS's fp16
    scalar quantizer: half the memory, the same neighbours (a search compares rows
    rounded to 11 significant bits; benchmarks/RESULTS.md, "HNSW storage"), and lossless
    for rows that are float16 values already.

    Raises:
        ConfigError: if ``dtype`` is neither.
    """
    if dtype not in HNSW_DTYPES:
        raise ConfigError(f"an HNSW graph stores 'float16' or 'float32' rows, not {dtype!r}")
    faiss = _faiss()
    if dtype == "float16":
        qt = faiss.ScalarQuantizer.QT_fp16
        graph = faiss.IndexHNSWSQ(dim, qt, m, faiss.METRIC_INNER_PRODUCT)
    else:
        graph = faiss.IndexHNSWFlat(dim, m, faiss.METRIC_INNER_PRODUCT)
    graph.hnsw.efConstruction = ef_construction
    return graph


def stored_dtype(
    graph: FaissIndex, dim: int, *, storage: FaissIndex | None = None
) -> np.dtype[Any]:
    """The type ``graph`` (an HNSW graph of ``dim`` values a row) stores each value as.

    Read from the graph itself, so a graph saved before float16 storage loads as the
    float32 graph it is. ``storage``: the FAISS index holding the rows' codes, when it is
    not the graph's ``storage`` (an inverted file's re-ranking rows).

    Raises:
        ConfigError: if its rows are neither ``dim`` float16 nor ``dim`` float32 values.
    """
    held = _faiss().downcast_index(graph.storage) if storage is None else storage
    width = int(held.code_size)
    for dtype in (np.float16, np.float32):
        if width == dim * np.dtype(dtype).itemsize:
            return np.dtype(dtype)
    raise ConfigError(f"an HNSW graph stores {width} bytes a row, not {dim} float values")


def insert_rows(index: FaissIndex, vectors: np.ndarray | StoredRows, block: int = 1 << 16) -> None:
    """Insert rows into a FAISS index as float32, a block at a time.

    So float16 rows, or rows read from another index (:class:`StoredRows`), are never
    converted or copied all at once.
    """
    for a in range(0, vectors.shape[0], block):
        index.add(np.ascontiguousarray(vectors[a : a + block], dtype=np.float32))


class StoredRows:
    """Rows a FAISS index stores, read in place: each vector is held once, by the index.

    Row ``i`` is the index's stored row ``serials[i]``. FAISS keeps every row it was given,
    in order (a caller masks removed rows, it never erases them), so a serial means the
    same row for the life of the index and a version's rows never change. It reads like a
    read-only 2-D array: a slice is another :class:`StoredRows` (no row is copied);
    an integer, an array of integers or a boolean mask gives a NumPy array of those rows
    (a copy, as NumPy's advanced indexing does); ``np.asarray`` copies every row. Rows are
    read under ``lock``, which an insert holds alone (it may move FAISS's storage).

    Args:
        index: a FAISS index whose storage holds each row as ``dim`` values of ``dtype``
            (``IndexHNSWFlat``: float32; ``IndexHNSWSQ`` with ``QT_fp16``: float16), or
            ``None`` while there are no rows.
        lock: the index's readers-writer lock.
        serials: the stored row of each row.
        dtype: the values' type.
        dim: values per row.
        storage: the FAISS index within ``index`` that holds the rows' codes, when it is
            not ``index.storage`` (an inverted file's re-ranking rows).
    """

    __slots__ = ("_seen", "dim", "dtype", "index", "lock", "serials")

    def __init__(
        self,
        index: FaissIndex,
        lock: RWLock,
        serials: npt.NDArray[np.int64],
        dtype: Any,
        dim: int,
        _seen: list[Any] | None = None,
        *,
        storage: FaissIndex | None = None,
    ) -> None:
        self.index, self.lock, self.dim = index, lock, dim
        self.dtype = np.dtype(dtype)
        self.serials = serials.view()
        self.serials.flags.writeable = False
        # [the storage, (its rows and address, a byte view of them)], shared with slices
        self._seen = _seen if _seen is not None else [storage, None]

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.serials.size), self.dim)

    ndim = 2

    @property
    def size(self) -> int:
        return int(self.serials.size) * self.dim

    @property
    def nbytes(self) -> int:
        """Bytes of the rows it reads (held by the index, not by this object)."""
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        return int(self.serials.size)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):  # its own serials: a document's few rows do not keep a
            part = self.serials[key].copy()  # version's serials of every row alive
            return StoredRows(self.index, self.lock, part, self.dtype, self.dim, self._seen)
        if isinstance(key, tuple):  # rows and columns: NumPy's rules, on a copy of every row
            return np.asarray(self)[key]
        return self._read(np.asarray(self.serials[key]))

    def __array__(self, dtype: Any = None, copy: Any = None) -> Floats:
        out = self._read(self.serials)
        return out if dtype is None else out.astype(dtype, copy=False)

    def astype(self, dtype: Any, copy: bool = True) -> Floats:  # noqa: ARG002 - always a copy
        """The rows as a NumPy array of ``dtype`` (a new array)."""
        return np.asarray(self).astype(dtype, copy=False)

    def _read(self, serials: npt.NDArray[np.int64]) -> Floats:
        """The rows ``serials`` (any shape) as an array of shape ``serials.shape + (dim,)``."""
        if not serials.size:
            return np.zeros((*serials.shape, self.dim), self.dtype)
        held = self.lock.acquire_read()
        try:
            rows = self._codes()[serials.ravel()]  # a copy, made while nothing inserts
        finally:
            self.lock.release_read(held)
        return rows.view(self.dtype).reshape(*serials.shape, self.dim)

    def _codes(self) -> npt.NDArray[np.uint8]:
        """FAISS's stored rows as bytes, shape ``(rows, bytes a row)`` (under the lock).

        The view is kept while the storage has the same rows at the same address (an
        insert may move it), so most reads cost no call into FAISS but one.
        """
        faiss = _faiss()
        seen = self._seen
        width = self.dim * self.dtype.itemsize
        storage = seen[0]
        if storage is None:
            storage = faiss.downcast_index(self.index.storage)
            if storage.code_size != width:
                raise ConfigError(
                    f"{type(storage).__name__} stores {storage.code_size} bytes a row, not "
                    f"{self.dim} values of {self.dtype}"
                )
            seen[0] = storage
        start = storage.codes.data()
        where = (storage.ntotal, int(start))
        held = seen[1]  # one tuple, replaced whole: concurrent readers see one or the other
        if held is None or held[0] != where:
            held = seen[1] = (where, faiss.rev_swig_ptr(start, where[0] * width))
        return held[1].reshape(where[0], width)

    def __repr__(self) -> str:
        return f"StoredRows(rows={len(self)}, dim={self.dim}, dtype={self.dtype})"
