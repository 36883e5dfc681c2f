"""semrag components for LangChain: splitters, retrievers, a vector store, a compressor, bridges.

Install with ``pip install "semrag[langchain]"``.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from langchain_semrag.compressors import SPCCompressor
from langchain_semrag.embeddings import (
    LangChainEmbedder,
    LangChainLLM,
    SemragEmbeddings,
    SemragLLM,
)
from langchain_semrag.retrievers import (
    CommunityRetriever,
    GraphRetriever,
    IntentAwareRetriever,
    RetrieveAndCheckRetriever,
    SketchRetriever,
    SSGRetriever,
)
from langchain_semrag.text_splitters import (
    MFCTextSplitter,
    PSCTextSplitter,
    SemanticTextSplitter,
)
from langchain_semrag.vectorstores import SemanticVectorStore, VectorStoreClient

try:
    __version__ = version("semrag")
except PackageNotFoundError:  # pragma: no cover
    __version__ = "0.0.0"

__all__ = [
    "CommunityRetriever",
    "GraphRetriever",
    "IntentAwareRetriever",
    "LangChainEmbedder",
    "LangChainLLM",
    "MFCTextSplitter",
    "PSCTextSplitter",
    "RetrieveAndCheckRetriever",
    "SemragEmbeddings",
    "SemragLLM",
    "SPCCompressor",
    "SSGRetriever",
    "SketchRetriever",
    "SemanticTextSplitter",
    "SemanticVectorStore",
    "VectorStoreClient",
    "__version__",
]
