"""Pre-split input: chunks made outside semrag, placed in their documents with exact offsets.

:meth:`SemanticIndex.add_chunks` takes a splitter's output as it is (LangChain
``Document`` chunks, LlamaIndex nodes, semrag :class:`~semrag.types.Chunk` objects) and
indexes those chunks instead of re-chunking. This module turns them into documents and
chunk lists; it imports neither framework (the objects are read duck-typed).

Where a chunk names its document and its offset:

=============  ===========================================  ====================================
input          document id                                  start offset
=============  ===========================================  ====================================
semrag Chunk   ``doc_id``                                   ``start`` (``-1``: unknown)
LangChain      metadata ``semrag_doc_id``, ``doc_id``, or   metadata ``start_index``
               ``source`` with its ``page`` / ``row``       (``add_start_index=True``)
LlamaIndex     metadata ``semrag_doc_id``, else             ``start_char_idx``
               ``ref_doc_id`` (the SOURCE relationship),
               else the LangChain keys
=============  ===========================================  ====================================

The document id is :func:`semrag.identity.chunk_document_id`, the one rule every entry
point uses, so ``add_chunks(chunks, documents=docs)`` finds each chunk's document among
the very documents that were split. A chunk keeps all of its metadata (``source``
included) except its offsets and semrag's own provenance keys (``semrag_*``), which the
index writes anew.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from semrag.errors import ConfigError
from semrag.identity import chunk_document_id
from semrag.types import Chunk, Document, Span

__all__ = [
    "NODE_KEY",
    "OFFSET_KEYS",
    "PieceOfText",
    "place_chunks",
    "read_piece",
    "remove_pieces",
    "upsert_pieces",
    "whole_document_chunk",
]

OFFSET_KEYS = ("start_index", "end_index")
"""Metadata keys that hold a chunk's offsets; they describe the chunk, not its content,
so they are not kept in the chunk's metadata (the chunk's own offsets are)."""


@dataclass(frozen=True, slots=True)
class PieceOfText:
    """One pre-split chunk as read from its framework object (before it is placed)."""

    doc_id: str
    text: str
    start: int | None
    metadata: dict[str, Any]


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


NODE_KEY = "semrag_node_id"
"""Metadata key under which a LlamaIndex store keeps each chunk's node id (kept as given)."""


