"""Indexes: FAISS dense, BM25 sparse, atomic persistence, and the SemanticIndex over both."""

from __future__ import annotations

from semrag.index.dense import DenseIndex
from semrag.index.pieces import PieceIndex
from semrag.index.semantic_index import SemanticIndex
from semrag.index.sparse import BM25Index, bm25_tokenize

__all__ = ["BM25Index", "DenseIndex", "PieceIndex", "SemanticIndex", "bm25_tokenize"]
