"""Pictures of what the chunkers and retrievers did (needs the ``viz`` extra: matplotlib)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from semrag._rwlock import as_reader
from semrag.errors import ConfigError, missing_dependency
from semrag.index.reader import SimilarityGraphReads, need

if TYPE_CHECKING:
    from collections.abc import Sequence

    from semrag.chunking.base import ChunkingStats
    from semrag.eval.table import ResultTable
    from semrag.index import SemanticIndex
    from semrag.types import ScoredChunk

__all__ = ["plot_breakpoints", "plot_budget_recall", "plot_traversal"]


def _pyplot():  # type: ignore[no-untyped-def]
    try:
        import matplotlib
    except ImportError as exc:
        raise missing_dependency("matplotlib", "viz") from exc
    matplotlib.use("Agg", force=False)
    from matplotlib import pyplot as plt

    return plt


@contextlib.contextmanager
def _figure(path: Path, size: tuple[float, float]) -> Iterator[Any]:
    """Axes of a new figure, written to ``path`` as a PNG when the block ends."""
    plt = _pyplot()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=size, dpi=110)
    try:
        yield ax
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)


def plot_breakpoints(stats: ChunkingStats, path: str | Path, *, title: str | None = None) -> Path:
    """Draw a document's gap curve, the threshold and the breaks, as a PNG.

    Args:
        stats: the statistics of one document (``ChunkingResult.stats``).
        path: where to write the PNG; parent folders are created.
        title: plot title; defaults to the document id and the threshold rule.

    Returns:
        The path written.

    Raises:
        ConfigError: if the document has no gap to draw (fewer than two sentences).
        MissingDependencyError: if matplotlib is not installed.
    """
    scores = np.asarray(stats.scores, dtype=float)
    if scores.size == 0:
        raise ConfigError(f"document {stats.doc_id!r} has fewer than two sentences: no curve")
    path = Path(path)
    with _figure(path, (max(6.0, min(18.0, scores.size / 8)), 3.6)) as ax:
        gaps = np.arange(scores.size)
        ax.plot(gaps, scores, color="#3465a4", lw=1.2, label=stats.score_name)
        if not math.isnan(stats.threshold) and "gradient" not in stats.threshold_rule:
            ax.axhline(stats.threshold, color="#cc0000", ls="--", lw=1, label="threshold")
        for i, br in enumerate(stats.breaks):
            label = "break" if i == 0 else None
            ax.axvline(br.gap, color="#73d216", lw=0.8, alpha=0.8, label=label)
        for gap in stats.merged_gaps:
            ax.axvline(gap, color="#999999", lw=0.8, ls=":")
        ax.set_xlabel("gap between sentence i and i+1")
        ax.set_ylabel(stats.score_name)
        ax.set_title(title or f"{stats.doc_id}: {stats.n_chunks} chunks ({stats.threshold_rule})")
        ax.legend(loc="upper right", fontsize=8)
    return path


def plot_traversal(
    result: Sequence[ScoredChunk],
    path: str | Path,
    *,
    index: SemanticIndex | None = None,
    max_neighbours: int = 6,
    title: str | None = None,
) -> Path:
    """Draw an SSG traversal: the visited nodes numbered hop by hop, and their neighbourhood.

    Args:
        result: what :class:`~semrag.retrieval.SSGRetriever` returned (its provenance holds
            the path, the hops and the edges taken).
        path: where to write the PNG.
        index: the index searched; with it, each visited node's strongest neighbours are
            drawn too (grey), so one can see the alternatives the traversal passed over.
        max_neighbours: neighbours drawn per visited node.
        title: plot title.

    Returns:
        The path written.

    Raises:
        ConfigError: if ``result`` is empty or does not come from an SSG retriever.
    """
    steps = [p for hit in result for p in hit.provenance if p.get("channel") == "ssg"]
    if not steps:
        raise ConfigError("nothing to draw: the result has no SSG provenance")
    import networkx as nx

    _pyplot()  # without matplotlib, fail before the work
    order = {p["node"]: p["hop"] for p in steps}
    label = {hit.provenance[0]["node"]: hit.chunk for hit in result if hit.provenance}
    g = nx.DiGraph()
    hops: list[tuple[int, int]] = []
    for p in steps:
        g.add_node(p["node"])
        if p.get("from") is not None:
            g.add_edge(p["from"], p["node"], score=p.get("edge_score") or 0.0)
            hops.append((p["from"], p["node"]))
    neighbours: set[int] = set()
    if index is not None:
        graph = need(as_reader(index), SimilarityGraphReads, by="plot_traversal").ssg_view().graph
        for node in list(order):
            ids, scores, kinds = graph.neighbours(node)
            for j, sc, kd in list(zip(ids.tolist(), scores.tolist(), kinds.tolist(), strict=True))[
                :max_neighbours
            ]:
                if j not in order:
                    neighbours.add(j)
                if not g.has_edge(node, j) and not g.has_edge(j, node):
                    g.add_edge(node, j, score=sc, context=True, inter=kd == 1)
    pos = nx.spring_layout(g.to_undirected(), seed=0, weight="score")
    path = Path(path)
    with _figure(path, (9, 7)) as ax:
        context = [(u, v, d["inter"]) for u, v, d in g.edges(data=True) if d.get("context")]
        for inter, colour, style in ((False, "#cccccc", "solid"), (True, "#e9b96e", "dashed")):
            edges = [(u, v) for u, v, i in context if i == inter]
            nx.draw_networkx_edges(
                g, pos, edgelist=edges, ax=ax, edge_color=colour, style=style, arrows=False
            )
        nx.draw_networkx_nodes(
            g, pos, nodelist=sorted(neighbours), ax=ax, node_size=60, node_color="#bbbbbb"
        )
        visited = sorted(order, key=lambda n: order[n])
        colours = ["#cc0000" if order[n] == 0 else "#3465a4" for n in visited]
        nx.draw_networkx_nodes(g, pos, nodelist=visited, ax=ax, node_size=420, node_color=colours)
        nx.draw_networkx_edges(
            g, pos, edgelist=hops, ax=ax, edge_color="#204a87", width=2, arrows=True, arrowsize=16
        )
        nx.draw_networkx_labels(
            g,
            pos,
            labels={n: str(order[n]) for n in visited},
            ax=ax,
            font_color="white",
            font_size=9,
        )
        for n in visited:
            chunk = label.get(n)
            if chunk is not None:
                x, y = pos[n]
                name = Path(chunk.doc_id).name or chunk.doc_id
                ax.annotate(
                    f"{name}: {chunk.text[:40]}...",
                    (x, y),
                    fontsize=7,
                    xytext=(8, -10),
                    textcoords="offset points",
                )
        algorithm = steps[0].get("algorithm", "ssg")
        ax.set_title(
            title
            or f"{algorithm}: {len(visited)} nodes visited (red = anchor, grey = neighbours, "
            f"dashed = other document)\nstopped: {steps[0].get('stop_reason', '')}",
            fontsize=10,
        )
        ax.axis("off")
    return path


def plot_budget_recall(table: ResultTable, path: str | Path, *, title: str | None = None) -> Path:
    """Draw recall against the context budget, one line per splitter, as a PNG.

    Args:
        table: what :func:`semrag.eval.evaluate_splitters` returned.
        path: where to write the PNG; parent folders are created.
        title: plot title; default names the questions and the embedder.

    Returns:
        The path written.

    Raises:
        ConfigError: if the table has no budget columns (it is not a splitter evaluation).
        MissingDependencyError: if matplotlib is not installed.
    """
    budgets = [int(b) for b in table.data.get("budgets", [])]
    if not budgets or table.key != "splitter":
        raise ConfigError("plot_budget_recall draws what evaluate_splitters returned")
    path = Path(path)
    with _figure(path, (6.4, 4.0)) as ax:
        for row in table.rows:
            recall = [row[f"recall {b}"] for b in budgets]
            ax.plot(budgets, recall, marker="o", label=row["splitter"])
        ax.set_xscale("log" if max(budgets) >= 4 * min(budgets) else "linear")
        ax.minorticks_off()
        ax.set_xticks(budgets, [str(b) for b in budgets])
        ax.set_xlabel("context budget (characters)")
        ax.set_ylabel("recall of the answering excerpts")
        ax.set_ylim(0, 1.02)
        data = table.data
        ax.set_title(
            title or f"{data.get('questions')} questions, {data.get('embedder')}", fontsize=10
        )
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    return path
