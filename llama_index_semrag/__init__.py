"""semrag for LlamaIndex: node parsers, retrievers, a vector store, a postprocessor, bridges.

Install with ``pip install "semrag[llama-index]"``.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from llama_index_semrag.embeddings import (
    LlamaIndexEmbedder,
    LlamaIndexLLM,
    SemragEmbedding,
    SemragLLM,
)
from llama_index_semrag.node_parsers import (
    MFCNodeParser,
    PSCNodeParser,
    SemanticNodeParser,
)
from llama_index_semrag.postprocessors import SPCPostprocessor
from llama_index_semrag.retrievers import (
    CommunityRetriever,
    GraphRetriever,
    IntentAwareRetriever,
    RetrieveAndCheckRetriever,
    SketchRetriever,
    SSGRetriever,
)
from llama_index_semrag.vector_stores import SemanticVectorStore, VectorStoreClient

try:
    __version__ = version("semrag")
except PackageNotFoundError:  # pragma: no cover
    __version__ = "0.0.0"

__all__ = [
    "CommunityRetriever",
    "GraphRetriever",
    "IntentAwareRetriever",
    "LlamaIndexEmbedder",
    "LlamaIndexLLM",
    "MFCNodeParser",
    "PSCNodeParser",
    "RetrieveAndCheckRetriever",
    "SemragEmbedding",
    "SemragLLM",
    "SPCPostprocessor",
    "SSGRetriever",
    "SketchRetriever",
    "SemanticNodeParser",
    "SemanticVectorStore",
    "VectorStoreClient",
    "__version__",
]
