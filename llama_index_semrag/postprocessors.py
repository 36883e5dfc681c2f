"""SPC as a LlamaIndex ``BaseNodePostprocessor`` (for a query engine's ``node_postprocessors``)."""

from __future__ import annotations

from typing import Any

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from pydantic import PrivateAttr, create_model

from llama_index_semrag.embeddings import to_embedder, to_llm
from llama_index_semrag.retrievers import to_nodes
from semrag._validation import check_keywords, named_arguments
from semrag.errors import ConfigError
from semrag.identity import chunk_document_id
from semrag.postprocess import SPC, SPCResult
from semrag.postprocess.spc import ADAPTER_FIELDS, from_fields
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


_SPC_FIELDS = {name: (Any, default) for name, default in ADAPTER_FIELDS.items()}
"""SPC's parameters, each a field of the same name and default (the core checks them)."""


class SPCPostprocessor(
    create_model("_SPCFields", __base__=BaseNodePostprocessor, **_SPC_FIELDS)  # type: ignore[call-overload,misc]
):
    """Repair damaged retrieved nodes from their source and audit coverage (SPC).

    Give the :class:`semrag.SemanticIndex` the nodes came from, or ``sources``
    (``doc_id -> text``, keyed by ``ref_doc_id``) and ``embed_model``. Nodes whose source
    is not available are kept as they are (``semrag_spc.action == "source_unavailable"``).

    Takes every parameter of :class:`semrag.postprocess.SPC` under its name and default
    (``index`` by position too, as ``SPC(index, context=2000)``), LlamaIndex objects where
    SPC takes semrag's:

    Args:
        index: the semrag index the nodes came from.
        embed_model: a LlamaIndex embedding model (or semrag embedder) when no index;
            default the packaged MiniLM (SPC's ``embedder``).
        llm: a LlamaIndex LLM (or semrag LLM) for the LLM steps.
        context: the context budget the result fills (SPC's ``context``): the hits
            first, then the sentences around them that are worth the most, in ``unit``
            (``"chars"`` or ``"tokens"``). ``None``: each damaged hit repaired in place.
        sources, k, unit, delta, epsilon, budget, neighbours, tokenizer, refine, audit,
            max_concurrency, on_llm_error: as :class:`semrag.postprocess.SPC`'s.
        options: more keyword arguments of SPC (the way to pass them before 0.3).

    Raises:
        ConfigError: an unknown keyword (with the closest name; LlamaIndex's models
            otherwise drop one silently), an invalid value (SPC's own check), or a
            parameter given both by name and in ``options``.
    """

    index: Any = None
    embed_model: Any = None
    llm: Any = None
    options: dict[str, Any] = {}
    _core: SPC = PrivateAttr()

    def __init__(self, *args: Any, **data: Any) -> None:
        data = named_arguments(SPC, "SPCPostprocessor", args, data)
        check_keywords("SPCPostprocessor()", type(self).model_fields, data)
        super().__init__(**data)
        self._core = from_fields(
            "SPCPostprocessor",
            self.index,
            llm=to_llm(self.llm),
            embedder=to_embedder(self.embed_model),
            fields=vars(self),  # pydantic keeps the field values here
            given=self.model_fields_set,
            options=self.options,
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
