"""LangChain ``BaseRetriever`` subclasses over the semrag retrievers."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, PrivateAttr

from semrag.retrieval import SSGRetriever as CoreSSGRetriever
from semrag.types import ScoredChunk

__all__ = ["SSGRetriever", "to_lc_documents"]


def to_lc_documents(hits: list[ScoredChunk]) -> list[LCDocument]:
    """ScoredChunks as LangChain documents with offsets, scores and provenance in metadata."""
    out = []
    for h in hits:
        metadata = h.to_metadata()
        metadata.update(start_index=h.chunk.start, end_index=h.chunk.end)
        out.append(LCDocument(page_content=h.chunk.text, metadata=metadata))
    return out


class SSGRetriever(BaseRetriever):
    """Semantic-similarity-graph traversal (Lester) as a LangChain retriever.

    Args:
        index: a :class:`semrag.SemanticIndex` with its graph.
        algorithm: one of ``semrag.retrieval.ALGORITHMS``.
        k: documents returned; ``invoke(query, k=...)`` overrides it per call.
        options: more keyword arguments of :class:`semrag.SSGRetriever`
            (``max_sentences``, ``early_stop``, ``llm``, ``max_llm_calls``, ...).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    index: Any
    algorithm: str = "query_traversal"
    k: int = 10
    options: dict[str, Any] = {}
    _core: CoreSSGRetriever = PrivateAttr()

    def model_post_init(self, __context: Any) -> None:
        """Build the core retriever (validates the options)."""
        self._core = CoreSSGRetriever(
            self.index, algorithm=self.algorithm, k=self.k, **self.options
        )

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[LCDocument]:
        return to_lc_documents(self._core.retrieve(query, k=k or self.k))

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
    ) -> list[LCDocument]:
        return to_lc_documents(await self._core.aretrieve(query, k=k or self.k))
