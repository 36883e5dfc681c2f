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
    edge_corrected_distances_many,
    mean_windows,
    resolve_threshold,
    sized_breaks,
    window_bounds,
)
from semrag.chunking.base import BoundaryChunker, GapDecision, Prepared
from semrag.embeddings import BaseEmbedder, Embedder, as_embedder
from semrag.errors import ConfigError
from semrag.static_embedder import StaticEmbedder
from semrag.text.sentences import SentenceSplitter
from semrag.text.structure import Layout, layout
from semrag.text.tokens import Tokenizer
from semrag.types import HEADINGS_KEY, Chunk, Floats

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "SHORT_TEXT_DISTANCE",
    "SHORT_TEXT_GAPS",
    "SIZE_WEIGHT",
    "STATIC_SIZE_WEIGHT",
    "TARGET_RATIO",
    "SemanticChunker",
]

SHORT_TEXT_GAPS = 4
"""Documents with fewer gaps than this use ``short_text_distance`` instead of a statistic."""

SHORT_TEXT_DISTANCE = 0.75
"""Default absolute cosine distance for short documents (chosen on development data:
``benchmarks/boundary_models.py --parts short``)."""


DEFAULT_MAX_TOKENS = 256
"""Default cap: all-MiniLM-L6-v2 reads 256 word pieces; a longer chunk's tail is never embedded."""

TARGET_RATIO = 0.3125
"""``target_tokens="auto"`` aims at this share of ``max_tokens``: 80 of the default 256 (chosen on
development data:
``benchmarks/chunk_retrieval.py --half dev``)."""

SIZE_WEIGHT = 1.0
"""Default ``size_weight`` with a given encoder: the cost of a chunk twice the target against
one unit of distance (chosen with MiniLM boundaries)."""
STATIC_SIZE_WEIGHT = 0.85
"""Default ``size_weight`` with the packaged static encoder: its chunks come out the size
MiniLM's did, and retrieve as well (chosen on development data:
``benchmarks/chunk_retrieval.py --half dev``)."""

PARAGRAPH_BONUS = 0.5
"""Added to a gap's break reward when a blank line separates its sentences."""
HEADING_BONUS = 1.0
"""Added to a gap's break reward when the next sentence is a heading."""
LINE_BONUS = 0.1
"""Added to a gap's break reward when a newline separates its sentences."""
TABLE_PENALTY = 0.5
"""Taken from a gap's break reward between two rows of one table."""


