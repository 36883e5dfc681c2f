"""Pictures of what the chunkers and retrievers did (needs the ``viz`` extra: matplotlib)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from semrag.errors import ConfigError, missing_dependency

if TYPE_CHECKING:
    from semrag.chunking.base import ChunkingStats

__all__ = ["plot_breakpoints"]


def _pyplot():  # type: ignore[no-untyped-def]
    try:
        import matplotlib
    except ImportError as exc:
        raise missing_dependency("matplotlib", "viz") from exc
    matplotlib.use("Agg", force=False)
    from matplotlib import pyplot as plt

    return plt


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
    plt = _pyplot()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(max(6.0, min(18.0, scores.size / 8)), 3.6), dpi=110)
    try:
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
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path
