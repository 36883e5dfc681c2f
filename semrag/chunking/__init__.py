"""Chunkers: SemRAG semantic chunking and the shared boundary pipeline."""

from __future__ import annotations

from semrag.chunking.base import BoundaryChunker, Break, ChunkingResult, ChunkingStats
from semrag.chunking.framework import framework_cap_arguments, framework_threshold_arguments
from semrag.chunking.semantic import SemanticChunker

__all__ = [
    "BoundaryChunker",
    "Break",
    "ChunkingResult",
    "ChunkingStats",
    "SemanticChunker",
    "framework_cap_arguments",
    "framework_threshold_arguments",
]
