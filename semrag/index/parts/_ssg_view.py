"""The similarity graph as one version sees it: :class:`SSGView` and its node searches."""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag.chunking._split import mean_windows
from semrag.errors import ConfigError
from semrag.index._top_k import top_k
from semrag.index.change import IndexedDocument
from semrag.index.parts.ssg import SemanticSimilarityGraph
from semrag.text.tokens import Tokenizer
from semrag.types import Chunk, Floats, Span


def mean_of(vectors: Floats, ranges: Sequence[Sequence[int]], dim: int) -> Floats:
    """Unit-norm mean of ``vectors[a:b]`` for each ``(a, b)``; ``(0, dim)`` when none."""
    if not len(ranges):
        return np.zeros((0, dim), np.float32)
    return normalise(mean_windows(vectors, np.asarray(ranges, dtype=np.int64)))


def normalise(v: Floats) -> Floats:
    norms = np.linalg.norm(v, axis=-1, keepdims=True)
    out = np.divide(v, norms, out=np.zeros_like(v), where=norms > 0)
    return out.astype(np.float32, copy=False)


class NodeSearch:
    """Exact inner-product top-k over a fixed matrix, with :class:`DenseIndex`'s shape."""

    def __init__(self, vectors: Floats) -> None:
        self.vectors = vectors

    def search(self, query: Floats, k: int) -> tuple[Floats, npt.NDArray[np.int64]]:
        """``(scores, ids)`` of shape ``(1, k)``, best first; missing slots have id -1."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        scores = np.full((1, k), -np.inf, np.float32)
        ids = np.full((1, k), -1, np.int64)
        n = self.vectors.shape[0]
        if n == 0:
            return scores, ids
        kk = min(k, n)
        ids[:, :kk], scores[:, :kk] = top_k((self.vectors @ q)[None, :], kk)
        return scores, ids


class NodeANNSearch:
    """Approximate top-k over one version's window nodes, with :class:`NodeSearch`'s shape.

    The HNSW hits (serials) map back to nodes through the version's increasing serials;
    each hit is scored exactly (its vector times the query) and ties go to the lower node.
    """

    def __init__(self, ann: Any, serials: npt.NDArray[np.int64], vectors: Floats) -> None:
        self.ann, self.serials, self.vectors = ann, serials, vectors

    def search(self, query: Floats, k: int) -> tuple[Floats, npt.NDArray[np.int64]]:
        """``(scores, ids)`` of shape ``(1, k)``, best first; missing slots have id -1."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        scores = np.full((1, k), -np.inf, np.float32)
        ids = np.full((1, k), -1, np.int64)
        n = self.vectors.shape[0]
        if n == 0 or k < 1:
            return scores, ids
        hits = self.ann.search(q[None, :], min(k, n))[0][0]
        hits = hits[hits >= 0]
        nodes = np.searchsorted(self.serials, hits)
        found = nodes < n
        found[found] = self.serials[nodes[found]] == hits[found]
        nodes = nodes[found]
        exact = self.vectors[nodes] @ q
        order = np.lexsort((nodes, -exact))
        ids[0, : order.size], scores[0, : order.size] = nodes[order], exact[order]
        return scores, ids


class SSGView:
    """One consistent version of the similarity graph and the documents it was built from.

    A traversal takes a view once (:meth:`SemanticIndex.ssg_view`) and reads everything
    through it: the graph, the sentence vectors, where each sentence is, the window nodes
    as chunks and the node index. A writer that changes the index meanwhile leads to a new
    version; it never changes this one, so a reader never mixes two versions.
    """

    def __init__(
        self,
        version: int,
        graph: SemanticSimilarityGraph,
        entries: Mapping[str, IndexedDocument],
        sentence_matrix: Floats,
        sentence_offsets: Sequence[int],
        tokenizer: Tokenizer,
        dim: int,
    ) -> None:
        self.version = version
        self.graph = graph
        self._entries = entries
        self._doc_order = graph.doc_ids
        self.sentence_matrix = sentence_matrix
        self._offsets = list(sentence_offsets)
        self._tokenizer = tokenizer
        self._dim = dim

    @property
    def node_index(self) -> NodeSearch | NodeANNSearch:
        """Search over this version's window nodes (ids = node numbers).

        Exact: the version's node vectors times the query, nothing built for it, so a
        change never leaves an index to rebuild on the next query. With
        ``SSGConfig(knn="hnsw")``: the graph's persistent HNSW, masked to this version's
        nodes (approximate, ``log`` of the nodes per query; scores exact).
        """
        g = self.graph
        if g.node_ann is not None and g.node_serial is not None:
            return NodeANNSearch(g.node_ann, g.node_serial, g.node_vectors)
        return NodeSearch(g.node_vectors)

    def sentence_location(self, global_index: int) -> tuple[str, Span]:
        """``(doc_id, span)`` of a sentence by its index in :attr:`sentence_matrix`."""
        d = bisect.bisect_right(self._offsets, global_index) - 1
        doc_id = self._doc_order[d]
        return doc_id, self._entries[doc_id].sentences[global_index - self._offsets[d]]

    def sentence_text(self, global_index: int) -> str:
        """The text of a sentence by its index in :attr:`sentence_matrix`."""
        doc_id, span = self.sentence_location(global_index)
        return span.of(self._entries[doc_id].doc.text)

    def node_chunk(self, node: int) -> Chunk:
        """A window node as a :class:`Chunk` with exact offsets (in this version)."""
        a, b = self.graph.node_sentences[node]
        return self.sentences_chunk(int(a), int(b), index=node)

    def sentences_chunk(self, first: int, end: int, *, index: int = 0) -> Chunk:
        """Global sentences ``first .. end - 1`` (all of one document) as one :class:`Chunk`.

        Raises:
            ConfigError: if the range is empty or crosses a document boundary.
        """
        d = bisect.bisect_right(self._offsets, first) - 1
        if not (0 <= first < self._offsets[-1] and first < end <= self._offsets[d + 1]):
            raise ConfigError(
                f"sentences {first}..{end - 1} are not a non-empty run of one document"
            )
        doc_id = self._doc_order[d]
        entry = self._entries[doc_id]
        a, b = first - self._offsets[d], end - self._offsets[d]
        start, stop = entry.sentences[a].start, entry.sentences[b - 1].end
        text = entry.doc.text[start:stop]
        return Chunk(
            doc_id=doc_id,
            start=start,
            end=stop,
            text=text,
            token_count=int(self._tokenizer.count([text])[0]),
            index=index,
            sentence_start=a,
            sentence_end=b,
            metadata=entry.doc.metadata,
        )
