"""SPC as a LlamaIndex ``BaseNodePostprocessor`` (for a query engine's ``node_postprocessors``)."""

from __future__ import annotations

from typing import Any

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from pydantic import PrivateAttr

from llama_index_semrag.embeddings import to_embedder, to_llm
from llama_index_semrag.retrievers import to_nodes
from semrag.errors import ConfigError
from semrag.identity import chunk_document_id
from semrag.postprocess import SPC, SPCResult
from semrag.types import Chunk, ScoredChunk

__all__ = ["SPCPostprocessor", "from_node"]


def from_node(item: NodeWithScore) -> ScoredChunk:
    """A scored LlamaIndex node as a :class:`~semrag.types.ScoredChunk`.

    The document id follows :func:`semrag.identity.chunk_document_id` (the recorded
    ``semrag_doc_id``, else the node's ``ref_doc_id``, else ``doc_id`` / ``source``); the
    offsets are ``start_char_idx``/``end_char_idx`` (unknown, -1, when absent).
    """
    node = item.node
    meta = dict(node.metadata)
    doc_id = chunk_document_id(meta, node.ref_doc_id) or ""
    text = node.get_content()
    offset = node.start_char_idx if isinstance(node, TextNode) else None
    start = offset if isinstance(offset, int) else -1
    end = start + len(text) if start >= 0 else -1
    chunk = Chunk(doc_id, start, end, text, len(text.split()), metadata=meta)
    return ScoredChunk(chunk, float(item.score or 0.0))


class SPCPostprocessor(BaseNodePostprocessor):
    """Repair damaged retrieved nodes from their source and audit coverage (SPC).

    Give the :class:`semrag.SemanticIndex` the nodes came from, or ``sources``
    (``doc_id -> text``, keyed by ``ref_doc_id``) and ``embed_model``. Nodes whose source
    is not available are kept as they are (``semrag_spc.action == "source_unavailable"``).

    Args:
        index: the semrag index the nodes came from.
        sources: ``doc_id -> source text`` (mapping or callable) for other documents.
        embed_model: a LlamaIndex embedding model (or semrag embedder) when no index;
            default the packaged MiniLM.
        llm: a LlamaIndex LLM (or semrag LLM) for the LLM steps.
        k: nodes kept.
        context: the context budget the result fills (SPC's ``context``): the hits
            first, then the sentences around them that are worth the most, in ``unit``
            (``"chars"`` or ``"tokens"``). ``None``: each damaged hit repaired in place.
        unit: what ``context`` counts.
        options: more keyword arguments of :class:`semrag.postprocess.SPC`.
    """

    index: Any = None
    sources: Any = None
    embed_model: Any = None
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
            embedder=to_embedder(self.embed_model),
            context=self.context,
            unit=self.unit,
            **self.options,
        )

    @classmethod
    def class_name(cls) -> str:
        """LlamaIndex's serialisation name."""
        return "SPCPostprocessor"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        query = _query_of(query_bundle)
        return _to_nodes(self._core.process(query, [from_node(n) for n in nodes]))

    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        query = _query_of(query_bundle)
        return _to_nodes(await self._core.aprocess(query, [from_node(n) for n in nodes]))


def _query_of(query_bundle: QueryBundle | None) -> str:
    if query_bundle is None:
        raise ConfigError("SPCPostprocessor needs the query (query_bundle or query_str)")
    return query_bundle.query_str


def _to_nodes(result: SPCResult) -> list[NodeWithScore]:
    nodes = to_nodes(result.chunks)
    report = result.to_metadata()
    for item, action in zip(nodes, result.chunk_actions, strict=True):
        item.node.metadata["semrag_spc"] = action.to_metadata()
        item.node.metadata["semrag_coverage"] = report
    return nodes
