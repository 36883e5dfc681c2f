"""A :class:`~semrag.graph.GraphStore` on Neo4j 5 through the official ``neo4j`` driver.

Schema (created idempotently, ``IF NOT EXISTS``):

* ``(:Entity {id, name, type, description})`` with a uniqueness constraint on ``id`` and a
  full-text index ``semrag_entity_names`` on ``name``; when written with the name's unit
  vector, ``embedding`` (in the vector index ``semrag_entity_vectors``, made at the first
  such write) and ``vec`` (the same as float32 bytes, what reads fetch); without one, the
  label ``SemragUnembedded``;
* ``(:Chunk {key, doc_id, start, end})`` with a uniqueness constraint on ``key`` and an
  index on ``doc_id``; optionally a vector index ``semrag_chunk_vectors`` on ``embedding``;
* ``(:Entity)-[:RELATES {type, evidence, weight}]->(:Entity)``: the relation type is a
  *property*, so no label or type is ever built from data;
* ``(:Entity)-[:MENTIONED_IN {count}]->(:Chunk)``;
* ``(:Community {id, level, title, summary, rank, parent})`` and
  ``(:Entity)-[:IN_COMMUNITY]->(:Community)``.

Every statement is a constant string with ``$parameters``: entity names, relation types
and LLM output only ever travel as parameters. Writes are ``UNWIND $rows ... MERGE`` in
batches of ``batch_size`` rows, each batch one managed transaction (all of it or none),
retried by the driver on transient errors for up to ``retry_seconds``. A server that is
down, or refuses the credentials, raises :class:`~semrag.errors.StoreUnavailableError`.

Async reads (``Neo4jGraphStore._aread``, and the ``a...`` twins built on it) go through the
driver's asyncio API (``neo4j.AsyncGraphDatabase``): one async driver per store, running
on the store's own I/O event loop (a daemon thread started at the first async read). A
caller's loop awaits the answer and never blocks, any number of reads are in flight at
once (bounded by the driver's connection pool, not by a thread pool), and one store
serves every event loop of the process (an async driver is bound to the loop it runs
on). :meth:`Neo4jGraphStore.close` stops it. The price, measured in
``benchmarks/neo4j_backend.py``: the Python async driver decodes a large reply more slowly
than the sync one (a few ms on a dense search's rows), so on a small machine the sync
driver in worker threads (``async_driver=False``) can serve more queries per second.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import re
import threading
from collections.abc import Callable, Coroutine, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from semrag._steps import Done, adrive, advance, drive
from semrag.errors import ConfigError, StoreError, StoreUnavailableError, missing_dependency
from semrag.graph.names import best_matches, lookup_tokens, name_tokens, per_name, rank_matches
from semrag.graph.types import (
    ChunkRef,
    Community,
    Entity,
    Mention,
    Relation,
    Subgraph,
    entity_key,
)

__all__ = ["Neo4jGraphStore", "Neo4jVectorClient"]

_SCHEMA = (
    "CREATE CONSTRAINT semrag_entity_id IF NOT EXISTS FOR (e:Entity) REQUIRE e.id IS UNIQUE",
    "CREATE CONSTRAINT semrag_chunk_key IF NOT EXISTS FOR (c:Chunk) REQUIRE c.key IS UNIQUE",
    "CREATE CONSTRAINT semrag_community_id IF NOT EXISTS FOR (c:Community) REQUIRE c.id IS UNIQUE",
    "CREATE INDEX semrag_chunk_doc IF NOT EXISTS FOR (c:Chunk) ON (c.doc_id)",
    "CREATE FULLTEXT INDEX semrag_entity_names IF NOT EXISTS FOR (e:Entity) ON EACH [e.name]",
    # the name tokens of each entity's key, as the in-memory token index holds them
    "CREATE FULLTEXT INDEX semrag_entity_tokens IF NOT EXISTS FOR (e:Entity) ON EACH [e.tokens] "
    "OPTIONS {indexConfig: {`fulltext.analyzer`: 'whitespace'}}",
)
_VECTOR_INDEX = (
    "CREATE VECTOR INDEX semrag_chunk_vectors IF NOT EXISTS FOR (c:Chunk) ON (c.embedding) "
    "OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine'}}"
)
# An entity is written without its name's vector (``vec`` float32 bytes, ``embedding`` for
# the vector index) and labelled SemragUnembedded until the vector is written (after the
# change's transaction, in batches: vectors would make a large change's transaction many
# times larger), so a reader knows which entities the vector index cannot answer for.
_UPSERT_ENTITIES = (
    "UNWIND $rows AS row MERGE (e:Entity {id: row.id}) "
    "SET e.name = row.name, e.type = row.type, e.description = row.description, "
    "e.tokens = row.tokens, e:SemragUnembedded REMOVE e.embedding, e.vec"
)
_SET_ENTITY_VECTORS = (
    "UNWIND $rows AS row MATCH (e:Entity {id: row.id}) "
    "SET e.embedding = row.embedding, e.vec = row.vec REMOVE e:SemragUnembedded"
)
_UNLABELLED = (  # entities written before the label existed
    "MATCH (e:Entity) WHERE e.vec IS NULL AND NOT e:SemragUnembedded "
    "WITH e LIMIT $limit SET e:SemragUnembedded RETURN count(e) AS n"
)
_ENTITY_INDEX = (
    "CREATE VECTOR INDEX semrag_entity_vectors IF NOT EXISTS FOR (e:Entity) ON (e.embedding) "
    "OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine', "
    "`vector.quantization.enabled`: false}}"
)
_ENTITY_INDEX_DIM = (
    "SHOW VECTOR INDEXES YIELD name, options WHERE name = 'semrag_entity_vectors' "
    "RETURN options.indexConfig['vector.dimensions'] AS dim"
)
_BULK_VECTORS = 5000
"""Entity vectors written at once from which their index is rebuilt (see
``Neo4jGraphStore._write_entity_vectors``)."""
_ENTITY_DIM_STATE = "MERGE (s:SemragGraphState {name: 'graph'}) SET s.entity_dim = $dim"
_DROP_ENTITY_INDEX = "DROP INDEX semrag_entity_vectors IF EXISTS"
# The nearest entity names with vectors of the query's dimension, and the entities with no
# vector, when at most $most of them (else only the counts and the dimension).
_SEARCH_ENTITIES = (
    "OPTIONAL MATCH (s:SemragGraphState {name: 'graph'}) WITH s.entity_dim AS dim "
    "CALL () { MATCH (u:SemragUnembedded) RETURN count(u) AS unembedded } "
    "CALL () { MATCH (e:Entity) RETURN count(e) AS entities } "
    "CALL (unembedded) { "
    "  WITH 1 AS go WHERE 0 < unembedded <= $most MATCH (u:SemragUnembedded) "
    "  RETURN collect([u.id, u.name, u.type, u.description]) AS bare "
    "} "
    "CALL (unembedded, entities, dim) { "
    "  WITH 1 AS go WHERE unembedded <= $most AND entities > unembedded AND dim = size($vector) "
    "  CALL db.index.vector.queryNodes('semrag_entity_vectors', $n, $vector) YIELD node, score "
    "  WITH node ORDER BY score DESC LIMIT $keep "
    "  RETURN collect([node.id, node.name, node.type, node.description, node.vec]) AS found "
    "} "
    "RETURN dim, unembedded, entities, bare, found"
)
_UPSERT_RELATIONS = (
    "UNWIND $rows AS row MATCH (a:Entity {id: row.source}) MATCH (b:Entity {id: row.target}) "
    "MERGE (a)-[r:RELATES {type: row.type}]->(b) "
    "SET r.evidence = row.evidence, r.weight = row.weight"
)
_UPSERT_MENTIONS = (
    "UNWIND $rows AS row MATCH (e:Entity {id: row.entity_id}) "
    "MERGE (c:Chunk {key: row.key}) "
    "SET c.doc_id = row.doc_id, c.start = row.start, c.end = row.end "
    "MERGE (e)-[m:MENTIONED_IN]->(c) SET m.count = row.count"
)
_DROP_ENTITIES = "UNWIND $ids AS id MATCH (e:Entity {id: id}) DETACH DELETE e"
_DROP_RELATIONS = (
    "UNWIND $rows AS row MATCH (:Entity {id: row.source})-[r:RELATES {type: row.type}]->"
    "(:Entity {id: row.target}) DELETE r"
)
_DROP_MENTIONS = (
    "UNWIND $rows AS row MATCH (:Entity {id: row.entity_id})-[m:MENTIONED_IN]->"
    "(:Chunk {key: row.key}) DELETE m"
)
_DROP_CHUNKS = "UNWIND $keys AS key MATCH (c:Chunk {key: key}) DETACH DELETE c"
_COUNT_KNOWN = "UNWIND $ids AS id MATCH (e:Entity {id: id}) RETURN count(e) AS n"
_GET = (
    "UNWIND $ids AS id MATCH (e:Entity {id: id}) "
    "RETURN e.id AS id, e.name AS name, e.type AS type, e.description AS description"
)
_ALL_ENTITIES = (
    "MATCH (e:Entity) RETURN e.id AS id, e.name AS name, e.type AS type, "
    "e.description AS description ORDER BY e.id"
)
_ALL_RELATIONS = (
    "MATCH (a:Entity)-[r:RELATES]->(b:Entity) RETURN a.id AS source, b.id AS target, "
    "r.type AS type, r.evidence AS evidence, r.weight AS weight"
)
_TOKEN_CANDIDATES = (  # entities sharing a lookup token (bounded: see find_entities)
    "CALL db.index.fulltext.queryNodes('semrag_entity_tokens', $q, {limit: $limit}) "
    "YIELD node RETURN node.id AS id"
)
_UNTOKENIZED = "MATCH (e:Entity) WHERE e.tokens IS NULL RETURN e.id AS id LIMIT $limit"
_SET_TOKENS = "UNWIND $rows AS row MATCH (e:Entity {id: row.id}) SET e.tokens = row.tokens"
_NEIGHBOURS = (  # bounded: the caller keeps at most $limit ids, so no more rows can count
    "UNWIND $ids AS id MATCH (e:Entity {id: id})-[:RELATES]-(n:Entity) "
    "RETURN DISTINCT n.id AS id ORDER BY id LIMIT $limit"
)
_RELATIONS_AMONG = (
    "MATCH (a:Entity)-[r:RELATES]->(b:Entity) WHERE a.id IN $ids AND b.id IN $ids "
    "RETURN a.id AS source, b.id AS target, r.type AS type, r.evidence AS evidence, "
    "r.weight AS weight"
)
_CHUNKS_FOR = (  # an entity without chunks gives one row of nulls
    "UNWIND $ids AS id MATCH (e:Entity {id: id}) OPTIONAL MATCH (e)-[:MENTIONED_IN]->(c:Chunk) "
    "RETURN e.id AS entity, c.doc_id AS doc_id, c.start AS start, c.end AS end "
    "ORDER BY entity, doc_id, start"
)
_DOC_ENTITIES = (
    "MATCH (e:Entity)-[:MENTIONED_IN]->(:Chunk {doc_id: $doc_id}) RETURN DISTINCT e.id AS id"
)
_DELETE_CHUNKS = "MATCH (c:Chunk {doc_id: $doc_id}) DETACH DELETE c"
_DELETE_ORPHANS = (
    "UNWIND $ids AS id MATCH (e:Entity {id: id}) WHERE NOT (e)-[:MENTIONED_IN]->() DETACH DELETE e"
)
_COUNT_DOC_CHUNKS = "MATCH (c:Chunk {doc_id: $doc_id}) RETURN count(c) AS n"
_DROP_COMMUNITIES = "MATCH (c:Community) DETACH DELETE c"
_WRITE_COMMUNITIES = (
    "UNWIND $rows AS row MERGE (c:Community {id: row.id}) "
    "SET c.level = row.level, c.title = row.title, c.summary = row.summary, "
    "c.rank = row.rank, c.parent = row.parent, c.vec = row.vec "
    "WITH c, row UNWIND row.entity_ids AS eid MATCH (e:Entity {id: eid}) "
    "MERGE (e)-[:IN_COMMUNITY]->(c)"
)
_READ_COMMUNITIES = (
    "MATCH (c:Community) WHERE $level IS NULL OR c.level = $level "
    "OPTIONAL MATCH (e:Entity)-[:IN_COMMUNITY]->(c) "
    "WITH c, collect(e.id) AS members ORDER BY c.level, c.id "
    "RETURN c.id AS id, c.level AS level, c.title AS title, c.summary AS summary, "
    "c.rank AS rank, c.parent AS parent, members, c.vec AS vec"
)
_COUNTS = (
    "CALL () { MATCH (e:Entity) RETURN count(e) AS entities } "
    "CALL () { MATCH (:Entity)-[r:RELATES]->(:Entity) RETURN count(r) AS relations } "
    "CALL () { MATCH (c:Chunk) RETURN count(c) AS chunks } "
    "CALL () { MATCH (:Entity)-[m:MENTIONED_IN]->(:Chunk) RETURN count(m) AS mentions } "
    "CALL () { MATCH (c:Community) RETURN count(c) AS communities } "
    "RETURN entities, relations, chunks, mentions, communities"
)
# Every write sets a new stamp after its records (in its transaction, or after its batches),
# so a reader in another process that kept what it derived from the graph (entity or report
# vectors) under one stamp knows the graph changed since; cleared with the graph.
_STAMP = "MERGE (s:SemragGraphState {name: 'graph'}) SET s.stamp = randomUUID()"
_READ_STAMP = "OPTIONAL MATCH (s:SemragGraphState {name: 'graph'}) RETURN s.stamp AS stamp"
_CLEAR = (  # in batches of its own transactions: a large graph never needs one huge one
    "MATCH (n) WHERE n:Entity OR n:Chunk OR n:Community OR n:SemragGraphState "
    "CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS"
)
_SET_VECTORS = (
    "UNWIND $rows AS row MERGE (c:Chunk {key: row.key}) "
    "SET c.doc_id = row.doc_id, c.start = row.start, c.end = row.end, c.embedding = row.vector"
)
_SEARCH_VECTORS = (
    "CALL db.index.vector.queryNodes('semrag_chunk_vectors', $k, $vector) YIELD node, score "
    "RETURN node.doc_id AS doc_id, node.start AS start, node.end AS end, score"
)
# One statement for every name of a query: its exact entity, else its token candidates.
_LOOKUP = (
    "UNWIND $rows AS row "
    "OPTIONAL MATCH (x:Entity {id: row.key}) "
    "CALL (row, x) { "
    "  WITH row, x WHERE x IS NULL AND row.q <> '' "
    "  CALL db.index.fulltext.queryNodes('semrag_entity_tokens', row.q, {limit: $limit}) "
    "  YIELD node RETURN collect(node.id) AS candidates "
    "} "
    "RETURN row.i AS i, x IS NOT NULL AS exact, candidates"
)
_LOOKUP_COLUMNS = ("i", "exact", "candidates")
# One hop of a bounded breadth-first search: the kept frontier's neighbours in id order,
# cut where the whole search reaches $limit entities (as ``neighbourhood`` does).
_HOP = (
    "CALL (kept, frontier) { "
    "  UNWIND frontier AS e MATCH (e)-[:RELATES]-(n:Entity) "
    "  WITH DISTINCT n ORDER BY n.id LIMIT $limit RETURN collect(n) AS near "
    "} "
    "WITH kept, sizes, [n IN near WHERE NOT n IN kept] AS new "
    "WITH kept, sizes, CASE WHEN $limit > size(kept) "
    "THEN new[0..($limit - size(kept))] ELSE [] END AS frontier "
    "WITH kept + frontier AS kept, frontier, sizes + [size(frontier)] AS sizes "
)
# A neighbourhood, the relations among it and its entities' chunks, in one statement.
_EXPAND_HEAD = (
    "UNWIND range(0, size($ids) - 1) AS i MATCH (s:Entity {id: $ids[i]}) "
    "WITH i, s ORDER BY i WITH collect(s) AS kept "
    "WITH kept, kept AS frontier, [size(kept)] AS sizes "
)
_EXPAND_TAIL = (
    "CALL (kept) { "
    "  UNWIND kept AS a MATCH (a)-[r:RELATES]->(b:Entity) WHERE b IN kept "
    "  WITH a, r, b ORDER BY a.id, r.type, b.id "
    "  RETURN collect([a.id, b.id, r.type, r.evidence, r.weight]) AS relations "
    "} "
    # entities in more than $max_chunks chunks: counted (from the node's degree), not read
    "CALL (kept) { "
    "  UNWIND kept AS e "
    "  WITH e WHERE $max_chunks IS NOT NULL "
    "  AND COUNT { (e)-[:MENTIONED_IN]->() } > $max_chunks "
    "  RETURN collect(e.id) AS crowded "
    "} "
    "CALL (kept, crowded) { "
    "  UNWIND kept AS e WITH e WHERE NOT e.id IN crowded "
    "  MATCH (e)-[:MENTIONED_IN]->(c:Chunk) "
    "  WITH e, c ORDER BY e.id, c.doc_id, c.start "
    "  RETURN collect([e.id, c.doc_id, c.start, c.end]) AS refs "
    "} "
    "RETURN [e IN kept | [e.id, e.name, e.type, e.description]] AS entities, sizes, "
    "relations, refs, crowded"
)
_EXPAND_HOPS = 2  # deeper searches go hop by hop (:meth:`Neo4jGraphStore.neighbourhood`)
_EXPAND = {depth: _EXPAND_HEAD + _HOP * depth + _EXPAND_TAIL for depth in range(_EXPAND_HOPS + 1)}
# The dense channel's entries (Neo4jVectorClient): their own label, apart from the graph.
_DENSE_SCHEMA = (
    "CREATE CONSTRAINT semrag_vector_id IF NOT EXISTS FOR (v:SemragVector) REQUIRE v.id IS UNIQUE"
)
_DENSE_INDEX = (
    "CREATE VECTOR INDEX semrag_dense_vectors IF NOT EXISTS FOR (v:SemragVector) "
    "ON (v.embedding) OPTIONS {indexConfig: {`vector.dimensions`: $dim, "
    "`vector.similarity_function`: 'cosine', `vector.quantization.enabled`: false}}"
)
_DENSE_DIM = (
    "SHOW VECTOR INDEXES YIELD name, options WHERE name = 'semrag_dense_vectors' "
    "RETURN options.indexConfig['vector.dimensions'] AS dim"
)
_DENSE_UPSERT = (
    "UNWIND $rows AS row MERGE (v:SemragVector {id: row.id}) "
    "SET v.text = row.text, v.doc_id = row.doc_id, v.embedding = row.vector"
)
_DENSE_DELETE = "UNWIND $rows AS id MATCH (v:SemragVector {id: id}) DETACH DELETE v"
_DENSE_SEARCH = (
    "CALL db.index.vector.queryNodes('semrag_dense_vectors', $k, $vector) YIELD node, score "
    "RETURN node.id AS id ORDER BY score DESC, id"
)
_DENSE_CLEAR = "MATCH (v:SemragVector) CALL (v) { DETACH DELETE v } IN TRANSACTIONS OF 10000 ROWS"
# Lucene's query syntax: these characters are escaped so a name is searched as text.
_LUCENE_SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')


@dataclass(frozen=True, slots=True)
class _Ask:
    """One read statement a step asks for (answered with its rows).

    ``columns``: the names of its result columns, for a statement that may run together
    with others in one (:func:`_together`); empty for one that always runs alone.
    """

    query: str
    params: dict[str, Any]
    columns: tuple[str, ...] = ()


_PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def _together(asks: Sequence[_Ask]) -> _Ask:
    """One statement running ``asks`` (each in a subquery, its rows as one list).

    Its one row holds, in column ``r<i>``, the rows of ask ``i`` as lists of its columns'
    values; each ask's parameters are renamed ``p<i>_<name>``.
    """
    parts, params = [], {}
    for i, a in enumerate(asks):
        query = _PARAMETER.sub(lambda m, i=i: f"$p{i}_{m[1]}", a.query)
        params.update({f"p{i}_{name}": value for name, value in a.params.items()})
        row = ", ".join(f"`{c}`" for c in a.columns)
        parts.append(f"CALL () {{ CALL () {{ {query} }} RETURN collect([{row}]) AS r{i} }}")
    names = ", ".join(f"r{i}" for i in range(len(asks)))
    return _Ask(" ".join(parts) + f" RETURN {names}", params)


def _apart(asks: Sequence[_Ask], row: Mapping[str, Any]) -> list[list[dict[str, Any]]]:
    """The rows of each ask from the one row of :func:`_together`."""
    return [
        [dict(zip(a.columns, r, strict=True)) for r in row[f"r{i}"]] for i, a in enumerate(asks)
    ]


def _lockstep(steps: Sequence[_Steps[Any]]) -> _Steps[list[Any]]:
    """Several reads' steps side by side: each round's statements run as one.

    A round asks every unfinished read for its next statement; those that name their
    columns run as one (:func:`_together`), any other on its own.
    """
    replies: list[Any] = [None] * len(steps)
    results: list[Any] = [None] * len(steps)
    pending = dict(enumerate(steps))
    while pending:
        asks: dict[int, _Ask] = {}
        for i, s in list(pending.items()):
            step = advance(s, replies[i])
            if isinstance(step, Done):
                results[i] = step.value
                del pending[i]
            else:
                asks[i] = step
        joining = [i for i, a in asks.items() if a.columns]
        if len(joining) > 1:
            joined = [asks.pop(i) for i in joining]
            rows = yield _together(joined)
            for i, part in zip(joining, _apart(joined, rows[0]), strict=True):
                replies[i] = part
        for i, ask in asks.items():
            replies[i] = yield ask
    return results


_Result = TypeVar("_Result")
_Steps = Generator[_Ask, list[dict[str, Any]], _Result]
"""A read written once as steps: the sync and the async method drive the same steps."""


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
        try:
            import neo4j
        except ImportError as exc:
            raise missing_dependency("neo4j", "neo4j") from exc
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        self._neo4j = neo4j
        self.uri = uri
        self.database = database
        self.batch_size = batch_size
        self.fuzzy_cutoff = fuzzy_cutoff
        self.fuzzy_candidates = fuzzy_candidates
        self.vector_dimensions = vector_dimensions
        self.reads = 0
        """Read statements run so far (each one read transaction: one round trip)."""
        self._count_lock = threading.Lock()
        settings: dict[str, Any] = {
            "auth": (user, password),
            "max_transaction_retry_time": retry_seconds,
            "connection_timeout": connection_timeout,
            "connection_acquisition_timeout": connection_timeout,
        }
        # the async driver is opened with the same settings at the first async read
        self._async_settings = settings if driver is None and async_driver else None
        self._aio: _AsyncDriverLoop | None = None
        self._closed = False
        self._aio_lock = threading.Lock()
        self._driver = driver or neo4j.GraphDatabase.driver(uri, **settings)
        try:
            self._call(self._driver.verify_connectivity)
            self.ensure_schema()
        except BaseException:
            if driver is None:
                self._driver.close()
            raise

    # -- plumbing -------------------------------------------------------------------------------
    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            mapped = self._translated(exc)
            if mapped is None:
                raise
            raise mapped from exc

    def _translated(self, exc: Exception) -> Exception | None:
        """The semrag error for a driver's exception (``None``: not the driver's)."""
        exc_mod = self._neo4j.exceptions
        if isinstance(exc, exc_mod.AuthError):
            return StoreUnavailableError(
                f"Neo4j at {self.uri} refused the credentials: {exc.message}"
            )
        if isinstance(exc, exc_mod.ServiceUnavailable | exc_mod.SessionExpired | OSError):
            return StoreUnavailableError(f"Neo4j at {self.uri} is unavailable: {exc}")
        if isinstance(exc, exc_mod.DriverError):
            return StoreUnavailableError(f"Neo4j driver error at {self.uri}: {exc}")
        if isinstance(exc, exc_mod.Neo4jError):
            return StoreError(f"Neo4j rejected a statement: {exc.code}: {exc.message}")
        return None

    def _transact(self, work: Callable[[Any], Any], *, write: bool) -> Any:
        """Run ``work(tx)`` in one managed transaction (retried by the driver)."""

        def run() -> Any:
            with self._driver.session(database=self.database) as session:
                execute = session.execute_write if write else session.execute_read
                return execute(work)

        return self._call(run)

    def _read(self, query: str, **params: Any) -> list[dict[str, Any]]:
        """One read statement, through the driver's ``execute_query``.

        Retried like a transaction function and routed to any member of a cluster, it is
        one network round trip where a session's explicit transaction takes two.
        """
        with self._count_lock:
            self.reads += 1

        def run() -> list[dict[str, Any]]:
            records, _, _ = self._driver.execute_query(
                query,
                params,
                routing_=self._neo4j.RoutingControl.READ,
                database_=self.database,
            )
            return _values(records)

        return self._call(run)

    def _run(self, steps: _Steps[_Result]) -> _Result:
        """Drive read steps with blocking reads."""
        return drive(steps, lambda ask: self._read(ask.query, **ask.params))

    async def _arun(self, steps: _Steps[_Result]) -> _Result:
        """Drive read steps with the async driver (the steps run in worker threads)."""
        return await adrive(steps, lambda ask: self._aread(ask.query, **ask.params))

    def read_steps(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, _Steps[Any]] | None:
        """This store and the steps of its read ``name`` (``lookup``, ``expand``, ...).

        For :class:`semrag._steps.Together`: reads on one store run at once
        (:meth:`run_together`). ``None`` for a method that is not a read.
        """
        steps = getattr(self, f"_{name}_steps", None)
        return None if steps is None else (self, steps(*args, **kwargs))

    def run_together(self, steps: Sequence[_Steps[Any]]) -> list[Any]:
        """Reads that do not depend on each other, in one round trip per step they take.

        Each round, the statements the reads ask for run as one statement (each in a
        subquery of its own); the results are each read's own.
        """
        return self._run(_lockstep(steps))

    async def arun_together(self, steps: Sequence[_Steps[Any]]) -> list[Any]:
        """Async twin of :meth:`run_together`, on the async driver."""
        return await self._arun(_lockstep(steps))

    async def _aread(self, query: str, **params: Any) -> list[dict[str, Any]]:
        """Async twin of :meth:`_read`, on the async driver (see the module doc).

        Cancelling the caller cancels the read on the I/O loop.
        """
        if self._async_settings is None:  # async_driver=False, or a driver given: sync
            return await asyncio.to_thread(self._read, query, **params)
        with self._count_lock:
            self.reads += 1
        aio = self._async_loop(self._async_settings)
        try:
            return await asyncio.wrap_future(aio.submit(aio.read(query, params)))
        except Exception as exc:
            mapped = self._translated(exc)
            if mapped is None:
                raise
            raise mapped from exc

    def _async_loop(self, settings: Mapping[str, Any]) -> _AsyncDriverLoop:
        with self._aio_lock:
            if self._closed:
                raise StoreUnavailableError(f"the store for {self.uri} is closed")
            if self._aio is None:
                self._aio = _AsyncDriverLoop(
                    lambda: self._neo4j.AsyncGraphDatabase.driver(self.uri, **settings),
                    self._neo4j.RoutingControl.READ,
                    self.database,
                )
            return self._aio

    def _write(self, query: str, **params: Any) -> list[dict[str, Any]]:
        return self._transact(lambda tx: [r.data() for r in tx.run(query, params)], write=True)

    def _write_batches(self, query: str, rows: Sequence[Any]) -> None:
        for i in range(0, len(rows), self.batch_size):
            self._write(query, rows=rows[i : i + self.batch_size])

    def ensure_schema(self) -> None:
        """Create the constraints and indexes if they are missing (idempotent).

        Entities written before the name-token index existed get their tokens here, and
        those written before name vectors were stored get the ``SemragUnembedded`` label.
        """
        for statement in _SCHEMA:
            self._write(statement)
        self._read("CALL db.awaitIndexes(300)")  # a new index is searched once it is online
        while ids := [r["id"] for r in self._read(_UNTOKENIZED, limit=self.batch_size)]:
            self._write(_SET_TOKENS, rows=[{"id": i, "tokens": _tokens_text(i)} for i in ids])
        while self._write(_UNLABELLED, limit=self.batch_size)[0]["n"]:
            pass
        if self.vector_dimensions:
            self._write(_VECTOR_INDEX, dim=int(self.vector_dimensions))

    def close(self) -> None:
        """Close the driver (and the async driver and its I/O loop, if started)."""
        with self._aio_lock:
            aio, self._aio, self._closed = self._aio, None, True
        try:
            if aio is not None:
                aio.close()
        finally:
            self._driver.close()

    def __enter__(self) -> Neo4jGraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes ---------------------------------------------------------------------------------
    def upsert(
        self,
        entities: Iterable[Entity] = (),
        relations: Iterable[Relation] = (),
        mentions: Iterable[Mention] = (),
        *,
        entity_vectors: Any = None,
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
            found = self._read(_COUNT_KNOWN, ids=needed)[0]["n"]
            if found != len(needed):
                raise ConfigError(f"relations or mentions name unknown entities among {needed[:5]}")
        vector_rows = self._entity_vector_rows(entities, entity_vectors)
        self._write_batches(_UPSERT_ENTITIES, _entity_rows(entities))
        self._write_batches(_UPSERT_RELATIONS, _relation_rows(relations))
        self._write_batches(_UPSERT_MENTIONS, _mention_rows(mentions))
        self._write(_STAMP)
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
        entity_vectors: Any = None,
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
        entity_rows = _entity_rows(entities)
        vector_rows = self._entity_vector_rows(entities, entity_vectors)

        def work(tx: Any) -> None:
            tx.run(_DROP_CHUNKS, keys=list(drop_chunks)).consume()
            tx.run(
                _DROP_MENTIONS,
                rows=[{"entity_id": e, "key": k} for e, k in drop_mentions],
            ).consume()
            tx.run(
                _DROP_RELATIONS,
                rows=[{"source": a, "type": t, "target": b} for a, t, b in drop_relations],
            ).consume()
            tx.run(_DROP_ENTITIES, ids=list(drop_entities)).consume()
            tx.run(_UPSERT_ENTITIES, rows=entity_rows).consume()
            tx.run(_UPSERT_RELATIONS, rows=_relation_rows(relations)).consume()
            tx.run(_UPSERT_MENTIONS, rows=_mention_rows(mentions)).consume()
            tx.run(_STAMP).consume()

        self._transact(work, write=True)
        self._write_entity_vectors(*vector_rows)

    def _entity_vector_rows(
        self, entities: Sequence[Entity], vectors: Any
    ) -> tuple[list[dict[str, Any]], int]:
        """Rows that set the entities' name vectors, and their dimension (checked)."""
        if vectors is None:
            return [], 0
        vecs = _vector_rows(vectors, len(entities), "entity_vectors", "entity")
        have = [r["dim"] for r in self._read(_ENTITY_INDEX_DIM)] if entities else []
        if have and int(have[0]) != vecs.shape[1]:
            raise ConfigError(
                f"entity name vectors of dimension {vecs.shape[1]}; the database's "
                f"semrag_entity_vectors index has {have[0]} (clear() the graph first)"
            )
        rows = [
            {"id": e.id, "embedding": _vector(v), "vec": _bytes(v)}
            for e, v in zip(entities, vecs, strict=True)
        ]
        return rows, int(vecs.shape[1])

    def _write_entity_vectors(self, rows: list[dict[str, Any]], dim: int) -> None:
        """Set the vectors, ``batch_size`` per transaction, in ``semrag_entity_vectors``.

        At least :data:`_BULK_VECTORS` of them (a whole graph) go in with the index
        dropped, and the index is built again over all of them: written batch by batch it
        would be searched segment by segment (measured: 31 ms a search over 31k names
        written in 1,000s, 8 ms once rebuilt). The dimension is recorded in the graph's
        state node, where a search reads it; it is unset while the index is rebuilt, so a
        reader meanwhile ranks the names in process.
        """
        if not rows:
            return
        bulk = len(rows) >= _BULK_VECTORS
        if bulk:
            self._write(_ENTITY_DIM_STATE, dim=None)
            self._write(_DROP_ENTITY_INDEX)
        else:
            self._write(_ENTITY_INDEX, dim=dim)  # IF NOT EXISTS
            self._read("CALL db.awaitIndexes(300)")
        self._write_batches(_SET_ENTITY_VECTORS, rows)
        if bulk:
            self._write(_ENTITY_INDEX, dim=dim)
            self._read("CALL db.awaitIndexes(300)")
        self._write(_ENTITY_DIM_STATE, dim=dim)

    def delete_document(self, doc_id: str) -> int:
        """Remove the document's chunks and mentions, then entities left unmentioned."""

        def work(tx: Any) -> int:
            n = tx.run(_COUNT_DOC_CHUNKS, doc_id=doc_id).single()["n"]
            ids = [r["id"] for r in tx.run(_DOC_ENTITIES, doc_id=doc_id)]
            tx.run(_DELETE_CHUNKS, doc_id=doc_id).consume()
            tx.run(_DELETE_ORPHANS, ids=ids).consume()
            tx.run(_STAMP).consume()
            return int(n)

        return self._transact(work, write=True)

    def write_communities(
        self, communities: Sequence[Community], *, report_vectors: Any = None
    ) -> None:
        """Replace the stored communities.

        ``report_vectors``: the unit vectors of their reports
        (:func:`~semrag.graph.communities.report_text`), one row per community, read back
        by :meth:`read_reports`.
        """
        communities = list(communities)
        vecs: list[bytes | None] = [None] * len(communities)
        if report_vectors is not None:
            arr = _vector_rows(report_vectors, len(communities), "report_vectors", "community")
            vecs = [_bytes(v) for v in arr]
        self._write(_DROP_COMMUNITIES)
        self._write_batches(
            _WRITE_COMMUNITIES,
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
        self._write(_STAMP)

    def change_stamp(self) -> str | None:
        """A token that changes with every write of the graph (``None`` for no graph).

        A process that serves queries keys what it derives from the graph (the entity and
        report vectors of :class:`~semrag.graph.KnowledgeGraph`) by it, so it sees the
        changes another process writes.
        """
        return self._run(self._stamp_steps())

    async def achange_stamp(self) -> str | None:
        """Async twin of :meth:`change_stamp`, on the async driver."""
        return await self._arun(self._stamp_steps())

    def _stamp_steps(self) -> _Steps[str | None]:
        rows = yield _Ask(_READ_STAMP, {})
        return rows[0]["stamp"] if rows else None

    def clear(self) -> None:
        """Delete semrag's nodes (entities, chunks, communities) from the database.

        The nodes go 10,000 at a time, each batch its own transaction (``CALL { ... } IN
        TRANSACTIONS``, Neo4j 5.23 or newer), so a large graph never needs one transaction
        that holds all of it. A failure halfway leaves part of the graph; clearing again
        finishes the work. The entity name vector index goes too (the next vectors written
        may have another dimension).
        """
        self._run_batched(_CLEAR)
        self._write(_DROP_ENTITY_INDEX)  # its vectors went with the entities

    def _run_batched(self, query: str) -> None:
        """Run a ``CALL { ... } IN TRANSACTIONS`` statement (it needs an implicit transaction)."""

        def run() -> None:
            with self._driver.session(database=self.database) as session:
                session.run(query).consume()

        self._call(run)

    def upsert_chunk_vectors(self, chunks: Sequence[ChunkRef], vectors: Any) -> None:
        """Store chunk embeddings for the vector index (needs ``vector_dimensions``)."""
        if not self.vector_dimensions:
            raise ConfigError("create the store with vector_dimensions=... to store vectors")
        rows = [
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
        self._write_batches(_SET_VECTORS, rows)

    def search_chunk_vectors(
        self, vector: Sequence[float], k: int = 10
    ) -> list[tuple[ChunkRef, float]]:
        """Nearest chunks by the vector index (cosine)."""
        if not self.vector_dimensions:
            raise ConfigError("create the store with vector_dimensions=... to search vectors")
        rows = self._read(_SEARCH_VECTORS, k=int(k), vector=[float(x) for x in vector])
        return [(ChunkRef(r["doc_id"], r["start"], r["end"]), float(r["score"])) for r in rows]

    # -- reads ------------------------------------------------------------------------------------
    @staticmethod
    def _entity(row: dict[str, Any]) -> Entity:
        return Entity(row["id"], row["name"] or "", row["type"] or "", row["description"] or "")

    @staticmethod
    def _relation(row: dict[str, Any]) -> Relation:
        return Relation(
            row["source"], row["target"], row["type"], row["evidence"] or "", float(row["weight"])
        )

    def get_entities(self, ids: Sequence[str]) -> list[Entity]:
        """The entities with these ids (absent ids skipped), in the order given."""
        return self._run(self._get_entities_steps(ids))

    def _get_entities_steps(self, ids: Sequence[str]) -> _Steps[list[Entity]]:
        found = {r["id"]: self._entity(r) for r in (yield _Ask(_GET, {"ids": list(ids)}))}
        return [found[i] for i in ids if i in found]

    def entities(self) -> list[Entity]:
        """Every entity (by id)."""
        return [self._entity(r) for r in self._read(_ALL_ENTITIES)]

    def relations(self) -> list[Relation]:
        """Every relation."""
        return [self._relation(r) for r in self._read(_ALL_RELATIONS)]

    def find_entities(
        self, names: Sequence[str], *, fuzzy: bool = True, limit: int = 10
    ) -> list[Entity]:
        """Exact key matches, then (``fuzzy``) entities sharing a name token, best first.

        The same meaning as the in-memory store (:mod:`semrag.graph.names`): the
        candidates come from the full-text index over each entity's name tokens
        (``semrag_entity_tokens``, whitespace analyser), at most
        :attr:`fuzzy_candidates` of them per name (the one bound the in-memory store does
        not have), and are scored in Python as there.
        """
        ids = rank_matches(
            names,
            exists=lambda keys: {e.id for e in self.get_entities(keys)},
            candidates=self._token_candidates,
            fuzzy=fuzzy,
            cutoff=self.fuzzy_cutoff,
            limit=limit,
        )
        return self.get_entities(ids)

    def _token_candidates(self, tokens: set[str]) -> list[str]:
        q = self._token_query(tokens)
        if not q:
            return []
        rows = self._read(_TOKEN_CANDIDATES, q=q, limit=int(self.fuzzy_candidates))
        return [r["id"] for r in rows]

    @staticmethod
    def _token_query(tokens: set[str]) -> str:
        """A Lucene query for any of these tokens, each searched as text ("" for none)."""
        escaped = (_LUCENE_SPECIAL.sub(r"\\\1", t) for t in sorted(tokens))
        return " OR ".join('"' + t + '"' for t in escaped)

    def lookup(
        self, names: Sequence[str], *, fuzzy_limit: int | Sequence[int] = 0
    ) -> list[list[str]]:
        """Each name's entity ids: its exact match alone, else its best fuzzy matches.

        One statement for all the names (their exact keys and their token candidates,
        at most :attr:`fuzzy_candidates` each), scored in Python as
        :func:`semrag.graph.names.best_matches` says, the meaning on every store.
        ``fuzzy_limit``: one limit for every name or one per name (0: exact only).
        """
        return self._run(self._lookup_steps(names, fuzzy_limit))

    async def alookup(
        self, names: Sequence[str], *, fuzzy_limit: int | Sequence[int] = 0
    ) -> list[list[str]]:
        """Async twin of :meth:`lookup`, on the async driver."""
        return await self._arun(self._lookup_steps(names, fuzzy_limit))

    def _lookup_steps(
        self, names: Sequence[str], fuzzy_limit: int | Sequence[int]
    ) -> _Steps[list[list[str]]]:
        limits = per_name(names, fuzzy_limit)
        keys = [entity_key(n) for n in names]
        rows = [
            {"i": i, "key": key, "q": self._token_query(lookup_tokens(key)) if limit else ""}
            for i, (key, limit) in enumerate(zip(keys, limits, strict=True))
            if key
        ]
        out: list[list[str]] = [[] for _ in names]
        if not rows:
            return out
        params = {"rows": rows, "limit": int(self.fuzzy_candidates)}
        for r in (yield _Ask(_LOOKUP, params, _LOOKUP_COLUMNS)):
            i = r["i"]
            out[i] = best_matches(
                keys[i],
                exact=r["exact"],
                candidates=r["candidates"],
                cutoff=self.fuzzy_cutoff,
                limit=limits[i],
            )
        return out

    def expand(
        self,
        entity_ids: Sequence[str],
        *,
        depth: int = 1,
        limit: int = 200,
        max_chunks: int | None = None,
    ) -> tuple[Subgraph, dict[str, list[ChunkRef]]]:
        """:meth:`neighbourhood` and :meth:`chunks_for` of its entities, at once.

        One statement up to depth 2 (the hops, the relations among the entities and
        their chunks); deeper searches go hop by hop. Entities mentioned in more than
        ``max_chunks`` chunks are left out of the second dict (up to depth 2 their
        chunks are counted, not read).
        """
        return self._run(self._expand_steps(entity_ids, depth, limit, max_chunks))

    async def aexpand(
        self,
        entity_ids: Sequence[str],
        *,
        depth: int = 1,
        limit: int = 200,
        max_chunks: int | None = None,
    ) -> tuple[Subgraph, dict[str, list[ChunkRef]]]:
        """Async twin of :meth:`expand`, on the async driver."""
        return await self._arun(self._expand_steps(entity_ids, depth, limit, max_chunks))

    def _expand_steps(
        self, entity_ids: Sequence[str], depth: int, limit: int, max_chunks: int | None
    ) -> _Steps[tuple[Subgraph, dict[str, list[ChunkRef]]]]:
        if depth > _EXPAND_HOPS:
            sub = yield from self._neighbourhood_steps(entity_ids, depth, limit)
            refs = yield from self._chunks_for_steps(list(sub.hops))
            if max_chunks is not None:
                refs = {e: r for e, r in refs.items() if len(r) <= max_chunks}
            return sub, refs
        ids = list(dict.fromkeys(entity_ids))
        cap = None if max_chunks is None else int(max_chunks)
        params = {"ids": ids, "limit": int(limit), "max_chunks": cap}
        row = (yield _Ask(_EXPAND[depth], params))[0]
        # lists, not maps: fewer keys to decode in a large neighbourhood
        entities = [
            Entity(i, name or "", kind or "", d or "") for i, name, kind, d in row["entities"]
        ]
        hops: dict[str, int] = {}
        at = 0
        for hop, size in enumerate(row["sizes"]):
            for e in entities[at : at + size]:
                hops[e.id] = hop
            at += size
        crowded = set(row["crowded"])
        refs: dict[str, list[ChunkRef]] = {e.id: [] for e in entities if e.id not in crowded}
        for entity, doc_id, start, end in row["refs"]:
            refs[entity].append(ChunkRef(doc_id, start, end))
        relations = [Relation(a, b, t, ev or "", float(w)) for a, b, t, ev, w in row["relations"]]
        return Subgraph(entities, relations, hops), refs

    def neighbourhood(
        self, entity_ids: Sequence[str], *, depth: int = 1, limit: int = 200
    ) -> Subgraph:
        """Entities up to ``depth`` hops away (both directions) and the relations among them.

        Breadth-first; at most ``limit`` entities.
        """
        return self._run(self._neighbourhood_steps(entity_ids, depth, limit))

    def _neighbourhood_steps(
        self, entity_ids: Sequence[str], depth: int, limit: int
    ) -> _Steps[Subgraph]:
        got = yield from self._get_entities_steps(list(dict.fromkeys(entity_ids)))
        seeds = [e.id for e in got]
        hops = {e: 0 for e in seeds}
        frontier = list(seeds)
        for hop in range(1, depth + 1):
            if not frontier or len(hops) >= limit:
                break
            nxt = []
            # a row is a new id or one of the len(hops) seen: limit rows give the same result
            for row in (yield _Ask(_NEIGHBOURS, {"ids": frontier, "limit": int(limit)})):
                if row["id"] not in hops and len(hops) < limit:
                    hops[row["id"]] = hop
                    nxt.append(row["id"])
            frontier = nxt
        ids = list(hops)
        rels = [self._relation(r) for r in (yield _Ask(_RELATIONS_AMONG, {"ids": ids}))]
        return Subgraph((yield from self._get_entities_steps(ids)), rels, hops)

    def chunks_for(self, entity_ids: Sequence[str]) -> dict[str, list[ChunkRef]]:
        """Chunks mentioning each entity, in document order (one statement)."""
        return self._run(self._chunks_for_steps(entity_ids))

    async def achunks_for(self, entity_ids: Sequence[str]) -> dict[str, list[ChunkRef]]:
        """Async twin of :meth:`chunks_for`, on the async driver."""
        return await self._arun(self._chunks_for_steps(entity_ids))

    def _chunks_for_steps(self, entity_ids: Sequence[str]) -> _Steps[dict[str, list[ChunkRef]]]:
        found: dict[str, list[ChunkRef]] = {}
        for r in (yield _Ask(_CHUNKS_FOR, {"ids": list(dict.fromkeys(entity_ids))})):
            refs = found.setdefault(r["entity"], [])
            if r["doc_id"] is not None:
                refs.append(ChunkRef(r["doc_id"], r["start"], r["end"]))
        return {e: found[e] for e in entity_ids if e in found}

    def search_entities(
        self, vector: Any, n: int, *, keep: int | None = None, most: int = 1024
    ) -> tuple[list[Entity], np.ndarray, list[Entity]] | None:
        """The ``n`` entities whose name vectors are nearest ``vector``, with those vectors.

        One read of the vector index ``semrag_entity_vectors`` (cosine, approximate: the
        caller ranks the candidates exactly). ``keep``: only the best ``keep`` of the ``n``
        (by the index's own exact scores) travel, with their vectors. The vectors are those
        written with the entities (``entity_vectors=`` of :meth:`update` / :meth:`upsert`;
        :class:`~semrag.graph.KnowledgeGraph` writes them when it has an embedder), so a
        process that serves queries embeds no entity name.

        Returns:
            ``(entities, vectors, bare)``: the candidates, their vectors, and every entity
            with no stored vector (written without one, or whose vector is still being
            written), for the caller to embed; ``None`` when more than ``most`` entities
            have none.
        """
        return self._run(self._search_entities_steps(vector, n, keep, most))

    async def asearch_entities(
        self, vector: Any, n: int, *, keep: int | None = None, most: int = 1024
    ) -> tuple[list[Entity], np.ndarray, list[Entity]] | None:
        """Async twin of :meth:`search_entities`, on the async driver."""
        return await self._arun(self._search_entities_steps(vector, n, keep, most))

    def _search_entities_steps(
        self, vector: Any, n: int, keep: int | None, most: int
    ) -> _Steps[tuple[list[Entity], np.ndarray, list[Entity]] | None]:
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        params = {
            "n": int(n),
            "keep": int(n if keep is None else min(keep, n)),
            "most": int(most),
            "vector": _vector(q),
        }
        row = (yield _Ask(_SEARCH_ENTITIES, params))[0]
        if row["unembedded"] > most:
            return None
        if row["entities"] > row["unembedded"] and row["dim"] is None:
            return None  # vectors whose index is being built
        if row["entities"] > row["unembedded"] and row["dim"] != len(q):
            raise ConfigError(
                f"query of dimension {len(q)}; the entity name vectors have {row['dim']}"
            )
        found = row["found"] or []
        ents = [Entity(i, name or "", kind or "", d or "") for i, name, kind, d, _ in found]
        vecs = _unbytes(b"".join(r[4] for r in found)).reshape(len(found), len(q))
        bare = [Entity(i, name or "", kind or "", d or "") for i, name, kind, d in row["bare"]]
        return ents, vecs, bare

    def read_communities(self, level: int | None = None) -> list[Community]:
        """Stored communities (of one level)."""
        return self.read_reports(level)[0]

    def read_reports(self, level: int | None = None) -> tuple[list[Community], np.ndarray | None]:
        """Stored communities (of one level) and their reports' vectors, in one read.

        The vectors are those written with them (``report_vectors=`` of
        :meth:`write_communities`); ``None`` when some community has none.
        """
        rows = self._read(_READ_COMMUNITIES, level=level)
        comms = [
            Community(
                r["id"],
                int(r["level"]),
                tuple(sorted(r["members"])),
                r["parent"],
                r["summary"] or "",
                r["title"] or "",
                float(r["rank"] or 0.0),
            )
            for r in rows
        ]
        if not rows or any(r["vec"] is None for r in rows):
            return comms, None
        return comms, _unbytes(b"".join(r["vec"] for r in rows)).reshape(len(rows), -1)

    def counts(self) -> dict[str, int]:
        """Numbers of entities, relations, chunks, mentions and communities."""
        return {k: int(v) for k, v in self._read(_COUNTS)[0].items()}

    def __repr__(self) -> str:
        return f"Neo4jGraphStore(uri={self.uri!r}, database={self.database!r})"


def _values(records: Iterable[Any]) -> list[dict[str, Any]]:
    """Each record's values as they came.

    ``Record.data()`` walks every list and byte string (25 times slower on vectors); no
    statement here returns a node or relationship.
    """
    return [dict(r.items()) for r in records]


class _AsyncDriverLoop:
    """An event loop in a daemon thread that owns one ``neo4j.AsyncDriver``.

    An async driver (its connections and locks) belongs to the loop it runs on; this
    one's loop is its own, so coroutines from any caller's loop are submitted to it
    (:meth:`submit`) and awaited there as futures.
    """

    def __init__(self, make: Callable[[], Any], routing: Any, database: str | None) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="semrag-neo4j-io", daemon=True
        )
        self._thread.start()
        self._routing, self._database = routing, database

        async def open_driver() -> Any:
            return make()

        self._driver = self.submit(open_driver()).result()

    def submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        """Run ``coro`` on the I/O loop."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    async def read(self, query: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """One read statement (runs on the I/O loop)."""
        records, _, _ = await self._driver.execute_query(
            query, params, routing_=self._routing, database_=self._database
        )
        return _values(records)

    def close(self) -> None:
        """Close the driver, stop the loop and join its thread."""
        try:
            self.submit(self._driver.close()).result()
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()


def _tokens_text(key: str) -> str:
    """An entity's name tokens as the whitespace-analysed text of its ``tokens`` property."""
    return " ".join(sorted(name_tokens(key)))


def _vector(v: Any) -> list[float]:
    """A vector as the list of floats a vector index takes (its float32 values)."""
    return np.asarray(v, dtype=np.float32).reshape(-1).astype(np.float64).tolist()


def _bytes(v: Any) -> bytes:
    """A vector as float32 bytes: what reads fetch (exact, and far cheaper than a list)."""
    return np.asarray(v, dtype="<f4").reshape(-1).tobytes()


def _unbytes(b: bytes) -> np.ndarray:
    return np.frombuffer(b, dtype="<f4")


def _vector_rows(vectors: Any, n: int, name: str, per: str) -> np.ndarray:
    """``vectors`` as float32 rows, one per record (``n``), all finite (else ConfigError)."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim != 2 or len(arr) != n:
        raise ConfigError(f"{name} must hold one row per {per} ({n}), got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ConfigError(f"{name} hold NaN or infinite values")
    return arr


def _entity_rows(entities: Iterable[Entity]) -> list[dict[str, Any]]:
    return [
        {
            "id": e.id,
            "name": e.name,
            "type": e.type,
            "description": e.description,
            "tokens": _tokens_text(e.id),
        }
        for e in entities
    ]


def _relation_rows(relations: Iterable[Relation]) -> list[dict[str, Any]]:
    return [
        {
            "source": r.source,
            "target": r.target,
            "type": r.type,
            "evidence": r.evidence,
            "weight": float(r.weight),
        }
        for r in relations
    ]


def _mention_rows(mentions: Iterable[Mention]) -> list[dict[str, Any]]:
    return [
        {
            "entity_id": m.entity_id,
            "key": m.chunk.key,
            "doc_id": m.chunk.doc_id,
            "start": m.chunk.start,
            "end": m.chunk.end,
            "count": m.count,
        }
        for m in mentions
    ]


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
        store._write(_DENSE_SCHEMA)
        have = [r["dim"] for r in store._read(_DENSE_DIM)]
        if have and int(have[0]) != self.dim:
            raise ConfigError(
                f"the database's semrag_dense_vectors index has dimension {have[0]}, "
                f"not {self.dim}: use a database of its own for this index (database=...)"
            )
        store._write(_DENSE_INDEX, dim=self.dim)
        store._read("CALL db.awaitIndexes(300)")

    def upsert(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        vectors: Any,
        metadatas: Sequence[Mapping[str, Any]],
    ) -> None:
        """Store (or replace) these entries, ``store.batch_size`` per transaction."""
        rows = []
        for i, text, vector, meta in zip(ids, texts, vectors, metadatas, strict=True):
            values = [float(x) for x in vector]
            if len(values) != self.dim:
                raise ConfigError(f"vector of dimension {len(values)}; the index has {self.dim}")
            rows.append(
                {"id": str(i), "text": text, "doc_id": meta.get("semrag_doc_id"), "vector": values}
            )
        self.store._write_batches(_DENSE_UPSERT, rows)

    def delete(self, ids: Sequence[str]) -> None:
        """Remove these entries (absent ids are ignored)."""
        self.store._write_batches(_DENSE_DELETE, [str(i) for i in ids])

    def search(self, vector: Any, k: int) -> list[str]:
        """Candidate ids near ``vector``, best first: ``oversample * k`` (one read).

        At least ``k`` and ``min_candidates`` of them; the caller scores them exactly.
        """
        values = [float(x) for x in vector]
        if len(values) != self.dim:
            raise ConfigError(f"query of dimension {len(values)}; the index has {self.dim}")
        n = max(int(k), self.oversample * int(k), self.min_candidates)
        return [r["id"] for r in self.store._read(_DENSE_SEARCH, k=n, vector=values)]

    def clear(self) -> None:
        """Delete every entry, 10,000 per transaction."""
        self.store._run_batched(_DENSE_CLEAR)

    def __repr__(self) -> str:
        return f"Neo4jVectorClient({self.store!r}, dim={self.dim}, oversample={self.oversample})"
