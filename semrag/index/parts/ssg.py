"""The semantic similarity graph (SSG) of Lester's traversal retrievers.

Nodes are sliding windows of sentences (default 3 sentences, step 1) within each document;
each node keeps its sentences as children. Edges connect each node to its ``top_k`` most
similar nodes of the same document (cosine >= ``min_intra``) and its ``top_x`` most similar
nodes of other documents (cosine >= ``min_inter``). Edges are found by blocked exact
products (never a dense N x N matrix; HNSW for batches above 50,000 nodes), through the
shared top-k of :mod:`semrag.index.parts.knn`. Documents carry themes (keywords, or an LLM's
themes), and each document is bridged to its ``top_t`` most similar documents by theme
vector. Edges are stored as fixed-width lists, a node's intra edges and its inter edges
(best first, ``-1`` pads); the CSR form is made on demand.
:class:`~semrag.index.parts.live_ssg.LiveSSG` keeps the graph of a changing index up to date.

References:
    E. Lester (2025), "Novel Semantic Similarity Graph Traversal Algorithms for Semantic
    Retrieval Augmented Generation Systems".
"""

from __future__ import annotations

import heapq
import operator
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import compress, repeat
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag._validation import INT, REAL, Interval, Options, validate_params
from semrag.errors import ConfigError
from semrag.index.parts.knn import hnsw_top, top_neighbours
from semrag.types import Floats, Ints

__all__ = ["SSGConfig", "SemanticSimilarityGraph", "build_edges", "keyword_themes", "window_ranges"]


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
    """How inter-document neighbours are found.

    ``"flat"``: exact; a graph changed step by step equals a fresh build, and a change
    costs its nodes times the corpus (one matrix product). ``"hnsw"``: approximate; the
    index keeps a persistent HNSW over its nodes, a change costs its nodes times ``log``
    of the corpus, and the lists find about 97% of the exact neighbours (they depend on the
    order of the changes). ``"auto"``: exact, except that one batch of more than 50,000 new
    nodes (a large fresh build) is searched with a temporary HNSW."""
    vector_dtype: str = "float32"
    """How the graph holds its node and sentence vectors: ``"float32"``, or ``"float16"``
    (half the memory; needs ``knn="hnsw"``, whose node index then holds them as float16
    too). With ``"float16"`` each vector is rounded once when its document is added, and
    every similarity (edges, PCA, anchors, traversal scores) is computed from the rounded
    values, so the intra-document lists, bridges and projection equal an exact build's over
    the rounded rows. Rounding moves a unit vector's cosine with another by about 1e-3 at
    most."""

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
                "vector_dtype": [Options("float32", "float16")],
            },
            asdict(self),
        )
        for name, value in checked.items():
            object.__setattr__(self, name, value)
        if self.vector_dtype == "float16" and self.knn != "hnsw":
            raise ConfigError(
                'SSGConfig(vector_dtype="float16") needs knn="hnsw": an exact search would '
                "convert every float16 row to float32 on each query and each change"
            )

    def to_dict(self) -> dict[str, Any]:
        """The config as a JSON-ready dict."""
        return asdict(self)


def window_ranges(n_sentences: int, window: int, step: int) -> list[tuple[int, int]]:
    """Half-open sentence ranges of the nodes of one document.

    A document shorter than ``window`` gets one node with all its sentences; the last
    window always reaches the last sentence.

    Examples:
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


def _use_hnsw(config: SSGConfig, n_queries: int) -> bool:
    return config.knn == "hnsw" or (config.knn == "auto" and n_queries > 50_000)


def intra_lists(vectors: Floats, config: SSGConfig) -> tuple[Ints, Floats]:
    """The intra-document lists of one document's nodes (node numbers local to it)."""
    local = np.arange(vectors.shape[0])
    return top_neighbours(vectors, local, vectors, local, config.top_k, config.min_intra)


def inter_lists(
    queries: Floats, query_docs: Ints, vectors: Floats, node_doc: Ints, config: SSGConfig
) -> tuple[Ints, Floats]:
    """The inter-document lists of some nodes against all nodes.

    Exact, or HNSW for batches of more than 50,000 nodes when ``config.knn`` is ``"auto"``.
    """
    find = hnsw_top if _use_hnsw(config, queries.shape[0]) else top_neighbours
    return find(queries, query_docs, vectors, node_doc, config.top_x, config.min_inter)


def theme_lists(
    queries: Floats, query_docs: Ints, themes: Floats, docs: Ints, config: SSGConfig
) -> tuple[Ints, Floats]:
    """The theme bridges of some documents against all documents.

    Exact, or HNSW for batches of more than 50,000 documents (``knn`` ``"auto"`` or
    ``"hnsw"``): a fresh build over that many documents would otherwise compare every
    pair.
    """
    big = config.knn != "flat" and queries.shape[0] > 50_000
    find = hnsw_top if big else top_neighbours
    return find(queries, query_docs, themes, docs, config.top_t, -np.inf)


