"""The change record: the one thing every part of an index is given.

An index is a set of parts (dense vectors, BM25, the semantic similarity graph, and any
knowledge graph that follows it) fed by one stream of changes. Documents are split,
chunked and embedded once, in :meth:`SemanticIndex.add_documents
<semrag.index.SemanticIndex.add_documents>`; the result is an :class:`IndexedDocument`
per document. A :class:`Change` lists the documents a write adds and the ones it removes
(a replaced document is in both: its old version removed, its new one added); the index
makes every change in one place (``SemanticIndex._commit``) and hands the same record
to every part's :meth:`IndexPart.apply`. No part re-reads the corpus or recomputes from
scratch; adding a part later is writing one class with ``apply`` / ``save`` / ``load``.

::

    documents -> ingest (split, chunk, embed once) -> Change(added, removed)
        -> DenseIndex.apply, BM25Index.apply, LiveSSG.apply, KnowledgeGraph.apply, ...
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from semrag.embeddings import Embedder
from semrag.types import Chunk, Document, Floats, Ints, Span

__all__ = [
    "Change",
    "EmbedsNames",
    "Follower",
    "IndexPart",
    "IndexedDocument",
    "RecordRows",
    "StagedPart",
    "StoresParts",
    "differences",
]


class RecordRows:
    """A record's vectors and windows: the one part of it the index may point elsewhere.

    The values of a record never change once it is indexed, but where they live does: the
    dense part stores the chunk vectors and the similarity graph the sentence and window
    vectors, each in one array, and the record's arrays become views of their rows there
    (:meth:`share`), so each vector is held once and the arrays ingestion made are freed.
    ``enable("ssg")`` gives the record its windows (:meth:`add_windows`). Only the index
    calls these, under its write lock, or on records no reader has seen yet.
    """

    __slots__ = ("chunk_vectors", "node_ranges", "node_vectors", "sentence_vectors")

    def __init__(
        self,
        sentence_vectors: Floats,
        chunk_vectors: Floats,
        node_ranges: list[tuple[int, int]],
        node_vectors: Floats,
    ) -> None:
        self.sentence_vectors = sentence_vectors
        self.chunk_vectors = chunk_vectors
        self.node_ranges = node_ranges
        self.node_vectors = node_vectors

    def share(
        self,
        *,
        chunk_vectors: Floats | None = None,
        sentence_vectors: Floats | None = None,
        node_vectors: Floats | None = None,
    ) -> None:
        """Read these vectors from a part's rows holding the same values (views there)."""
        if chunk_vectors is not None:
            self.chunk_vectors = chunk_vectors
        if sentence_vectors is not None:
            self.sentence_vectors = sentence_vectors
        if node_vectors is not None:
            self.node_vectors = node_vectors

    def add_windows(
        self, ranges: list[tuple[int, int]], sentence_vectors: Floats, node_vectors: Floats
    ) -> None:
        """The similarity graph's windows, and the sentence vectors in the graph's dtype."""
        self.node_ranges = ranges
        self.sentence_vectors = sentence_vectors
        self.node_vectors = node_vectors


