"""Plain records shared by every part of semrag.

All records are frozen dataclasses. Offsets are character offsets into the text of the
document a record came from, half-open ``[start, end)``, so for any chunk ``c`` of a
document ``d`` the invariant ``d.text[c.start:c.end] == c.text`` holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, runtime_checkable

import numpy as np
import numpy.typing as npt

from semrag.errors import ConfigError

__all__ = [
    "HEADINGS_KEY",
    "Chunk",
    "Document",
    "MetadataFilter",
    "Retriever",
    "ScoredChunk",
    "Span",
    "as_filter",
]

Floats: TypeAlias = npt.NDArray[np.float32]
"""Vectors and scores: float32 arrays."""
Ints: TypeAlias = npt.NDArray[np.int64]
"""Ids and positions: int64 arrays."""


def _check_text(text: object, what: str) -> str:
    if not isinstance(text, str):
        raise ConfigError(f"{what} must be str, got {type(text).__name__}")
    _check_encodable(text, what)
    return text


def _check_encodable(text: str, what: str) -> None:
    """Refuse a lone surrogate at the door: no file or server could store the text as UTF-8.

    Raises:
        ConfigError: naming the offset of the first one.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ConfigError(
            f"{what} holds a lone surrogate ({text[exc.start]!r} at offset {exc.start}), "
            "which is not valid Unicode text; decode the source with errors='replace' or "
            "fix it before indexing"
        ) from None


@dataclass(frozen=True, slots=True)
class Document:
    """A source document.

    Examples:
        >>> Document(id="a", text="Hello world.").text
        'Hello world.'
    """

    id: str
    """Stable identifier; chunks refer to their document by it."""
    text: str
    """The full text. Offsets of every chunk index into it."""
    metadata: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    """Free-form metadata; chunkers copy it onto every chunk."""

    def __post_init__(self) -> None:
        _check_text(self.text, "Document.text")
        if not isinstance(self.id, str):
            raise ConfigError(f"Document.id must be str, got {type(self.id).__name__}")
        _check_encodable(self.id, "Document.id")


@dataclass(frozen=True, slots=True, order=True)
class Span:
    """A half-open character range ``[start, end)`` of a text.

    Invariant: ``0 <= start <= end``.
    """

    start: int
    """First character, inclusive."""
    end: int
    """Last character, exclusive."""

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end:
            raise ConfigError(f"invalid span [{self.start}, {self.end})")

    def __len__(self) -> int:
        return self.end - self.start

    def of(self, text: str) -> str:
        """Return the characters of ``text`` this span covers."""
        return text[self.start : self.end]


@dataclass(frozen=True, slots=True)
class Chunk:
    """A span of one document.

    Invariant: ``document.text[start:end] == text``; ``text`` never starts or ends with
    whitespace and is never empty. Exception: ``start == end == -1`` means the offsets are
    unknown (a chunk from outside semrag without offsets, or text an LLM rewrote), and
    :attr:`has_offsets` is false; nothing then compares or slices by them.
    """

    doc_id: str
    """Id of the :class:`Document` the chunk came from."""
    start: int
    """Character offset of the first character, inclusive."""
    end: int
    """Character offset after the last character, exclusive."""
    text: str
    """The chunk's text, exactly ``document.text[start:end]``."""
    token_count: int
    """Tokens in ``text`` as counted by the chunker's tokenizer."""
    index: int = 0
    """Position of the chunk among its document's chunks (0-based)."""
    sentence_start: int = 0
    """Index of the first sentence of the document that the chunk touches."""
    sentence_end: int = 0
    """Index after the last sentence the chunk touches (exclusive)."""
    metadata: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    """The document's metadata, shared by all its chunks."""

    @property
    def has_offsets(self) -> bool:
        """Whether ``start`` / ``end`` locate ``text`` in its document (not ``-1``)."""
        return self.start >= 0 and self.end >= self.start

    @property
    def span(self) -> Span:
        """The chunk's character range as a :class:`Span`."""
        return Span(self.start, self.end)

    def provenance_metadata(self) -> dict[str, Any]:
        """The chunk's provenance under the stable keys the adapters write into metadata.

        Keys: ``semrag_doc_id``, ``semrag_chunk_index``, ``semrag_token_count``,
        ``semrag_sentence_start``, ``semrag_sentence_end`` (offsets are written by each
        adapter under its framework's own names), and ``semrag_headings`` (the headings
        the chunk sits under, outermost first) when the chunker found any.
        """
        out: dict[str, Any] = {
            "semrag_doc_id": self.doc_id,
            "semrag_chunk_index": self.index,
            "semrag_token_count": self.token_count,
            "semrag_sentence_start": self.sentence_start,
            "semrag_sentence_end": self.sentence_end,
        }
        if HEADINGS_KEY in self.metadata:
            out[HEADINGS_KEY] = list(self.metadata[HEADINGS_KEY])
        return out