def edges_csr(
    intra: tuple[Ints, Floats], inter: tuple[Ints, Floats]
) -> tuple[Ints, Ints, Floats, npt.NDArray[np.int8]]:
    """CSR arrays ``(indptr, indices, scores, kinds)`` from fixed-width lists.

    Rows list a node's intra edges (kind 0) then its inter edges (kind 1), each best first.
    """
    cols = np.concatenate([intra[0], inter[0]], axis=1)
    vals = np.concatenate([intra[1], inter[1]], axis=1)
    kinds = np.broadcast_to(
        np.r_[np.zeros(intra[0].shape[1], np.int8), np.ones(inter[0].shape[1], np.int8)],
        cols.shape,
    )
    present = cols >= 0
    indptr = np.zeros(cols.shape[0] + 1, dtype=np.int64)
    np.cumsum(present.sum(axis=1), out=indptr[1:])
    return indptr, cols[present], vals[present].astype(np.float32), kinds[present]


def build_edges(
    vectors: Floats,
    doc_offsets: Sequence[int],
    config: SSGConfig,
) -> tuple[Ints, Ints, Floats, npt.NDArray[np.int8]]:
    """Find the intra- and inter-document kNN edges of the nodes in one pass.

    Args:
        vectors: node vectors, L2-normalised, nodes of each document contiguous.
        doc_offsets: ``doc_offsets[d]`` is the first node of document ``d``; a final entry
            equal to the number of nodes closes the list.
        config: the SSG configuration.

    Returns:
        CSR arrays ``(indptr, indices, scores, kinds)``; ``kinds`` is 0 for an
        intra-document edge and 1 for an inter-document one. Rows list a node's intra
        edges then its inter edges, each by decreasing score (ties: lower node).
    """
    bounds = np.asarray(doc_offsets, dtype=np.int64)
    n = vectors.shape[0]
    node_doc = np.repeat(np.arange(bounds.size - 1), np.diff(bounds))
    intra_c, intra_v = (
        np.full((n, config.top_k), -1, np.int64),
        np.full((n, config.top_k), -np.inf, np.float32),
    )
    for a, b in zip(bounds, bounds[1:], strict=False):
        c, v = intra_lists(vectors[a:b], config)
        intra_c[a:b], intra_v[a:b] = np.where(c >= 0, c + a, -1), v
    return edges_csr((intra_c, intra_v), inter_lists(vectors, node_doc, vectors, node_doc, config))


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


def _phrase_counts(text: str) -> Counter[str]:
    """How often ``text`` uses each content word and each pair of adjacent content words.

    Content words: 3+ letters, not a stop word, lower case. Counted in C over the word
    list (no Python loop per word).
    """
    words = list(map(str.lower, _WORD.findall(text)))
    content = list(
        map(
            operator.and_,
            map(operator.not_, map(_STOP.__contains__, words)),
            map(operator.ge, map(len, words), repeat(3)),
        )
    )
    counts = Counter(compress(words, content))
    pairs = compress(zip(words, words[1:], strict=False), map(operator.and_, content, content[1:]))
    counts.update(map(" ".join, pairs))
    return counts


def keyword_themes(texts: Sequence[str], n_themes: int) -> list[list[str]]:
    """Themes of each document without an LLM: its most frequent content words and pairs.

    A document's themes depend on its own text only (stop words removed; a pair scores
    1.2 times its count and is preferred over its words when it scores at least as
    well; a word already covered by a chosen pair is skipped). So adding or removing
    other documents never changes them, and an index grown change by change has the
    themes a fresh build would give.

    Examples:
        >>> keyword_themes(["Honey bees dance. Honey bees fly.", "Rockets fly to the Moon."], 2)
        [['honey bees', 'dance'], ['fly', 'moon']]
    """
    themes: list[list[str]] = []
    for text in texts:
        # best first: the highest score, then the phrase (a heap: only the first few are
        # ever taken); a pair seen once is noise and never a candidate
        scored = [
            (-1.2 * tf if " " in p else -float(tf), p)
            for p, tf in _phrase_counts(text).items()
            if tf >= 2 or " " not in p
        ]
        heapq.heapify(scored)
        chosen: list[str] = []
        covered: set[str] = set()
        while scored and len(chosen) < n_themes:
            p = heapq.heappop(scored)[1]
            parts = p.split()
            if len(parts) == 1 and p in covered:
                continue
            chosen.append(p)
            covered.update(parts)
        themes.append(chosen)
    return themes


