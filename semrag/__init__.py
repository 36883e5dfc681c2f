"""semrag: semantic-RAG methods for LangChain and LlamaIndex, with a framework-free core.

``import semrag`` loads only numpy: the heavy parts (torch, sentence-transformers) are
imported on first use of the names that need them. Splitting needs none of them (the
boundaries come from a static encoder shipped in the package); the index and its retrievers
need ``pip install "semrag[index]"`` and say so when it is missing.

Examples:
    >>> from semrag import SemanticChunker, Document
    >>> from semrag.testing import FakeEmbedder
    >>> chunker = SemanticChunker(FakeEmbedder(), buffer_size=0, threshold=0.6)
    >>> [c.text for c in chunker.chunk("Cats purr. Cats nap. Stocks fell. Stocks rose.")]
    ['Cats purr. Cats nap.', 'Stocks fell. Stocks rose.']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from semrag._deps import lazy_names
from semrag._version import __version__
from semrag.errors import ConfigError, DocumentConflictError, SemragError
from semrag.types import Chunk, Document, ScoredChunk

if TYPE_CHECKING:
    from semrag.chunking import SemanticChunker
    from semrag.chunking.boundary import MFCChunker, PSCChunker
    from semrag.index import SemanticIndex
    from semrag.postprocess import SPC
    from semrag.retrieval import GraphRetriever, IntentAwareRetriever, SSGRetriever


_LAZY = {
    "SemanticChunker": "semrag.chunking",
    "PSCChunker": "semrag.chunking.boundary",
    "MFCChunker": "semrag.chunking.boundary",
    "SemanticIndex": "semrag.index",
    "GraphRetriever": "semrag.retrieval",
    "IntentAwareRetriever": "semrag.retrieval",
    "SSGRetriever": "semrag.retrieval",
    "SPC": "semrag.postprocess",
}

# What a user builds an app from; everything else is imported from its subpackage
# (semrag.errors, semrag.embeddings, semrag.llm, semrag.text, semrag.graph, ...).
__all__ = [
    "SPC",
    "Chunk",
    "ConfigError",
    "Document",
    "DocumentConflictError",
    "GraphRetriever",
    "IntentAwareRetriever",
    "MFCChunker",
    "PSCChunker",
    "SSGRetriever",
    "ScoredChunk",
    "SemanticChunker",
    "SemanticIndex",
    "SemragError",
    "__version__",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)
