"""LangChain ``TextSplitter`` subclasses over the semrag chunkers.

Offsets come from the core chunker: ``metadata["start_index"]`` and
``metadata["end_index"]`` satisfy ``text[start_index:end_index] == page_content`` even when
a passage repeats in the document (LangChain's base class would search with
``str.find`` and can pick the wrong occurrence).
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

from langchain_core.documents import Document as LCDocument
from langchain_text_splitters import TextSplitter

from langchain_semrag.embeddings import to_embedder
from semrag._gc import paused_collector
from semrag.chunking import (
    BoundaryChunker,
    ChunkingResult,
    SemanticChunker,
    framework_cap_arguments,
    framework_threshold_arguments,
)
from semrag.errors import ConfigError
from semrag.identity import document_id
from semrag.types import Document

__all__ = ["MFCTextSplitter", "PSCTextSplitter", "SemanticTextSplitter", "core_chunker"]


class _CoreTextSplitter(TextSplitter):
    """Translate between LangChain documents and a core chunker; no logic of its own.

    Takes ``TextSplitter``'s keywords with their meaning (see the module docstring of
    :mod:`semrag.chunking.framework` for ``chunk_size`` / ``chunk_overlap`` /
    ``length_function``); ``add_start_index`` is accepted and offsets are always exact
    (``start_index`` and ``end_index`` are always in the metadata, since SPC and the
    indexes read them); ``strip_whitespace`` and ``keep_separator`` accept the values that
    describe what semrag does and raise :class:`~semrag.errors.ConfigError` otherwise.
    """

    chunker: BoundaryChunker

    def __init__(
        self,
        build: Callable[[dict[str, Any]], BoundaryChunker],
        chunker_args: dict[str, Any],
        *,
        chunk_size: int | None,
        chunk_overlap: int | None,
        length_function: Callable[[str], int] | None,
        add_start_index: bool,
        strip_whitespace: bool,
        keep_separator: bool | str,
        min_chunk_size: int | None = None,
    ) -> None:
        if "embedder" in chunker_args:
            raise ConfigError(
                "a LangChain splitter takes its model as embeddings= (a LangChain Embeddings "
                "or a semrag embedder), not embedder="
            )
        if strip_whitespace is not True:
            raise ConfigError(
                "strip_whitespace=False does not apply: semrag chunks are runs of sentences, "
                "which never start or end with whitespace; start_index / end_index locate "
                "each chunk in the source exactly"
            )
        if keep_separator not in (False, "end"):
            raise ConfigError(
                f"keep_separator={keep_separator!r} does not apply: semrag cuts between "
                "sentences and a sentence keeps its own punctuation at its end (what "
                "keep_separator='end' means); whitespace between chunks is not repeated"
            )
        args = framework_cap_arguments(
            chunker_args,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            min_chunk_size=min_chunk_size,
            measure=length_function,
            default_measure=len,
        )
        chunker = build(args)
        super().__init__(
            chunk_size=chunker.max_tokens,
            chunk_overlap=chunker.overlap_tokens,
            length_function=length_function or len,
            keep_separator="end" if keep_separator == "end" else False,
            add_start_index=bool(add_start_index),
            strip_whitespace=True,
        )
        self.chunker = chunker

    def split_text(self, text: str) -> list[str]:
        """Split one text into chunk texts."""
        return [c.text for c in self.chunker.chunk(text)]

    def create_documents(
        self, texts: list[str], metadatas: list[dict[Any, Any]] | None = None
    ) -> list[LCDocument]:
        """Chunk ``texts`` (one batched pass) into documents with exact offsets."""
        core = self._core_docs(texts, metadatas, None)
        return self._to_lc(core, self.chunker.chunk_with_stats(core))

    def split_documents(self, documents: Iterable[LCDocument]) -> list[LCDocument]:
        """Split LangChain documents; chunk metadata copies each source's metadata."""
        core = self._from_lc(documents)
        return self._to_lc(core, self.chunker.chunk_with_stats(core))

    def transform_documents(
        self, documents: Sequence[LCDocument], **kwargs: Any
    ) -> Sequence[LCDocument]:
        """Same as :meth:`split_documents`."""
        return self.split_documents(documents)

    async def acreate_documents(
        self, texts: list[str], metadatas: list[dict[Any, Any]] | None = None
    ) -> list[LCDocument]:
        """Async twin of :meth:`create_documents`."""
        core = self._core_docs(texts, metadatas, None)
        return self._to_lc(core, await self.chunker.achunk_with_stats(core))

    async def asplit_documents(self, documents: Iterable[LCDocument]) -> list[LCDocument]:
        """Async twin of :meth:`split_documents`."""
        core = self._from_lc(documents)
        return self._to_lc(core, await self.chunker.achunk_with_stats(core))

    async def atransform_documents(
        self, documents: Sequence[LCDocument], **kwargs: Any
    ) -> Sequence[LCDocument]:
        """Async twin of :meth:`transform_documents`; does not block the event loop."""
        return await self.asplit_documents(documents)

    # -- translation ----------------------------------------------------------------------
    @classmethod
    def _from_lc(cls, documents: Iterable[LCDocument]) -> list[Document]:
        docs = list(documents)
        texts = [d.page_content for d in docs]
        return cls._core_docs(texts, [d.metadata for d in docs], [d.id for d in docs])

    @staticmethod
    def _core_docs(
        texts: list[str],
        metadatas: Sequence[dict[Any, Any]] | None,
        ids: Sequence[str | None] | None,
    ) -> list[Document]:
        if isinstance(texts, str):
            raise ConfigError("create_documents takes a list of texts; wrap one text in a list")
        texts = list(texts)
        if metadatas is not None and len(metadatas) != len(texts):
            raise ConfigError(
                f"metadatas has {len(metadatas)} entries for {len(texts)} texts; give one each"
            )
        metas = metadatas or [{}] * len(texts)
        return [
            Document(
                id=(ids[i] if ids else None) or document_id(t, metas[i]),
                text=t,
                metadata=metas[i],
            )
            for i, t in enumerate(texts)
        ]

    @staticmethod
    @paused_collector
    def _to_lc(core: list[Document], results: list[ChunkingResult]) -> list[LCDocument]:
        out: list[LCDocument] = []
        for doc, result in zip(core, results, strict=True):
            for c in result.chunks:  # each chunk its own copy, as LangChain's splitters give
                metadata = copy.deepcopy(dict(doc.metadata)) if doc.metadata else {}
                metadata.update(start_index=c.start, end_index=c.end, **c.provenance_metadata())
                out.append(LCDocument(page_content=c.text, metadata=metadata))
        return out


