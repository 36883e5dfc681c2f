"""Chunkers that break where a trained pair model says two sentences change section."""

from __future__ import annotations

import numbers
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from semrag._validation import Interval, check_param
from semrag.chunking.base import BoundaryChunker, Floats, GapDecision, _Prepared
from semrag.errors import ConfigError
from semrag.text.sentences import SentenceSplitter
from semrag.text.tokens import Tokenizer

__all__ = ["MFCChunker", "PSCChunker", "PairModelChunker", "shipped_weights"]

_WEIGHTS = Path(__file__).resolve().parent / "weights"


def shipped_weights(kind: str) -> Path:
    """Directory of the weights shipped for the packaged MiniLM (``"psc"`` or ``"mfc"``)."""
    return _WEIGHTS / f"{kind}-minilm"


class PairModelChunker(BoundaryChunker):
    """Break between two sentences when p(same section) < ``threshold``.

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
        threshold: break where p(same section) is below it (paper: 0.5).
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
        embedder: Any = None,
        *,
        model: str | Path | Any = None,
        threshold: float = 0.5,
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
        threshold = check_param(
            type(self).__name__,
            "threshold",
            threshold,
            [Interval(numbers.Real, 0.0, 1.0, closed="neither")],
        )
        self.threshold = threshold
        self._model_arg = model
        self._model: Any = None
        if model is None:
            if self.preset is None:
                raise ConfigError("PairModelChunker needs model= (a directory or a loaded model)")
            model = shipped_weights(self.preset)
        if isinstance(model, (str, Path)) and not Path(model).is_dir():
            raise ConfigError(f"no boundary model directory at {model}")
        self._model_arg = model

    @property
    def model(self) -> Any:
        """The pair model (loaded on first use; its dimension must match the embedder's)."""
        if self._model is None:
            from semrag.chunking.boundary.models import _PairModel, load_boundary_model

            arg = self._model_arg
            if isinstance(arg, _PairModel):
                if arg.dim != self.embedder.dim:
                    raise ConfigError(
                        f"the model expects {arg.dim}-dimensional embeddings of {arg.encoder}; "
                        f"the embedder gives {self.embedder.dim}"
                    )
                self._model = arg
            else:
                self._model = load_boundary_model(arg, expected_dim=self.embedder.dim)
        return self._model

    def _texts_to_embed(self, doc: _Prepared) -> list[str]:
        return [s.of(doc.doc.text) for s in doc.sentences]

    def _decide(self, doc: _Prepared, vectors: Floats) -> GapDecision:
        probs = self.model.predict_proba(vectors[:-1], vectors[1:])
        breaks = probs < self.threshold
        reasons = tuple(
            f"p(same section) {probs[g]:.3f} below {self.threshold:g}"
            for g in np.flatnonzero(breaks)
        )
        return GapDecision(probs, breaks, self.threshold, reasons, (1.0 - probs).astype(np.float32))

    def _rule(self) -> str:
        return f"p(same section) < {self.threshold:g}"

    def _config(self) -> dict[str, Any]:
        model = self._model_arg
        shown = str(model) if isinstance(model, (str, Path)) else repr(model)
        return {"model": shown, "threshold": self.threshold, **super()._config()}


class PSCChunker(PairModelChunker):
    """Projected Similarity Chunking with the shipped MiniLM weights (or ``model=``).

    Example:
        >>> text = "Bees make honey. Bees live in hives. The rocket reached orbit."
        >>> chunks = PSCChunker().chunk(text)
        >>> all(text[c.start : c.end] == c.text for c in chunks)
        True
    """

    preset = "psc"


class MFCChunker(PairModelChunker):
    """Metric Fusion Chunking with the shipped MiniLM weights (or ``model=``)."""

    preset = "mfc"
