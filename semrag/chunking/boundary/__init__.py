"""Trained boundary chunkers (PSC, MFC): pair models, training data, training, chunkers.

``import semrag.chunking.boundary`` does not import torch; the models load on first use.
"""

from __future__ import annotations

from semrag.chunking.boundary.chunker import (
    MFCChunker,
    PairModelChunker,
    PSCChunker,
    shipped_weights,
)

__all__ = ["MFCChunker", "PSCChunker", "PairModelChunker", "shipped_weights"]
