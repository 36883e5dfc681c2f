"""What an SSG traversal is made of: its steps and result, the query's context, the frontier."""

from __future__ import annotations

import heapq
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag.index.reader import SimilarityGraphView
from semrag.types import Floats


@dataclass(frozen=True, slots=True)
class Step:
    """One visited node."""

    node: int
    """The window node visited."""
    parent: int | None
    """The node it was reached from (``None`` for the anchor and for basic retrieval)."""
    edge: str
    """``"anchor"``, ``"intra"``, ``"inter"`` or ``"rank"`` (basic retrieval)."""
    edge_score: float
    """Similarity on the edge used (NaN for the anchor and ranks)."""
    step_score: float
    """What the algorithm maximised to choose this node."""
    sentences: tuple[int, ...]
    """Global indices of the sentences this node added (deduplicated)."""
    note: str = ""
    """How the choice was made when it is not the algorithm's rule (e.g. an LLM fallback)."""


@dataclass(slots=True)
class Traversal:
    """The visited nodes in order, and why the traversal stopped."""

    steps: list[Step] = field(default_factory=list)
    stop_reason: str = ""
    llm_calls: int = 0


Traversing = Generator[Any, Any, Traversal]
"""A traversal's steps: they yield prompts (``str``) and a view's reads."""


# How each algorithm ranks a node's out-neighbours as its next hop, for a view that
# loads them ahead (see _RemoteView.ahead_rank); the others rank by query similarity.
NEXT_HOP = {
    "ssg_traversal": "edge",
    "triangulation_average": "average",
    "triangulation_fulldim": "fulldim",
    "triangulation_geometric_3d": "geometric",
}


class Context:
    """Query-side caches shared by the algorithms (similarities computed lazily)."""

    def __init__(self, view: SimilarityGraphView, q: Floats) -> None:
        self.view = view  # one consistent version of the index for the whole query
        self.graph = view.graph
        self.q = q.astype(np.float32)
        self.nodes = self.graph.node_vectors
        self.sent = view.sentence_matrix
        self._node_sim: dict[int, float] = {}
        self.extracted: dict[int, float] = {}  # sentence -> sim(q, s)
        self.visited: set[int] = set()

    def node_sims(self, nodes: npt.NDArray[np.int64]) -> Floats:
        todo = [int(n) for n in nodes if int(n) not in self._node_sim]
        if todo:
            sims = self.nodes[todo] @ self.q
            self._node_sim.update(zip(todo, sims.tolist(), strict=True))
        return np.array([self._node_sim[int(n)] for n in nodes], dtype=np.float32)

    def node_sim(self, node: int) -> float:
        return float(self.node_sims(np.array([node]))[0])

    def sentences_of(self, node: int) -> range:
        a, b = self.graph.node_sentences[node]
        return range(int(a), int(b))

    def visit(self, node: int) -> tuple[int, ...]:
        self.visited.add(node)
        new = [s for s in self.sentences_of(node) if s not in self.extracted]
        if new:
            sims = self.sent[new] @ self.q
            self.extracted.update(zip(new, sims.tolist(), strict=True))
        return tuple(new)

    def best_sentence(self) -> float:
        return max(self.extracted.values(), default=-np.inf)

    def candidates(self, node: int) -> tuple[npt.NDArray[np.int64], Floats, npt.NDArray[np.int8]]:
        ids, scores, kinds = self.graph.neighbours(node)
        keep = np.array([int(i) not in self.visited for i in ids], dtype=bool)
        return ids[keep], scores[keep], kinds[keep]


def edge_kind(kind: int) -> str:
    return "intra" if kind == 0 else "inter"


class Frontier:
    """Every unvisited node adjacent to a visited one, best query similarity first."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        # Entries: (-sim(q, node), node, parent, edge kind, edge score).
        self.heap: list[tuple[float, int, int, int, float]] = []

    def expand(self, node: int) -> None:
        ids, scores, kinds = self.ctx.candidates(node)
        if ids.size:
            sims = self.ctx.node_sims(ids)
            rows = zip(ids.tolist(), sims.tolist(), kinds.tolist(), scores.tolist(), strict=True)
            for i, s, kd, e in rows:
                heapq.heappush(self.heap, (-s, i, node, kd, e))

    def best(self, n: int) -> list[tuple[float, int, int, int, float]]:
        """The ``n`` best unvisited entries (one per node), without removing them."""
        visited = self.ctx.visited
        self.heap = [e for e in self.heap if e[1] not in visited]
        heapq.heapify(self.heap)
        out: list[tuple[float, int, int, int, float]] = []
        seen: set[int] = set()
        for entry in heapq.nsmallest(len(self.heap), self.heap):
            if entry[1] not in seen:
                seen.add(entry[1])
                out.append(entry)
                if len(out) == n:
                    break
        return out


def same_document(view: SimilarityGraphView, a: int, b: int) -> bool:
    return view.sentence_location(a)[0] == view.sentence_location(b)[0]


def sentence_entry(view: SimilarityGraphView, s: int, score: float) -> dict[str, Any]:
    _, span = view.sentence_location(s)
    return {"start": span.start, "end": span.end, "score": score}
