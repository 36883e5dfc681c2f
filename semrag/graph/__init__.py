"""Graphs: the semantic similarity graph (SSG) of the traversal retrievers."""

from __future__ import annotations

from semrag.graph.ssg import SemanticSimilarityGraph, SSGConfig, keyword_themes, window_ranges

__all__ = ["SSGConfig", "SemanticSimilarityGraph", "keyword_themes", "window_ranges"]
