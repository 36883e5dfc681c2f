"""Documents chunked and embedded in one process, committed to an index in another.

A worker (a Ray actor, a Spark task, a second machine) holds an index with the writer's
settings and calls :meth:`~semrag.SemanticIndex.prepare_documents`: it chunks, embeds and
themes the documents exactly as ``add_documents`` would, and returns a
:class:`PreparedBatch` (picklable: documents, sentence spans, chunks with offsets, and
every vector) instead of committing it. The writer's
:meth:`~semrag.SemanticIndex.add_prepared` commits the batch as one change, embedding
nothing; it first checks that the batch was made with its settings (chunker, chunk
vectors, similarity graph, and the embedder, by its fingerprint: see
:mod:`semrag.fingerprint`), so vectors of another model cannot slip into the index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semrag.errors import ConfigError, EmbedderMismatchError
from semrag.fingerprint import EmbedderFingerprint
from semrag.index.change import IndexedDocument
from semrag.types import Chunk, Document, Floats, Span

__all__ = [
    "PREPARED_FORMAT",
    "PreparedBatch",
    "PreparedDocument",
    "check_settings",
    "ingest_settings",
]

PREPARED_FORMAT = 2
"""The layout of :class:`PreparedBatch` (1: positional rows, before 0.3; 2: records)."""


@dataclass(frozen=True, slots=True)
class PreparedDocument:
    """One document chunked and embedded, not yet indexed: what ingestion computes.

    The index gives it chunk ids when it commits (:meth:`indexed`); until then it is a
    plain record a worker process can return (picklable).

    Attributes:
        doc: the document (id, text, metadata).
        sentences: its sentence spans.
        sentence_vectors: one unit vector per sentence (the index's ``sentence_dtype``).
        chunks: the chunker's chunks.
        chunk_vectors: one unit vector per chunk.
        node_ranges: the sentence ranges of its SSG window nodes (empty without an SSG).
        node_vectors: one unit vector per window node.
        themes: its themes (keywords, or an LLM's).
        theme_vector: the unit vector of its themes.
    """

    doc: Document
    sentences: list[Span]
    sentence_vectors: Floats
    chunks: list[Chunk]
    chunk_vectors: Floats
    node_ranges: list[tuple[int, int]]
    node_vectors: Floats
    themes: list[str]
    theme_vector: Floats

    @property
    def id(self) -> str:
        """The document's id."""
        return self.doc.id

    def indexed(self, chunk_ids: Sequence[int]) -> IndexedDocument:
        """The record the index keeps, with the ids it gave the chunks."""
        return IndexedDocument(
            self.doc,
            self.sentences,
            self.sentence_vectors,
            list(self.chunks),
            list(chunk_ids),
            self.chunk_vectors,
            self.node_ranges,
            self.node_vectors,
            self.themes,
            self.theme_vector,
        )

    def check(self, dim: int) -> None:
        """Raise unless the vectors fit the spans: one row of ``dim`` per sentence, chunk, node.

        Raises:
            ConfigError: naming the document and what does not fit.
        """
        for name, rows, n in (
            ("sentence_vectors", self.sentence_vectors, len(self.sentences)),
            ("chunk_vectors", self.chunk_vectors, len(self.chunks)),
            ("node_vectors", self.node_vectors, len(self.node_ranges)),
        ):
            shape = np.shape(rows)
            if shape != (n, dim) and not (n == 0 and len(shape) and shape[0] == 0):
                raise ConfigError(
                    f"prepared document {self.id!r}: {name} has shape {shape}, expected "
                    f"({n}, {dim})"
                )
        if any(c.doc_id != self.id for c in self.chunks):
            raise ConfigError(f"prepared document {self.id!r} holds chunks of another document")
        if np.shape(self.theme_vector) != (dim,):
            raise ConfigError(
                f"prepared document {self.id!r}: theme_vector has shape "
                f"{np.shape(self.theme_vector)}, expected ({dim},)"
            )


@dataclass(frozen=True)
class PreparedBatch:
    """Documents ready to commit: what ``add_documents`` computes before its commit.

    ``documents``: one :class:`PreparedDocument` each. ``settings``: what made them
    (:func:`ingest_settings`). ``format``: the layout (:data:`PREPARED_FORMAT`); a writer
    refuses a batch of another layout (one pickled by another semrag version).
    """

    settings: dict[str, Any]
    documents: tuple[PreparedDocument, ...]
    format: int = field(default=PREPARED_FORMAT)

    @property
    def doc_ids(self) -> list[str]:
        """The ids of the batch's documents, in order."""
        return [d.id for d in self.documents]

    @property
    def n_chunks(self) -> int:
        """How many chunks the batch holds."""
        return sum(len(d.chunks) for d in self.documents)

    def check(self) -> None:
        """Raise unless the batch has this version's layout and each document fits.

        Raises:
            ConfigError: a batch of another layout, or a document whose vectors do not fit.
        """
        found = vars(self).get("format")  # absent from a batch pickled before records
        if found != PREPARED_FORMAT or not all(
            isinstance(d, PreparedDocument) for d in vars(self).get("documents", ())
        ):
            raise ConfigError(
                f"the batch has layout {found or 1}, this semrag reads {PREPARED_FORMAT}: "
                "prepare it with the writer's semrag version"
            )
        dim = int(self.settings["dim"])
        for doc in self.documents:
            doc.check(dim)

    def __len__(self) -> int:
        return len(self.documents)

    def __repr__(self) -> str:
        return f"PreparedBatch(documents={len(self.documents)}, chunks={self.n_chunks})"


def ingest_settings(index: Any) -> dict[str, Any]:
    """What decides an index's chunks and vectors (a batch made with others is refused)."""
    cfg = index.ssg_config
    return {
        "chunker": repr(index.chunker),
        "chunk_vectors": index.chunk_vectors,
        "sentence_dtype": index.sentence_dtype,
        "ssg": None if cfg is None else cfg.to_dict(),
        "dim": int(index.embedder.dim),
        "fingerprint": index.fingerprint.to_dict(),
    }


def check_settings(mine: dict[str, Any], theirs: dict[str, Any]) -> None:
    """Raise unless a batch was made with the settings ``mine`` of the writing index.

    The embedders are compared by their fingerprints (:mod:`semrag.fingerprint`): the
    same model on a GPU worker and a CPU writer matches, another model does not.

    Raises:
        EmbedderMismatchError: if the batch's vectors come from another model.
        ConfigError: naming each other setting in which the batch differs.
    """
    differ = [k for k in mine if k != "fingerprint" and mine[k] != theirs.get(k)]
    if differ:
        raise ConfigError(
            "the batch was prepared with other settings than this index's: "
            + ", ".join(differ)
            + "; prepare it with an index made as this one is (same chunker, embedder model, "
            "chunk_vectors, sentence_dtype and ssg)"
        )
    index, batch = (EmbedderFingerprint.from_dict(x["fingerprint"]) for x in (mine, theirs))
    if not index.matches(batch):
        raise EmbedderMismatchError(
            f"the batch was embedded with {batch.name}, the index with {index.name} (their "
            f"vectors of the probe texts differ: cosine {index.similarity(batch):.3f}); "
            "prepare it with an index made with the writer's embedder",
            stored=index.name,
            given=batch.name,
        )
