"""The dense channel of an index in Neo4j's native vector index."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from semrag.embeddings import Vectors
from semrag.errors import ConfigError
from semrag.neo4j._cypher import (
    DENSE_CLEAR,
    DENSE_DELETE,
    DENSE_DIM,
    DENSE_INDEX,
    DENSE_SCHEMA,
    DENSE_SEARCH,
    DENSE_UPSERT,
)
from semrag.neo4j.graph_store import Neo4jGraphStore


class Neo4jVectorClient:
    """The dense channel in Neo4j's native vector index: a :class:`~semrag.index.VectorClient`.

    ``SemanticIndex(dense=Neo4jVectorClient(store, dim))`` sends each chunk's vector, text
    and document id to Neo4j (nodes ``(:SemragVector {id, text, doc_id, embedding})``,
    apart from the knowledge graph's nodes) and asks the vector index
    ``semrag_dense_vectors`` (cosine, created if missing) for nearest neighbours. The
    index's ``StoreBackedDense`` keeps the versions: entries written while a change is
    staged stay hidden until it is published, and scores are computed by semrag, so every
    store ranks alike. The index is created without quantization (Neo4j quantizes by
    default, which reorders close scores). Its search is approximate (HNSW, and it misses
    more where many entries were deleted), so a search asks it for ``oversample`` times
    ``k`` candidates (at least ``min_candidates``), which semrag scores exactly: the top
    ``k`` of those are the answer.

    Args:
        store: the :class:`Neo4jGraphStore` whose connection (and database) to use.
        dim: the vector dimension.
        oversample: candidates asked of the vector index per result wanted.
        min_candidates: the fewest candidates asked.

    Raises:
        ConfigError: if the database's ``semrag_dense_vectors`` index has another
            dimension, or for a vector of the wrong dimension.
        StoreUnavailableError: if the server cannot be reached.
    """

    def __init__(
        self, store: Neo4jGraphStore, dim: int, *, oversample: int = 4, min_candidates: int = 40
    ) -> None:
        if int(dim) < 1:
            raise ConfigError(f"dim must be >= 1, got {dim}")
        if oversample < 1 or min_candidates < 1:
            raise ConfigError(
                f"oversample and min_candidates must be >= 1, got {oversample}, {min_candidates}"
            )
        self.store = store
        self.dim = int(dim)
        self.oversample = int(oversample)
        self.min_candidates = int(min_candidates)
        store.session.write_rows(DENSE_SCHEMA)
        have = [r["dim"] for r in store.session.read_rows(DENSE_DIM)]
        if have and int(have[0]) != self.dim:
            raise ConfigError(
                f"the database's semrag_dense_vectors index has dimension {have[0]}, "
                f"not {self.dim}: use a database of its own for this index (database=...)"
            )
        store.session.write_rows(DENSE_INDEX, dim=self.dim)
        store.session.read_rows("CALL db.awaitIndexes(300)")

    def upsert(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        vectors: Vectors,
        metadatas: Sequence[Mapping[str, Any]],
    ) -> None:
        """Store (or replace) these entries, ``store.session.batch_size`` per transaction."""
        rows = []
        for i, text, vector, meta in zip(ids, texts, vectors, metadatas, strict=True):
            values = [float(x) for x in vector]
            if len(values) != self.dim:
                raise ConfigError(f"vector of dimension {len(values)}; the index has {self.dim}")
            rows.append(
                {"id": str(i), "text": text, "doc_id": meta.get("semrag_doc_id"), "vector": values}
            )
        self.store.session.write_batches(DENSE_UPSERT, rows)

    def delete(self, ids: Sequence[str]) -> None:
        """Remove these entries (absent ids are ignored)."""
        self.store.session.write_batches(DENSE_DELETE, [str(i) for i in ids])

    def search(self, vector: Vectors, k: int) -> list[str]:
        """Candidate ids near ``vector``, best first: ``oversample * k`` (one read).

        At least ``k`` and ``min_candidates`` of them; the caller scores them exactly.
        """
        values = [float(x) for x in vector]
        if len(values) != self.dim:
            raise ConfigError(f"query of dimension {len(values)}; the index has {self.dim}")
        n = max(int(k), self.oversample * int(k), self.min_candidates)
        return [r["id"] for r in self.store.session.read_rows(DENSE_SEARCH, k=n, vector=values)]

    def clear(self) -> None:
        """Delete every entry, 10,000 per transaction."""
        self.store.session.run_batched(DENSE_CLEAR)

    def __repr__(self) -> str:
        return f"Neo4jVectorClient({self.store!r}, dim={self.dim}, oversample={self.oversample})"
