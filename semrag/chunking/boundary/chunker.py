"""Chunkers that break where a trained pair model says two sentences change section."""

from __future__ import annotations

import numbers
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from semrag._validation import Interval, check_param
from semrag.chunking.base import BoundaryChunker, GapDecision, Prepared
from semrag.chunking.boundary.rules import check_rule, gap_breaks
from semrag.embeddings import Embedder
from semrag.errors import ConfigError
from semrag.text.sentences import SentenceSplitter
from semrag.text.tokens import Tokenizer
from semrag.types import Floats

if TYPE_CHECKING:
    from semrag.chunking.boundary.models import PairModel

__all__ = ["MFCChunker", "PSCChunker", "PairModelChunker", "shipped_weights"]

_WEIGHTS = Path(__file__).resolve().parent / "weights"


def shipped_weights(kind: str) -> Path:
    """Directory of the weights shipped for the packaged MiniLM (``"psc"`` or ``"mfc"``)."""
    return _WEIGHTS / f"{kind}-minilm"


class PairModelChunker(BoundaryChunker):
    """Break between two sentences when p(same section) < ``threshold`` (by ``rule``).

    Each sentence is embedded once (all documents in one batch); the pair model scores
    every consecutive pair; then the same ``min_tokens`` merging and ``max_tokens`` cap as
    :class:`~semrag.SemanticChunker` apply.

    Args:
        embedder: the encoder the model was trained on; ``None`` loads the packaged
            all-MiniLM-L6-v2 (the shipped weights are for it).
        model: a model directory (from ``semrag train-boundary`` or ``model.save``), a
            loaded :class:`~semrag.chunking.boundary.models.PSCModel` /
            :class:`~semrag.chunking.boundary.models.MFCModel`, or ``None`` for the
            class's shipped weights.
        threshold: break where p(same section) is below it; ``None`` takes the model's
            (chosen on development data when it was trained; the paper's 0.5 otherwise).
        rule: ``"threshold"`` breaks at every gap below the threshold (the paper's rule);
            ``"valley"`` only at gaps that are also the lowest of their neighbours (see
            :func:`~semrag.chunking.boundary.rules.gap_breaks`); ``None`` takes the
            model's (chosen with the threshold on development data).
        max_tokens: cap per chunk, in tokens of ``tokenizer``.
        overlap_tokens: overlap of the pieces of an over-long chunk.
        min_tokens: chunks under this many tokens merge into their closer neighbour.
        tokenizer: token counter; default the embedder's.
        sentence_splitter: callable returning sentence spans.
        show_progress: progress bar while embedding.
    """

    score_name = "p(same section)"
    preset: ClassVar[str | None] = None

    def __init__(
        self,
        embedder: Embedder | None = None,
        *,
        model: str | Path | PairModel | None = None,
        threshold: float | None = None,
        rule: str | None = None,
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
        if threshold is not None:
            threshold = check_param(
                type(self).__name__,
                "threshold",
                threshold,
                [Interval(numbers.Real, 0.0, 1.0, closed="neither")],
            )
        self._threshold = threshold
        self._rule_arg = rule if rule is None else check_rule(rule, type(self).__name__)
        self._model: PairModel | None = None
        if model is None:
            if self.preset is None:
                raise ConfigError("PairModelChunker needs model= (a directory or a loaded model)")
            model = shipped_weights(self.preset)
        if isinstance(model, (str, Path)) and not Path(model).is_dir():
            raise ConfigError(f"no boundary model directory at {model}")
        self._model_arg: str | Path | PairModel = model

    @property
    def model(self) -> PairModel:
        """The pair model, loaded on first use and checked against the embedder.

        Raises:
            ConfigError: if the embedder is not the encoder the weights were trained on
                (see :meth:`~semrag.chunking.boundary.models.PSCModel.check_encoder`).
        """
        if self._model is None:
            from semrag.chunking.boundary.models import PairModel, load_boundary_model

            arg = self._model_arg
            model = (
                arg
                if isinstance(arg, PairModel)
                else load_boundary_model(arg, expected_dim=self.embedder.dim)
            )
            model.check_encoder(self.embedder)
            self._model = model
        return self._model

    @property
    def threshold(self) -> float:
        """p(same section) below which a gap breaks (the model's unless given)."""
        return float(self.model.threshold if self._threshold is None else self._threshold)

    @property
    def rule(self) -> str:
        """``"threshold"`` or ``"valley"`` (see ``rule`` above); the model's unless given."""
        return str(self.model.rule if self._rule_arg is None else self._rule_arg)

    def _embeds_sentences(self) -> bool:
        return True

    def _texts_to_embed(self, doc: Prepared) -> list[str]:
        return [s.of(doc.doc.text) for s in doc.sentences]

    def _decide(self, doc: Prepared, vectors: Floats) -> GapDecision:
        from semrag.chunking.boundary.data import gap_sides

        gaps = np.arange(len(vectors) - 1)
        doc_of = np.zeros(len(vectors), np.int64)
        left, right = gap_sides(vectors, doc_of, gaps, gaps + 1, self.model.window)
        probs = self.model.predict_proba(left, right)
        breaks = gap_breaks(probs, self.threshold, self.rule)
        why = " (the lowest of its neighbours)" if self.rule == "valley" else ""
        reasons = tuple(
            f"p(same section) {probs[g]:.3f} below {self.threshold:g}{why}"
            for g in np.flatnonzero(breaks)
        )
        return GapDecision(probs, breaks, self.threshold, reasons, (1.0 - probs).astype(np.float32))

    def _rule(self) -> str:
        valley = ", at a local minimum" if self.rule == "valley" else ""
        return f"p(same section) < {self.threshold:g}{valley}"

    def _config(self) -> dict[str, Any]:
        model = self._model_arg
        shown = str(model) if isinstance(model, (str, Path)) else repr(model)
        return {
            "model": shown,
            "threshold": self._threshold,
            "rule": self._rule_arg,
            **super()._config(),
        }


class PSCChunker(PairModelChunker):
    """Projected Similarity Chunking with the shipped MiniLM weights (or ``model=``).

    Examples:
        >>> text = "Bees make honey. Bees live in hives. The rocket reached orbit."
        >>> chunks = PSCChunker().chunk(text)
        >>> all(text[c.start : c.end] == c.text for c in chunks)
        True
    """

    preset = "psc"


class MFCChunker(PairModelChunker):
    """Metric Fusion Chunking with the shipped MiniLM weights (or ``model=``)."""

    preset = "mfc"