class SemanticTextSplitter(_CoreTextSplitter):
    """SemRAG semantic chunking as a LangChain ``TextSplitter``.

    A drop-in for LangChain's splitters: ``RecursiveCharacterTextSplitter(chunk_size=1000,
    chunk_overlap=200, add_start_index=True)`` becomes ``SemanticTextSplitter(chunk_size=1000,
    chunk_overlap=200, add_start_index=True)``; breaks fall where the topic changes and no
    chunk is longer than ``chunk_size`` as ``length_function`` measures it.

    Args:
        embeddings: the encoder that places the boundaries: ``None`` (default) for the
            packaged static encoder (no torch; as good as MiniLM here, over a hundred times faster),
            or a LangChain ``Embeddings`` or semrag embedder (``SemragEmbeddings()``: MiniLM
            boundaries). It only cuts: the vector store embeds the chunks with its own.
        chunk_size: hard cap per chunk, measured by ``length_function``; ``None``: the
            core's ``max_tokens`` (256 word pieces) holds. Chunks aim at ``0.3125 *
            chunk_size`` (``target_tokens="auto"``: about 310 characters for
            ``chunk_size=1000``), the share that retrieved best at an equal context budget
            on real documents; pass ``target_tokens`` (same unit) to choose.
        chunk_overlap: overlap between the pieces of a span cut by the cap.
        length_function: measures ``chunk_size`` (default ``len``: characters).
        add_start_index: accepted; ``start_index`` / ``end_index`` are always exact and
            always present.
        strip_whitespace: ``True`` only (chunks never start or end with whitespace).
        keep_separator: ``False`` or ``"end"`` (a sentence keeps its punctuation).
        breakpoint_threshold_type, breakpoint_threshold_amount, number_of_chunks: the
            break rule as LangChain's experimental ``SemanticChunker`` names it (with its
            default amounts), so that class swaps for this one too; or use ``threshold``.
        min_chunk_size: its smallest chunk, measured like ``chunk_size`` (give that too): a
            shorter segment merges into its more similar neighbour (``min_tokens``).
        sentence_split_regex: its sentence boundary pattern (``re.split``); default
            semrag's sentence splitter.
        **chunker_args: keyword arguments of :class:`semrag.SemanticChunker`
            (``buffer_size``, ``window``, ``pooling``, ``threshold``, ``threshold_amount``,
            ``max_tokens``, ``overlap_tokens``, ``min_tokens``, ...). Unknown names raise
            ``TypeError``.

    Examples:
        >>> from semrag.testing import FakeEmbedder
        >>> splitter = SemanticTextSplitter(embeddings=FakeEmbedder(), buffer_size=0,
        ...                                 threshold=0.6)
        >>> docs = splitter.create_documents(["Cats purr. Cats nap. Stocks fell. Stocks rose."])
        >>> [(d.page_content, d.metadata["start_index"]) for d in docs]
        [('Cats purr. Cats nap.', 0), ('Stocks fell. Stocks rose.', 21)]
    """

    def __init__(
        self,
        embeddings: Any = None,
        *,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
        length_function: Callable[[str], int] | None = None,
        add_start_index: bool = True,
        strip_whitespace: bool = True,
        keep_separator: bool | str = False,
        breakpoint_threshold_type: str | None = None,
        breakpoint_threshold_amount: float | None = None,
        number_of_chunks: int | None = None,
        min_chunk_size: int | None = None,
        sentence_split_regex: str | None = None,
        **chunker_args: Any,
    ) -> None:
        if sentence_split_regex is not None:
            if "sentence_splitter" in chunker_args:
                raise ConfigError(
                    "sentence_split_regex and sentence_splitter both split sentences; give one"
                )
            chunker_args["sentence_splitter"] = functools.partial(re.split, sentence_split_regex)
        chunker_args = framework_threshold_arguments(
            chunker_args,
            breakpoint_threshold_type=breakpoint_threshold_type,
            breakpoint_threshold_amount=breakpoint_threshold_amount,
            number_of_chunks=number_of_chunks,
        )
        super().__init__(
            lambda args: SemanticChunker(to_embedder(embeddings), **args),
            chunker_args,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            length_function=length_function,
            add_start_index=add_start_index,
            strip_whitespace=strip_whitespace,
            keep_separator=keep_separator,
            min_chunk_size=min_chunk_size,
        )


