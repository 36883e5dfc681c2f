"""FAISS inner-product index with integer ids (exact by default, HNSW for large corpora)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag._deps import faiss as _faiss
from semrag.errors import ConfigError, EmbeddingError, StoreError
from semrag.index.change import Change

__all__ = ["DenseIndex"]


class DenseIndex:
    """Inner-product search over L2-normalised vectors (cosine similarity).

    Args:
        dim: vector dimension.
        kind: ``"flat"`` (exact, the default) or ``"hnsw"`` (approximate, for large
            corpora; removals rebuild the graph lazily on the next search).
        hnsw_m: HNSW graph degree.
        ef_search: HNSW search breadth (higher = more exact, slower).
        ef_construction: HNSW build breadth.
    """

    def __init__(
        self,
        dim: int,
        *,
        kind: str = "flat",
        hnsw_m: int = 32,
        ef_search: int = 128,
        ef_construction: int = 80,
    ) -> None:
        if dim < 1:
            raise ConfigError(f"dim must be >= 1, got {dim}")
        if kind not in ("flat", "hnsw"):
            raise ConfigError(f"kind must be 'flat' or 'hnsw', got {kind!r}")
        self.dim = dim
        self.kind = kind
        self.hnsw_m = hnsw_m
        self.ef_search = ef_search
        self.ef_construction = ef_construction
        # Rows [0, _n) of the buffers are live; capacity doubles, so appends are amortised
        # O(1) per vector instead of a copy of every vector per call.
        self._id_buf = np.zeros(0, dtype=np.int64)
        self._vec_buf = np.zeros((0, dim), dtype=np.float32)
        self._n = 0
        self._index: Any = None  # built lazily
        self._build_lock = threading.Lock()  # concurrent readers build it once

    def __len__(self) -> int:
        return self._n

    @property
    def _ids(self) -> npt.NDArray[np.int64]:
        return self._id_buf[: self._n]

    @property
    def _vectors(self) -> npt.NDArray[np.float32]:
        return self._vec_buf[: self._n]

    def _set(self, ids: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32]) -> None:
        """Replace the contents (the arrays become the buffers)."""
        self._id_buf = np.ascontiguousarray(ids, dtype=np.int64)
        self._vec_buf = np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        self._n = int(self._id_buf.size)

    def _append(self, ids: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32]) -> None:
        need = self._n + ids.size
        if need > self._id_buf.size:
            capacity = max(need, 2 * self._id_buf.size, 64)
            id_buf = np.zeros(capacity, dtype=np.int64)
            vec_buf = np.zeros((capacity, self.dim), dtype=np.float32)
            id_buf[: self._n] = self._ids
            vec_buf[: self._n] = self._vectors
            self._id_buf, self._vec_buf = id_buf, vec_buf
        self._id_buf[self._n : need] = ids
        self._vec_buf[self._n : need] = vectors
        self._n = need

    @property
    def ids(self) -> npt.NDArray[np.int64]:
        """Ids in increasing order (a read-only view)."""
        view = self._ids
        view.flags.writeable = False
        return view

    @property
    def vectors(self) -> npt.NDArray[np.float32]:
        """Vectors aligned with :attr:`ids` (a read-only view)."""
        view = self._vectors
        view.flags.writeable = False
        return view

    def vectors_of(self, ids: Sequence[int] | npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """The stored vectors of ``ids``, in the order given.

        Raises:
            KeyError: if an id is not in the index.
        """
        want = np.asarray(ids, dtype=np.int64).ravel()
        pos = np.searchsorted(self._ids, want)  # ids are kept in increasing order
        pos = np.minimum(pos, max(len(self) - 1, 0))
        if not len(self) or (self._ids[pos] != want).any():
            missing = want if not len(self) else want[self._ids[pos] != want]
            raise KeyError(f"ids not in the index: {missing[:5].tolist()}")
        return self._vectors[pos]

    def _new_index(self) -> Any:
        faiss = _faiss()
        if self.kind == "flat":
            base = faiss.IndexFlatIP(self.dim)
        else:
            base = faiss.IndexHNSWFlat(self.dim, self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            base.hnsw.efConstruction = self.ef_construction
            base.hnsw.efSearch = self.ef_search
        return faiss.IndexIDMap2(base)

    def _built(self) -> Any:
        with self._build_lock:
            if self._index is None:
                index = self._new_index()
                if len(self):
                    index.add_with_ids(self._vectors, self._ids)
                self._index = index
            return self._index

    def add(self, ids: Sequence[int] | npt.NDArray[np.int64], vectors: npt.ArrayLike) -> None:
        """Add vectors under the given ids.

        Raises:
            EmbeddingError: if the vectors have the wrong shape or are not finite.
            ConfigError: if an id is already present.
        """
        ids_arr = np.asarray(ids, dtype=np.int64).ravel()
        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape != (ids_arr.size, self.dim):
            raise EmbeddingError(
                f"expected vectors of shape ({ids_arr.size}, {self.dim}), got {vecs.shape}"
            )
        if not np.isfinite(vecs).all():
            raise EmbeddingError("vectors contain NaN or inf")
        if not ids_arr.size:
            return
        increasing = bool((np.diff(ids_arr) > 0).all())
        after_last = not self._n or ids_arr[0] > self._id_buf[self._n - 1]
        if not (increasing and after_last):  # the general case: check and re-sort
            if np.intersect1d(ids_arr, self._ids).size or np.unique(ids_arr).size != ids_arr.size:
                raise ConfigError("duplicate ids in DenseIndex.add")
            order = np.argsort(np.concatenate([self._ids, ids_arr]), kind="stable")
            self._set(
                np.concatenate([self._ids, ids_arr])[order],
                np.concatenate([self._vectors, vecs])[order],
            )
        else:  # new ids above every stored one (what SemanticIndex does): append
            self._append(ids_arr, vecs)
        if self._index is not None:
            self._index.add_with_ids(vecs, ids_arr)

    def remove(self, ids: Sequence[int] | npt.NDArray[np.int64]) -> int:
        """Remove ids; returns how many were present."""
        ids_arr = np.asarray(ids, dtype=np.int64).ravel()
        keep = ~np.isin(self._ids, ids_arr)
        removed = int((~keep).sum())
        if not removed:
            return 0
        self._set(self._ids[keep], self._vectors[keep])
        if self._index is not None:
            if self.kind == "flat":
                self._index.remove_ids(_faiss().IDSelectorBatch(ids_arr))
            else:
                self._index = None  # HNSW cannot delete: rebuild on next search
        return removed

    def apply(self, change: Change) -> None:
        """Remove the change's removed chunks, then add its added chunks in one call."""
        removed = change.removed_chunk_ids()
        if removed:
            self.remove(removed)
        ids, _, vectors = change.added_chunks()
        if vectors is not None:
            self.add(ids, vectors)

    def search(
        self, queries: npt.ArrayLike, k: int
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """Return ``(scores, ids)`` of shape ``(n_queries, k)``; missing slots have id -1.

        Raises:
            EmbeddingError: if the queries have the wrong dimension.
        """
        q = np.ascontiguousarray(queries, dtype=np.float32)
        if q.ndim == 1:
            q = q[None, :]
        if q.shape[1] != self.dim:
            raise EmbeddingError(f"query dimension {q.shape[1]}; index dimension {self.dim}")
        if k < 1:
            raise ConfigError(f"k must be >= 1, got {k}")
        if not len(self):
            return (np.full((q.shape[0], k), -np.inf, np.float32), np.full((q.shape[0], k), -1))
        scores, ids = self._built().search(q, min(k, len(self)))
        if ids.shape[1] < k:
            pad = k - ids.shape[1]
            scores = np.pad(scores, ((0, 0), (0, pad)), constant_values=-np.inf)
            ids = np.pad(ids, ((0, 0), (0, pad)), constant_values=-1)
        return scores.astype(np.float32), ids.astype(np.int64)

    def save(self, directory: Path) -> list[str]:
        """Write ``dense_ids.npy``, ``dense_vectors.npy`` (and ``dense.faiss`` for HNSW)."""
        np.save(directory / "dense_ids.npy", self._ids, allow_pickle=False)
        np.save(directory / "dense_vectors.npy", self._vectors, allow_pickle=False)
        files = ["dense_ids.npy", "dense_vectors.npy"]
        if self.kind == "hnsw" and len(self):
            _faiss().write_index(self._built(), str(directory / "dense.faiss"))
            files.append("dense.faiss")
        return files

    @classmethod
    def load(cls, directory: Path, config: dict[str, Any]) -> DenseIndex:
        """Read what :meth:`save` wrote, with the config recorded next to it."""
        index = cls(**config)
        ids = np.load(directory / "dense_ids.npy", allow_pickle=False)
        vectors = np.load(directory / "dense_vectors.npy", allow_pickle=False)
        faiss_file = directory / "dense.faiss"
        if ids.ndim != 1 or vectors.shape != (ids.size, index.dim):
            raise StoreError(
                f"{directory}: dense ids {ids.shape} and vectors {vectors.shape} do not "
                f"match (dimension {index.dim})"
            )
        if ids.size > 1 and (np.diff(ids) <= 0).any():
            raise StoreError(f"{directory}: dense ids are not strictly increasing")
        index._set(ids, vectors)
        if index.kind == "hnsw" and faiss_file.exists():
            faiss = _faiss()
            loaded = faiss.read_index(str(faiss_file))  # owns the index: keep this wrapper
            # The wrapped index comes back as a generic Index: downcast to reach HNSW.
            faiss.downcast_index(loaded.index).hnsw.efSearch = index.ef_search
            if loaded.ntotal != len(index):
                raise StoreError(
                    f"{faiss_file} holds {loaded.ntotal} vectors, expected {len(index)}"
                )
            index._index = loaded
        return index

    def config(self) -> dict[str, Any]:
        """Constructor arguments, for persistence."""
        return {
            "dim": self.dim,
            "kind": self.kind,
            "hnsw_m": self.hnsw_m,
            "ef_search": self.ef_search,
            "ef_construction": self.ef_construction,
        }

    def __repr__(self) -> str:
        return f"DenseIndex(dim={self.dim}, kind={self.kind!r}, size={len(self)})"
