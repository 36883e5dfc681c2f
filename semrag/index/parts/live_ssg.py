"""The semantic similarity graph as a part of a living index: changed, never rebuilt.

:class:`LiveSSG` holds the graph's state as fixed-width neighbour lists and applies a
:class:`~semrag.index.change.Change` in time proportional to what the change touches:

* **added documents** get their window nodes, their intra-document lists (within the
  document) and their inter-document lists (one exact search of the new nodes against
  all nodes); every existing node whose list a new node enters is updated (one product
  of the existing nodes with the new ones, merged into the lists);
* **removed documents** leave every list they were in: node numbers after them shift
  down, and each node that lost a neighbour has its list refilled by one search;
* **theme bridges** between documents follow the same two rules;
* the **3-d projection** (``triangulation_geometric_3d``) is updated at every change from
  running sums (the mean and ``X^T X`` of the node vectors), so it is always the PCA of
  the current nodes and is never refitted on a query;
* the **anchor search** is exact over the version's node vectors, so it needs no index
  to build or update.

After any sequence of changes the graph equals a fresh build over the surviving
documents (same nodes, edges, scores, bridges and projection), because the fresh build is
the same code applied to one change that adds every document (see
:mod:`semrag.index.parts.knn` for why the pieces agree exactly). Arrays of a published graph are
never written to again: each change builds new arrays, so a reader holding a version
keeps a consistent one.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

import numpy as np

from semrag._buffers import GrowingRows
from semrag.errors import StoreError
from semrag.index.change import Change, IndexedDocument
from semrag.index.parts._live_ssg_rows import (
    ARRAYS,
    exact_where,
    may_rank,
    moments,
    remap,
    rows_a_new_row_may_enter,
)
from semrag.index.parts.knn import (
    FLOAT32_TOLERANCE,
    NodeANN,
    empty_lists,
    merge_top,
    top_neighbours,
)
from semrag.index.parts.ssg import (
    SemanticSimilarityGraph,
    SSGConfig,
    inter_lists,
    intra_lists,
    pca3_from_sums,
    theme_lists,
)
from semrag.types import Floats, Ints

__all__ = ["LiveSSG"]


class LiveSSG:
    """The semantic similarity graph of an index, kept up to date change by change.

    Args:
        config: how the graph is built.
        dim: the vector dimension.

    Attributes:
        graph: the current :class:`SemanticSimilarityGraph` (immutable; replaced by each
            change).
        sentence_matrix: every sentence vector, documents in order (held as
            ``config.vector_dtype``, like :attr:`node_vectors`).
        doc_sentences: ``doc_sentences[d]`` is the first sentence of document ``d`` in
            :attr:`sentence_matrix` (a final entry closes the list).
    """

    def __init__(self, config: SSGConfig, dim: int) -> None:
        self.config = config
        self.dim = dim
        self.doc_ids: list[str] = []
        self.themes: list[list[str]] = []
        self._pos: dict[str, int] = {}
        k, x, t = config.top_k, config.top_x, config.top_t
        self.doc_nodes = np.zeros(1, np.int64)
        self.doc_sentences = np.zeros(1, np.int64)
        self.theme_vectors = np.zeros((0, dim), np.float32)
        self.bridge_cols, self.bridge_vals = empty_lists(0, t)
        self.node_doc = np.zeros(0, np.int64)
        self.node_sentences = np.zeros((0, 2), np.int64)
        self._dtype = np.dtype(config.vector_dtype)  # how node and sentence rows are held
        # knn="hnsw": a persistent node index, which holds the node rows; node_serial[i] is
        # node i's row in it. Otherwise the rows are in a growing buffer of their own.
        self._ann = NodeANN(dim, dtype=config.vector_dtype) if config.knn == "hnsw" else None
        self.node_serial = np.zeros(0, np.int64)
        self._nodes = GrowingRows(np.zeros((0, dim), self._dtype)) if self._ann is None else None
        self.intra_cols, self.intra_vals = empty_lists(0, k)
        self.inter_cols, self.inter_vals = empty_lists(0, x)
        self._sentences = GrowingRows(np.zeros((0, dim), self._dtype))
        self.vector_sum = np.zeros(dim, np.float64)
        self.vector_scatter = np.zeros((dim, dim), np.float64)
        self.graph = self._graph()

    @property
    def node_vectors(self) -> Floats:
        """Every window node's vector (a view: later changes never write into it).

        Float32, or float16 with ``SSGConfig(vector_dtype="float16")``: a product with a
        float32 query is float32 (NumPy converts the rows it multiplies). With
        ``knn="hnsw"`` the node index holds the rows and this is a
        :class:`~semrag._buffers.StoredRows` over them (an array of the rows asked for,
        read in place), so each node vector is held once.
        """
        if self._nodes is not None:
            return self._nodes.view
        assert self._ann is not None  # one of the two holds the rows
        return cast(Floats, self._ann.rows(self.node_serial))  # StoredRows reads as an array

    @property
    def sentence_matrix(self) -> Floats:
        """Every sentence vector, documents in order (a view, like :attr:`node_vectors`)."""
        return self._sentences.view

    def buffers(self) -> tuple[object, ...]:
        """What holds the sentence rows and the node rows now.

        The sentence rows' array, and the node rows' array (or, with ``knn="hnsw"``, the
        node index's FAISS graph once it holds any). They move when the rows outgrow them
        or are compacted.
        """
        nodes = self._nodes.buf if self._nodes is not None else self._ann and self._ann.holder
        return (self._sentences.buf,) + ((nodes,) if nodes is not None else ())

    def document_rows(self, doc_id: str) -> tuple[Floats, Floats]:
        """Views of ``doc_id``'s sentence vectors and window-node vectors in this graph.

        Raises:
            KeyError: if the document is not in the graph.
        """
        d = self._pos[doc_id]
        s0, s1 = self.doc_sentences[d], self.doc_sentences[d + 1]
        n0, n1 = self.doc_nodes[d], self.doc_nodes[d + 1]
        return self.sentence_matrix[s0:s1], self.node_vectors[n0:n1]

    @classmethod
    def fresh(cls, config: SSGConfig, dim: int, documents: Sequence[IndexedDocument]) -> LiveSSG:
        """A graph built in one pass over ``documents`` (one change that adds them all)."""
        ssg = cls(config, dim)
        ssg.apply(Change(version=1, added=tuple(documents)))
        return ssg

    # -- applying a change ------------------------------------------------------------------
    def stage(self, change: Change) -> Callable[[], None]:
        """Compute the graph after ``change``; the returned function makes it current.

        The work happens on a copy of this object's bookkeeping (arrays are replaced, never
        written, and appended rows go past every published view), so :attr:`graph` and the
        views readers hold stay as they are until the function is called.
        """
        nxt = copy.copy(self)
        nxt.doc_ids, nxt.themes, nxt._pos = list(self.doc_ids), list(self.themes), dict(self._pos)
        nxt._nodes, nxt._sentences = copy.copy(self._nodes), copy.copy(self._sentences)
        nxt.apply(change)
        return lambda: self.__dict__.update(nxt.__dict__)

    def apply(self, change: Change) -> None:
        """Remove ``change.removed``, add ``change.added``, and update what they touch."""
        refill_nodes, refill_docs = self._remove([d.id for d in change.removed])
        n_old, d_old = self.node_doc.size, len(self.doc_ids)
        self._add(change.added)
        cfg = self.config
        if self._ann is not None:
            if self._ann.needs_compaction():
                self._ann = self._ann.rebuild(self.node_vectors)
                self.node_serial = np.arange(self.node_doc.size, dtype=np.int64)
            self.inter_cols, self.inter_vals = self._ann_update(refill_nodes, n_old)
        else:
            self.inter_cols, self.inter_vals = self._update(
                self.inter_cols,
                self.inter_vals,
                self.node_vectors,
                self.node_doc,
                refill_nodes,
                n_old,
                lambda q, g: inter_lists(q, g, self.node_vectors, self.node_doc, cfg),
                cfg.top_x,
                cfg.min_inter,
            )
        doc_numbers = np.arange(len(self.doc_ids))
        self.bridge_cols, self.bridge_vals = self._update(
            self.bridge_cols,
            self.bridge_vals,
            self.theme_vectors,
            doc_numbers,
            refill_docs,
            d_old,
            lambda q, g: theme_lists(q, g, self.theme_vectors, doc_numbers, cfg),
            cfg.top_t,
            -np.inf,
        )
        self.graph = self._graph()

    def _remove(self, doc_ids: Sequence[str]) -> tuple[Ints, Ints]:
        """Drop documents; returns the (renumbered) nodes and documents to refill."""
        gone = sorted(self._pos[i] for i in set(doc_ids) if i in self._pos)
        if not gone:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        keep_doc = np.ones(len(self.doc_ids), bool)
        keep_doc[gone] = False
        keep_node = keep_doc[self.node_doc]
        node_map = np.where(keep_node, np.cumsum(keep_node) - 1, -1)
        doc_map = np.where(keep_doc, np.cumsum(keep_doc) - 1, -1)

        total, scatter = moments(self.node_vectors[~keep_node])
        self.vector_sum = self.vector_sum - total
        self.vector_scatter = self.vector_scatter - scatter

        counts = np.diff(self.doc_sentences)
        lost = np.where(keep_doc, 0, counts)
        shift = np.cumsum(lost) - lost  # sentences removed before each document
        node_doc = self.node_doc[keep_node]
        self.node_sentences = self.node_sentences[keep_node] - shift[node_doc][:, None]
        self._sentences.keep(np.repeat(keep_doc, counts))
        self.doc_sentences = np.r_[0, np.cumsum(counts[keep_doc])].astype(np.int64)
        self.doc_nodes = np.r_[0, np.cumsum(np.diff(self.doc_nodes)[keep_doc])].astype(np.int64)
        self.node_doc = doc_map[node_doc]
        if self._ann is not None:
            self._ann = self._ann.removed(self.node_serial[~keep_node])
            self.node_serial = self.node_serial[keep_node]
        if self._nodes is not None:
            self._nodes.keep(keep_node)
        self.intra_cols = remap(self.intra_cols[keep_node], node_map)
        self.intra_vals = self.intra_vals[keep_node]

        inter = self.inter_cols[keep_node]
        self.inter_cols = remap(inter, node_map)
        self.inter_vals = self.inter_vals[keep_node]
        refill_nodes = np.flatnonzero(((inter >= 0) & (self.inter_cols < 0)).any(axis=1))

        bridges = self.bridge_cols[keep_doc]
        self.bridge_cols = remap(bridges, doc_map)
        self.bridge_vals = self.bridge_vals[keep_doc]
        refill_docs = np.flatnonzero(((bridges >= 0) & (self.bridge_cols < 0)).any(axis=1))
        self.theme_vectors = self.theme_vectors[keep_doc]

        self.doc_ids = [d for d, k in zip(self.doc_ids, keep_doc, strict=True) if k]
        self.themes = [t for t, k in zip(self.themes, keep_doc, strict=True) if k]
        self._pos = {d: i for i, d in enumerate(self.doc_ids)}
        return refill_nodes.astype(np.int64), refill_docs.astype(np.int64)

    def _add(self, documents: Sequence[IndexedDocument]) -> None:
        if not documents:
            return
        cfg = self.config
        n0, s0 = self.node_doc.size, self.sentence_matrix.shape[0]
        d0 = len(self.doc_ids)
        node_doc, node_sent, intra_c, intra_v = [], [], [], []
        n, s = n0, s0
        # rows as the graph holds them (float16: rounded once); every list is computed
        # from these values, never from the ones the document came with
        held = [np.asarray(e.node_vectors).astype(self._dtype, copy=False) for e in documents]
        for j, entry in enumerate(documents):
            ranges = np.asarray(entry.node_ranges, dtype=np.int64).reshape(-1, 2)
            node_doc.append(np.full(len(ranges), d0 + j, np.int64))
            node_sent.append(ranges + s)
            c, v = intra_lists(held[j].astype(np.float32, copy=False), cfg)
            intra_c.append(np.where(c >= 0, c + n, -1))
            intra_v.append(v)
            n += len(ranges)
            s += len(entry.sentences)
            self.doc_ids.append(entry.id)
            self.themes.append(list(entry.themes))
            self._pos[entry.id] = d0 + j
        new_vectors = np.concatenate(held)
        del held
        total, scatter = moments(new_vectors)
        self.vector_sum = self.vector_sum + total
        self.vector_scatter = self.vector_scatter + scatter
        self.node_doc = np.concatenate([self.node_doc, *node_doc])
        self.node_sentences = np.concatenate([self.node_sentences, *node_sent])
        if self._nodes is not None:
            self._nodes.append(new_vectors)
        elif self._ann is not None:  # the node index holds the rows
            self._ann, serials = self._ann.added(new_vectors)
            self.node_serial = np.concatenate([self.node_serial, serials])
        self.intra_cols = np.concatenate([self.intra_cols, *intra_c])
        self.intra_vals = np.concatenate([self.intra_vals, *intra_v])
        self._sentences.append(
            np.concatenate([e.sentence_vectors for e in documents]).astype(self._dtype, copy=False)
        )
        self.doc_nodes = np.r_[
            self.doc_nodes, n0 + np.cumsum([len(e.node_ranges) for e in documents])
        ]
        self.doc_sentences = np.r_[
            self.doc_sentences, s0 + np.cumsum([len(e.sentences) for e in documents])
        ]
        self.theme_vectors = np.concatenate(
            [self.theme_vectors, np.stack([e.theme_vector for e in documents])]
        ).astype(np.float32)
        pad_x, pad_xv = empty_lists(n - n0, cfg.top_x)
        self.inter_cols = np.concatenate([self.inter_cols, pad_x])
        self.inter_vals = np.concatenate([self.inter_vals, pad_xv])
        pad_t, pad_tv = empty_lists(len(documents), cfg.top_t)
        self.bridge_cols = np.concatenate([self.bridge_cols, pad_t])
        self.bridge_vals = np.concatenate([self.bridge_vals, pad_tv])

    @staticmethod
    def _update(
        cols: Ints,
        vals: Floats,
        vectors: Floats,
        groups: Ints,
        refill: Ints,
        n_old: int,
        search: Callable[[Floats, Ints], tuple[Ints, Floats]],  # lists against every row
        k: int,
        floor: float,
    ) -> tuple[Ints, Floats]:
        """Recompute the lists of new rows and of ``refill``; merge new rows into the rest."""
        n = vectors.shape[0]
        if not k:
            return cols, vals
        cols, vals = cols.copy(), vals.copy()
        targets = np.union1d(refill, np.arange(n_old, n)).astype(np.int64)
        if targets.size:
            cols[targets], vals[targets] = search(vectors[targets], groups[targets])
        if n_old and n > n_old:
            others = rows_a_new_row_may_enter(vals, vectors, n_old, floor)
            others = np.setdiff1d(others, refill, assume_unique=True)
            if others.size:
                new_c, new_v = top_neighbours(
                    vectors[others], groups[others], vectors[n_old:], groups[n_old:], k, floor
                )
                new_c = np.where(new_c >= 0, new_c + n_old, -1)
                cols[others], vals[others] = merge_top(cols[others], vals[others], new_c, new_v, k)
        return cols, vals

    def _ann_update(self, refill: Ints, n_old: int) -> tuple[Ints, Floats]:
        """``knn="hnsw"``: the inter-document lists after a change, from the node index.

        New rows and ``refill`` get lists from an HNSW search; an old row takes a new row
        into its list when it is among that new row's hits (the reverse-neighbour
        approximation), so a change costs its own rows times ``log`` of the corpus.
        """
        cfg = self.config
        k, n = cfg.top_x, self.node_doc.size
        cols, vals = self.inter_cols, self.inter_vals
        if not k:
            return cols, vals
        cols, vals = cols.copy(), vals.copy()
        targets = np.union1d(refill, np.arange(n_old, n)).astype(np.int64)
        # a new row looks deeper, so that the old rows it should enter are among its hits
        hits, sims = self._ann_hits(targets, 2 * k)
        cols[targets], vals[targets] = hits[:, :k], sims[:, :k]
        is_new = targets >= n_old
        src = np.repeat(targets[is_new], hits.shape[1])
        dst, val = hits[is_new].ravel(), sims[is_new].ravel()
        back = (dst >= 0) & (dst < n_old) & ~np.isin(dst, refill)
        if back.any():
            c, u, v = dst[back], src[back], val[back]
            order = np.lexsort((u, -v, c))  # per old row, best first (ties: lower row)
            c, u, v = c[order], u[order], v[order]
            rows, start, count = np.unique(c, return_index=True, return_counts=True)
            rank = np.arange(c.size) - np.repeat(start, count)
            w = min(int(count.max()), k)
            take = rank < w
            more_c, more_v = empty_lists(rows.size, w)
            at = np.repeat(np.arange(rows.size), count)[take]
            more_c[at, rank[take]], more_v[at, rank[take]] = u[take], v[take]
            cols[rows], vals[rows] = merge_top(cols[rows], vals[rows], more_c, more_v, k)
        return cols, vals

    def _ann_hits(self, rows: Ints, width: int) -> tuple[Ints, Floats]:
        """Up to ``width`` HNSW hits of each row in other documents, ``>= min_inter``.

        Values are :func:`~semrag.index.parts.knn.exact_similarities`, best first (ties: lower
        row). A row whose search was used up by its own document's nodes searches again
        past them.
        """
        cols, vals = empty_lists(rows.size, width)
        if not rows.size or self._ann is None:
            return cols, vals
        own = np.diff(self.doc_nodes)[self.node_doc[rows]]
        depth = width + min(int(own.max()) - 1, 64)
        again = self._ann_fill(rows, np.arange(rows.size), depth, width, cols, vals)
        for i in again:  # own document larger than the first search went: search past it
            self._ann_fill(rows, np.array([i]), width + int(own[i]), width, cols, vals)
        return cols, vals

    def _ann_fill(
        self, rows: Ints, which: Ints, depth: int, width: int, cols: Ints, vals: Floats
    ) -> Ints:
        """Fill ``cols[which], vals[which]``; returns the ones whose search ran short."""
        floor = self.config.min_inter
        nodes = self.node_vectors
        ann = self._ann
        assert ann is not None  # called with knn="hnsw" only
        short = []
        for a in range(0, which.size, 512):  # 512 x depth x d float64 values at a time
            part = which[a : a + 512]
            q = nodes[rows[part]]
            serials, fast = ann.search(q, depth)
            hit = np.searchsorted(self.node_serial, np.maximum(serials, 0))
            hit = np.where(serials >= 0, np.minimum(hit, self.node_doc.size - 1), -1)
            same = self.node_doc[np.maximum(hit, 0)] == self.node_doc[rows[part], None]
            other = (hit >= 0) & ~same
            exact = exact_where(q, nodes, hit, may_rank(fast, other, width, floor))
            ok = other & (exact >= floor)
            order = np.lexsort((np.where(ok, hit, np.iinfo(np.int64).max), -exact), axis=1)
            order = order[:, :width]
            got = np.take_along_axis(ok, order, axis=1)
            w = order.shape[1]
            cols[part, :w] = np.where(got, np.take_along_axis(hit, order, axis=1), -1)
            vals[part, :w] = np.where(got, np.take_along_axis(exact, order, axis=1), -np.inf)
            # ran short: own nodes took places, the search was full and still above the floor
            if serials.shape[1] == depth:
                short_rows = (
                    (got.sum(axis=1) < width)
                    & ((hit >= 0) & same).any(axis=1)
                    & (fast[:, -1] >= floor - FLOAT32_TOLERANCE)
                )
                short.extend(part[short_rows].tolist())
        return np.asarray(short, np.int64)

    # -- reading ----------------------------------------------------------------------------
    def _graph(self) -> SemanticSimilarityGraph:
        mean, comps = pca3_from_sums(self.node_doc.size, self.vector_sum, self.vector_scatter)
        bridges = [
            [(int(j), float(v)) for j, v in zip(c, w, strict=True) if j >= 0]
            for c, w in zip(self.bridge_cols.tolist(), self.bridge_vals.tolist(), strict=True)
        ]
        return SemanticSimilarityGraph(
            config=self.config,
            doc_ids=list(self.doc_ids),
            node_doc=self.node_doc,
            node_sentences=self.node_sentences,
            node_vectors=self.node_vectors,
            intra=(self.intra_cols, self.intra_vals),
            inter=(self.inter_cols, self.inter_vals),
            themes=[list(t) for t in self.themes],
            theme_bridges=bridges,
            pca_mean=mean,
            pca_components=comps,
            node_ann=self._ann,
            node_serial=self.node_serial if self._ann is not None else None,
        )

    # -- persistence ------------------------------------------------------------------------
    def save(self, directory: Path) -> list[str]:
        """Write ``ssg.npz`` and ``ssg.json`` (document ids and themes).

        With ``knn="hnsw"`` the node index is saved too (``ssg_ann.faiss``,
        ``ssg_ann_dead.npy``). The node and sentence vectors are the index's to save
        (``node_vectors.npy``, ``sentence_vectors.npy``); :meth:`load` takes them back as
        arguments.
        """
        arrays = {name: getattr(self, name) for name in ARRAYS}
        files = ["ssg.npz", "ssg.json"]
        if self._ann is not None:
            arrays["node_serial"] = self.node_serial
            files += self._ann.save(directory, "ssg_ann")
        np.savez(directory / "ssg.npz", **arrays)
        (directory / "ssg.json").write_text(
            json.dumps({"doc_ids": self.doc_ids, "themes": self.themes}), encoding="utf-8"
        )
        return files

    @classmethod
    def load(
        cls,
        directory: Path,
        config: SSGConfig,
        *,
        node_vectors: Floats,
        sentence_matrix: Floats,
    ) -> LiveSSG:
        """Read what :meth:`save` wrote, with the node and sentence vectors saved beside it.

        Raises:
            StoreError: if the arrays do not fit together.
        """
        ssg = cls(config, int(node_vectors.shape[1]))
        if ssg._ann is None:
            ssg._nodes = GrowingRows(np.asarray(node_vectors, dtype=ssg._dtype), headroom=0.125)
        ssg._sentences = GrowingRows(np.asarray(sentence_matrix, dtype=ssg._dtype), headroom=0.125)
        with np.load(directory / "ssg.npz", allow_pickle=False) as z:
            missing = set(ARRAYS) - set(z.files)
            if missing:
                raise StoreError(f"ssg.npz lacks {sorted(missing)}")
            for name in ARRAYS:
                setattr(ssg, name, z[name])
            saved_serials = z["node_serial"] if "node_serial" in z.files else None
        meta = json.loads((directory / "ssg.json").read_text(encoding="utf-8"))
        ssg.doc_ids = [str(d) for d in meta["doc_ids"]]
        ssg.themes = [[str(t) for t in ts] for ts in meta["themes"]]
        ssg._pos = {d: i for i, d in enumerate(ssg.doc_ids)}
        if ssg._ann is not None:
            if saved_serials is not None and (directory / "ssg_ann.faiss").exists():
                ssg._ann = NodeANN.load(directory, "ssg_ann", ssg.dim, dtype=config.vector_dtype)
                ssg.node_serial = saved_serials
            else:  # saved without the node index (another knn): build it once
                ssg._ann = ssg._ann.rebuild(np.asarray(node_vectors, dtype=ssg._dtype))
                ssg.node_serial = np.arange(ssg.node_doc.size, dtype=np.int64)
        ssg._check()
        ssg.graph = ssg._graph()
        return ssg

    def _check(self) -> None:
        n, docs = self.node_doc.size, len(self.doc_ids)
        cfg = self.config
        shapes = {
            "doc_nodes": (docs + 1,),
            "doc_sentences": (docs + 1,),
            "theme_vectors": (docs, self.dim),
            "bridge_cols": (docs, cfg.top_t),
            "bridge_vals": (docs, cfg.top_t),
            "node_sentences": (n, 2),
            "node_vectors": (n, self.dim),
            "intra_cols": (n, cfg.top_k),
            "intra_vals": (n, cfg.top_k),
            "inter_cols": (n, cfg.top_x),
            "inter_vals": (n, cfg.top_x),
            "sentence_matrix": (int(self.doc_sentences[-1]) if docs else 0, self.dim),
            "vector_sum": (self.dim,),
            "vector_scatter": (self.dim, self.dim),
        }
        for name, shape in shapes.items():
            if getattr(self, name).shape != shape:
                raise StoreError(
                    f"ssg.npz: {name} has shape {getattr(self, name).shape}, not {shape}"
                )
        if self._ann is not None:
            serial = self.node_serial
            if serial.shape != (n,) or (n and (np.diff(serial) <= 0).any()):
                raise StoreError("ssg.npz: node_serial does not number the nodes in order")
            if n and (serial[-1] >= self._ann.n or self._ann.dead[serial].any()):
                raise StoreError("ssg_ann: the node index does not hold the graph's nodes")
        lists = np.concatenate([self.intra_cols.ravel(), self.inter_cols.ravel()])
        if len(self.themes) != docs or (lists >= n).any() or (self.bridge_cols >= docs).any():
            raise StoreError("ssg.npz: neighbour lists point outside the graph")
        if n and (self.node_doc.min() < 0 or self.node_doc.max() >= docs):
            raise StoreError("ssg.npz: nodes belong to documents that are not there")

    def __repr__(self) -> str:
        return f"LiveSSG(documents={len(self.doc_ids)}, nodes={self.node_doc.size})"
