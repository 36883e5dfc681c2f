"""semrag components for LangChain: splitters, retrievers, a vector store, a compressor, bridges.

Install with ``pip install "semrag[langchain]"``: the splitters need
nothing more; the retrievers, vector store and compressor read a
:class:`~semrag.SemanticIndex` (``semrag[index]``). Names load on first use, so importing a
splitter never imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from semrag._deps import lazy_names
from semrag._version import __version__

if TYPE_CHECKING:
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
        retriever_for,
    )
    from langchain_semrag.text_splitters import (
        MFCTextSplitter,
        PSCTextSplitter,
        SemanticTextSplitter,
    )
    from langchain_semrag.vectorstores import SemanticVectorStore, VectorStoreClient

_LAZY = {
    "CommunityRetriever": "langchain_semrag.retrievers",
    "GraphRetriever": "langchain_semrag.retrievers",
    "IntentAwareRetriever": "langchain_semrag.retrievers",
    "LangChainEmbedder": "langchain_semrag.embeddings",
    "LangChainLLM": "langchain_semrag.embeddings",
    "MFCTextSplitter": "langchain_semrag.text_splitters",
    "PSCTextSplitter": "langchain_semrag.text_splitters",
    "RetrieveAndCheckRetriever": "langchain_semrag.retrievers",
    "SPCCompressor": "langchain_semrag.compressors",
    "SSGRetriever": "langchain_semrag.retrievers",
    "SemanticTextSplitter": "langchain_semrag.text_splitters",
    "SemanticVectorStore": "langchain_semrag.vectorstores",
    "SemragEmbeddings": "langchain_semrag.embeddings",
    "SemragLLM": "langchain_semrag.embeddings",
    "SketchRetriever": "langchain_semrag.retrievers",
    "retriever_for": "langchain_semrag.retrievers",
    "VectorStoreClient": "langchain_semrag.vectorstores",
}

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
    "retriever_for",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)