@dataclass(frozen=True, slots=True, eq=False, init=False)
class IndexedDocument:
    """A document as every part of the index needs it, computed once at ingestion.

    Attributes:
        doc: the document (id, text, metadata).
        sentences: its sentence spans.
        sentence_vectors: one unit vector per sentence, in the index's ``sentence_dtype``
            (float16 by default; once indexed with an SSG, a view of the graph's rows, in
            its ``vector_dtype``).
        chunks: the chunker's chunks.
        chunk_ids: the integer id of each chunk in the dense and sparse parts.
        chunk_vectors: one unit vector per chunk (once indexed, a read-only view of the
            dense part's rows).
        node_ranges: the sentence ranges of its SSG window nodes (empty without an SSG).
        node_vectors: one unit vector per window node (held like ``sentence_vectors``).
        themes: its themes (keywords, or an LLM's).
        theme_vector: the unit vector of its themes.
        rows: where the vector attributes above are read from (:class:`RecordRows`).
    """

    doc: Document
    sentences: list[Span]
    chunks: list[Chunk]
    chunk_ids: list[int]
    themes: list[str]
    theme_vector: Floats
    rows: RecordRows

    def __init__(
        self,
        doc: Document,
        sentences: list[Span],
        sentence_vectors: Floats,
        chunks: list[Chunk],
        chunk_ids: list[int],
        chunk_vectors: Floats,
        node_ranges: list[tuple[int, int]],
        node_vectors: Floats,
        themes: list[str],
        theme_vector: Floats,
    ) -> None:
        fields = {
            "doc": doc,
            "sentences": sentences,
            "chunks": chunks,
            "chunk_ids": chunk_ids,
            "themes": themes,
            "theme_vector": theme_vector,
            "rows": RecordRows(sentence_vectors, chunk_vectors, node_ranges, node_vectors),
        }
        for name, value in fields.items():  # a frozen record, constructed
            object.__setattr__(self, name, value)

    @property
    def id(self) -> str:
        """The document's id."""
        return self.doc.id

    @property
    def sentence_vectors(self) -> Floats:
        """One unit vector per sentence (see the class doc)."""
        return self.rows.sentence_vectors

    @property
    def chunk_vectors(self) -> Floats:
        """One unit vector per chunk."""
        return self.rows.chunk_vectors

    @property
    def node_ranges(self) -> list[tuple[int, int]]:
        """The sentence ranges of its SSG window nodes."""
        return self.rows.node_ranges

    @property
    def node_vectors(self) -> Floats:
        """One unit vector per window node."""
        return self.rows.node_vectors

    def with_windows(
        self, ranges: list[tuple[int, int]], sentence_vectors: Floats, node_vectors: Floats
    ) -> IndexedDocument:
        """A copy of this record with the similarity graph's windows (``enable("ssg")``)."""
        return IndexedDocument(
            self.doc,
            self.sentences,
            sentence_vectors,
            self.chunks,
            self.chunk_ids,
            self.chunk_vectors,
            ranges,
            node_vectors,
            self.themes,
            self.theme_vector,
        )


@dataclass(frozen=True, slots=True)
class Change:
    """One write to an index: the documents it adds and the ones it removes.

    Parts apply ``removed`` first, then ``added`` in order; added documents go after the
    documents already there (a replaced document moves to the end). This is the order
    a fresh build over the surviving documents would see them in.

    Attributes:
        version: the index version this change produces.
        added: new documents and new versions of replaced ones.
        removed: deleted documents and the old versions of replaced ones.
    """

    version: int
    added: tuple[IndexedDocument, ...] = field(default=())
    removed: tuple[IndexedDocument, ...] = field(default=())

    @property
    def added_ids(self) -> list[str]:
        """Ids of the added documents, in order."""
        return [d.id for d in self.added]

    @property
    def removed_ids(self) -> list[str]:
        """Ids of the removed documents."""
        return [d.id for d in self.removed]

    @property
    def replaced_ids(self) -> frozenset[str]:
        """Ids both removed and added: documents whose new version replaces the old."""
        return frozenset(self.added_ids) & frozenset(self.removed_ids)

    def removed_chunk_ids(self) -> list[int]:
        """Integer ids of every removed chunk."""
        return [i for d in self.removed for i in d.chunk_ids]

    def added_chunks(self) -> tuple[list[int], list[Chunk]]:
        """``(ids, chunks)`` of every added chunk, in order."""
        ids = [i for d in self.added for i in d.chunk_ids]
        chunks = [c for d in self.added for c in d.chunks]
        return ids, chunks

    def added_vectors(self) -> Floats | None:
        """The vectors of every added chunk as one matrix (``None`` if none)."""
        vectors = [d.chunk_vectors for d in self.added if len(d.chunk_ids)]
        return np.concatenate(vectors) if vectors else None

    def added_batches(self, rows: int) -> Iterator[tuple[Ints, Floats]]:
        """``(ids, vectors)`` of the added chunks, made a few documents at a time.

        Each batch holds whole documents and about ``rows`` rows (more when one document
        has more), so a change of millions of chunks is never held as one matrix: a part
        that takes its vectors in batches holds one batch's copy at a time. The batches'
        ids increase from one to the next; where the documents' ids do not (records
        restored out of order), all come as one batch.
        """
        docs = [d for d in self.added if d.chunk_ids]
        if any(min(b.chunk_ids) <= max(a.chunk_ids) for a, b in itertools.pairwise(docs)):
            rows = max(rows, sum(len(d.chunk_ids) for d in docs))
        group: list[IndexedDocument] = []
        size = 0
        for d in docs:
            group.append(d)
            size += len(d.chunk_ids)
            if size >= rows:
                yield _batch(group)
                group, size = [], 0
        if group:
            yield _batch(group)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed)


