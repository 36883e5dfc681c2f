"""Top-k selection: the largest values of each row, best first, ties to the lower column.

And the query matrix a vector search takes, checked (:func:`query_matrix`).
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from semrag.errors import ConfigError, EmbeddingError
from semrag.types import Floats, Ints

__all__ = ["query_matrix", "top_k"]

_Real = TypeVar("_Real", bound=np.floating[Any])

_SAMPLED = 32  # top_k of one long row first looks at every 32nd value


def top_k(sims: npt.NDArray[_Real], k: int) -> tuple[Ints, npt.NDArray[_Real]]:
    """Per row, the columns of the ``k`` largest values, best first, ties to the lower column.

    Ties at the ``k``-th value are settled by column too (``argpartition`` alone picks
    among them arbitrarily), so two indexes with the same live rows agree. A single long row
    (BM25's matches, a flat search) is first cut to the values at least the ``k``-th largest
    of every ``_SAMPLED``-th value: at least ``k`` values pass, so the top ``k`` do.
    """
    if sims.shape[0] == 1 and sims.shape[1] >= _SAMPLED * max(k, 64):  # one long row
        row = sims[0]
        sample = row[::_SAMPLED]  # the k-th largest of the sample bounds the top k from below
        floor = np.partition(sample, sample.size - k)[sample.size - k]
        keep = np.flatnonzero(row >= floor)  # every value of the top k, ties included
        if 4 * keep.size <= row.size:  # else (ties at the floor) the cut saves nothing
            cols, vals = _top_k(row[keep][None, :], k)
            return keep[cols], vals
    return _top_k(sims, k)


def _top_k(sims: npt.NDArray[_Real], k: int) -> tuple[Ints, npt.NDArray[_Real]]:
    n = sims.shape[1]
    if k < n:
        cand = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    else:
        cand = np.tile(np.arange(n), (sims.shape[0], 1))
    kth = np.take_along_axis(sims, cand, axis=1).min(axis=1)
    for r in np.flatnonzero((sims >= kth[:, None]).sum(axis=1) > k):
        tied = np.flatnonzero(sims[r] >= kth[r])
        cand[r] = tied[np.lexsort((tied, -sims[r, tied]))][:k]
    vals = np.take_along_axis(sims, cand, axis=1)
    order = np.lexsort((cand, -vals), axis=1)
    return np.take_along_axis(cand, order, axis=1), np.take_along_axis(vals, order, axis=1)


def query_matrix(queries: npt.ArrayLike, dim: int, k: int) -> Floats:
    """Queries as a float32 matrix, one per row, checked against the index's dimension and k.

    Raises:
        EmbeddingError: if the queries have the wrong dimension.
        ConfigError: if ``k < 1``.
    """
    q = np.ascontiguousarray(queries, dtype=np.float32)
    if q.ndim == 1:
        q = q[None, :]
    if q.ndim != 2 or q.shape[1] != dim:
        raise EmbeddingError(f"query dimension {q.shape[-1]}; index dimension {dim}")
    if k < 1:
        raise ConfigError(f"k must be >= 1, got {k}")
    return q
