"""The evaluation's bridge to LangChain (entry point ``semrag.eval_bridges``: ``langchain``).

It lets :func:`semrag.eval.evaluate_splitters`, :func:`~semrag.eval.evaluate_retrievers`
and :func:`~semrag.eval.generate_questions` take LangChain objects as they are: a
``TextSplitter`` (``create_documents`` with its ``start_index``), a ``BaseRetriever`` (the
documents' ids by :func:`semrag.identity.chunk_document_id`), ``Embeddings`` and chat
models or LLMs. Translation only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.documents import BaseDocumentTransformer
from langchain_core.documents import Document as LCDocument
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseLanguageModel
from langchain_core.retrievers import BaseRetriever
from langchain_text_splitters import TextSplitter

from langchain_semrag.embeddings import to_embedder, to_llm
from langchain_semrag.text_splitters import core_chunker
from semrag.embeddings import BaseEmbedder, as_embedder
from semrag.eval.bridges import Piece
from semrag.eval.splitters import Split, as_splitter
from semrag.identity import chunk_document_id
from semrag.llm import LLM

__all__ = ["bridge", "recursive_splitter"]


def _splits(docs: Sequence[LCDocument]) -> list[Split]:
    return [Split(d.page_content, d.metadata.get("start_index")) for d in docs]


class LangChainBridge:
    """LangChain objects as the evaluation runs them (``None`` for any other object)."""

    def splitter(self, obj: Any) -> Callable[[str], Sequence[Piece]] | None:
        """Ours through its core chunker; any other LangChain splitter by its documents.

        A ``TextSplitter`` by ``create_documents``, any other document transformer
        (LangChain's experimental ``SemanticChunker``) by ``transform_documents``; chunks
        without a ``start_index`` are located in the text.
        """
        ours = core_chunker(obj)
        if ours is not None:
            return as_splitter(ours)
        if isinstance(obj, TextSplitter):
            return lambda text: _splits(obj.create_documents([text]))
        if isinstance(obj, BaseDocumentTransformer):  # e.g. langchain-experimental's chunker
            return lambda text: _splits(obj.transform_documents([LCDocument(page_content=text)]))
        return None

    def retriever(self, obj: Any) -> Callable[[str], list[str]] | None:
        """The ids of the documents ``obj.invoke`` returns, in order."""
        if not isinstance(obj, BaseRetriever):
            return None
        return lambda q: [_doc_id(d) for d in obj.invoke(q)]

    def embedder(self, obj: Any) -> BaseEmbedder | None:
        """A LangChain ``Embeddings`` (ours unwrapped)."""
        return as_embedder(to_embedder(obj)) if isinstance(obj, Embeddings) else None

    def llm(self, obj: Any) -> LLM | None:
        """A LangChain chat model or LLM."""
        return to_llm(obj) if isinstance(obj, BaseLanguageModel) else None


def _doc_id(doc: Any) -> str:
    found = chunk_document_id(doc.metadata)
    return found if found is not None else str(doc.id or doc.page_content[:80])


bridge = LangChainBridge()


def recursive_splitter(chunk_size: int, chunk_overlap: int = 0) -> TextSplitter:
    """LangChain's ``RecursiveCharacterTextSplitter`` with its offsets (the CLI's ``recursive``)."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    return RecursiveCharacterTextSplitter(
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, add_start_index=True
    )
