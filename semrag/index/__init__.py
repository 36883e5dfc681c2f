"""Indexes: dense, BM25, the semantic similarity graph, atomic saves, and SemanticIndex."""

from __future__ import annotations

from semrag.index.dense import DenseIndex
from semrag.index.pieces import PieceIndex
from semrag.index.semantic_index import SemanticIndex
from semrag.index.sparse import BM25Index, bm25_tokenize
from semrag.index.ssg import SemanticSimilarityGraph, SSGConfig

__all__ = [
    "BM25Index",
    "DenseIndex",
    "PieceIndex",
    "SSGConfig",
    "SemanticIndex",
    "SemanticSimilarityGraph",
    "bm25_tokenize",
]
