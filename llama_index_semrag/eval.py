"""The evaluation's bridge to LlamaIndex (entry point ``semrag.eval_bridges``: ``llama_index``).

It lets :func:`semrag.eval.evaluate_splitters`, :func:`~semrag.eval.evaluate_retrievers`
and :func:`~semrag.eval.generate_questions` take LlamaIndex objects as they are: a
``NodeParser`` (its nodes' ``start_char_idx``), a retriever (its nodes' documents), an
embedding model and an LLM. Translation only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core import Document as LIDocument
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM as LIBaseLLM
from llama_index.core.node_parser import NodeParser
from llama_index.core.schema import TextNode

from llama_index_semrag.embeddings import to_embedder, to_llm
from llama_index_semrag.node_parsers import core_chunker
from semrag.embeddings import BaseEmbedder, as_embedder
from semrag.eval.bridges import Piece
from semrag.eval.splitters import Split, as_splitter
from semrag.identity import chunk_document_id
from semrag.llm import LLM

__all__ = ["bridge", "sentence_splitter"]


class LlamaIndexBridge:
    """LlamaIndex objects as the evaluation runs them (``None`` for any other object)."""

    def splitter(self, obj: Any) -> Callable[[str], Sequence[Piece]] | None:
        """Ours through its core chunker (exact offsets); any other parser by its nodes."""
        ours = core_chunker(obj)
        if ours is not None:
            return as_splitter(ours)
        if not isinstance(obj, NodeParser):
            return None

        def split(text: str) -> list[Split]:
            nodes = obj.get_nodes_from_documents([LIDocument(text=text)])
            return [
                Split(n.get_content(), n.start_char_idx if isinstance(n, TextNode) else None)
                for n in nodes
            ]

        return split

    def retriever(self, obj: Any) -> Callable[[str], list[str]] | None:
        """The ids of the documents of the nodes ``obj.retrieve`` returns, in order."""
        if not isinstance(obj, BaseRetriever):
            return None

        def retrieve(q: str) -> list[str]:
            out = []
            for hit in obj.retrieve(q):
                node = hit.node
                found = chunk_document_id(node.metadata, node.ref_doc_id)
                out.append(found if found is not None else node.node_id)
            return out

        return retrieve

    def embedder(self, obj: Any) -> BaseEmbedder | None:
        """A LlamaIndex embedding model (ours unwrapped)."""
        return as_embedder(to_embedder(obj)) if isinstance(obj, BaseEmbedding) else None

    def llm(self, obj: Any) -> LLM | None:
        """A LlamaIndex LLM."""
        return to_llm(obj) if isinstance(obj, LIBaseLLM) else None


bridge = LlamaIndexBridge()


def sentence_splitter(chunk_size: int, chunk_overlap: int = 0) -> NodeParser:
    """LlamaIndex's ``SentenceSplitter`` (the CLI's ``sentence``)."""
    from llama_index.core.node_parser import SentenceSplitter

    return SentenceSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap)
