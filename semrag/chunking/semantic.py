"""SemRAG semantic chunking (Zhong et al., Algorithm 1) with Kamradt-style thresholds.

References:
    Zhong et al., "SemRAG: Semantic Knowledge-Augmented RAG", §3.2.1-3.2.2, Algorithm 1.
    G. Kamradt, "5 Levels of Text Splitting" (percentile / std / IQR / gradient thresholds).
"""

from __future__ import annotations

import numbers
from typing import Any, ClassVar

import numpy as np

from semrag._validation import Interval, Options, validate_params
from semrag.chunking._split import (
    THRESHOLD_KINDS,
    Threshold,
    cosine_distances,
    edge_corrected_distances,
    mean_windows,
    resolve_threshold,
    window_bounds,
)
from semrag.chunking.base import BoundaryChunker, Floats, GapDecision, _Prepared
from semrag.errors import ConfigError
from semrag.text.sentences import SentenceSplitter
from semrag.text.tokens import Tokenizer

__all__ = ["SHORT_TEXT_DISTANCE", "SHORT_TEXT_GAPS", "SemanticChunker"]

SHORT_TEXT_GAPS = 4
"""Documents with fewer gaps than this use ``short_text_distance`` instead of a statistic."""

SHORT_TEXT_DISTANCE = 0.75
"""Default absolute cosine distance for short documents (chosen on development data:
``benchmarks/boundary_models.py --parts short``)."""