class _PairModelTextSplitter(_CoreTextSplitter):
    """A trained-boundary chunker (PSC or MFC) as a LangChain ``TextSplitter``.

    Args:
        embeddings: the encoder the model was trained on (``None``: the packaged MiniLM,
            which the shipped weights are for); a LangChain ``Embeddings`` works too.
        model: a directory from ``semrag train-boundary`` (``None``: shipped weights).
        chunk_size, chunk_overlap, length_function, add_start_index, strip_whitespace,
            keep_separator: LangChain's ``TextSplitter`` keywords, as in
            :class:`SemanticTextSplitter`.
        **chunker_args: more keyword arguments of the core chunker (``threshold``, ``rule``,
            ``max_tokens``, ``overlap_tokens``, ``min_tokens``, ...).
    """

    preset: ClassVar[str] = ""

    def __init__(
        self,
        embeddings: Any = None,
        *,
        model: Any = None,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
        length_function: Callable[[str], int] | None = None,
        add_start_index: bool = True,
        strip_whitespace: bool = True,
        keep_separator: bool | str = False,
        **chunker_args: Any,
    ) -> None:
        from semrag.chunking.boundary import MFCChunker, PSCChunker

        cls = {"psc": PSCChunker, "mfc": MFCChunker}[self.preset]
        super().__init__(
            lambda args: cls(to_embedder(embeddings), model=model, **args),
            chunker_args,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            length_function=length_function,
            add_start_index=add_start_index,
            strip_whitespace=strip_whitespace,
            keep_separator=keep_separator,
        )


class PSCTextSplitter(_PairModelTextSplitter):
    """PSC trained-boundary chunking (:class:`semrag.PSCChunker`) as a LangChain splitter."""

    preset: ClassVar[str] = "psc"


class MFCTextSplitter(_PairModelTextSplitter):
    """MFC trained-boundary chunking (:class:`semrag.MFCChunker`) as a LangChain splitter."""

    preset: ClassVar[str] = "mfc"


def core_chunker(obj: Any) -> BoundaryChunker | None:
    """The semrag chunker behind one of this package's splitters (``None`` for any other)."""
    return obj.chunker if isinstance(obj, _CoreTextSplitter) else None
