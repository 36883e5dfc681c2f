"""Chunk stitching and extractive compression: pure functions on sentence spans.

A damaged chunk is repaired by going back to its source: the sentences it touches are the
*core*, the sentences around it are candidates, and :func:`best_window` picks the
contiguous run of sentences that holds the core (and the context a signal asked for),
fits the token budget, and carries the most query relevance. Keeping the run contiguous
keeps the repaired chunk an exact span of the source, so its offsets stay true.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from semrag.errors import ConfigError
from semrag.types import Span

__all__ = ["best_window", "covering_sentences", "sentence_index_at"]


def covering_sentences(spans: Sequence[Span], start: int, end: int) -> tuple[int, int]:
    """Indices ``[a, b)`` of the sentences that share a character with ``[start, end)``.

    A range that falls between sentences (whitespace only) maps to the sentence after it.

    Examples:
        >>> covering_sentences([Span(0, 5), Span(6, 12), Span(13, 20)], 3, 8)
        (0, 2)
    """
    if not spans:
        raise ConfigError("the source has no sentences")
    a = next((i for i, s in enumerate(spans) if s.end > start), len(spans) - 1)
    b = a + 1
    while b < len(spans) and spans[b].start < end:
        b += 1
    return a, b


def sentence_index_at(spans: Sequence[Span], offset: int) -> int:
    """Index of the sentence that contains ``offset`` (or the next one after it)."""
    return covering_sentences(spans, offset, offset + 1)[0]


def best_window(
    tokens: npt.ArrayLike,
    relevance: npt.ArrayLike,
    required: tuple[int, int],
    budget: int,
) -> tuple[int, int]:
    """The contiguous sentence window ``[a, b)`` to keep.

    Among windows that contain ``required`` and whose token total is within ``budget``,
    return the one with the largest total positive relevance (ties: the shorter, then the
    earlier). When ``required`` alone is over budget, the best window *inside* it that
    fits is returned; when no single sentence fits, the most relevant sentence of
    ``required`` is returned alone (the caller must then cut it).

    Args:
        tokens: tokens of each candidate sentence.
        relevance: query relevance of each sentence.
        required: ``(a, b)`` sentences that must be kept when they fit.
        budget: most tokens in the window.

    Examples:
        >>> best_window([10, 10, 10, 10], [0.9, 0.1, 0.5, 0.8], (1, 3), 30)
        (0, 3)
    """
    tok = np.asarray(tokens, dtype=np.int64)
    rel = np.clip(np.asarray(relevance, dtype=np.float64), 0.0, None)
    n = len(tok)
    ra, rb = required
    if not 0 <= ra < rb <= n:
        raise ConfigError(f"required window {required} outside 0..{n}")
    if budget < 1:
        raise ConfigError(f"budget must be >= 1, got {budget}")
    ctok = np.concatenate([[0], np.cumsum(tok)])
    crel = np.concatenate([[0.0], np.cumsum(rel)])

    def search(lo_a: int, hi_a: int, lo_b: int, hi_b: int) -> tuple[int, int] | None:
        best: tuple[float, int, int, int] | None = None
        for a in range(lo_a, hi_a + 1):
            for b in range(max(lo_b, a + 1), hi_b + 1):
                if ctok[b] - ctok[a] > budget:
                    break
                key = (crel[b] - crel[a], -(b - a), -a, b)
                if best is None or key > best:
                    best = key
        return None if best is None else (-best[2], best[3])

    found = search(0, ra, rb, n)
    if found is None:
        found = search(ra, rb - 1, ra + 1, rb)
    if found is None:
        top = ra + int(np.argmax(rel[ra:rb]))
        found = (top, top + 1)
    return found
