"""The semantic similarity graph (SSG) of Lester's traversal retrievers.

Nodes are sliding windows of sentences (default 3 sentences, step 1) within each document;
each node keeps its sentences as children. Edges connect each node to its ``top_k`` most
similar nodes of the same document (cosine >= ``min_intra``) and its ``top_x`` most similar
nodes of other documents (cosine >= ``min_inter``). Edges are found with FAISS, never with a
dense N x N matrix: intra-document blocks are small, and the inter-document neighbours
come from one batched kNN search deep enough to see past a node's own document (an id-range
selector excludes the document for the rare rows that need more). Documents carry themes
(keywords, or an LLM's themes), and each document is bridged to its ``top_t`` most
similar documents by theme vector. Edges are stored in CSR form.

References:
    E. Lester (2025), "Novel Semantic Similarity Graph Traversal Algorithms for Semantic
    Retrieval Augmented Generation Systems".
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag._deps import faiss as _faiss
from semrag._validation import INT, REAL, Interval, Options, validate_params

__all__ = ["SSGConfig", "SemanticSimilarityGraph", "build_edges", "keyword_themes", "window_ranges"]

Floats = npt.NDArray[np.float32]
Ints = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class SSGConfig:
    """How the semantic similarity graph is built (defaults follow the paper's code)."""

    window: int = 3
    """Sentences per node."""
    step: int = 1
    """Sentences between the starts of consecutive nodes."""
    top_k: int = 15
    """Intra-document neighbours kept per node."""
    top_x: int = 5
    """Inter-document neighbours kept per node."""
    min_intra: float = 0.4
    """Least cosine similarity of an intra-document edge."""
    min_inter: float = 0.3
    """Least cosine similarity of an inter-document edge."""
    top_t: int = 3
    """Theme bridges kept per document."""
    n_themes: int = 5
    """Themes per document."""
    node_pooling: str = "mean"
    """``"mean"`` of the sentence vectors (no extra embedding) or ``"concat"`` (embed the text)."""
    knn: str = "auto"
    """``"flat"`` (exact), ``"hnsw"`` (approximate) or ``"auto"`` (HNSW above 50,000 nodes)."""

    def __post_init__(self) -> None:
        at_least_1 = [Interval(INT, 1, None)]
        at_least_0 = [Interval(INT, 0, None)]
        similarity = [Interval(REAL, -1, 1)]
        checked = validate_params(
            "SSGConfig",
            {
                "window": at_least_1,
                "step": at_least_1,
                "top_k": at_least_0,
                "top_x": at_least_0,
                "min_intra": similarity,
                "min_inter": similarity,
                "top_t": at_least_0,
                "n_themes": at_least_0,
                "node_pooling": [Options("mean", "concat")],
                "knn": [Options("auto", "flat", "hnsw")],
            },
            asdict(self),
        )
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    def to_dict(self) -> dict[str, Any]:
        """The config as a JSON-ready dict."""
        return asdict(self)


def window_ranges(n_sentences: int, window: int, step: int) -> list[tuple[int, int]]:
    """Half-open sentence ranges of the nodes of one document.

    A document shorter than ``window`` gets one node with all its sentences; the last
    window always reaches the last sentence.

    Example:
        >>> window_ranges(5, 3, 1)
        [(0, 3), (1, 4), (2, 5)]
    """
    if n_sentences <= 0:
        return []
    if n_sentences <= window:
        return [(0, n_sentences)]
    starts = list(range(0, n_sentences - window + 1, step))
    if starts[-1] + window < n_sentences:
        starts.append(n_sentences - window)
    return [(s, s + window) for s in starts]


def _topk_rows(sims: np.ndarray, k: int, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the columns of the ``k`` largest values above ``floor`` (-1 padded)."""
    n_rows, n_cols = sims.shape
    k_eff = min(k, n_cols)
    if k_eff <= 0:
        return np.full((n_rows, 0), -1), np.zeros((n_rows, 0), np.float32)
    part = np.argpartition(-sims, k_eff - 1, axis=1)[:, :k_eff]
    vals = np.take_along_axis(sims, part, axis=1)
    order = np.argsort(-vals, axis=1, kind="stable")
    cols = np.take_along_axis(part, order, axis=1)
    vals = np.take_along_axis(vals, order, axis=1)
    cols = np.where(vals >= floor, cols, -1)
    return cols, vals


def build_edges(
    vectors: Floats,
    doc_offsets: Sequence[int],
    config: SSGConfig,
) -> tuple[Ints, Ints, Floats, npt.NDArray[np.int8]]:
    """Find the intra- and inter-document kNN edges of the nodes.

    Args:
        vectors: node vectors, L2-normalised, nodes of each document contiguous.
        doc_offsets: ``doc_offsets[d]`` is the first node of document ``d``; a final entry
            equal to the number of nodes closes the list.
        config: the SSG configuration.

    Returns:
        CSR arrays ``(indptr, indices, scores, kinds)``; ``kinds`` is 0 for an
        intra-document edge and 1 for an inter-document one. Rows list a node's intra
        edges then its inter edges, each by decreasing score.
    """
    n = vectors.shape[0]
    src: list[np.ndarray] = []
    dst: list[np.ndarray] = []
    val: list[np.ndarray] = []
    kind: list[np.ndarray] = []

    def collect(a: int, cols: np.ndarray, vals: np.ndarray, k: int, offset: int) -> None:
        keep = cols >= 0
        rows = np.broadcast_to(np.arange(a, a + cols.shape[0])[:, None], cols.shape)
        src.append(rows[keep])
        dst.append(cols[keep] + offset)
        val.append(vals[keep].astype(np.float32))
        kind.append(np.full(int(keep.sum()), k, dtype=np.int8))

    bounds = list(doc_offsets)
    # Intra-document: blocks are small; big documents go through a FAISS flat index.
    for a, b in zip(bounds, bounds[1:], strict=False):
        if b - a < 2 or config.top_k == 0:
            continue
        block = vectors[a:b]
        if b - a <= 4096:
            sims = block @ block.T
            np.fill_diagonal(sims, -np.inf)
            cols, vals = _topk_rows(sims, config.top_k, config.min_intra)
        else:
            index = _faiss().IndexFlatIP(block.shape[1])
            index.add(block)
            vals, cols = index.search(block, config.top_k + 1)
            vals = np.where(cols != np.arange(b - a)[:, None], vals, -np.inf)
            cols, vals = _topk_rows_from(cols, vals, config.top_k, config.min_intra)
        collect(a, cols, vals, 0, a)
    # Inter-document: one batched kNN search deep enough to see past a node's own
    # document; the few rows still short of top_x (documents larger than the search depth)
    # are searched again with their document's id range excluded.
    if config.top_x > 0 and len(bounds) > 2:
        faiss = _faiss()
        knn = config.knn if config.knn != "auto" else ("hnsw" if n > 50_000 else "flat")
        if knn == "flat":
            index = faiss.IndexFlatIP(vectors.shape[1])
            params_cls = faiss.SearchParameters
        else:
            index = faiss.IndexHNSWFlat(vectors.shape[1], 16, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = 40
            params_cls = faiss.SearchParametersHNSW
        index.add(vectors)
        sizes = np.diff(bounds)
        doc_of = np.repeat(np.arange(sizes.size), sizes)
        depth = min(n, config.top_x + min(int(sizes.max()) - 1, 64))
        if knn == "hnsw":
            index.hnsw.efSearch = max(64, depth)
        vals, cols = index.search(vectors, depth)
        other = (cols >= 0) & (doc_of[np.maximum(cols, 0)] != doc_of[:, None])
        rank = np.cumsum(other, axis=1)
        take = other & (rank <= config.top_x)
        short = np.flatnonzero(take.sum(axis=1) < np.minimum(config.top_x, n - sizes[doc_of]))
        cols = np.where(take, cols, -1)
        cols = np.where(vals >= config.min_inter, cols, -1)
        keep = cols >= 0
        keep[short] = False
        rows = np.broadcast_to(np.arange(n)[:, None], cols.shape)
        src.append(rows[keep])
        dst.append(cols[keep].astype(np.int64))
        val.append(vals[keep].astype(np.float32))
        kind.append(np.ones(int(keep.sum()), dtype=np.int8))
        for d in np.unique(doc_of[short]):
            a, b = bounds[d], bounds[d + 1]
            rows_d = short[doc_of[short] == d]
            params = params_cls(sel=faiss.IDSelectorNot(faiss.IDSelectorRange(a, b)))
            if knn == "hnsw":
                params.efSearch = max(64, 4 * config.top_x)
            v2, c2 = index.search(vectors[rows_d], config.top_x, params=params)
            c2 = np.where(v2 >= config.min_inter, c2, -1)
            ok = c2 >= 0
            src.append(np.broadcast_to(rows_d[:, None], c2.shape)[ok])
            dst.append(c2[ok].astype(np.int64))
            val.append(v2[ok].astype(np.float32))
            kind.append(np.ones(int(ok.sum()), dtype=np.int8))
    if src:
        s_all, d_all = np.concatenate(src), np.concatenate(dst)
        v_all, k_all = np.concatenate(val), np.concatenate(kind)
    else:
        s_all = d_all = np.zeros(0, np.int64)
        v_all, k_all = np.zeros(0, np.float32), np.zeros(0, np.int8)
    order = np.lexsort((-v_all, k_all, s_all))  # by node, intra before inter, best first
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(s_all, minlength=n), out=indptr[1:])
    return indptr, d_all[order].astype(np.int64), v_all[order], k_all[order]


def _topk_rows_from(
    cols: np.ndarray, vals: np.ndarray, k: int, floor: float
) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(-vals, axis=1, kind="stable")[:, :k]
    cols = np.take_along_axis(cols, order, axis=1)
    vals = np.take_along_axis(vals, order, axis=1)
    return np.where(vals >= floor, cols, -1), vals


_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]+")
_STOP = frozenset(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    one two three also many may much new first last used use using well however within without
    including became become known often since although among along around across""".split()
)


def _phrases(text: str) -> list[str]:
    words = [w.lower() for w in _WORD.findall(text)]
    out: list[str] = []
    for i, w in enumerate(words):
        if w in _STOP or len(w) < 3:
            continue
        out.append(w)
        if i + 1 < len(words) and words[i + 1] not in _STOP and len(words[i + 1]) >= 3:
            out.append(f"{w} {words[i + 1]}")
    return out


def keyword_themes(texts: Sequence[str], n_themes: int) -> list[list[str]]:
    """Themes of each document without an LLM: its top TF-IDF words and word pairs.

    A pair is preferred over its words when it scores at least as well; a word already
    covered by a chosen pair is skipped.

    Example:
        >>> keyword_themes(["Honey bees dance. Honey bees fly.", "Rockets fly to the Moon."], 2)
        [['honey bees', 'dance'], ['moon', 'rockets']]
    """
    counts = [Counter(_phrases(t)) for t in texts]
    df = Counter(p for c in counts for p in c)
    n_docs = len(texts)
    themes: list[list[str]] = []
    for c in counts:
        scored = sorted(
            (
                (tf * (1 + math.log((1 + n_docs) / (1 + df[p]))) * (1.2 if " " in p else 1.0), p)
                for p, tf in c.items()
            ),
            key=lambda x: (-x[0], x[1]),
        )
        chosen: list[str] = []
        covered: set[str] = set()
        for _, p in scored:
            if len(chosen) >= n_themes:
                break
            parts = p.split()
            if len(parts) == 1 and p in covered:
                continue
            if len(parts) == 2 and c[p] < 2:
                continue  # a pair seen once is noise
            chosen.append(p)
            covered.update(parts)
        themes.append(chosen)
    return themes


@dataclass(slots=True)
class SemanticSimilarityGraph:
    """The built graph: nodes, sentence children, CSR edges, themes and bridges.

    Node ``i`` covers global sentences ``node_sentences[i, 0] : node_sentences[i, 1]`` of
    document ``node_doc[i]`` (an index into ``doc_ids``).
    """

    config: SSGConfig
    doc_ids: list[str]
    node_doc: Ints
    node_sentences: Ints
    node_vectors: Floats
    indptr: Ints
    indices: Ints
    scores: Floats
    kinds: npt.NDArray[np.int8]
    themes: list[list[str]]
    theme_bridges: list[list[tuple[int, float]]]
    pca_mean: Floats
    pca_components: Floats

    @property
    def n_nodes(self) -> int:
        """Number of window nodes."""
        return int(self.node_doc.size)

    def neighbours(self, node: int) -> tuple[Ints, Floats, npt.NDArray[np.int8]]:
        """``(nodes, scores, kinds)`` of the edges leaving ``node``."""
        a, b = self.indptr[node], self.indptr[node + 1]
        return self.indices[a:b], self.scores[a:b], self.kinds[a:b]

    def project_3d(self, vectors: Floats) -> Floats:
        """Project vectors with the PCA fitted at build time (triangulation_geometric_3d)."""
        return (
            (np.asarray(vectors, dtype=np.float32) - self.pca_mean) @ self.pca_components.T
        ).astype(np.float32)

    def arrays(self) -> dict[str, np.ndarray]:
        """Numeric state for persistence (``np.savez``, no pickle)."""
        return {
            "node_doc": self.node_doc,
            "node_sentences": self.node_sentences,
            "node_vectors": self.node_vectors,
            "indptr": self.indptr,
            "indices": self.indices,
            "scores": self.scores,
            "kinds": self.kinds,
            "pca_mean": self.pca_mean,
            "pca_components": self.pca_components,
        }


def fit_pca3(vectors: Floats) -> tuple[Floats, Floats]:
    """Mean and top-3 principal axes of ``vectors`` (zero-padded when rank < 3)."""
    d = vectors.shape[1] if vectors.ndim == 2 else 0
    if vectors.shape[0] == 0:
        return np.zeros(d, np.float32), np.zeros((3, d), np.float32)
    mean = vectors.mean(axis=0)
    centred = vectors - mean
    # SVD of a small Gram-free sample keeps the cost bounded for very large graphs.
    sample = centred if centred.shape[0] <= 20_000 else centred[:: centred.shape[0] // 20_000 + 1]
    _, _, vt = np.linalg.svd(sample, full_matrices=False)
    comps = np.zeros((3, d), np.float32)
    comps[: min(3, vt.shape[0])] = vt[:3]
    return mean.astype(np.float32), comps
