"""semrag for LlamaIndex: node parsers, retrievers, a vector store, a postprocessor, bridges.

Install with ``pip install "semrag[llama-index]"``: the splitters need
nothing more; the retrievers, vector store and postprocessor read a
:class:`~semrag.SemanticIndex` (``semrag[index]``). Names load on first use, so importing a
splitter never imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from semrag._deps import lazy_names
from semrag._version import __version__

if TYPE_CHECKING:
    from llama_index_semrag.embeddings import (
        LlamaIndexEmbedder,
        LlamaIndexLLM,
        SemragEmbedding,
        SemragLLM,
    )
    from llama_index_semrag.node_parsers import MFCNodeParser, PSCNodeParser, SemanticNodeParser
    from llama_index_semrag.postprocessors import SPCPostprocessor
    from llama_index_semrag.retrievers import (
        CommunityRetriever,
        GraphRetriever,
        IntentAwareRetriever,
        RetrieveAndCheckRetriever,
        SketchRetriever,
        SSGRetriever,
        retriever_for,
    )
    from llama_index_semrag.vector_stores import SemanticVectorStore, VectorStoreClient

_LAZY = {
    "CommunityRetriever": "llama_index_semrag.retrievers",
    "GraphRetriever": "llama_index_semrag.retrievers",
    "IntentAwareRetriever": "llama_index_semrag.retrievers",
    "LlamaIndexEmbedder": "llama_index_semrag.embeddings",
    "LlamaIndexLLM": "llama_index_semrag.embeddings",
    "MFCNodeParser": "llama_index_semrag.node_parsers",
    "PSCNodeParser": "llama_index_semrag.node_parsers",
    "RetrieveAndCheckRetriever": "llama_index_semrag.retrievers",
    "SPCPostprocessor": "llama_index_semrag.postprocessors",
    "SSGRetriever": "llama_index_semrag.retrievers",
    "SemanticNodeParser": "llama_index_semrag.node_parsers",
    "SemanticVectorStore": "llama_index_semrag.vector_stores",
    "SemragEmbedding": "llama_index_semrag.embeddings",
    "SemragLLM": "llama_index_semrag.embeddings",
    "SketchRetriever": "llama_index_semrag.retrievers",
    "retriever_for": "llama_index_semrag.retrievers",
    "VectorStoreClient": "llama_index_semrag.vector_stores",
}

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
    "retriever_for",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)
