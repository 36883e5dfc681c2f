"""A :class:`~semrag.graph.GraphStore` on Neo4j 5 through the official ``neo4j`` driver.

The schema (``(:Entity)-[:RELATES]->(:Entity)``, ``(:Entity)-[:MENTIONED_IN]->(:Chunk)``,
communities; created idempotently) is in ``docs/neo4j.md``. Every statement is a constant
string with ``$parameters``: entity names, relation types and LLM output only ever travel as
parameters, and the relation type is a *property*, so no label is ever built from data.
Writes are ``UNWIND $rows ... MERGE`` in batches of ``batch_size`` rows, each batch one
managed transaction, retried by the driver on transient errors for up to
``retry_seconds``. A server that is down, or refuses the credentials, raises
:class:`~semrag.errors.StoreUnavailableError`.

Async reads run on the driver's asyncio API, one async driver per store on the store's own
I/O event loop (a daemon thread started at the first async read), so a caller's loop never
blocks and one store serves every event loop of the process; on a small machine the sync
driver in worker threads (``async_driver=False``) can serve more queries per second
(``docs/neo4j-operations.md``). :meth:`Neo4jGraphStore.close` stops it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy.typing as npt

from semrag.embeddings import Vectors
from semrag.errors import ConfigError
from semrag.graph.types import (
    ChunkRef,
    Community,
    Entity,
    Mention,
    Relation,
)
from semrag.neo4j._cypher import (
    BULK_VECTORS,
    CLEAR,
    COUNT_DOC_CHUNKS,
    COUNT_KNOWN,
    DELETE_CHUNKS,
    DELETE_ORPHANS,
    DOC_ENTITIES,
    DROP_CHUNKS,
    DROP_COMMUNITIES,
    DROP_ENTITIES,
    DROP_ENTITY_INDEX,
    DROP_MENTIONS,
    DROP_RELATIONS,
    ENTITY_DIM_STATE,
    ENTITY_INDEX,
    ENTITY_INDEX_DIM,
    READ_STAMP,
    SCHEMA,
    SEARCH_VECTORS,
    SET_ENTITY_VECTORS,
    SET_TOKENS,
    SET_VECTORS,
    STAMP,
    UNLABELLED,
    UNTOKENIZED,
    UPSERT_ENTITIES,
    UPSERT_MENTIONS,
    UPSERT_RELATIONS,
    VECTOR_INDEX,
    WRITE_COMMUNITIES,
    as_floats,
    checked_vectors,
    entity_params,
    mention_params,
    relation_params,
    to_bytes,
    tokens_text,
)
from semrag.neo4j._graph_reads import CypherGraphReads
from semrag.neo4j._session import Ask, Neo4jSession, Steps


class Neo4jGraphStore:
    """Knowledge graph on a Neo4j 5 server.

    Args:
        uri: ``bolt://host:7687``, ``neo4j://host:7687`` (routing, for clusters), or the
            ``+s``/``+ssc`` variants.
        user: user name.
        password: password.
        database: database name (default: the server's default database).
        batch_size: rows per write transaction.
        vector_dimensions: create the chunk vector index with this dimension (off by default).
        retry_seconds: how long the driver retries a transaction on transient errors.
        connection_timeout: seconds to wait for a connection.
        driver: an existing ``neo4j.Driver`` to use instead of ``uri``/``user``/``password``.
            With it, async reads run that driver in a worker thread (the store holds no
            credentials to open an async driver with).
        async_driver: async reads on the driver's asyncio API (see the module doc);
            ``False`` runs the sync driver in worker threads instead.
        fuzzy_cutoff: the least score of a fuzzy name match (as ``InMemoryGraphStore``'s).
        fuzzy_candidates: the most entities sharing a token that one fuzzy lookup scores.

    Its reads are the :class:`~semrag.graph.types.GraphStore` protocol's (``get_entities``,
    ``entities``, ``relations``, ``find_entities``, ``lookup``, ``expand``,
    ``neighbourhood``, ``chunks_for``, ``search_entities``, ``read_communities``,
    ``read_reports``, ``counts``, and the async twins ``alookup``, ``aexpand``,
    ``achunks_for``, ``asearch_entities``): the methods of its
    :class:`~semrag.neo4j._graph_reads.CypherGraphReads` on the store's session, each written
    once as steps (``read_steps`` runs them together with other reads).

    Raises:
        StoreUnavailableError: if the server cannot be reached or refuses the credentials.
        MissingDependencyError: without ``pip install "semrag[neo4j]"``.
    """

    supports_fulltext = True

    def __init__(
        self,
        uri: str = "bolt://localhost:7687",
        user: str = "neo4j",
        password: str = "",
        *,
        database: str | None = None,
        batch_size: int = 1000,
        vector_dimensions: int | None = None,
        retry_seconds: float = 15.0,
        connection_timeout: float = 10.0,
        driver: Any = None,
        fuzzy_cutoff: float = 0.5,
        fuzzy_candidates: int = 10_000,
        async_driver: bool = True,
    ) -> None:
        self.session = Neo4jSession(
            uri,
            user,
            password,
            database=database,
            batch_size=batch_size,
            retry_seconds=retry_seconds,
            connection_timeout=connection_timeout,
            driver=driver,
            async_driver=async_driver,
        )
        """The connection every semrag class on this store talks through (its one error
        map: see :class:`~semrag.neo4j._session.Neo4jSession`)."""
        reads = CypherGraphReads(
            self.session, fuzzy_cutoff=fuzzy_cutoff, fuzzy_candidates=fuzzy_candidates
        )
        # the reads are CypherGraphReads' own methods (documented there), taken as they are
        self.read_steps = reads.read_steps
        self.get_entities, self.entities, self.relations = (
            reads.get_entities,
            reads.entities,
            reads.relations,
        )
        self.find_entities, self.lookup, self.alookup = (
            reads.find_entities,
            reads.lookup,
            reads.alookup,
        )
        self.expand, self.aexpand, self.neighbourhood = (
            reads.expand,
            reads.aexpand,
            reads.neighbourhood,
        )
        self.chunks_for, self.achunks_for = reads.chunks_for, reads.achunks_for
        self.search_entities, self.asearch_entities = reads.search_entities, reads.asearch_entities
        self.read_communities, self.read_reports = reads.read_communities, reads.read_reports
        self.counts = reads.counts
        self.vector_dimensions = vector_dimensions
        try:
            self.ensure_schema()
        except BaseException:
            self.session.abandon()
            raise

    # -- schema ---------------------------------------------------------------------------------
    def ensure_schema(self) -> None:
        """Create the constraints and indexes if they are missing (idempotent).

        Entities written before the name-token index existed get their tokens here, and
        those written before name vectors were stored get the ``SemragUnembedded`` label.
        """
        session = self.session
        for statement in SCHEMA:
            session.write_rows(statement)
        session.read_rows("CALL db.awaitIndexes(300)")  # searched once the index is online
        while ids := [r["id"] for r in session.read_rows(UNTOKENIZED, limit=session.batch_size)]:
            session.write_rows(SET_TOKENS, rows=[{"id": i, "tokens": tokens_text(i)} for i in ids])
        while session.write_rows(UNLABELLED, limit=session.batch_size)[0]["n"]:
            pass
        if self.vector_dimensions:
            session.write_rows(VECTOR_INDEX, dim=int(self.vector_dimensions))

    # -- writes ---------------------------------------------------------------------------------
    def upsert(
        self,
        entities: Iterable[Entity] = (),
        relations: Iterable[Relation] = (),
        mentions: Iterable[Mention] = (),
        *,
        entity_vectors: npt.ArrayLike | None = None,
    ) -> None:
        """Insert or update records with batched ``UNWIND ... MERGE``.

        Every relation and mention must name an entity given here or already stored
        (checked before any write). Each batch is one transaction. ``entity_vectors``:
        the unit vectors of the entities' names, one row per entity (see
        :meth:`search_entities`); an entity written without one loses any it had.
        """
        entities, relations, mentions = list(entities), list(relations), list(mentions)
        for e in entities:
            if not e.id:
                raise ConfigError(f"entity without an id: {e!r}")
        given = {e.id for e in entities}
        needed = sorted(
            (
                {r.source for r in relations}
                | {r.target for r in relations}
                | {m.entity_id for m in mentions}
            )
            - given
        )
        if needed:
            found = self.session.read_rows(COUNT_KNOWN, ids=needed)[0]["n"]
            if found != len(needed):
                raise ConfigError(f"relations or mentions name unknown entities among {needed[:5]}")
        vector_rows = self._entity_vector_rows(entities, entity_vectors)
        self.session.write_batches(UPSERT_ENTITIES, entity_params(entities))
        self.session.write_batches(UPSERT_RELATIONS, relation_params(relations))
        self.session.write_batches(UPSERT_MENTIONS, mention_params(mentions))
        self.session.write_rows(STAMP)
        self._write_entity_vectors(*vector_rows)

    def update(
        self,
        *,
        drop_entities: Sequence[str] = (),
        drop_relations: Sequence[tuple[str, str, str]] = (),
        drop_mentions: Sequence[tuple[str, str]] = (),
        drop_chunks: Sequence[str] = (),
        entities: Sequence[Entity] = (),
        relations: Sequence[Relation] = (),
        mentions: Sequence[Mention] = (),
        entity_vectors: npt.ArrayLike | None = None,
    ) -> None:
        """Apply one change of the graph in one transaction: the drops, then the upserts.

        Args:
            drop_entities: ids of entities to remove (with their relations and mentions).
            drop_relations: ``(source, type, target)`` keys of relations to remove.
            drop_mentions: ``(entity_id, chunk key)`` pairs to remove.
            drop_chunks: keys of chunks to remove (with everything attached).
            entities: entities to write (replacing stored ones of the same id).
            relations: relations to write (replacing weight and evidence).
            mentions: mentions to write (replacing the count).
            entity_vectors: the unit vectors of the entities' names, one row per entity
                (as :meth:`upsert`): written after the transaction, ``batch_size`` per
                transaction. Until they are, the entities count as written without one
                (see :meth:`search_entities`).
        """
        entity_rows = entity_params(entities)
        vector_rows = self._entity_vector_rows(entities, entity_vectors)

        def work(tx: Any) -> None:
            tx.run(DROP_CHUNKS, keys=list(drop_chunks)).consume()
            tx.run(
                DROP_MENTIONS,
                rows=[{"entity_id": e, "key": k} for e, k in drop_mentions],
            ).consume()
            tx.run(
                DROP_RELATIONS,
                rows=[{"source": a, "type": t, "target": b} for a, t, b in drop_relations],
            ).consume()
            tx.run(DROP_ENTITIES, ids=list(drop_entities)).consume()
            tx.run(UPSERT_ENTITIES, rows=entity_rows).consume()
            tx.run(UPSERT_RELATIONS, rows=relation_params(relations)).consume()
            tx.run(UPSERT_MENTIONS, rows=mention_params(mentions)).consume()
            tx.run(STAMP).consume()

        self.session.transact(work, write=True)
        self._write_entity_vectors(*vector_rows)

    def _entity_vector_rows(
        self, entities: Sequence[Entity], vectors: npt.ArrayLike | None
    ) -> tuple[list[dict[str, Any]], int]:
        """Rows that set the entities' name vectors, and their dimension (checked)."""
        if vectors is None:
            return [], 0
        vecs = checked_vectors(vectors, len(entities), "entity_vectors", "entity")
        have = [r["dim"] for r in self.session.read_rows(ENTITY_INDEX_DIM)] if entities else []
        if have and int(have[0]) != vecs.shape[1]:
            raise ConfigError(
                f"entity name vectors of dimension {vecs.shape[1]}; the database's "
                f"semrag_entity_vectors index has {have[0]} (clear() the graph first)"
            )
        rows = [
            {"id": e.id, "embedding": as_floats(v), "vec": to_bytes(v)}
            for e, v in zip(entities, vecs, strict=True)
        ]
        return rows, int(vecs.shape[1])

    def _write_entity_vectors(self, rows: list[dict[str, Any]], dim: int) -> None:
        """Set the vectors, ``batch_size`` per transaction, in ``semrag_entity_vectors``.

        At least :data:`BULK_VECTORS` of them (a whole graph) go in with the index
        dropped, and the index is built again over all of them: written batch by batch it
        would be searched segment by segment (measured: 31 ms a search over 31k names
        written in 1,000s, 8 ms once rebuilt). The dimension is recorded in the graph's
        state node, where a search reads it; it is unset while the index is rebuilt, so a
        reader meanwhile ranks the names in process.
        """
        if not rows:
            return
        bulk = len(rows) >= BULK_VECTORS
        if bulk:
            self.session.write_rows(ENTITY_DIM_STATE, dim=None)
            self.session.write_rows(DROP_ENTITY_INDEX)
        else:
            self.session.write_rows(ENTITY_INDEX, dim=dim)  # IF NOT EXISTS
            self.session.read_rows("CALL db.awaitIndexes(300)")
        self.session.write_batches(SET_ENTITY_VECTORS, rows)
        if bulk:
            self.session.write_rows(ENTITY_INDEX, dim=dim)
            self.session.read_rows("CALL db.awaitIndexes(300)")
        self.session.write_rows(ENTITY_DIM_STATE, dim=dim)

    def delete_document(self, doc_id: str) -> int:
        """Remove the document's chunks and mentions, then entities left unmentioned."""

        def work(tx: Any) -> int:
            n = tx.run(COUNT_DOC_CHUNKS, doc_id=doc_id).single()["n"]
            ids = [r["id"] for r in tx.run(DOC_ENTITIES, doc_id=doc_id)]
            tx.run(DELETE_CHUNKS, doc_id=doc_id).consume()
            tx.run(DELETE_ORPHANS, ids=ids).consume()
            tx.run(STAMP).consume()
            return int(n)

        return self.session.transact(work, write=True)

    def write_communities(
        self, communities: Sequence[Community], *, report_vectors: npt.ArrayLike | None = None
    ) -> None:
        """Replace the stored communities.

        ``report_vectors``: the unit vectors of their reports
        (:func:`~semrag.graph.communities.report_text`), one row per community, read back
        by :meth:`read_reports`.
        """
        communities = list(communities)
        vecs: list[bytes | None] = [None] * len(communities)
        if report_vectors is not None:
            arr = checked_vectors(report_vectors, len(communities), "report_vectors", "community")
            vecs = [to_bytes(v) for v in arr]
        self.session.write_rows(DROP_COMMUNITIES)
        self.session.write_batches(
            WRITE_COMMUNITIES,
            [
                {
                    "id": c.id,
                    "level": c.level,
                    "title": c.title,
                    "summary": c.summary,
                    "rank": float(c.rank),
                    "parent": c.parent,
                    "entity_ids": list(c.entity_ids),
                    "vec": vec,
                }
                for c, vec in zip(communities, vecs, strict=True)
            ],
        )
        self.session.write_rows(STAMP)

    def change_stamp(self) -> str | None:
        """A token that changes with every write of the graph (``None`` for no graph).

        A process that serves queries keys what it derives from the graph (the entity and
        report vectors of :class:`~semrag.graph.KnowledgeGraph`) by it, so it sees the
        changes another process writes.
        """
        return self.session.run_steps(self._stamp_steps())

    async def achange_stamp(self) -> str | None:
        """Async twin of :meth:`change_stamp`, on the async driver."""
        return await self.session.arun_steps(self._stamp_steps())

    def _stamp_steps(self) -> Steps[str | None]:
        rows = yield Ask(READ_STAMP, {})
        return rows[0]["stamp"] if rows else None

    def clear(self) -> None:
        """Delete semrag's nodes (entities, chunks, communities) from the database.

        The nodes go 10,000 at a time, each batch its own transaction (``CALL { ... } IN
        TRANSACTIONS``, Neo4j 5.23 or newer), so a large graph never needs one transaction
        that holds all of it. A failure halfway leaves part of the graph; clearing again
        finishes the work. The entity name vector index goes too (the next vectors written
        may have another dimension).
        """
        self.session.run_batched(CLEAR)
        self.session.write_rows(DROP_ENTITY_INDEX)  # its vectors went with the entities

    def upsert_chunk_vectors(self, chunks: Sequence[ChunkRef], vectors: Vectors) -> None:
        """Store chunk embeddings for the vector index (needs ``vector_dimensions``)."""
        if not self.vector_dimensions:
            raise ConfigError("create the store with vector_dimensions=... to store vectors")
        rows: list[dict[str, Any]] = [
            {
                "key": c.key,
                "doc_id": c.doc_id,
                "start": c.start,
                "end": c.end,
                "vector": [float(x) for x in v],
            }
            for c, v in zip(chunks, vectors, strict=True)
        ]
        for row in rows:
            if len(row["vector"]) != self.vector_dimensions:
                raise ConfigError(
                    f"vector of dimension {len(row['vector'])}; "
                    f"the index has {self.vector_dimensions}"
                )
        self.session.write_batches(SET_VECTORS, rows)

    def search_chunk_vectors(
        self, vector: Sequence[float], k: int = 10
    ) -> list[tuple[ChunkRef, float]]:
        """Nearest chunks by the vector index (cosine)."""
        if not self.vector_dimensions:
            raise ConfigError("create the store with vector_dimensions=... to search vectors")
        rows = self.session.read_rows(SEARCH_VECTORS, k=int(k), vector=[float(x) for x in vector])
        return [(ChunkRef(r["doc_id"], r["start"], r["end"]), float(r["score"])) for r in rows]

    # -- the connection ---------------------------------------------------------------------------
    @property
    def reads(self) -> int:
        """Read statements run so far on this store's session (each one round trip)."""
        return self.session.reads

    def close(self) -> None:
        """Close the driver (and the async driver and its I/O loop, if started)."""
        self.session.close()

    def __enter__(self) -> Neo4jGraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        s = self.session
        return f"Neo4jGraphStore(uri={s.uri!r}, database={s.database!r})"
