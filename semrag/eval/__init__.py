"""Evaluation: segmentation metrics and readers for the public data sets used in benchmarks."""

from __future__ import annotations

from semrag.eval.metrics import boundaries_from_offsets, pk, window_diff

__all__ = ["boundaries_from_offsets", "pk", "window_diff"]