def _own_metadata(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata that describes the content (offsets and ``semrag_*`` keys dropped).

    ``source`` and ``doc_id`` are kept; semrag's provenance keys are written anew.
    """
    return {
        k: v
        for k, v in meta.items()
        if k not in OFFSET_KEYS and (k == NODE_KEY or not k.startswith("semrag_"))
    }


def read_piece(item: Any, position: int) -> PieceOfText:
    """Read one chunk of any supported kind.

    Raises:
        TypeError: if ``item`` is none of the supported kinds.
        ConfigError: if it names no document.
    """
    if isinstance(item, Chunk):
        start = item.start if item.has_offsets else None
        return PieceOfText(item.doc_id, item.text, start, _own_metadata(item.metadata))
    text = getattr(item, "page_content", None)
    if isinstance(text, str):  # LangChain
        meta = dict(getattr(item, "metadata", None) or {})
        doc_id = chunk_document_id(meta)
        start = _int_or_none(meta.get("start_index"))
    else:
        get_content = getattr(item, "get_content", None)
        if not callable(get_content) or not getattr(item, "node_id", None):
            raise ConfigError(
                "chunks must be semrag Chunks, LangChain Documents or LlamaIndex nodes; "
                f"got {type(item).__name__}"
            )
        text = get_content(metadata_mode="none")
        meta = dict(getattr(item, "metadata", None) or {})
        doc_id = chunk_document_id(meta, getattr(item, "ref_doc_id", None))
        start = _int_or_none(getattr(item, "start_char_idx", None))
    if not doc_id:
        raise ConfigError(
            f"chunk {position} names no document: set the metadata key 'source' or "
            "'doc_id' (LangChain splitters copy the document's metadata to its chunks) "
            "or use add_documents for whole documents"
        )
    return PieceOfText(str(doc_id), text, start, _own_metadata(meta))


def _strip(piece: PieceOfText) -> tuple[str, int]:
    """The piece's text without surrounding whitespace, and how far its start moved."""
    lead = len(piece.text) - len(piece.text.lstrip())
    return piece.text.strip(), lead


def _assemble(doc_id: str, pieces: list[PieceOfText]) -> str:
    """A document text that holds every piece at its offset (gaps become spaces)."""
    with_start = [p for p in pieces if p.start is not None]
    if not with_start:
        return "\n\n".join(p.text for p in pieces)
    if len(with_start) != len(pieces):
        raise ConfigError(
            f"document {doc_id!r}: some chunks carry offsets and some do not; give all "
            "of them offsets, or pass documents= to locate them in the text"
        )
    text = ""
    for p in sorted(pieces, key=lambda p: p.start or 0):
        start = p.start or 0
        if start >= len(text):
            text += " " * (start - len(text)) + p.text
            continue
        shared = text[start : start + len(p.text)]
        if not p.text.startswith(shared):
            raise ConfigError(
                f"document {doc_id!r}: two chunks overlap at offset {start} with different "
                "text; their offsets do not come from one document"
            )
        text += p.text[len(shared) :]
    return text


def _locate(doc: Document, pieces: list[PieceOfText]) -> list[int]:
    """Each piece's start in ``doc.text`` (checked when given, searched for when not)."""
    starts: list[int] = []
    cursor = 0
    for k, p in enumerate(pieces):
        if p.start is not None:
            if doc.text[p.start : p.start + len(p.text)] != p.text:
                raise ConfigError(
                    f"chunk {k} of document {doc.id!r}: the text at its offset {p.start} is "
                    "not the chunk's text"
                )
            start = p.start
        else:  # as LangChain's splitters find it: from just after the previous chunk's start
            start = doc.text.find(p.text, cursor)
            if start < 0:
                start = doc.text.find(p.text)
            if start < 0:
                raise ConfigError(f"chunk {k} of document {doc.id!r} does not occur in its text")
        starts.append(start)
        cursor = start + 1
    return starts


def place_chunks(
    items: Iterable[Any],
    documents: Sequence[Document] | None,
    sentences: Callable[[str], list[Span]],
    count_tokens: Callable[[list[str]], list[int]],
) -> tuple[list[Document], dict[str, list[Chunk]]]:
    """Documents and their chunks from pre-split ``items``.

    Args:
        items: the chunks, of any kind :func:`read_piece` reads.
        documents: the source documents, when the caller has them; each chunk is then
            found in its document's text (at its offset when it has one). Without them,
            a document's text is rebuilt from its chunks: at their offsets (the
            characters between chunks, which splitters drop, become spaces) or, when
            they carry none, joined by blank lines in the order given.
        sentences: the sentence splitter (gives each chunk its sentence range).
        count_tokens: the token counter for the chunks' ``token_count``.

    Returns:
        The documents in first-mention order, and each one's chunks in text order.
        Chunk metadata is the document's metadata plus the chunk's own keys.

    Raises:
        ConfigError: on a chunk that names no document, names one not in ``documents``,
            is not where its offset says, or on documents given without chunks.
        TypeError: on an item of an unsupported kind.
    """
    grouped: dict[str, list[PieceOfText]] = {}
    for position, item in enumerate(items):
        piece = read_piece(item, position)
        grouped.setdefault(piece.doc_id, []).append(piece)
    by_id = {d.id: d for d in documents} if documents is not None else None
    if by_id is not None:
        unknown = [i for i in grouped if i not in by_id]
        if unknown:
            raise ConfigError(
                f"chunks name documents that are not among documents=: {unknown[:5]} "
                f"(their ids: {list(by_id)[:5]})"
            )
        bare = [i for i in by_id if i not in grouped]
        if bare:
            raise ConfigError(
                f"documents without chunks: {bare[:5]}; index them with add_documents"
            )
    docs: list[Document] = []
    chunk_lists: dict[str, list[Chunk]] = {}
    for doc_id, pieces in grouped.items():
        if by_id is not None:
            doc = by_id[doc_id]
        else:
            doc = Document(doc_id, _assemble(doc_id, pieces), _shared_metadata(pieces))
        starts = _locate(doc, pieces)
        chunk_lists[doc_id] = _chunks_of(doc, pieces, starts, sentences, count_tokens)
        docs.append(doc)
    return docs, chunk_lists


def _shared_metadata(pieces: list[PieceOfText]) -> dict[str, Any]:
    """The metadata items every piece of a document has (the document's own metadata)."""
    first = pieces[0].metadata
    return {
        k: v
        for k, v in first.items()
        if all(k in p.metadata and p.metadata[k] == v for p in pieces)
    }


def _chunks_of(
    doc: Document,
    pieces: list[PieceOfText],
    starts: list[int],
    sentences: Callable[[str], list[Span]],
    count_tokens: Callable[[list[str]], list[int]],
) -> list[Chunk]:
    placed = []
    for piece, start in zip(pieces, starts, strict=True):
        text, lead = _strip(piece)
        if text:  # a chunk of whitespace only holds nothing to index
            placed.append((start + lead, text, piece.metadata))
    placed.sort(key=lambda t: (t[0], len(t[1])))
    spans = sentences(doc.text)
    ends = [s.end for s in spans]
    firsts = [s.start for s in spans]
    counts = count_tokens([t for _, t, _ in placed])
    chunks = []
    for index, ((start, text, meta), tokens) in enumerate(zip(placed, counts, strict=True)):
        end = start + len(text)
        first = min(bisect.bisect_right(ends, start), max(len(spans) - 1, 0))
        last = max(bisect.bisect_left(firsts, end), first + 1)
        metadata = {**doc.metadata, **meta}
        _check_json(doc.id, metadata)
        chunks.append(Chunk(doc.id, start, end, text, tokens, index, first, last, metadata))
    return chunks


def _check_json(doc_id: str, metadata: Mapping[str, Any]) -> None:
    try:
        json.dumps(dict(metadata))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"metadata of a chunk of {doc_id!r} is not JSON-serialisable") from exc


