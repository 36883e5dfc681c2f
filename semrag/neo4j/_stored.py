"""What a :class:`~semrag.neo4j.Neo4jIndex` reads of its stored documents and chunks.

One object the index is composed of, each read written once (:func:`read_pair`): the
documents (text, sentences, their vectors, themes), fetched as asked and kept within a
``read()``, and the chunks by id or by span. The index offers its methods as its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from semrag.neo4j._cypher import from_bytes
from semrag.neo4j._index_cypher import (
    CHUNK_KEYS,
    DOCUMENTS,
    OVERLAPPING_COLUMNS,
    OVERLAPPING_MANY,
)
from semrag.neo4j._read_context import ReadContext
from semrag.neo4j._session import Ask, Steps, read_pair
from semrag.types import Chunk, Document, Floats, Span

__all__ = ["StoredCorpus", "StoredDocument"]


@dataclass(frozen=True, slots=True)
class StoredDocument:
    """A stored document as retrievers read it (:class:`~semrag.index.reader.DocumentRecord`)."""

    doc: Document
    sentences: list[Span]
    sentence_vectors: Floats
    themes: list[str]


class StoredCorpus:
    """The stored documents and chunks, each read once per ``read()`` (or several at once).

    Args:
        context: the index's reads (its session and what one ``read()`` keeps).
        dim: the vectors' dimension.
    """

    def __init__(self, context: ReadContext, dim: int) -> None:
        self._context = context
        self._dim = dim

    def _documents_steps(self, doc_ids: Sequence[str]) -> Steps[dict[str, StoredDocument]]:
        """The records of these documents, in one round trip; ids not stored are left out.

        Kept for the rest of a ``read()`` (outside one, for this call only).
        """
        cache = self._context.cache("docs")
        missing = sorted({d for d in doc_ids if d not in cache})
        fetched: dict[str, StoredDocument | None] = dict.fromkeys(missing)
        if missing:
            for r in (yield Ask(DOCUMENTS, {"ids": missing})):
                fetched[r["id"]] = self._entry(r)
            cache.update(fetched)  # None: not stored, known without another trip
        found = {d: fetched[d] if d in fetched else cache[d] for d in doc_ids}
        return {d: e for d, e in found.items() if e is not None}

    documents, adocuments = read_pair(_documents_steps, lambda d: d._context.store.session)

    def _entry(self, r: Mapping[str, Any]) -> StoredDocument:
        spans = [Span(a, b) for a, b in r["spans"] if a is not None]
        vectors = (
            np.stack([from_bytes(b) for b in r["vectors"]])
            if spans
            else np.zeros((0, self._dim), np.float32)
        )
        doc = Document(r["id"], r["text"], json.loads(r["metadata"]))
        return StoredDocument(doc, spans, vectors, list(r["themes"] or []))

    def _chunks_of_steps(self, chunk_ids: Sequence[int]) -> Steps[list[Chunk]]:
        """The chunks of these ids, in order (one round trip; ``NotIndexedError`` if absent)."""
        return [c for c, _ in (yield from self._context.rows_steps(chunk_ids))]

    chunks_of, achunks_of = read_pair(_chunks_of_steps, lambda c: c._context.store.session)

    def vectors_of(self, chunk_ids: Sequence[int]) -> Floats:
        """Stored unit vectors of the given chunks, shape ``(len(chunk_ids), dim)``."""
        rows = self._context.run(self._context.rows_steps(chunk_ids))
        if not rows:
            return np.zeros((0, self._dim), np.float32)
        return np.stack([v for _, v in rows])

    def overlapping_chunks_many_steps(
        self, spans: Sequence[tuple[str, int, int]]
    ) -> Steps[list[list[int]]]:
        """Ids of the chunks overlapping each ``(doc_id, start, end)``, in one round trip.

        The chunks come with them (kept for the rest of a ``read()``).
        """
        asked = [(d, int(a), int(b)) for d, a, b in spans]
        unique = list(dict.fromkeys(asked))
        if not unique:
            return []
        known = self._context.cache("chunks")
        rows = yield Ask(
            OVERLAPPING_MANY,
            {"spans": [list(s) for s in unique], "known": list(known)},
            OVERLAPPING_COLUMNS,
        )
        found: list[list[int]] = [[] for _ in unique]
        for r in rows:
            for c in r["chunks"]:
                self._context.remember(dict(zip(CHUNK_KEYS, c, strict=True)))
            for row, cid in r["hits"]:
                found[row].append(int(cid))
        at = {s: i for i, s in enumerate(unique)}
        return [list(found[at[s]]) for s in asked]

    overlapping_chunks_many, aoverlapping_chunks_many = read_pair(
        overlapping_chunks_many_steps, lambda c: c._context.store.session
    )

    def read_steps(
        self, method: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> tuple[Any, Steps[Any]] | None:
        """The session and steps of :meth:`overlapping_chunks_many` (``None`` for another).

        For :class:`semrag._steps.Together`: it runs in one statement with the index's
        ``search_channels`` (:class:`~semrag._steps.BatchedReads`).
        """
        if method != self.overlapping_chunks_many:
            return None
        return self._context.store.session, self.overlapping_chunks_many_steps(*args, **kwargs)
