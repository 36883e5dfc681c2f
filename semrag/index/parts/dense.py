"""Inner-product search over chunk vectors with integer ids: exact, or approximate for big corpora.

Readers never wait for a writer. The vectors live in buffers with room to grow, rows in id
order; a version (:class:`DenseVersion`) is the first ``n`` rows plus a mask of the rows removed
since the last compaction. A change computes the next version without touching what the
current one reads (appends write past its rows; a removal copies the small mask), and
publishing it is one assignment. Removed rows are skipped by every search and compacted
away once they are a quarter of the rows.

* ``flat`` is exact: a matrix product over the version's rows, ties to the lower id, so a
  grown index and a fresh one return the same hits.
* ``hnsw`` (FAISS ``IndexHNSWSQ``, float16 rows by default: ``hnsw_dtype``) and ``ivf``
  (an inverted file of product-quantised codes re-ranked on float16 rows,
  :class:`~semrag.index.parts._approximate.ListsLayout`) hold the
  vectors themselves (a version reads them in place, :class:`~semrag._buffers.StoredRows`: each
  vector is held once, in half the bytes, with the same neighbours), and identical
  vectors once: rows that repeat a vector (boilerplate, a text under two ids, an edited
  document's unchanged chunks) share its stored row, and a hit on it stands for each of
  them (:mod:`semrag.index.parts._distinct`). A search skips removed and not yet published rows
  with a bitmap selector, so a delete rebuilds nothing. FAISS cannot search while it
  inserts: searches and reads share a lock
  that an insert holds alone, for the few milliseconds it takes to insert a change's
  vectors.
* ``auto`` (the default of :class:`~semrag.index.SemanticIndex`) is ``flat`` until a change
  takes the index to :data:`AUTO_APPROXIMATE_ROWS` rows, then ``approximate`` (``"ivf"`` by
  default): that change builds the structure over every row, once (versions before it
  keep reading their exact rows). An exact search reads every vector, so its cost grows
  with the corpus (a dense search of 384-d chunk vectors on 2 cores: 3.3 ms p50 at 47,803
  chunks, 9.0 ms at 94,232; benchmarks/RESULTS.md, "Scale"). The inverted file is the
  default because it builds in a tenth of an HNSW graph's time at a million rows, its
  build grows no faster than the rows, and its default search finds more of the exact top
  10 (92.4% against 88.5%, in 1.5 ms against 0.7; benchmarks/RESULTS.md, "Dense build growth";
  :mod:`semrag.index.parts._approximate`). A version shrunk below the threshold by
  compaction is exact again.
* ``ivf`` needs rows to train on: an index of fewer than :data:`MIN_IVF_ROWS` rows is
  exact.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from semrag._buffers import HNSW_DTYPES, StoredRows
from semrag.errors import ConfigError, EmbeddingError, StoreError
from semrag.index._top_k import query_matrix, top_k
from semrag.index.change import Change
from semrag.index.parts._approximate import (
    TRAIN_ROWS,
    GraphLayout,
    ListsLayout,
)
from semrag.index.parts._approximate_rows import ApproximateRows
from semrag.index.parts._dense_version import (
    DenseVersion,
    Placed,
    StagedVersion,
    live_bitmap,
    same_start,
)
from semrag.types import Floats, Ints

__all__ = ["AUTO_APPROXIMATE_ROWS", "MIN_IVF_ROWS", "DenseIndex", "query_matrix", "top_k"]


_CELLS = 1 << 24  # float32 scores per block of an exact search (64 MB)
_BLOCK = 1 << 16  # rows of a change staged at a time (a batch of whole documents)
_RECENT = 32  # answers a version keeps (DenseIndex.search)
AUTO_APPROXIMATE_ROWS = 50_000
"""Rows at which ``kind="auto"`` turns approximate: an exact search over this many 384-d
vectors takes about 3.5 ms p50 on 2 cores, and retrievers search more than once (IAR three
times), so past it the cost of reading every vector is most of a query's."""
MIN_IVF_ROWS = TRAIN_ROWS
"""Rows an inverted file needs to train its codebooks: ``kind="ivf"`` is exact below them."""
APPROXIMATE = ("ivf", "hnsw")


