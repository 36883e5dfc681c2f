"""Array steps of the live similarity graph: rows a change may reach, exact re-scoring, moments."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from semrag.index.parts.knn import (
    FLOAT32_TOLERANCE,
    exact_similarities,
)
from semrag.types import Floats, Ints

ARRAYS = (
    "doc_nodes",
    "doc_sentences",
    "theme_vectors",
    "bridge_cols",
    "bridge_vals",
    "node_doc",
    "node_sentences",
    "intra_cols",
    "intra_vals",
    "inter_cols",
    "inter_vals",
    "vector_sum",
    "vector_scatter",
)


def rows_a_new_row_may_enter(vals: Floats, vectors: Floats, n_old: int, floor: float) -> Ints:
    """Old rows whose list a new row (``n_old ..``) might enter: a float32 pre-filter.

    A new row enters a full list only above its last value (ties go to the older row),
    and any list only at or above ``floor``; rows far below both cannot change, and the
    exact merge runs on the rest only.
    """
    new = vectors[n_old:]
    last = vals[:n_old, -1]  # -inf while a list is not full
    bar = np.maximum(last, floor) - FLOAT32_TOLERANCE
    step = max(1, (1 << 23) // max(1, new.shape[0]))
    keep = []
    for a in range(0, n_old, step):
        b = min(n_old, a + step)
        best = (vectors[a:b] @ new.T).max(axis=1)
        keep.append(a + np.flatnonzero(best >= bar[a:b]))
    return np.concatenate(keep) if keep else np.zeros(0, np.int64)


def may_rank(
    fast: Floats, other: npt.NDArray[np.bool_], width: int, floor: float
) -> npt.NDArray[np.bool_]:
    """Hits that may be among a row's ``width`` best at or above ``floor``, by float32 score.

    A float32 score is within :data:`FLOAT32_TOLERANCE` of the exact value, so a hit more
    than twice that below the ``width``-th best float32 score has ``width`` hits exactly
    above it, and one below ``floor`` less that is below ``floor``: neither can be kept,
    and their exact values need not be computed.
    """
    scores = np.where(other, fast, -np.inf)
    if scores.shape[1] > width:
        kth = -np.partition(-scores, width - 1, axis=1)[:, width - 1]
    else:
        kth = np.full(scores.shape[0], -np.inf, np.float32)
    cut = np.maximum(kth - 2 * FLOAT32_TOLERANCE, floor - FLOAT32_TOLERANCE)
    return other & (scores >= cut[:, None])


def exact_where(queries: Floats, rows: Floats, hit: Ints, keep: npt.NDArray[np.bool_]) -> Floats:
    """Exact similarities of each query and its ``hit`` rows where ``keep``, ``-inf`` elsewhere.

    Only the kept pairs are computed (moved to the front of their row), with
    :func:`~semrag.index.parts.knn.exact_similarities`, so each has the value it has anywhere.
    """
    exact = np.full(hit.shape, -np.inf, np.float32)
    width = int(keep.sum(axis=1).max()) if keep.size else 0
    if not width:
        return exact
    front = np.argsort(~keep, axis=1, kind="stable")[:, :width]  # kept columns, in order
    kept = np.take_along_axis(keep, front, axis=1)
    picked = np.where(kept, np.take_along_axis(hit, front, axis=1), 0)
    values = exact_similarities(queries, rows[picked])
    np.put_along_axis(exact, front, np.where(kept, values, -np.inf), axis=1)
    return exact


def remap(cols: Ints, new_of_old: Ints) -> Ints:
    """Renumber list entries; entries whose target is gone become ``-1``."""
    return np.where(cols >= 0, new_of_old[np.maximum(cols, 0)], -1)


def moments(rows: Floats, block: int = 1 << 16) -> tuple[np.ndarray, np.ndarray]:
    """``(sum, X^T X)`` of ``rows`` in float64, a block at a time (no float64 copy of all)."""
    total = np.zeros(rows.shape[1], np.float64)
    scatter = np.zeros((rows.shape[1], rows.shape[1]), np.float64)
    for a in range(0, rows.shape[0], block):
        part = rows[a : a + block].astype(np.float64)
        total += part.sum(axis=0)
        scatter += part.T @ part
    return total, scatter