class SemanticChunker(BoundaryChunker):
    r"""Break a text where the meaning of consecutive sentences changes.

    Each gap between sentence ``i`` and ``i + 1`` gets the cosine distance between the
    embeddings of the windows on either side. By default the breaks are then chosen for
    the whole document at once (:func:`~semrag.chunking._split.sized_breaks`): each gap's
    distance, plus a bonus where the document itself breaks (a blank line, a heading), is
    weighed against how far each chunk is from ``target_tokens``, so chunks end where the
    meaning and the layout change and stay near a size that retrieves well. With
    ``target_tokens=None`` it is SemRAG's rule alone: every gap whose distance passes the
    ``threshold`` breaks. Chunks are then capped at ``max_tokens`` (pieces overlapping by
    ``overlap_tokens``; SemRAG eq. 2) and, optionally, tiny chunks merged.

    Chunks carry the headings they sit under in ``metadata["semrag_headings"]`` (outermost first)
    when the document has headings (Markdown ``#``, ``== wiki ==`` or title lines).

    Args:
        embedder: any :class:`~semrag.embeddings.Embedder` for the boundaries. ``None``:
            the packaged static encoder (:class:`~semrag.static_embedder.StaticEmbedder`,
            no torch) for sized chunks, the default; the packaged all-MiniLM-L6-v2 with
            ``target_tokens=None`` (the paper's rule), whose boundaries it places better
            (``semrag[index]``). Pass ``MiniLMEmbedder()`` (:mod:`semrag.minilm`) for
            MiniLM boundaries with sized chunks. Both load on first use, offline.
        buffer_size: sentences of context on each side of a gap (SemRAG's ``b``; the
            paper found 5 best on news and 12 on Wikipedia).
        window: ``"split"`` (default) compares ``s[i-b..i]`` with ``s[i+1..i+1+b]``, which
            never share a sentence and see breaks near the start of a document;
            ``"centered"`` compares ``s[i-b..i+b]`` with ``s[i+1-b..i+1+b]`` (LangChain and
            SemRAG).
        pooling: ``"mean"`` embeds each sentence once and averages the window (cost
            independent of ``buffer_size``); ``"concat"`` embeds each window's text, as
            the paper does (truncated by the model beyond its maximum sequence length).
        threshold: gaps that always break: ``None`` (default with a target: none forced);
            a number = absolute cosine distance (SemRAG's theta); or one of ``"std"``
            (mean + k*std), ``"percentile"``, ``"interquartile"`` (mean + k*IQR),
            ``"gradient"`` (percentile of the curve's gradient), ``"target_chunks"``. With
            ``target_tokens=None`` a threshold is needed and the default is ``"std"``
            (split window, mean pooling, buffer 1, std with k = 1 had the lowest Pk in our
            boundary benchmark).
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
        target_tokens: the chunk size aimed at, in tokens of ``tokenizer``: ``"auto"``
            (default) is ``TARGET_RATIO`` (0.3125) of ``max_tokens``, 80 word pieces
            or about 330 characters, which retrieved best at an equal context budget on real
            documents (``benchmarks/chunk_retrieval.py``); ``None`` turns sizing off
            (breaks by ``threshold`` only, as in the paper).
        size_weight: how much a chunk's distance from the target costs against a gap's
            cosine distance (larger: sizes closer to the target). Default:
            ``STATIC_SIZE_WEIGHT`` (0.85) on the packaged static encoder (``embedder=None``),
            ``SIZE_WEIGHT`` (1.0) with an encoder given; each was chosen with its encoder.
        structure: use the document's own layout (blank lines, headings, line breaks,
            table rows) as break priors and record the heading path; ``False`` reads the
            text as a run of sentences.
        contextual_headings: an index embeds each chunk with its heading path in front
            (``"Title > Section\n\n" + text``; :meth:`embedding_text`), so a chunk that
            never names its topic is still found by it. The chunk's text and offsets do
            not change.
        max_tokens: cap per chunk, in tokens of ``tokenizer`` (default 256, the reach of
            all-MiniLM-L6-v2; paper: 1024).
        overlap_tokens: overlap between pieces of an over-long chunk (paper: 128); default
            128, or ``max_tokens // 4`` when that is smaller.
        min_tokens: chunks under this many tokens merge into their closer neighbour.
        tokenizer: token counter; default the embedder's (MiniLM word pieces).
        sentence_splitter: callable returning sentence spans.
        show_progress: progress bar while embedding.

    Examples:
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
        "threshold": [Interval(numbers.Real, None, None), Options(*THRESHOLD_KINDS), None],
        "threshold_amount": [Interval(numbers.Real, None, None), None],
        "short_text_distance": [Interval(numbers.Real, 0.0, 2.0), None],
        "edge_correction": [bool, None],
        "target_tokens": [Interval(numbers.Integral, 1, None), Options("auto"), None],
        "size_weight": [Interval(numbers.Real, 0.0, None, closed="neither"), None],
        "structure": [bool],
        "contextual_headings": [bool],
    }

    def __init__(
        self,
        embedder: Embedder | None = None,
        *,
        buffer_size: int = 1,
        window: str = "split",
        pooling: str = "mean",
        threshold: str | float | None = None,
        threshold_amount: float | None = None,
        short_text_distance: float | None = SHORT_TEXT_DISTANCE,
        edge_correction: bool | None = None,
        target_tokens: int | str | None = "auto",
        size_weight: float | None = None,
        structure: bool = True,
        contextual_headings: bool = False,
        max_tokens: int = DEFAULT_MAX_TOKENS,
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
                "target_tokens": target_tokens,
                "size_weight": size_weight,
                "structure": structure,
                "contextual_headings": contextual_headings,
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
        target_tokens = p["target_tokens"]
        if target_tokens is None and threshold is None:
            threshold = "std"  # the paper's rule alone needs a threshold
        if isinstance(target_tokens, int) and target_tokens > self.max_tokens:
            raise ConfigError(
                f"SemanticChunker: target_tokens ({target_tokens}) is over max_tokens "
                f"({self.max_tokens})"
            )
        if threshold is None and threshold_amount is not None:
            raise ConfigError("threshold_amount needs a threshold")
        self.target_tokens = target_tokens
        if size_weight is None:  # the weight tuned for the encoder that cuts
            size_weight = STATIC_SIZE_WEIGHT if embedder is None else SIZE_WEIGHT
        self.size_weight = float(size_weight)
        self.structure = p["structure"]
        self.contextual_headings = p["contextual_headings"]
        if self.contextual_headings and not self.structure:
            raise ConfigError("contextual_headings needs structure=True (headings come from it)")
        self.buffer_size = buffer_size
        self.window = window
        self.pooling = pooling
        self.threshold = threshold
        self.threshold_amount = threshold_amount
        self._threshold = None if threshold is None else Threshold.of(threshold, threshold_amount)

    @property
    def target(self) -> float | None:
        """The chunk size aimed at, in tokens (``None``: no sizing)."""
        if self.target_tokens is None:
            return None
        if self.target_tokens == "auto":
            return max(1.0, TARGET_RATIO * self.max_tokens)
        return float(self.target_tokens)

    def _default_embedder(self) -> BaseEmbedder:
        """The encoder that served this rule best on the development data.

        Sized chunks (the default): the packaged static encoder
        (:class:`~semrag.static_embedder.StaticEmbedder`), whose chunks retrieved as well as
        MiniLM's (the same mean recall on the development half, ahead on the check half),
        over a hundred times faster and without torch. The paper's rule alone
        (``target_tokens=None``): the packaged MiniLM, whose boundaries match human ones
        better (Pk, ``benchmarks/boundary_quality.py``); it needs ``semrag[index]``.
        """
        return StaticEmbedder() if self.target_tokens is not None else as_embedder(None)

    def _windows(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        return window_bounds(n, self.buffer_size, self.window)

    def _window_texts(self, doc: Prepared) -> tuple[list[str], np.ndarray, np.ndarray]:
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

    def _embeds_sentences(self) -> bool:
        return self.pooling == "mean"

    def _texts_to_embed(self, doc: Prepared) -> list[str]:
        if self.pooling == "mean":
            return [s.of(doc.doc.text) for s in doc.sentences]
        return self._window_texts(doc)[0]

    def _score_all(
        self, prepared: list[Prepared], vectors: Floats, owners: list[tuple[int, int]]
    ) -> None:
        if not self.edge_correction:  # (it implies pooling="mean": sentence vectors)
            return
        for p, scores in zip(
            prepared, edge_corrected_distances_many(vectors, owners, self.buffer_size), strict=True
        ):
            p.scores = scores

    def _distances(self, doc: Prepared, vectors: Floats) -> Floats:
        if doc.scores is not None:  # edge-corrected, the batch's in one pass (_score_all)
            return doc.scores
        if self.pooling == "mean":
            left, right = self._windows(len(doc.sentences))
            return cosine_distances(mean_windows(vectors, left), mean_windows(vectors, right))
        _, li, ri = self._window_texts(doc)
        return cosine_distances(vectors[li], vectors[ri])

    def _forced(self, distances: Floats) -> tuple[float, np.ndarray, dict[int, str]]:
        """The threshold's value, the gaps it breaks, and why each breaks."""
        rule_used = self._threshold
        if rule_used is None:
            return float("nan"), np.zeros(distances.size, dtype=bool), {}
        if (
            self.short_text_distance is not None
            and distances.size < SHORT_TEXT_GAPS
            and rule_used.kind not in ("absolute", "target_chunks")
        ):
            rule_used = Threshold("absolute", float(self.short_text_distance))
        value, breaks = resolve_threshold(distances, rule_used)
        rule, kind = rule_used.describe(), rule_used.kind
        reasons = {}
        for g in np.flatnonzero(breaks).tolist():
            if kind == "gradient":
                reasons[g] = f"gradient of the distance curve above {value:.4f} ({rule})"
            elif kind == "target_chunks":
                reasons[g] = f"distance {distances[g]:.4f} among the largest ({rule})"
            else:
                reasons[g] = f"distance {distances[g]:.4f} above {value:.4f} ({rule})"
        return value, breaks, reasons

    def _decide(self, doc: Prepared, vectors: Floats) -> GapDecision:
        distances = self._distances(doc, vectors)
        value, forced, why = self._forced(distances)
        target = self.target
        if target is None:
            reasons = tuple(why[g] for g in np.flatnonzero(forced).tolist())
            return GapDecision(distances, forced, value, reasons, distances)
        lay = self._layout(doc)
        rewards = distances.astype(np.float64)
        blocked = None
        if lay is not None:
            rewards = rewards + PARAGRAPH_BONUS * lay.paragraph + LINE_BONUS * lay.line
            rewards = rewards + HEADING_BONUS * (lay.heading[1:] > 0) - TABLE_PENALTY * lay.table
            blocked = lay.heading[:-1] > 0
        breaks = sized_breaks(
            doc.sentence_tokens,
            rewards,
            target=target,
            max_tokens=self.max_tokens,
            weight=self.size_weight,
            forced=forced,
            blocked=blocked,
        )
        said: list[str] = []
        for g in np.flatnonzero(breaks).tolist():
            if g in why:
                said.append(why[g])
                continue
            place = ""
            if lay is not None and lay.heading[g + 1]:
                place = " before a heading"
            elif lay is not None and lay.paragraph[g]:
                place = " at a blank line"
            said.append(
                f"distance {distances[g]:.4f}{place}, best with chunks near {target:g} tokens"
            )
        return GapDecision(distances, breaks, value, tuple(said), distances)

    def _layout(self, doc: Prepared) -> Layout | None:
        if not self.structure:
            return None
        if doc.layout is None:
            doc.layout = layout(doc.doc.text, doc.sentences)
        return doc.layout

    def embedding_text(self, chunk: Chunk) -> str:
        r"""The chunk's text, with its heading path in front under ``contextual_headings``.

        Examples:
            >>> from semrag.testing import FakeEmbedder
            >>> c = SemanticChunker(FakeEmbedder(), contextual_headings=True)
            >>> [c.embedding_text(x) for x in c.chunk("# Bees\n\nThey dance.")]
            ['Bees\n\n# Bees\n\nThey dance.']
        """
        path = chunk.metadata.get(HEADINGS_KEY) if self.contextual_headings else None
        return f"{' > '.join(path)}\n\n{chunk.text}" if path else chunk.text

    def _headings(self, p: Prepared) -> list[tuple[str, ...]] | None:
        lay = self._layout(p)
        return lay.paths() if lay is not None and lay.heading.any() else None

    def _rule(self) -> str:
        parts = []
        if self.target is not None:
            parts.append(f"sized: target {self.target:g} tokens, weight {self.size_weight:g}")
        if self._threshold is not None:
            rule = self._threshold.describe()
            if self.short_text_distance is not None and self._threshold.kind not in (
                "absolute",
                "target_chunks",
            ):
                rule += (
                    f"; texts under {SHORT_TEXT_GAPS} gaps: absolute {self.short_text_distance:g}"
                )
            parts.append(rule)
        return "; ".join(parts)

    def _config(self) -> dict[str, Any]:
        return {
            "buffer_size": self.buffer_size,
            "window": self.window,
            "pooling": self.pooling,
            "threshold": self.threshold,
            "threshold_amount": self.threshold_amount,
            "short_text_distance": self.short_text_distance,
            "edge_correction": self.edge_correction,
            "target_tokens": self.target_tokens,
            "size_weight": self.size_weight,
            "structure": self.structure,
            "contextual_headings": self.contextual_headings,
            **super()._config(),
        }
