"""LlamaIndex ``NodeParser`` subclasses over the semrag chunkers.

``start_char_idx`` / ``end_char_idx`` come from the core chunker and index the parsed
node's text exactly, even when a passage repeats (LlamaIndex's base class would
recompute them with ``str.find``). Nodes get SOURCE, PREVIOUS and NEXT relationships.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.callbacks import CallbackManager
from llama_index.core.node_parser import NodeParser
from llama_index.core.node_parser.interface import IdFuncCallable
from llama_index.core.node_parser.node_utils import build_nodes_from_splits
from llama_index.core.schema import BaseNode, MetadataMode, TextNode
from llama_index.core.schema import Document as LIDocument

from llama_index_semrag.embeddings import to_embedder
from semrag._gc import paused_collector
from semrag.chunking import (
    BoundaryChunker,
    ChunkingResult,
    SemanticChunker,
    framework_cap_arguments,
    framework_threshold_arguments,
)
from semrag.embeddings import Embedder
from semrag.errors import ConfigError
from semrag.text.tokens import Tokenizer
from semrag.types import HEADINGS_KEY, Document

if TYPE_CHECKING:
    from semrag.chunking.boundary.models import PairModel

__all__ = ["MFCNodeParser", "PSCNodeParser", "SemanticNodeParser", "core_chunker"]

_PROVENANCE_KEYS = [
    "semrag_doc_id",
    "semrag_chunk_index",
    "semrag_token_count",
    "semrag_sentence_start",
    "semrag_sentence_end",
]


class _CoreNodeParser(NodeParser):
    """Translate between LlamaIndex nodes and a core chunker; no logic of its own."""

    _chunker: BoundaryChunker = PrivateAttr()

    def __init__(
        self,
        build: Callable[[dict[str, Any]], BoundaryChunker],
        chunker_args: dict[str, Any],
        *,
        chunk_size: int | None,
        chunk_overlap: int | None,
        not_applicable: dict[str, Any],
        **node_parser_args: Any,
    ) -> None:
        for name, value in not_applicable.items():
            if value is not None:
                raise ConfigError(
                    f"{name} does not apply: semrag cuts between the sentences its sentence "
                    "splitter finds; pass sentence_splitter=(text) -> spans to change how "
                    "sentences are found"
                )
        args = framework_cap_arguments(
            chunker_args, chunk_size=chunk_size, chunk_overlap=chunk_overlap
        )
        super().__init__(**{k: v for k, v in node_parser_args.items() if v is not None})
        self._chunker = build(args)

    @classmethod
    def from_defaults(cls, *args: Any, **kwargs: Any) -> Any:
        """LlamaIndex's constructor spelling (``SemanticSplitterNodeParser.from_defaults``)."""
        return cls(*args, **kwargs)

    @property
    def chunker(self) -> BoundaryChunker:
        """The core chunker doing the work."""
        return self._chunker

    @property
    def chunk_size(self) -> int:
        """The hard cap per node (``SentenceSplitter.chunk_size``), in the cap's tokens."""
        return self._chunker.max_tokens

    @property
    def chunk_overlap(self) -> int:
        """Overlap between the pieces of a span cut by the cap."""
        return self._chunker.overlap_tokens

    def _parse_nodes(
        self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> list[BaseNode]:
        core = self._core_docs(nodes)
        return self._to_nodes(nodes, self._chunker.chunk_with_stats(core))

    async def _aparse_nodes(
        self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> list[BaseNode]:
        core = self._core_docs(nodes)
        return self._to_nodes(nodes, await self._chunker.achunk_with_stats(core))

    def _postprocess_parsed_nodes(
        self, nodes: list[BaseNode], parent_doc_map: dict[str, LIDocument]
    ) -> list[BaseNode]:
        # The base class re-derives offsets with str.find; keep the core's exact ones.
        offsets = [(n.start_char_idx, n.end_char_idx) for n in nodes if isinstance(n, TextNode)]
        nodes = super()._postprocess_parsed_nodes(nodes, parent_doc_map)
        text_nodes = [n for n in nodes if isinstance(n, TextNode)]
        for node, (start, end) in zip(text_nodes, offsets, strict=True):
            node.start_char_idx, node.end_char_idx = start, end
        return nodes

    @staticmethod
    def _core_docs(nodes: Sequence[BaseNode]) -> list[Document]:
        return [
            Document(id=n.node_id, text=n.get_content(metadata_mode=MetadataMode.NONE))
            for n in nodes
        ]

    @paused_collector
    def _to_nodes(self, nodes: Sequence[BaseNode], results: list[ChunkingResult]) -> list[BaseNode]:
        out: list[BaseNode] = []
        for parent, result in zip(nodes, results, strict=True):
            chunks = result.chunks
            built = build_nodes_from_splits([c.text for c in chunks], parent, id_func=self.id_func)
            for node, c in zip(built, chunks, strict=True):
                node.start_char_idx, node.end_char_idx = c.start, c.end
                if self.include_metadata:
                    node.metadata = {**parent.metadata, **c.provenance_metadata()}
                else:
                    node.metadata = c.provenance_metadata()
                # the heading path is embedded only when the chunker asks for it
                contextual = self._chunker.contextual_headings
                hidden = _PROVENANCE_KEYS + ([] if contextual else [HEADINGS_KEY])
                keys = node.excluded_embed_metadata_keys
                keys.extend(k for k in hidden if k not in keys)
                keys = node.excluded_llm_metadata_keys
                keys.extend(k for k in [*_PROVENANCE_KEYS, HEADINGS_KEY] if k not in keys)
            out.extend(built)
        return out


class SemanticNodeParser(_CoreNodeParser):
    """SemRAG semantic chunking as a LlamaIndex ``NodeParser``.

    Usable on its own (``get_nodes_from_documents``) or as a transformation in an
    ``IngestionPipeline``.

    A drop-in for LlamaIndex's splitters: ``SentenceSplitter(chunk_size=512,
    chunk_overlap=50)`` becomes ``SemanticNodeParser(chunk_size=512, chunk_overlap=50)``;
    nodes end where the topic changes and none is longer than ``chunk_size`` tokens.

    Args:
        embed_model: the encoder that places the boundaries: ``None`` (default) for the
            packaged static encoder (no torch; as good as MiniLM here, over a hundred times faster),
            or a LlamaIndex ``BaseEmbedding`` or semrag embedder (``SemragEmbedding()``:
            MiniLM boundaries). It only cuts: the index embeds the nodes with its own.
        chunk_size: hard cap per node in tokens (``None``: the core's ``max_tokens``,
            256); tokens of ``tokenizer`` when given, else of the embedder's tokenizer.
            Nodes aim at ``0.3125 * chunk_size`` (``target_tokens="auto"``), the share that
            retrieved best at an equal context budget on real documents.
        chunk_overlap: overlap, in the same tokens, between pieces of a span cut by the cap.
        tokenizer: LlamaIndex's ``(text) -> list of tokens`` callable, any length function,
            or a semrag :class:`~semrag.text.Tokenizer`.
        include_metadata: copy each source node's metadata onto its chunks.
        include_prev_next_rel: link consecutive chunks with PREVIOUS / NEXT.
        callback_manager, id_func: as in every LlamaIndex ``NodeParser``.
        separator, paragraph_separator, secondary_chunking_regex, chunking_tokenizer_fn:
            ``SentenceSplitter`` options that do not apply (``ConfigError`` if given).
        breakpoint_percentile_threshold: the break rule as LlamaIndex's
            ``SemanticSplitterNodeParser`` names it (``threshold="percentile"``).
        **chunker_args: keyword arguments of :class:`semrag.SemanticChunker`
            (``buffer_size``, ``window``, ``pooling``, ``threshold``, ``max_tokens``, ...).
            Unknown names raise ``TypeError``.

    Examples:
        >>> from llama_index.core import Document
        >>> from semrag.testing import FakeEmbedder
        >>> parser = SemanticNodeParser(embed_model=FakeEmbedder(), buffer_size=0, threshold=0.6)
        >>> nodes = parser.get_nodes_from_documents(
        ...     [Document(text="Cats purr. Cats nap. Stocks fell. Stocks rose.")])
        >>> [(n.text, n.start_char_idx) for n in nodes]
        [('Cats purr. Cats nap.', 0), ('Stocks fell. Stocks rose.', 21)]
    """

    def __init__(
        self,
        embed_model: BaseEmbedding | Embedder | None = None,
        *,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
        tokenizer: Tokenizer | None = None,
        include_metadata: bool = True,
        include_prev_next_rel: bool = True,
        callback_manager: CallbackManager | None = None,
        id_func: IdFuncCallable | None = None,
        separator: str | None = None,
        paragraph_separator: str | None = None,
        secondary_chunking_regex: str | None = None,
        chunking_tokenizer_fn: Callable[[str], list[str]] | None = None,
        breakpoint_percentile_threshold: float | None = None,
        **chunker_args: Any,
    ) -> None:
        chunker_args = framework_threshold_arguments(
            chunker_args, breakpoint_percentile_threshold=breakpoint_percentile_threshold
        )
        super().__init__(
            lambda args: SemanticChunker(to_embedder(embed_model), tokenizer=tokenizer, **args),
            chunker_args,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            not_applicable={
                "separator": separator,
                "paragraph_separator": paragraph_separator,
                "secondary_chunking_regex": secondary_chunking_regex,
                "chunking_tokenizer_fn": chunking_tokenizer_fn,
            },
            include_metadata=include_metadata,
            include_prev_next_rel=include_prev_next_rel,
            callback_manager=callback_manager,
            id_func=id_func,
        )

    @classmethod
    def class_name(cls) -> str:
        """Name used by LlamaIndex serialisation."""
        return "SemragSemanticNodeParser"


class _PairModelNodeParser(_CoreNodeParser):
    """A trained-boundary chunker (PSC or MFC) as a LlamaIndex ``NodeParser``.

    Args:
        embed_model: the encoder the model was trained on (``None``: the packaged MiniLM).
        model: a directory from ``semrag train-boundary`` (``None``: shipped weights).
        chunk_size, chunk_overlap, tokenizer, include_metadata, include_prev_next_rel,
            callback_manager, id_func, separator, paragraph_separator,
            secondary_chunking_regex, chunking_tokenizer_fn: as in
            :class:`SemanticNodeParser`.
        **chunker_args: more keyword arguments of the core chunker (``threshold``, ``rule``,
            ``max_tokens``, ``overlap_tokens``, ``min_tokens``, ...).
    """

    preset: ClassVar[str] = ""

    def __init__(
        self,
        embed_model: BaseEmbedding | Embedder | None = None,
        *,
        model: str | Path | PairModel | None = None,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
        tokenizer: Tokenizer | None = None,
        include_metadata: bool = True,
        include_prev_next_rel: bool = True,
        callback_manager: CallbackManager | None = None,
        id_func: IdFuncCallable | None = None,
        separator: str | None = None,
        paragraph_separator: str | None = None,
        secondary_chunking_regex: str | None = None,
        chunking_tokenizer_fn: Callable[[str], list[str]] | None = None,
        **chunker_args: Any,
    ) -> None:
        from semrag.chunking.boundary import MFCChunker, PSCChunker

        cls = {"psc": PSCChunker, "mfc": MFCChunker}[self.preset]
        super().__init__(
            lambda args: cls(to_embedder(embed_model), model=model, tokenizer=tokenizer, **args),
            chunker_args,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            not_applicable={
                "separator": separator,
                "paragraph_separator": paragraph_separator,
                "secondary_chunking_regex": secondary_chunking_regex,
                "chunking_tokenizer_fn": chunking_tokenizer_fn,
            },
            include_metadata=include_metadata,
            include_prev_next_rel=include_prev_next_rel,
            callback_manager=callback_manager,
            id_func=id_func,
        )


class PSCNodeParser(_PairModelNodeParser):
    """PSC trained-boundary chunking (:class:`semrag.PSCChunker`) as a LlamaIndex ``NodeParser``."""

    preset: ClassVar[str] = "psc"

    @classmethod
    def class_name(cls) -> str:
        """Name used by LlamaIndex serialisation."""
        return "SemragPSCNodeParser"


class MFCNodeParser(_PairModelNodeParser):
    """MFC trained-boundary chunking (:class:`semrag.MFCChunker`) as a LlamaIndex ``NodeParser``."""

    preset: ClassVar[str] = "mfc"

    @classmethod
    def class_name(cls) -> str:
        """Name used by LlamaIndex serialisation."""
        return "SemragMFCNodeParser"


def core_chunker(obj: object) -> BoundaryChunker | None:
    """The semrag chunker behind one of this package's splitters (``None`` for any other)."""
    return obj.chunker if isinstance(obj, _CoreNodeParser) else None