HEADINGS_KEY = "semrag_headings"
"""Metadata key of a chunk's heading path (outermost heading first)."""


@dataclass(frozen=True, slots=True)
class ScoredChunk:
    """A retrieved chunk with its score and the trail of why it was returned."""

    chunk: Chunk
    """The chunk itself, with exact offsets."""
    score: float
    """Final score; higher is better. Comparable only within one result list."""
    channel_scores: Mapping[str, float] = field(default_factory=dict, hash=False, compare=False)
    """Score per retrieval channel (e.g. ``dense``, ``sparse``, ``graph``)."""
    provenance: tuple[Mapping[str, Any], ...] = field(default=(), hash=False, compare=False)
    """Steps that led to this chunk (channel, graph hops, repairs), in order."""

    def to_metadata(self) -> dict[str, Any]:
        """The document's metadata plus the stable keys the adapters expose.

        Keys added: ``doc_id``, ``semrag_score``, ``semrag_channels``,
        ``semrag_provenance`` and the chunk's :meth:`Chunk.provenance_metadata` keys.
        """
        return {
            **dict(self.chunk.metadata),
            "doc_id": self.chunk.doc_id,
            **self.chunk.provenance_metadata(),
            "semrag_score": self.score,
            "semrag_channels": dict(self.channel_scores),
            "semrag_provenance": [dict(p) for p in self.provenance],
        }


@runtime_checkable
class Retriever(Protocol):
    """What every semrag retriever is: hits for a query, and an async twin.

    What :class:`~semrag.retrieval.GraphRetriever` holds, what
    :class:`~semrag.retrieval.RetrieveAndCheck` and IAR's extended channel take, and what
    both adapters wrap; a retriever of your own that has these two methods fits all three.
    """

    def retrieve(self, query: str, *, k: int | None = None) -> list[ScoredChunk]:
        """The best ``k`` hits for ``query`` (the retriever's own ``k`` when ``None``)."""
        ...

    async def aretrieve(self, query: str, *, k: int | None = None) -> list[ScoredChunk]:
        """Async twin of :meth:`retrieve` (it never blocks the event loop)."""
        ...


MetadataFilter = Callable[[Mapping[str, Any]], bool] | Mapping[str, Any]
"""Which chunks a search may return: a callable on a chunk's metadata, or a mapping whose
every item the metadata must hold (``{"lang": "en"}``)."""


def as_filter(spec: MetadataFilter) -> Callable[[Mapping[str, Any]], bool]:
    """The predicate a :data:`MetadataFilter` stands for.

    Examples:
        >>> accept = as_filter({"lang": "en"})
        >>> accept({"lang": "en", "page": 2}), accept({"lang": "de"}), accept({})
        (True, False, False)

    Raises:
        TypeError: if ``spec`` is neither a callable nor a mapping.
    """
    if callable(spec):
        return spec
    if isinstance(spec, Mapping):
        items = dict(spec)
        missing = object()
        return lambda meta: all(meta.get(k, missing) == v for k, v in items.items())
    raise ConfigError(f"filter must be a callable or a mapping, got {type(spec).__name__}")
