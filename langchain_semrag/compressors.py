"""SPC as a LangChain ``BaseDocumentCompressor`` (for ``ContextualCompressionRetriever``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor
from langchain_core.documents import Document as LCDocument
from pydantic import ConfigDict, PrivateAttr

from langchain_semrag.embeddings import to_embedder, to_llm
from langchain_semrag.retrievers import to_lc_documents
from semrag.identity import chunk_document_id
from semrag.postprocess import SPC, SPCResult
from semrag.types import Chunk, ScoredChunk

__all__ = ["SPCCompressor", "from_lc_document"]


def from_lc_document(doc: LCDocument) -> ScoredChunk:
    """A LangChain document as a :class:`~semrag.types.ScoredChunk`.

    The document id follows :func:`semrag.identity.chunk_document_id` (the
    ``semrag_doc_id`` semrag's splitters and retrievers write, else ``doc_id``, else
    ``source`` with its page); the offset is ``metadata["start_index"]`` (semrag's and
    ``add_start_index=True`` splitters'), else unknown (-1); the score is
    ``semrag_score`` or ``relevance_score`` when present. The metadata travels along.
    """
    meta = doc.metadata
    doc_id = chunk_document_id(meta) or ""
    start = meta.get("start_index")
    start = int(start) if isinstance(start, int) and start >= 0 else -1
    end = start + len(doc.page_content) if start >= 0 else -1
    score = float(meta.get("semrag_score", meta.get("relevance_score", 0.0)))
    chunk = Chunk(
        doc_id, start, end, doc.page_content, len(doc.page_content.split()), metadata=meta
    )
    return ScoredChunk(chunk, score)


class SPCCompressor(BaseDocumentCompressor):
    """Repair damaged retrieved documents from their source and audit coverage (SPC).

    Works over any retriever whose documents carry ``doc_id``/``source`` and
    ``start_index`` metadata: give the :class:`semrag.SemanticIndex` they came from, or
    ``sources`` (``doc_id -> text``) and ``embeddings``. Documents whose source is not
    available are kept as they are, with ``semrag_spc.action == "source_unavailable"``.

    Every returned document carries ``semrag_spc`` (its damage score and repair) and
    ``semrag_coverage`` (the query's missing elements and follow-up queries).

    Args:
        index: the semrag index the documents came from.
        sources: ``doc_id -> source text`` (mapping or callable) for other documents.
        embeddings: LangChain ``Embeddings`` (or a semrag embedder) when no index;
            default the packaged MiniLM.
        llm: a LangChain model (or semrag LLM) for the LLM steps.
        k: documents kept.
        context: the context budget the result fills (SPC's ``context``): the hits
            first, then the sentences around them that are worth the most, in ``unit``
            (``"chars"`` or ``"tokens"``). ``None``: each damaged hit repaired in place.
        unit: what ``context`` counts.
        options: more keyword arguments of :class:`semrag.postprocess.SPC`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    index: Any = None
    sources: Any = None
    embeddings: Any = None
    llm: Any = None
    k: Any = 10
    context: Any = None
    unit: Any = "chars"
    options: dict[str, Any] = {}
    _core: SPC = PrivateAttr()

    def model_post_init(self, __context: Any) -> None:
        """Build the core SPC (validates the arguments)."""
        self._core = SPC(
            self.index,
            k=self.k,
            llm=to_llm(self.llm),
            sources=self.sources,
            embedder=to_embedder(self.embeddings),
            context=self.context,
            unit=self.unit,
            **self.options,
        )

    def compress_documents(
        self, documents: Sequence[LCDocument], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[LCDocument]:
        """Refine, repair and audit ``documents`` for ``query``."""
        return _to_docs(self._core.process(query, [from_lc_document(d) for d in documents]))

    async def acompress_documents(
        self, documents: Sequence[LCDocument], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[LCDocument]:
        """Async twin of :meth:`compress_documents`."""
        hits = [from_lc_document(d) for d in documents]
        return _to_docs(await self._core.aprocess(query, hits))


def _to_docs(result: SPCResult) -> list[LCDocument]:
    docs = to_lc_documents(result.chunks)
    report = result.to_metadata()
    for doc, action in zip(docs, result.chunk_actions, strict=True):
        doc.metadata["semrag_spc"] = action.to_metadata()
        doc.metadata["semrag_coverage"] = report
    return docs
