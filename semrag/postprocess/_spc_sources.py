"""Where SPC reads a chunk's document: the index it repairs for, else the sources given."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from semrag.postprocess._spc_records import Source
from semrag.text.sentences import split_sentences
from semrag.types import Chunk, ScoredChunk

if TYPE_CHECKING:  # postprocess is below index: the protocol is only a type here
    from semrag.index.reader import CorpusReader, DocumentRecord

Sources = Mapping[str, str] | Callable[[str], "str | None"]


class SourceLookup:
    """A chunk's source text (and, from an index, its sentences and their vectors).

    Args:
        index: the index the chunks came from (its documents, sentences and vectors), or
            ``None``.
        sources: document texts by id, or a function of the id, for chunks of documents
            the index does not hold (or with no index).
    """

    def __init__(self, index: CorpusReader | None, sources: Sources | None) -> None:
        self.index = index
        self.sources = sources

    def text(self, doc_id: str) -> tuple[str | None, bool]:
        """The document's text (``None`` when unknown) and whether the index holds it."""
        record = self._record(doc_id)
        if record is not None:
            return record.doc.text, True
        if self.sources is None:
            return None, False
        if callable(self.sources):
            return self.sources(doc_id), False
        return self.sources.get(doc_id), False

    def _record(self, doc_id: str) -> DocumentRecord | None:
        """The index's record of the document, or ``None``."""
        return None if self.index is None else self.index.documents([doc_id]).get(doc_id)

    def source(self, chunk: Chunk) -> tuple[Source | None, str]:
        """The chunk's source and ``""``, or ``None`` and why not."""
        text, indexed = self.text(chunk.doc_id)
        if text is None:
            return None, "source_unavailable"
        if chunk.start < 0:
            return None, "offsets_unknown"
        if text[chunk.start : chunk.end] != chunk.text:
            return None, "source_mismatch"
        record = self._record(chunk.doc_id) if indexed else None
        if record is not None:
            return Source(text, list(record.sentences), record.sentence_vectors), ""
        return Source(text, split_sentences(text), None), ""

    def locate(self, hit: ScoredChunk) -> ScoredChunk:
        """Offsets for a chunk without them (``start < 0``), if its text is unique in the source."""
        if hit.chunk.start >= 0:
            return hit
        text, _ = self.text(hit.chunk.doc_id)
        if text is None:
            return hit
        at = text.find(hit.chunk.text)
        if at < 0 or text.find(hit.chunk.text, at + 1) >= 0:
            return hit
        chunk = replace(hit.chunk, start=at, end=at + len(hit.chunk.text))
        return replace(
            hit, chunk=chunk, provenance=(*hit.provenance, {"step": "spc_locate", "start": at})
        )

    def mismatched(self, chunk: Chunk) -> bool:
        """True when the chunk's source is known and its text is not at its offsets."""
        if not chunk.has_offsets:
            return False
        text, _ = self.text(chunk.doc_id)
        return text is not None and text[chunk.start : chunk.end] != chunk.text

    def verified(self, chunk: Chunk) -> bool:
        """True when the chunk's text is exactly at its offsets in its known source."""
        if not chunk.doc_id or not chunk.has_offsets:
            return False
        text, _ = self.text(chunk.doc_id)
        return text is not None and text[chunk.start : chunk.end] == chunk.text