class SemanticChunker(BoundaryChunker):
    """Break a text where the meaning of consecutive sentences changes.

    Each gap between sentence ``i`` and ``i + 1`` gets the cosine distance between the
    embeddings of the windows on either side; gaps whose distance passes the threshold
    become chunk boundaries. Chunks are then capped at ``max_tokens`` (pieces overlapping
    by ``overlap_tokens``; SemRAG eq. 2) and, optionally, tiny chunks merged.

    Args:
        embedder: any :class:`~semrag.embeddings.Embedder`; ``None`` loads the packaged
            all-MiniLM-L6-v2 on first use (offline).
        buffer_size: sentences of context on each side of a gap (SemRAG's ``b``; the
            paper found 5 best on news and 12 on Wikipedia).
        window: ``"split"`` (default) compares ``s[i-b..i]`` with ``s[i+1..i+1+b]``, which
            never share a sentence and see breaks near the start of a document;
            ``"centered"`` compares ``s[i-b..i+b]`` with ``s[i+1-b..i+1+b]`` (LangChain and
            SemRAG).
        pooling: ``"mean"`` embeds each sentence once and averages the window (cost
            independent of ``buffer_size``); ``"concat"`` embeds each window's text, as
            the paper does (truncated by the model beyond its maximum sequence length).
        threshold: a number = absolute cosine distance (SemRAG's theta); or one of
            ``"std"`` (mean + k*std, the default), ``"percentile"``, ``"interquartile"``
            (mean + k*IQR), ``"gradient"`` (percentile of the curve's gradient),
            ``"target_chunks"``. The defaults (split window, mean pooling, buffer 1, std
            with k = 1) had the lowest Pk in our boundary benchmark.
        threshold_amount: the statistic's parameter: percentile (default 95), k (default 1
            for std, 0.5 for IQR; LangChain uses 3 and 1.5), or the number of chunks wanted
            for ``"target_chunks"``.
        short_text_distance: a statistic of a document's own distances needs enough of
            them (mean + std cannot break a text of three sentences); a document with
            fewer than ``SHORT_TEXT_GAPS`` (4) gaps breaks where the cosine distance is
            above this absolute value instead. ``None`` keeps the statistic for every
            document. Not used with an absolute threshold or ``"target_chunks"``.
        edge_correction: measure the first and last gaps of a split window with equal
            windows, rescaled to the interior's distances (see
            :func:`~semrag.chunking._split.edge_corrected_distances`); without it, the
            shorter edge windows break more often. Default: on for the split window with
            mean pooling, the only setting it applies to.
        max_tokens: cap per chunk, in tokens of ``tokenizer`` (paper: 1024).
        overlap_tokens: overlap between pieces of an over-long chunk (paper: 128); default
            128, or ``max_tokens // 4`` when that is smaller.
        min_tokens: chunks under this many tokens merge into their closer neighbour.
        tokenizer: token counter; default the embedder's (MiniLM word pieces).
        sentence_splitter: callable returning sentence spans.
        show_progress: progress bar while embedding.

    Example:
        >>> from semrag.testing import FakeEmbedder
        >>> chunker = SemanticChunker(FakeEmbedder(), buffer_size=0, threshold=0.6)
        >>> text = "Cats purr. Cats nap. Stocks fell. Stocks rose."
        >>> [c.text for c in chunker.chunk(text)]
        ['Cats purr. Cats nap.', 'Stocks fell. Stocks rose.']
    """

    score_name = "cosine distance"
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **BoundaryChunker._parameter_constraints,
        "buffer_size": [Interval(numbers.Integral, 0, None)],
        "window": [Options("split", "centered")],
        "pooling": [Options("mean", "concat")],
        "threshold": [Interval(numbers.Real, None, None), Options(*THRESHOLD_KINDS)],
        "threshold_amount": [Interval(numbers.Real, None, None), None],
        "short_text_distance": [Interval(numbers.Real, 0.0, 2.0), None],
        "edge_correction": [bool, None],
    }

    def __init__(
        self,
        embedder: Any = None,
        *,
        buffer_size: int = 1,
        window: str = "split",
        pooling: str = "mean",
        threshold: str | float = "std",
        threshold_amount: float | None = None,
        short_text_distance: float | None = SHORT_TEXT_DISTANCE,
        edge_correction: bool | None = None,
        max_tokens: int = 1024,
        overlap_tokens: int | None = None,
        min_tokens: int = 0,
        tokenizer: Tokenizer | None = None,
        sentence_splitter: SentenceSplitter | None = None,
        show_progress: bool = False,
    ) -> None:
        super().__init__(
            embedder,
            max_tokens=max_tokens,
            overlap_tokens=overlap_tokens,
            min_tokens=min_tokens,
            tokenizer=tokenizer,
            sentence_splitter=sentence_splitter,
            show_progress=show_progress,
        )
        p = validate_params(
            type(self).__name__,
            self._parameter_constraints,
            {
                "buffer_size": buffer_size,
                "window": window,
                "pooling": pooling,
                "threshold": threshold,
                "threshold_amount": threshold_amount,
                "short_text_distance": short_text_distance,
                "edge_correction": edge_correction,
            },
        )
        plain = window == "split" and pooling == "mean"
        if edge_correction and not plain:
            raise ConfigError(
                "edge_correction applies to window='split' with pooling='mean' only; got "
                f"window={window!r}, pooling={pooling!r}"
            )
        self.edge_correction = plain if edge_correction is None else bool(edge_correction)
        self.short_text_distance = short_text_distance
        buffer_size, window, pooling = p["buffer_size"], p["window"], p["pooling"]
        threshold, threshold_amount = p["threshold"], p["threshold_amount"]
        self.buffer_size = buffer_size
        self.window = window
        self.pooling = pooling
        self.threshold = threshold
        self.threshold_amount = threshold_amount
        self._threshold = Threshold.of(threshold, threshold_amount)

    def _windows(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        return window_bounds(n, self.buffer_size, self.window)

    def _window_texts(self, doc: _Prepared) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Unique window texts, and the index of each gap's left and right window."""
        left, right = self._windows(len(doc.sentences))
        text, sents = doc.doc.text, doc.sentences
        index: dict[tuple[int, int], int] = {}
        for a, b in np.concatenate([left, right]).tolist():
            index.setdefault((a, b), len(index))
        texts = [text[sents[a].start : sents[b - 1].end] for a, b in index]
        li = np.array([index[(a, b)] for a, b in left.tolist()], dtype=np.int64)
        ri = np.array([index[(a, b)] for a, b in right.tolist()], dtype=np.int64)
        return texts, li, ri

    def _texts_to_embed(self, doc: _Prepared) -> list[str]:
        if self.pooling == "mean":
            return [s.of(doc.doc.text) for s in doc.sentences]
        return self._window_texts(doc)[0]

    def _decide(self, doc: _Prepared, vectors: Floats) -> GapDecision:
        if self.edge_correction:
            distances = edge_corrected_distances(vectors, self.buffer_size)
        elif self.pooling == "mean":
            left, right = self._windows(len(doc.sentences))
            distances = cosine_distances(mean_windows(vectors, left), mean_windows(vectors, right))
        else:
            _, li, ri = self._window_texts(doc)
            distances = cosine_distances(vectors[li], vectors[ri])
        rule_used = self._threshold
        if (
            self.short_text_distance is not None
            and distances.size < SHORT_TEXT_GAPS
            and rule_used.kind not in ("absolute", "target_chunks")
        ):
            rule_used = Threshold("absolute", float(self.short_text_distance))
        value, breaks = resolve_threshold(distances, rule_used)
        rule, kind = rule_used.describe(), rule_used.kind
        reasons = []
        for g in np.flatnonzero(breaks):
            if kind == "gradient":
                reasons.append(f"gradient of the distance curve above {value:.4f} ({rule})")
            elif kind == "target_chunks":
                reasons.append(f"distance {distances[g]:.4f} among the largest ({rule})")
            else:
                reasons.append(f"distance {distances[g]:.4f} above {value:.4f} ({rule})")
        return GapDecision(distances, breaks, value, tuple(reasons), distances)

    def _rule(self) -> str:
        rule = self._threshold.describe()
        if self.short_text_distance is not None and self._threshold.kind not in (
            "absolute",
            "target_chunks",
        ):
            rule += f"; texts under {SHORT_TEXT_GAPS} gaps: absolute {self.short_text_distance:g}"
        return rule

    def _config(self) -> dict[str, Any]:
        return {
            "buffer_size": self.buffer_size,
            "window": self.window,
            "pooling": self.pooling,
            "threshold": self.threshold,
            "threshold_amount": self.threshold_amount,
            "short_text_distance": self.short_text_distance,
            "edge_correction": self.edge_correction,
            **super()._config(),
        }
