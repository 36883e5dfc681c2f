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

from dataclasses import dataclass
from typing import Any

from semrag.errors import ConfigError, EmbedderMismatchError
from semrag.fingerprint import EmbedderFingerprint

__all__ = ["PreparedBatch", "check_settings", "ingest_settings"]


@dataclass(frozen=True)
class PreparedBatch:
    """Documents ready to commit: what ``add_documents`` computes before its commit.

    ``rows``: per document, its :class:`~semrag.types.Document`, sentence spans and
    vectors, chunks and their vectors, window ranges and vectors, themes and the theme
    vector (the index's internal order; made and read by the index only). ``settings``:
    what made them (:func:`ingest_settings`).
    """

    settings: dict[str, Any]
    rows: tuple[tuple[Any, ...], ...]

    @property
    def doc_ids(self) -> list[str]:
        """The ids of the batch's documents, in order."""
        return [row[0].id for row in self.rows]

    @property
    def n_chunks(self) -> int:
        """How many chunks the batch holds."""
        return sum(len(row[3]) for row in self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        return f"PreparedBatch(documents={len(self.rows)}, chunks={self.n_chunks})"


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
