"""SPC as a LangChain ``BaseDocumentCompressor`` (for ``ContextualCompressionRetriever``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor
from langchain_core.documents import Document as LCDocument
from pydantic import ConfigDict, PrivateAttr, create_model

from langchain_semrag.embeddings import to_embedder, to_llm
from langchain_semrag.retrievers import to_lc_documents
from semrag._validation import check_keywords, named_arguments
from semrag.identity import chunk_document_id
from semrag.postprocess import SPC, SPCResult
from semrag.postprocess.spc import ADAPTER_FIELDS, from_fields
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


_SPC_FIELDS = {name: (Any, default) for name, default in ADAPTER_FIELDS.items()}
"""SPC's parameters, each a field of the same name and default (the core checks them)."""


class SPCCompressor(
    create_model("_SPCFields", __base__=BaseDocumentCompressor, **_SPC_FIELDS)  # type: ignore[call-overload,misc]
):
    """Repair damaged retrieved documents from their source and audit coverage (SPC).

    Works over any retriever whose documents carry ``doc_id``/``source`` and
    ``start_index`` metadata: give the :class:`semrag.SemanticIndex` they came from, or
    ``sources`` (``doc_id -> text``) and ``embeddings``. Documents whose source is not
    available are kept as they are, with ``semrag_spc.action == "source_unavailable"``.

    Every returned document carries ``semrag_spc`` (its damage score and repair) and
    ``semrag_coverage`` (the query's missing elements and follow-up queries).

    Takes every parameter of :class:`semrag.postprocess.SPC` under its name and default
    (``index`` by position too, as ``SPC(index, context=2000)``), LangChain objects where
    SPC takes semrag's:

    Args:
        index: the semrag index the documents came from.
        embeddings: LangChain ``Embeddings`` (or a semrag embedder) when no index;
            default the packaged MiniLM (SPC's ``embedder``).
        llm: a LangChain model (or semrag LLM) for the LLM steps.
        context: the context budget the result fills (SPC's ``context``): the hits
            first, then the sentences around them that are worth the most, in ``unit``
            (``"chars"`` or ``"tokens"``). ``None``: each damaged hit repaired in place.
        sources, k, unit, delta, epsilon, budget, neighbours, tokenizer, refine, audit,
            max_concurrency, on_llm_error: as :class:`semrag.postprocess.SPC`'s.
        options: more keyword arguments of SPC (the way to pass them before 0.3).

    Raises:
        ConfigError: an unknown keyword (with the closest name), an invalid value (SPC's
            own check), or a parameter given both by name and in ``options``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    index: Any = None
    embeddings: Any = None
    llm: Any = None
    options: dict[str, Any] = {}
    _core: SPC = PrivateAttr()

    def __init__(self, *args: Any, **data: Any) -> None:
        data = named_arguments(SPC, "SPCCompressor", args, data)
        check_keywords("SPCCompressor()", type(self).model_fields, data)
        super().__init__(**data)
        self._core = from_fields(
            "SPCCompressor",
            self.index,
            llm=to_llm(self.llm),
            embedder=to_embedder(self.embeddings),
            fields=vars(self),  # pydantic keeps the field values here
            given=self.model_fields_set,
            options=self.options,
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
