"""Segmentation metrics: Pk (Beeferman et al., 1999) and WindowDiff (Pevzner & Hearst, 2002).

Segmentations are boolean arrays over the gaps between consecutive units (words or
sentences): ``b[i]`` is true when a segment boundary falls between unit ``i`` and
``i + 1``. Lower is better for both metrics; 0 is a perfect match.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

import numpy as np

from semrag.errors import ConfigError

__all__ = [
    "boundaries_from_offsets",
    "boundary_f1",
    "default_k",
    "multihop_recall",
    "pk",
    "window_diff",
    "word_starts",
]

_WORD = re.compile(r"\S+")


def _as_bool(b: Sequence[bool] | np.ndarray) -> np.ndarray:
    return np.asarray(b, dtype=bool).ravel()


def default_k(reference: Sequence[bool] | np.ndarray) -> int:
    """Half the mean reference segment length, in units (at least 1)."""
    ref = _as_bool(reference)
    n_units = ref.size + 1
    n_segments = int(ref.sum()) + 1
    return max(1, round(n_units / n_segments / 2))


def _window_counts(b: np.ndarray, k: int) -> np.ndarray:
    """Boundaries inside each window of ``k`` consecutive gaps."""
    c = np.concatenate([[0], np.cumsum(b, dtype=np.int64)])
    return c[k:] - c[:-k]


def _window_pair(
    reference: Sequence[bool] | np.ndarray, hypothesis: Sequence[bool] | np.ndarray, k: int | None
) -> tuple[np.ndarray, np.ndarray] | None:
    """Boundary counts per window of both segmentations (``None`` if too short)."""
    ref, hyp = _as_bool(reference), _as_bool(hypothesis)
    k = default_k(ref) if k is None else k
    if ref.size != hyp.size:
        raise ConfigError(f"reference has {ref.size} gaps, hypothesis {hyp.size}")
    if k < 1:
        raise ConfigError(f"k must be >= 1, got {k}")
    if ref.size < k:
        return None
    return _window_counts(ref, k), _window_counts(hyp, k)


def pk(
    reference: Sequence[bool] | np.ndarray,
    hypothesis: Sequence[bool] | np.ndarray,
    k: int | None = None,
) -> float:
    """Probability that a window of ``k`` units is judged differently by the two.

    Args:
        reference: gold boundary mask over the gaps.
        hypothesis: predicted boundary mask, same length.
        k: window size in units; default half the mean gold segment length.

    Returns:
        Pk in [0, 1]; 0 when the documents are too short for one window.

    Examples:
        >>> pk([0, 0, 1, 0, 0], [0, 0, 1, 0, 0])
        0.0
    """
    counts = _window_pair(reference, hypothesis, k)
    if counts is None:
        return 0.0
    r, h = counts
    return float(np.mean((r > 0) != (h > 0)))


def window_diff(
    reference: Sequence[bool] | np.ndarray,
    hypothesis: Sequence[bool] | np.ndarray,
    k: int | None = None,
) -> float:
    """Share of windows of ``k`` units whose boundary counts differ.

    Args:
        reference: gold boundary mask over the gaps.
        hypothesis: predicted boundary mask, same length.
        k: window size in units; default half the mean gold segment length.

    Returns:
        WindowDiff in [0, 1].
    """
    counts = _window_pair(reference, hypothesis, k)
    if counts is None:
        return 0.0
    r, h = counts
    return float(np.mean(r != h))


def word_starts(text: str) -> list[int]:
    """Character offset of each whitespace-separated word of ``text``."""
    return [m.start() for m in _WORD.finditer(text)]


def boundaries_from_offsets(starts: Sequence[int], segment_starts: Sequence[int]) -> np.ndarray:
    """Map segment start offsets (characters) to a boundary mask over word gaps.

    A segment starting at character ``s`` puts a boundary before the first word that
    starts at or after ``s`` (a segment starting mid-word counts from the next word).

    Args:
        starts: character offset of each unit (e.g. from :func:`word_starts`).
        segment_starts: character offsets where segments (chunks) start.

    Returns:
        Boolean mask of length ``len(starts) - 1``.
    """
    mask = np.zeros(max(len(starts) - 1, 0), dtype=bool)
    for s in segment_starts:
        unit = bisect.bisect_left(starts, s)
        if 0 < unit < len(starts):
            mask[unit - 1] = True
    return mask


def boundary_f1(
    reference: Sequence[bool] | np.ndarray,
    hypothesis: Sequence[bool] | np.ndarray,
    *,
    tolerance: int = 0,
) -> tuple[float, float, float]:
    """Precision, recall and F1 of predicted boundaries, each gold boundary matched once.

    A predicted boundary counts as correct when an unmatched gold boundary lies within
    ``tolerance`` units of it (greedy matching, nearest first).

    Examples:
        >>> boundary_f1([0, 1, 0, 0, 1], [0, 1, 0, 1, 0], tolerance=1)
        (1.0, 1.0, 1.0)
    """
    ref = np.flatnonzero(_as_bool(reference))
    hyp = np.flatnonzero(_as_bool(hypothesis))
    if len(_as_bool(reference)) != len(_as_bool(hypothesis)):
        raise ConfigError("reference and hypothesis differ in length")
    unmatched = set(ref.tolist())
    tp = 0
    for h in hyp.tolist():
        near = [r for r in unmatched if abs(r - h) <= tolerance]
        if near:
            unmatched.discard(min(near, key=lambda r: (abs(r - h), r)))
            tp += 1
    precision = tp / hyp.size if hyp.size else (1.0 if not ref.size else 0.0)
    recall = tp / ref.size if ref.size else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def multihop_recall(ranked: Sequence[str], gold: Sequence[str], k: int) -> tuple[float, float]:
    """Full-support and paragraph recall of one ranking at ``k`` distinct documents.

    ``ranked`` is the document id of each result in order (repeats are counted once, so a
    retriever that returns several chunks of one paragraph spends one place on it).

    Returns:
        ``(full, para)``: 1.0 when every gold document is among the first ``k`` distinct
        ones (else 0.0), and the share of gold documents that are.

    Examples:
        >>> multihop_recall(["a", "a", "c", "b"], ["a", "b"], 2)
        (0.0, 0.5)
        >>> multihop_recall(["a", "a", "c", "b"], ["a", "b"], 3)
        (1.0, 1.0)
    """
    if k < 1:
        raise ConfigError(f"k must be >= 1, got {k}")
    if not gold:
        raise ConfigError("a question needs at least one gold document")
    top = list(dict.fromkeys(ranked))[:k]
    found = sum(g in top for g in set(gold))
    n = len(set(gold))
    return float(found == n), found / n