@dataclass(slots=True)
class SemanticSimilarityGraph:
    """The built graph: nodes, sentence children, edges, themes and bridges.

    Node ``i`` covers global sentences ``node_sentences[i, 0] : node_sentences[i, 1]`` of
    document ``node_doc[i]`` (an index into ``doc_ids``). Its edges are row ``i`` of the
    fixed-width lists :attr:`intra` and :attr:`inter` (:meth:`csr` gives every edge in CSR
    form; the graph does not hold the edges twice).
    """

    config: SSGConfig
    doc_ids: list[str]
    node_doc: Ints
    node_sentences: Ints
    node_vectors: Floats
    intra: tuple[Ints, Floats]
    """``(cols, values)``, one row per node: its intra-document neighbours, best first,
    ``-1`` (value ``-inf``) after the last; never written once the graph is made."""
    inter: tuple[Ints, Floats]
    """The inter-document neighbours, as :attr:`intra`."""
    themes: list[list[str]]
    theme_bridges: list[list[tuple[int, float]]]
    pca_mean: Floats
    pca_components: Floats
    node_ann: Any = None
    """With ``SSGConfig(knn="hnsw")``: this version's :class:`~semrag.index.parts.knn.NodeANN`
    over the nodes (anchor searches are approximate and cost ``log`` of the nodes)."""
    node_serial: Ints | None = None
    """Each node's row in :attr:`node_ann` (increasing)."""

    @property
    def n_nodes(self) -> int:
        """Number of window nodes."""
        return int(self.node_doc.size)

    def neighbours(self, node: int) -> tuple[Ints, Floats, npt.NDArray[np.int8]]:
        """``(nodes, scores, kinds)`` of the edges leaving ``node``: intra (kind 0), then inter."""
        ic, iv = self.intra[0][node], self.intra[1][node]
        xc, xv = self.inter[0][node], self.inter[1][node]
        a, b = ic >= 0, xc >= 0
        n_intra = int(a.sum())
        kinds = np.zeros(n_intra + int(b.sum()), np.int8)
        kinds[n_intra:] = 1
        return np.concatenate([ic[a], xc[b]]), np.concatenate([iv[a], xv[b]]), kinds

    def csr(self) -> tuple[Ints, Ints, Floats, npt.NDArray[np.int8]]:
        """Every edge in CSR form: ``(indptr, indices, scores, kinds)``.

        Node ``i``'s edges are ``indptr[i] : indptr[i + 1]``, as :meth:`neighbours` gives
        them; ``kinds`` is 0 for an intra-document edge, 1 for an inter-document one. Made
        on each call (the graph holds only the lists); for whole-graph work, not per node.
        """
        return edges_csr(self.intra, self.inter)

    def project_3d(self, vectors: Floats) -> Floats:
        """Project vectors with this version's PCA (triangulation_geometric_3d)."""
        return (
            (np.asarray(vectors, dtype=np.float32) - self.pca_mean) @ self.pca_components.T
        ).astype(np.float32)


def pca3_from_sums(
    n: int, total: npt.NDArray[np.float64], scatter: npt.NDArray[np.float64]
) -> tuple[Floats, Floats]:
    """Mean and top-3 principal axes from running sums (``n`` rows, their sum, ``X^T X``).

    The covariance is ``scatter / n - mean mean^T``; its top eigenvectors are the axes,
    each signed so that its largest coordinate is positive. An axis whose variance is
    (numerically) zero is left as zeros, so a rank below 3 gives zero-padded axes.
    """
    d = total.shape[0]
    comps = np.zeros((3, d), np.float32)
    if n == 0:
        return np.zeros(d, np.float32), comps
    mean = total / n
    cov = scatter / n - np.outer(mean, mean)
    want = min(3, d)
    import scipy.linalg  # the index extra

    values, vectors = scipy.linalg.eigh((cov + cov.T) / 2, subset_by_index=[d - want, d - 1])
    top = np.argsort(-values, kind="stable")
    eps = 1e-9 * max(1.0, float(np.abs(np.diag(cov)).sum()))
    for i, j in enumerate(top):
        if values[j] > eps:
            axis = vectors[:, j]
            comps[i] = axis if axis[np.argmax(np.abs(axis))] > 0 else -axis
    return mean.astype(np.float32), comps


def fit_pca3(vectors: Floats) -> tuple[Floats, Floats]:
    """Mean and top-3 principal axes of ``vectors`` (zero-padded when rank < 3)."""
    v = np.asarray(vectors, dtype=np.float64)
    return pca3_from_sums(v.shape[0], v.sum(axis=0), v.T @ v)
