"""semrag: semantic-RAG methods for LangChain and LlamaIndex, with a framework-free core.

``import semrag`` loads only numpy: the heavy parts (torch, sentence-transformers) are
imported on first use of the names that need them.

Example:
    >>> from semrag import SemanticChunker, Document
    >>> from semrag.testing import FakeEmbedder
    >>> chunker = SemanticChunker(FakeEmbedder(), buffer_size=0, threshold=0.6)
    >>> [c.text for c in chunker.chunk("Cats purr. Cats nap. Stocks fell. Stocks rose.")]
    ['Cats purr. Cats nap.', 'Stocks fell. Stocks rose.']
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from semrag._version import __version__
from semrag.errors import (
    ConfigError,
    EmbeddingError,
    LLMError,
    LLMOutputError,
    MissingDependencyError,
    NotFittedError,
    SemragError,
    StoreError,
    StoreUnavailableError,
)
from semrag.types import Chunk, Document, ScoredChunk, Span

if TYPE_CHECKING:
    from semrag.chunking import ChunkingResult, ChunkingStats, SemanticChunker
    from semrag.chunking.boundary import MFCChunker, PSCChunker
    from semrag.embeddings import Embedder, SentenceTransformerEmbedder
    from semrag.index import SemanticIndex
    from semrag.llm import LLM
    from semrag.retrieval import SSGRetriever
    from semrag.text import split_sentences


_LAZY = {
    "SemanticChunker": "semrag.chunking",
    "PSCChunker": "semrag.chunking.boundary",
    "MFCChunker": "semrag.chunking.boundary",
    "ChunkingResult": "semrag.chunking",
    "ChunkingStats": "semrag.chunking",
    "Embedder": "semrag.embeddings",
    "SentenceTransformerEmbedder": "semrag.embeddings",
    "LLM": "semrag.llm",
    "SemanticIndex": "semrag.index",
    "SSGRetriever": "semrag.retrieval",
    "split_sentences": "semrag.text",
}

__all__ = [
    "LLM",
    "Chunk",
    "ChunkingResult",
    "ChunkingStats",
    "ConfigError",
    "Document",
    "Embedder",
    "EmbeddingError",
    "LLMError",
    "LLMOutputError",
    "MFCChunker",
    "MissingDependencyError",
    "NotFittedError",
    "PSCChunker",
    "ScoredChunk",
    "SSGRetriever",
    "SemanticChunker",
    "SemanticIndex",
    "SemragError",
    "SentenceTransformerEmbedder",
    "Span",
    "StoreError",
    "StoreUnavailableError",
    "__version__",
    "split_sentences",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'semrag' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