def _batch(docs: Sequence[IndexedDocument]) -> tuple[Ints, Floats]:
    ids = np.fromiter((i for d in docs for i in d.chunk_ids), np.int64)
    return ids, np.concatenate([d.chunk_vectors for d in docs])


def differences(
    held: Mapping[str, IndexedDocument], live: Sequence[IndexedDocument]
) -> tuple[list[IndexedDocument], list[str]]:
    """What a part that holds ``held`` (records by document id) must change to hold ``live``.

    Returns ``(added, removed_ids)``: the ids of the documents no longer live, or live in
    another version (another record), leave; the live documents not held, or held in an
    older version, are added (in ``live``'s order).
    """
    now = {d.id: d for d in live}
    removed = [d for d, record in held.items() if now.get(d) is not record]
    gone = set(removed)
    return [d for d in live if d.id not in held or d.id in gone], removed


@runtime_checkable
class Follower(Protocol):
    """What follows an index: each change, after the index's own parts have applied it.

    A knowledge graph or a database writer (:meth:`SemanticIndex.follow
    <semrag.SemanticIndex.follow>`).
    """

    def apply(self, change: Change) -> None:
        """Bring the follower up to ``change.version``."""


@runtime_checkable
class IndexPart(Protocol):
    """What every part of an index implements.

    ``apply`` brings the part from the version before ``change`` to ``change.version``
    without recomputing what the change does not touch; ``save`` writes the part's files
    into a directory (returning their names). Each part also has a ``load`` classmethod
    that reads them back; its arguments depend on the part.
    """

    def apply(self, change: Change) -> None:
        """Bring the part up to ``change.version``."""

    def save(self, directory: Path) -> Sequence[str]:
        """Write the part's files into ``directory``; returns their names."""


@runtime_checkable
class StagedPart(IndexPart, Protocol):
    """A part of the index itself: it applies a change in two steps.

    ``stage`` computes the part's next state without changing what readers of the current
    one see (and without side effects if it raises); the function it returns makes that
    state current and costs no more than the change's own size. ``apply`` is the two in a
    row. The index stages every part first and publishes them together, so readers wait
    only for the swap.
    """

    def stage(self, change: Change) -> Callable[[], None]:
        """Compute the state after ``change``; returns the function that publishes it."""


@runtime_checkable
class StoresParts(Protocol):
    """A follower that stores the index's parts elsewhere (a database writer).

    :meth:`SemanticIndex.enable <semrag.SemanticIndex.enable>` tells it of a part enabled
    on a populated index, so it writes the new part before ``enable`` returns.
    """

    def part_enabled(self, part: str) -> None:
        """Write the part ``part`` the index has just built."""
        ...


@runtime_checkable
class EmbedsNames(Protocol):
    """A follower that embeds text of its own with the index's model.

    A knowledge graph embeds its entity names and community reports; its vectors would be
    another model's after :meth:`SemanticIndex.reembed <semrag.SemanticIndex.reembed>`,
    which therefore refuses while such a follower has an ``embedder``.
    """

    embedder: Embedder
