"""Score fusion for hybrid retrieval: pure functions on numpy arrays.

Examples:
    >>> import numpy as np
    >>> fused = fuse_weighted(
    ...     {"dense": np.array([0.9, 0.5, 0.7]), "sparse": np.array([0.0, 12.0, 3.0])},
    ...     {"dense": 0.5, "sparse": 0.5},
    ... )
    >>> [round(float(x), 3) for x in fused]
    [0.5, 0.5, 0.375]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from semrag.errors import ConfigError

__all__ = ["fuse_rrf", "fuse_weighted", "normalise_scores", "normalise_weights"]

Floats = npt.NDArray[np.float64]


def normalise_scores(scores: npt.ArrayLike, method: str = "minmax") -> Floats:
    """Map one channel's scores to [0, 1].

    Args:
        scores: the channel's scores for every candidate (NaN = the channel did not score
            the candidate; it becomes 0).
        method: ``"minmax"`` (``(s - min) / (max - min)``; a constant vector maps to 1 where
            positive, else 0), ``"max"`` (``s / max``, for non-negative scores such as BM25
            whose zero means "no match") or ``"rank"`` (``1 - r / n`` for the ``r``-th best
            of ``n`` scored candidates, ties sharing the better rank: for channels whose
            scale says little, such as PageRank mass, where only the order is meaningful).

    Examples:
        >>> normalise_scores([2.0, 4.0, float("nan")]).tolist()
        [0.0, 1.0, 0.0]
    """
    s = np.asarray(scores, dtype=np.float64)
    known = ~np.isnan(s)
    out = np.zeros_like(s)
    if not known.any():
        return out
    vals = s[known]
    if method not in ("minmax", "max", "rank"):
        raise ConfigError(f"method must be 'minmax', 'max' or 'rank', got {method!r}")
    if method == "rank":
        better = len(vals) - np.searchsorted(np.sort(vals), vals, side="right")
        out[known] = 1.0 - better / len(vals)
        return out
    # A tiny (subnormal) spread overflows the division; the clip maps it back into [0, 1].
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if method == "max":
            top = vals.max()
            out[known] = np.clip(vals / top, 0.0, 1.0) if top > 0 else 0.0
        else:
            lo, hi = vals.min(), vals.max()
            if hi > lo:
                out[known] = np.clip(np.nan_to_num((vals - lo) / (hi - lo), nan=0.0), 0.0, 1.0)
            else:
                out[known] = (vals > 0).astype(np.float64)
    return out


def normalise_weights(weights: Mapping[str, float]) -> dict[str, float]:
    """Weights scaled to sum to 1.

    Raises:
        ConfigError: if a weight is negative or not finite, or all are zero.
    """
    vals = {k: float(v) for k, v in weights.items()}
    if any(not np.isfinite(v) or v < 0 for v in vals.values()):
        raise ConfigError(f"weights must be finite and >= 0, got {vals}")
    total = sum(vals.values())
    if total <= 0:
        raise ConfigError(f"weights must not all be zero, got {vals}")
    return {k: v / total for k, v in vals.items()}


def fuse_weighted(
    channel_scores: Mapping[str, npt.ArrayLike],
    weights: Mapping[str, float],
    *,
    methods: Mapping[str, str] | None = None,
) -> Floats:
    """Weighted sum of per-channel normalised scores (InSemRAG eq. 8).

    Args:
        channel_scores: channel -> scores aligned over the same candidates.
        weights: channel -> weight; channels without a weight count 0, and the weights
            are renormalised to sum to 1.
        methods: channel -> normalisation method of :func:`normalise_scores` (default
            ``"minmax"``).
    """
    w = normalise_weights({c: weights.get(c, 0.0) for c in channel_scores})
    methods = methods or {}
    n = {len(np.asarray(v)) for v in channel_scores.values()}
    if len(n) > 1:
        raise ConfigError(f"channel score vectors differ in length: {sorted(n)}")
    total = np.zeros(n.pop() if n else 0)
    for channel, scores in channel_scores.items():
        if w[channel]:
            total += w[channel] * normalise_scores(scores, methods.get(channel, "minmax"))
    return total


def fuse_rrf(
    rankings: Sequence[Sequence[object]], weights: Sequence[float] | None = None, *, c: int = 60
) -> list[tuple[object, float]]:
    """Weighted reciprocal rank fusion: ``sum_r w_r / (c + rank_r(d))`` (rank from 1).

    Examples:
        >>> fuse_rrf([["a", "b"], ["b", "c"]])[0][0]
        'b'
    """
    weights = list(weights) if weights is not None else [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ConfigError("need one weight per ranking")
    scores: dict[object, float] = {}
    for ranking, w in zip(rankings, weights, strict=True):
        for rank, item in enumerate(dict.fromkeys(ranking), start=1):
            scores[item] = scores.get(item, 0.0) + w / (c + rank)
    return sorted(scores.items(), key=lambda kv: -kv[1])