def whole_document_chunk(doc: Document, spans: Sequence[Span], tokens: int) -> list[Chunk]:
    """The document as one chunk (its text without surrounding whitespace), or none if blank.

    What a vector store does with what it is given: ``add_documents(..., split=False)``.
    ``tokens`` is the stripped text's token count.
    """
    text = doc.text.strip()
    if not text:
        return []
    start = len(doc.text) - len(doc.text.lstrip())
    return [Chunk(doc.id, start, start + len(text), text, tokens, 0, 0, len(spans), doc.metadata)]


def upsert_pieces(
    new: Sequence[Chunk], stored: Callable[[str], Sequence[Chunk]], key: str
) -> list[Chunk]:
    """The chunks of every document ``new`` touches, for ``add_chunks(on_conflict="replace")``.

    A document keeps its ``stored`` chunks except those whose metadata ``key`` a new chunk
    repeats (an upsert by that key: a vector store's node id), then takes the new ones.
    Where any chunk of a document has no offset, all of its chunks are placed by order.
    """
    by_doc: dict[str, list[Chunk]] = {}
    for c in new:
        by_doc.setdefault(c.doc_id, []).append(c)
    out: list[Chunk] = []
    for doc_id, mine in by_doc.items():
        fresh = {c.metadata.get(key) for c in mine}
        merged = [*(c for c in stored(doc_id) if c.metadata.get(key) not in fresh), *mine]
        if any(not c.has_offsets for c in merged):
            merged = [replace(c, start=-1, end=-1) for c in merged]
        out += merged
    return out


def remove_pieces(
    chunks: Iterable[Chunk], gone: set[Any], key: str
) -> tuple[list[Chunk], list[str]]:
    """Drop the chunks whose metadata ``key`` is in ``gone``.

    Returns the chunks the touched documents keep (to add again with ``"replace"``) and
    the ids of the documents left without chunks (to delete).
    """
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    touched = [d for d, cs in by_doc.items() if any(c.metadata.get(key) in gone for c in cs)]
    left = [c for d in touched for c in by_doc[d] if c.metadata.get(key) not in gone]
    kept_docs = {c.doc_id for c in left}
    return left, sorted(d for d in touched if d not in kept_docs)
