"""Indexes: SemanticIndex, its corpus, its parts, ingestion and storage.

* :mod:`~semrag.index.semantic_index`: the one class users build (a facade), and
  :mod:`~semrag.index.index_reader`: what retrievers read of it (``index.reader()``);
* :mod:`~semrag.index.corpus` and :mod:`~semrag.index.change`: the versioned corpus and the
  change every part applies;
* :mod:`semrag.index.parts`: dense, BM25, the semantic similarity graph, SKETCH's pieces,
  PPR's phrases;
* :mod:`semrag.index.ingest`: documents into records (and Ray workers' batches);
* :mod:`semrag.index.storage`: the on-disk format, save and load;
* :mod:`~semrag.index.search` and :mod:`~semrag.index.fusion`: searches of one version;
* :mod:`~semrag.index.reader`: the reader contract retrievers declare what they need from.

The module paths of 0.2 (``semrag.index.dense``, ``semrag.index.persist``, ...) are small
modules that warn and hold the moved module's names (:mod:`semrag._moved`), until 0.4.
"""

from __future__ import annotations

from semrag.index.index_reader import IndexReader
from semrag.index.parts.dense import DenseIndex
from semrag.index.parts.pieces import PieceIndex
from semrag.index.parts.sparse import BM25Index, bm25_tokenize
from semrag.index.parts.ssg import SemanticSimilarityGraph, SSGConfig
from semrag.index.semantic_index import SemanticIndex

__all__ = [
    "BM25Index",
    "DenseIndex",
    "IndexReader",
    "PieceIndex",
    "SSGConfig",
    "SemanticIndex",
    "SemanticSimilarityGraph",
    "bm25_tokenize",
]
