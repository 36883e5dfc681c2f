"""Retrievers over a :class:`~semrag.index.SemanticIndex`."""

from __future__ import annotations

from semrag.retrieval.ssg import ALGORITHMS, SSGRetriever, Step, Traversal

__all__ = ["ALGORITHMS", "SSGRetriever", "Step", "Traversal"]