class DenseIndex:
    """Inner-product search over L2-normalised vectors (cosine similarity).

    Args:
        dim: vector dimension.
        kind: ``"flat"`` (exact, the default), ``"ivf"`` or ``"hnsw"`` (approximate, for
            large corpora) or ``"auto"`` (exact until ``approximate_from`` rows, then
            ``approximate``).
        hnsw_m: HNSW graph degree.
        ef_search: HNSW search breadth (higher = more exact, slower).
        ef_construction: HNSW build breadth.
        approximate_from: rows at which ``kind="auto"`` turns approximate (default
            :data:`AUTO_APPROXIMATE_ROWS`; at least :data:`MIN_IVF_ROWS` for ``"ivf"``).
        hnsw_dtype: what the approximate structure stores each value as: ``"float16"``
            (the default: half the memory, the same neighbours) or ``"float32"``. Vectors
            read back from it (:meth:`vectors_of`) are its stored values, as float32.
        approximate: what ``kind="auto"`` turns into: ``"ivf"`` (the default) or
            ``"hnsw"`` (the default of a config that names ``hnsw_from``: what such an
            index turned into when it was saved).
        ivf_lists: the inverted file's lists (fewer when it trains on fewer than 39 rows
            a list).
        nprobe: the lists an inverted-file search scans (higher = more exact, slower).
        refine_factor: an inverted-file search re-ranks ``refine_factor * k`` candidates
            on the stored rows.
        hnsw_from: the old name of ``approximate_from`` (read from saves made before it).
    """

    def __init__(
        self,
        dim: int,
        *,
        kind: str = "flat",
        hnsw_m: int = 32,
        ef_search: int = 128,
        ef_construction: int = 80,
        approximate_from: int | None = None,
        hnsw_dtype: str = "float16",
        approximate: str | None = None,
        ivf_lists: int = 1024,
        nprobe: int = 256,
        refine_factor: int = 32,
        hnsw_from: int | None = None,
    ) -> None:
        if approximate is None:
            approximate = "ivf" if hnsw_from is None else "hnsw"
        if approximate_from is None:
            approximate_from = AUTO_APPROXIMATE_ROWS if hnsw_from is None else hnsw_from
        if dim < 1:
            raise ConfigError(f"dim must be >= 1, got {dim}")
        if kind not in ("flat", "ivf", "hnsw", "auto"):
            raise ConfigError(f"kind must be 'flat', 'ivf', 'hnsw' or 'auto', got {kind!r}")
        if approximate not in APPROXIMATE:
            raise ConfigError(f"approximate must be 'ivf' or 'hnsw', got {approximate!r}")
        if approximate_from < 1:
            raise ConfigError(f"approximate_from must be >= 1, got {approximate_from}")
        if kind == "auto" and approximate == "ivf" and approximate_from < MIN_IVF_ROWS:
            raise ConfigError(
                f"approximate_from must be >= {MIN_IVF_ROWS} for an inverted file (the rows "
                f"it trains on), got {approximate_from}; or approximate='hnsw'"
            )
        if hnsw_dtype not in HNSW_DTYPES:
            raise ConfigError(f"hnsw_dtype must be 'float16' or 'float32', got {hnsw_dtype!r}")
        self.dim = dim
        self.kind = kind
        self.hnsw_m = hnsw_m
        self.ef_construction = ef_construction
        self.approximate_from, self.hnsw_dtype = approximate_from, hnsw_dtype
        self.auto_approximate = approximate  # what kind="auto" turns into
        self.approximate_kind = approximate if kind == "auto" else kind
        self._id_buf = np.zeros(0, dtype=np.int64)
        self._vec_buf = np.zeros((0, dim), dtype=np.float32)
        self._version = DenseVersion(self._id_buf, self._vec_buf, None, 0)
        graph = GraphLayout(hnsw_m, ef_construction, ef_search, hnsw_dtype)
        lists = ListsLayout(ivf_lists, nprobe, refine_factor, hnsw_dtype)
        self._rows = ApproximateRows(dim, graph, lists, self.approximate_kind)
        self._write_lock = threading.Lock()  # one change at a time

    def __len__(self) -> int:
        return self._version.live

    @property
    def ef_search(self) -> int:
        """HNSW search breadth (settable: the next searches use it)."""
        return self._rows.graph_layout.ef_search

    @ef_search.setter
    def ef_search(self, value: int) -> None:
        self._rows.graph_layout.ef_search = value

    @property
    def nprobe(self) -> int:
        """The lists an inverted-file search scans (settable: the next searches use it)."""
        return self._rows.lists_layout.nprobe

    @nprobe.setter
    def nprobe(self, value: int) -> None:
        self._rows.lists_layout.nprobe = value

    @property
    def breadth(self) -> tuple[str, int]:
        """What the current version's approximate search scans, and how much of it.

        ``("ef_search", n)`` for an HNSW graph, ``("nprobe", n)`` for an inverted file,
        ``("exact", rows)`` for an exact version.
        """
        layout = self._version.layout
        if layout is None:
            return "exact", self._version.live
        return self._rows.breadth(layout)

    # -- reading ------------------------------------------------------------------------------
    @property
    def ids(self) -> Ints:
        """Ids in increasing order (read-only)."""
        v = self._version
        out = v.ids if v.dead is None else v.ids[~v.dead]
        out.flags.writeable = False
        return out

    @property
    def vectors(self) -> Floats:
        """Vectors aligned with :attr:`ids` (read-only; a copy with ``kind="hnsw"``)."""
        v = self._version
        out = np.asarray(v.vectors if v.dead is None else v.vectors[~v.dead], np.float32)
        out.flags.writeable = False
        return out

    def vectors_of(self, ids: Sequence[int] | Ints) -> Floats:
        """The stored vectors of ``ids``, in the order given.

        Raises:
            KeyError: if an id is not in the index.
        """
        v = self._version
        return np.asarray(v.vectors[v.rows(ids)], np.float32)

    def rows_view(self, ids: Sequence[int] | Ints) -> Floats:
        """The stored vectors of ``ids`` without a copy, when they are consecutive rows.

        A document's chunks have consecutive ids, so they sit in consecutive rows and this
        is a read-only view of them in the buffer (:attr:`buffer`; with ``kind="hnsw"`` a
        :class:`~semrag._buffers.StoredRows` over the graph's rows); other ids get a copy,
        as :meth:`vectors_of` gives. A view keeps the buffer it reads alive after the
        index moves its rows to a new one, so a holder points again when :attr:`buffer`
        changes.

        Raises:
            KeyError: if an id is not in the index.
        """
        return self._version.rows_view(ids)

    @property
    def buffer(self) -> Any:
        """What holds the rows now: an array, or (``kind="hnsw"``) the FAISS graph.

        It moves when the rows outgrow it or are compacted.
        """
        vectors = self._version.vectors
        if isinstance(vectors, StoredRows):
            return vectors.index
        return vectors if vectors.base is None else vectors.base

    def search(self, queries: npt.ArrayLike, k: int) -> tuple[Floats, Ints]:
        """Return ``(scores, ids)`` of shape ``(n_queries, k)``; missing slots have id -1.

        The version being read keeps its last :data:`_RECENT` answers, so a query asked
        again of the same version (a hybrid retriever's dense channel and its graph walk's
        dense seeds ask for the same one) costs no second search. A change publishes a new
        version, which starts with none.

        Raises:
            EmbeddingError: if the queries have the wrong dimension.
        """
        q = query_matrix(queries, self.dim, k)
        v = self._version
        scores = np.full((q.shape[0], k), -np.inf, np.float32)
        ids = np.full((q.shape[0], k), -1, np.int64)
        if not v.live:
            return scores, ids
        kk = min(k, v.live)
        keys = [(kk, row.tobytes()) for row in q]
        recent = v.recent  # shared by concurrent readers: read and written an item at a time
        answers = {key: hit for key in keys if (hit := recent.get(key)) is not None}
        todo = [i for i, key in enumerate(keys) if key not in answers]
        if todo:
            search = self._exact_search if v.graph is None else self._rows.search
            found_rows, found_top = search(v, q[todo], kk)
            if len(recent) + len(todo) > _RECENT:
                recent.clear()
            for j, i in enumerate(todo):
                answers[keys[i]] = recent[keys[i]] = (found_rows[j], found_top[j])
        rows = np.stack([answers[key][0] for key in keys])
        top = np.stack([answers[key][1] for key in keys])
        ok = rows >= 0
        scores[:, :kk] = np.where(ok, top, -np.inf)
        ids[:, :kk] = np.where(ok, v.ids[np.maximum(rows, 0)], -1)
        return scores, ids

    @staticmethod
    def _exact_search(v: DenseVersion, q: Floats, k: int) -> tuple[Ints, Floats]:
        rows = np.empty((q.shape[0], k), np.int64)
        top = np.empty((q.shape[0], k), np.float32)
        step = max(1, _CELLS // max(v.n, 1))
        for a in range(0, q.shape[0], step):
            b = min(q.shape[0], a + step)
            sims = q[a:b] @ cast(Floats, v.vectors).T  # an exact version holds an array
            if v.dead is not None:
                sims[:, v.dead] = -np.inf
            rows[a:b], top[a:b] = top_k(sims, k)
        return rows, top

    # -- changing -----------------------------------------------------------------------------
    def stage(self, change: Change, *, placed: Placed | None = None) -> StagedVersion:
        """Compute the version after ``change``; calling what it returns publishes it.

        Until it is published, searches read the current version; publishing is one
        assignment. ``placed(staged, rows)``, if given, is called after each batch of the
        added chunks is stored, with the version staged so far and how many added rows
        it holds: their vectors can be read there from then on
        (:meth:`StagedVersion.rows_view`).
        """
        batches = change.added_batches(_BLOCK)  # made as they are placed: no copy of them all
        rows = sum(len(d.chunk_ids) for d in change.added)
        return self.staged_batches(change.removed_chunk_ids(), batches, rows=rows, placed=placed)

    def staged(
        self, removed: Sequence[int] | Ints, ids: Sequence[int] | Ints, vectors: npt.ArrayLike
    ) -> StagedVersion:
        """Stage the version without ``removed`` and with ``ids``; returns its publisher.

        ``vectors`` may be ``None`` when there are no ``ids``.
        """
        return self.staged_batches(removed, [] if vectors is None else [(ids, vectors)])

    def staged_batches(
        self,
        removed: Sequence[int] | Ints,
        batches: Iterable[tuple[Any, Any]],
        *,
        rows: int | None = None,
        placed: Placed | None = None,
    ) -> StagedVersion:
        """Stage the version without ``removed`` and with each ``(ids, vectors)`` batch.

        The batches may be made as they are asked for (a generator): a change of millions
        of rows never holds their vectors at once. ``rows``: how many rows the batches
        hold in all, when known (an exact index then grows its buffer once, to fit).
        ``placed``: as in :meth:`stage`. Returns the version's publisher.
        """
        with self._write_lock:
            nxt = self._removed(self._version, np.asarray(removed, np.int64))
            until = None if rows is None else nxt.n + rows
            done = 0
            for ids, vectors in batches:
                nxt = self._added(nxt, *self._checked(ids, vectors), until)
                done += len(ids)
                if placed is not None:
                    placed(StagedVersion(nxt, self._publish), done)
        return StagedVersion(nxt, self._publish)

    def apply(self, change: Change) -> None:
        """Remove the change's removed chunks, then add its added chunks."""
        self.stage(change)()

    def add(self, ids: Sequence[int] | Ints, vectors: npt.ArrayLike) -> None:
        """Add vectors under the given ids.

        Raises:
            EmbeddingError: if the vectors have the wrong shape or are not finite.
            ConfigError: if an id is already present.
        """
        with self._write_lock:
            nxt = self._added(self._version, *self._checked(ids, vectors), None)
            self._publish(nxt)

    def remove(self, ids: Sequence[int] | Ints) -> int:
        """Remove ids; returns how many were present."""
        with self._write_lock:
            before = self._version.live
            nxt = self._removed(self._version, np.asarray(ids, dtype=np.int64).ravel())
            self._publish(nxt)
            return before - nxt.live

    def _publish(self, version: DenseVersion) -> None:
        self._version = version

    def _checked(self, ids: Any, vectors: npt.ArrayLike) -> tuple[Ints, Floats]:
        ids_arr = np.asarray(ids, dtype=np.int64).ravel()
        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape != (ids_arr.size, self.dim):
            raise EmbeddingError(
                f"expected vectors of shape ({ids_arr.size}, {self.dim}), got {vecs.shape}"
            )
        if not np.isfinite(vecs).all():
            raise EmbeddingError("vectors contain NaN or inf")
        if np.unique(ids_arr).size != ids_arr.size:
            raise ConfigError("duplicate ids in DenseIndex.add")
        return ids_arr, vecs

    def _removed(self, v: DenseVersion, ids: Ints) -> DenseVersion:
        rows, found = v.rows_of(ids)
        rows = np.unique(rows[found])
        if not rows.size:
            return v
        dead = np.zeros(v.n, bool) if v.dead is None else v.dead.copy()
        dead[rows] = True
        live = v.live - rows.size
        if dead.sum() * 4 > v.n:  # removed rows are a quarter: compact
            keep = ~dead
            return self._rebuilt(v.ids[keep], v.vectors[keep])
        return self._finished(replace(v, dead=dead, live=live, recent={}))

    def _added(self, v: DenseVersion, ids: Ints, vecs: Floats, until: int | None) -> DenseVersion:
        if not ids.size:  # until: the rows the change being staged ends with, when known
            return v
        if v.rows_of(ids)[1].any():
            raise ConfigError("duplicate ids in DenseIndex.add")
        order = np.argsort(ids, kind="stable")
        ids, vecs = ids[order], vecs[order]
        if v.n and ids[0] <= v.ids[-1]:  # not above every stored id: merge into a new buffer
            keep = v.live_rows()
            merged = np.concatenate([v.ids[keep], ids])
            by_id = np.argsort(merged, kind="stable")
            return self._rebuilt(merged[by_id], np.concatenate([v.vectors[keep], vecs])[by_id])
        n, need = v.n, v.n + ids.size
        hnsw = v.graph is not None or self._graph_for(need)
        grow = need > self._id_buf.size or not same_start(self._id_buf, v.ids)
        if not hnsw:  # (a dropped change that built a graph may have let the buffer go)
            held = cast(Floats, v.vectors)  # an exact version holds an array
            grow = grow or need > len(self._vec_buf) or not same_start(self._vec_buf, held)
        if grow:
            capacity = max(need, 2 * n, 64) if until is None else max(need, until, 64)
            id_buf = np.empty(capacity, np.int64)
            id_buf[:n] = v.ids
            self._id_buf = id_buf
            if not hnsw:
                self._vec_buf = np.empty((capacity, self.dim), np.float32)
                self._vec_buf[:n] = v.vectors
        self._id_buf[n:need] = ids  # past the rows any version reads
        dead = None if v.dead is None else np.concatenate([v.dead, np.zeros(ids.size, bool)])
        if hnsw:
            out = self._finished(
                self._rows.version(v, self._id_buf[:need], vecs, dead, v.live + ids.size)
            )
            if v.graph is None:  # "auto" turned approximate: the graph holds every row now
                self._vec_buf = np.zeros((0, self.dim), np.float32)
            return out
        self._vec_buf[n:need] = vecs
        return DenseVersion(self._id_buf[:need], self._vec_buf[:need], dead, v.live + ids.size)

    def _rebuilt(self, ids: Ints, vectors: Floats) -> DenseVersion:
        """A version over new buffers holding exactly ``ids`` (HNSW: a new graph)."""
        capacity = max(ids.size + ids.size // 4, 64)
        self._id_buf = np.empty(capacity, np.int64)
        self._id_buf[: ids.size] = ids
        if self._graph_for(ids.size):
            held = self._rows.version(None, self._id_buf[: ids.size], vectors, None, ids.size)
            return self._finished(held)
        self._vec_buf = np.empty((capacity, self.dim), np.float32)
        self._vec_buf[: ids.size] = vectors
        return DenseVersion(
            self._id_buf[: ids.size], self._vec_buf[: ids.size], None, int(ids.size)
        )

    def _graph_for(self, rows: int) -> bool:
        """Whether a version of ``rows`` rows keeps its vectors in an approximate structure."""
        if self.kind == "auto":
            return rows >= self.approximate_from
        return self.kind == "hnsw" or (self.kind == "ivf" and rows >= MIN_IVF_ROWS)

    @property
    def approximate(self) -> bool:
        """Whether searches of the current version are approximate (HNSW or IVF)."""
        return self._version.graph is not None

    def _finished(self, v: DenseVersion) -> DenseVersion:
        """``v`` with its selector of live stored rows (flat: ``v`` as it is)."""
        if v.graph is None:
            return v
        return replace(v, bitmap=live_bitmap(v), recent={})

    # -- persistence --------------------------------------------------------------------------
    def save(self, directory: Path, *, prefix: str = "dense") -> list[str]:
        """Write ``dense_ids.npy``, ``dense_vectors.npy`` (and the approximate structure's files).

        Approximate: ``dense.faiss``, the HNSW graph or inverted file, and
        ``dense_serials.npy``, its stored row of each row.

        The rows are the current version's, removed rows included (``dense_dead.npy``
        marks them), so a saved graph stays aligned with them. ``prefix`` replaces
        ``dense`` in the names (another dense index in the same directory).
        """
        v = self._version
        np.save(directory / f"{prefix}_ids.npy", v.ids, allow_pickle=False)
        np.save(directory / f"{prefix}_vectors.npy", v.vectors, allow_pickle=False)
        files = [f"{prefix}_ids.npy", f"{prefix}_vectors.npy"]
        if v.dead is not None:
            np.save(directory / f"{prefix}_dead.npy", v.dead, allow_pickle=False)
            files.append(f"{prefix}_dead.npy")
        if v.graph is not None and v.n:
            serials = self._rows.write(v, directory / f"{prefix}.faiss")
            np.save(directory / f"{prefix}_serials.npy", serials, allow_pickle=False)
            files += [f"{prefix}.faiss", f"{prefix}_serials.npy"]
        return files

    @classmethod
    def load(cls, directory: Path, config: dict[str, Any], *, prefix: str = "dense") -> DenseIndex:
        """Read what :meth:`save` wrote, with the config recorded next to it.

        Raises:
            StoreError: if the files disagree with each other or with the config.
        """
        index = cls(**config)
        ids = np.load(directory / f"{prefix}_ids.npy", allow_pickle=False)
        vectors = np.load(directory / f"{prefix}_vectors.npy", allow_pickle=False)
        if ids.ndim != 1 or vectors.shape != (ids.size, index.dim):
            raise StoreError(
                f"{directory}: dense ids {ids.shape} and vectors {vectors.shape} do not "
                f"match (dimension {index.dim})"
            )
        if ids.size > 1 and (np.diff(ids) <= 0).any():
            raise StoreError(f"{directory}: dense ids are not strictly increasing")
        dead = None
        if (directory / f"{prefix}_dead.npy").exists():
            dead = np.load(directory / f"{prefix}_dead.npy", allow_pickle=False)
            if dead.shape != ids.shape or dead.dtype != np.bool_:
                raise StoreError(f"{directory}: {prefix}_dead.npy does not match the ids")
        index._id_buf = np.ascontiguousarray(ids, dtype=np.int64)
        index._vec_buf = np.ascontiguousarray(vectors, dtype=np.float32)
        live = int(ids.size - (dead.sum() if dead is not None else 0))
        faiss_file = directory / f"{prefix}.faiss"
        approximate = faiss_file.exists() if index.kind == "auto" else index._graph_for(ids.size)
        if approximate and ids.size:
            index._vec_buf = np.zeros((0, index.dim), np.float32)
            serials_file = directory / f"{prefix}_serials.npy"
            v = index._rows.loaded(faiss_file, serials_file, index._id_buf, vectors, dead, live)
            index._version = index._finished(v)
            return index
        index._version = index._finished(DenseVersion(index._id_buf, index._vec_buf, dead, live))
        return index

    def config(self) -> dict[str, Any]:
        """Constructor arguments, for persistence."""
        return {
            "dim": self.dim,
            "kind": self.kind,
            "hnsw_m": self.hnsw_m,
            "ef_search": self.ef_search,
            "ef_construction": self.ef_construction,
            "approximate_from": self.approximate_from,
            "hnsw_dtype": self.hnsw_dtype,
            "approximate": self.auto_approximate,
            "ivf_lists": self._rows.lists_layout.lists,
            "nprobe": self.nprobe,
            "refine_factor": self._rows.lists_layout.refine,
        }

    def __repr__(self) -> str:
        now = "" if self.kind != "auto" else f", approximate={self.approximate}"
        return f"DenseIndex(dim={self.dim}, kind={self.kind!r}{now}, size={len(self)})"
