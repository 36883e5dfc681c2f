"""The knowledge graph's Cypher: every statement a constant with ``$parameters``."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag.errors import ConfigError
from semrag.graph.names import name_tokens
from semrag.graph.types import (
    Entity,
    Mention,
    Relation,
)

SCHEMA = (
    "CREATE CONSTRAINT semrag_entity_id IF NOT EXISTS FOR (e:Entity) REQUIRE e.id IS UNIQUE",
    "CREATE CONSTRAINT semrag_chunk_key IF NOT EXISTS FOR (c:Chunk) REQUIRE c.key IS UNIQUE",
    "CREATE CONSTRAINT semrag_community_id IF NOT EXISTS FOR (c:Community) REQUIRE c.id IS UNIQUE",
    "CREATE INDEX semrag_chunk_doc IF NOT EXISTS FOR (c:Chunk) ON (c.doc_id)",
    "CREATE FULLTEXT INDEX semrag_entity_names IF NOT EXISTS FOR (e:Entity) ON EACH [e.name]",
    # the name tokens of each entity's key, as the in-memory token index holds them
    "CREATE FULLTEXT INDEX semrag_entity_tokens IF NOT EXISTS FOR (e:Entity) ON EACH [e.tokens] "
    "OPTIONS {indexConfig: {`fulltext.analyzer`: 'whitespace'}}",
)
VECTOR_INDEX = (
    "CREATE VECTOR INDEX semrag_chunk_vectors IF NOT EXISTS FOR (c:Chunk) ON (c.embedding) "
    "OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine'}}"
)
# An entity is written without its name's vector (``vec`` float32 bytes, ``embedding`` for
# the vector index) and labelled SemragUnembedded until the vector is written (after the
# change's transaction, in batches: vectors would make a large change's transaction many
# times larger), so a reader knows which entities the vector index cannot answer for.
UPSERT_ENTITIES = (
    "UNWIND $rows AS row MERGE (e:Entity {id: row.id}) "
    "SET e.name = row.name, e.type = row.type, e.description = row.description, "
    "e.tokens = row.tokens, e:SemragUnembedded REMOVE e.embedding, e.vec"
)
SET_ENTITY_VECTORS = (
    "UNWIND $rows AS row MATCH (e:Entity {id: row.id}) "
    "SET e.embedding = row.embedding, e.vec = row.vec REMOVE e:SemragUnembedded"
)
UNLABELLED = (  # entities written before the label existed
    "MATCH (e:Entity) WHERE e.vec IS NULL AND NOT e:SemragUnembedded "
    "WITH e LIMIT $limit SET e:SemragUnembedded RETURN count(e) AS n"
)
ENTITY_INDEX = (
    "CREATE VECTOR INDEX semrag_entity_vectors IF NOT EXISTS FOR (e:Entity) ON (e.embedding) "
    "OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine', "
    "`vector.quantization.enabled`: false}}"
)
ENTITY_INDEX_DIM = (
    "SHOW VECTOR INDEXES YIELD name, options WHERE name = 'semrag_entity_vectors' "
    "RETURN options.indexConfig['vector.dimensions'] AS dim"
)
BULK_VECTORS = 5000
"""Entity vectors written at once from which their index is rebuilt (see
``Neo4jGraphStore._write_entity_vectors``)."""
ENTITY_DIM_STATE = "MERGE (s:SemragGraphState {name: 'graph'}) SET s.entity_dim = $dim"
DROP_ENTITY_INDEX = "DROP INDEX semrag_entity_vectors IF EXISTS"
# The nearest entity names with vectors of the query's dimension, and the entities with no
# vector, when at most $most of them (else only the counts and the dimension).
SEARCH_ENTITIES = (
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
UPSERT_RELATIONS = (
    "UNWIND $rows AS row MATCH (a:Entity {id: row.source}) MATCH (b:Entity {id: row.target}) "
    "MERGE (a)-[r:RELATES {type: row.type}]->(b) "
    "SET r.evidence = row.evidence, r.weight = row.weight"
)
UPSERT_MENTIONS = (
    "UNWIND $rows AS row MATCH (e:Entity {id: row.entity_id}) "
    "MERGE (c:Chunk {key: row.key}) "
    "SET c.doc_id = row.doc_id, c.start = row.start, c.end = row.end "
    "MERGE (e)-[m:MENTIONED_IN]->(c) SET m.count = row.count"
)
DROP_ENTITIES = "UNWIND $ids AS id MATCH (e:Entity {id: id}) DETACH DELETE e"
DROP_RELATIONS = (
    "UNWIND $rows AS row MATCH (:Entity {id: row.source})-[r:RELATES {type: row.type}]->"
    "(:Entity {id: row.target}) DELETE r"
)
DROP_MENTIONS = (
    "UNWIND $rows AS row MATCH (:Entity {id: row.entity_id})-[m:MENTIONED_IN]->"
    "(:Chunk {key: row.key}) DELETE m"
)
DROP_CHUNKS = "UNWIND $keys AS key MATCH (c:Chunk {key: key}) DETACH DELETE c"
COUNT_KNOWN = "UNWIND $ids AS id MATCH (e:Entity {id: id}) RETURN count(e) AS n"
GET = (
    "UNWIND $ids AS id MATCH (e:Entity {id: id}) "
    "RETURN e.id AS id, e.name AS name, e.type AS type, e.description AS description"
)
ALL_ENTITIES = (
    "MATCH (e:Entity) RETURN e.id AS id, e.name AS name, e.type AS type, "
    "e.description AS description ORDER BY e.id"
)
ALL_RELATIONS = (
    "MATCH (a:Entity)-[r:RELATES]->(b:Entity) RETURN a.id AS source, b.id AS target, "
    "r.type AS type, r.evidence AS evidence, r.weight AS weight"
)
TOKEN_CANDIDATES = (  # entities sharing a lookup token (bounded: see find_entities)
    "CALL db.index.fulltext.queryNodes('semrag_entity_tokens', $q, {limit: $limit}) "
    "YIELD node RETURN node.id AS id"
)
UNTOKENIZED = "MATCH (e:Entity) WHERE e.tokens IS NULL RETURN e.id AS id LIMIT $limit"
SET_TOKENS = "UNWIND $rows AS row MATCH (e:Entity {id: row.id}) SET e.tokens = row.tokens"
NEIGHBOURS = (  # bounded: the caller keeps at most $limit ids, so no more rows can count
    "UNWIND $ids AS id MATCH (e:Entity {id: id})-[:RELATES]-(n:Entity) "
    "RETURN DISTINCT n.id AS id ORDER BY id LIMIT $limit"
)
RELATIONS_AMONG = (
    "MATCH (a:Entity)-[r:RELATES]->(b:Entity) WHERE a.id IN $ids AND b.id IN $ids "
    "RETURN a.id AS source, b.id AS target, r.type AS type, r.evidence AS evidence, "
    "r.weight AS weight"
)
CHUNKS_FOR = (  # an entity without chunks gives one row of nulls
    "UNWIND $ids AS id MATCH (e:Entity {id: id}) OPTIONAL MATCH (e)-[:MENTIONED_IN]->(c:Chunk) "
    "RETURN e.id AS entity, c.doc_id AS doc_id, c.start AS start, c.end AS end "
    "ORDER BY entity, doc_id, start"
)
DOC_ENTITIES = (
    "MATCH (e:Entity)-[:MENTIONED_IN]->(:Chunk {doc_id: $doc_id}) RETURN DISTINCT e.id AS id"
)
DELETE_CHUNKS = "MATCH (c:Chunk {doc_id: $doc_id}) DETACH DELETE c"
DELETE_ORPHANS = (
    "UNWIND $ids AS id MATCH (e:Entity {id: id}) WHERE NOT (e)-[:MENTIONED_IN]->() DETACH DELETE e"
)
COUNT_DOC_CHUNKS = "MATCH (c:Chunk {doc_id: $doc_id}) RETURN count(c) AS n"
DROP_COMMUNITIES = "MATCH (c:Community) DETACH DELETE c"
WRITE_COMMUNITIES = (
    "UNWIND $rows AS row MERGE (c:Community {id: row.id}) "
    "SET c.level = row.level, c.title = row.title, c.summary = row.summary, "
    "c.rank = row.rank, c.parent = row.parent, c.vec = row.vec "
    "WITH c, row UNWIND row.entity_ids AS eid MATCH (e:Entity {id: eid}) "
    "MERGE (e)-[:IN_COMMUNITY]->(c)"
)
READ_COMMUNITIES = (
    "MATCH (c:Community) WHERE $level IS NULL OR c.level = $level "
    "OPTIONAL MATCH (e:Entity)-[:IN_COMMUNITY]->(c) "
    "WITH c, collect(e.id) AS members ORDER BY c.level, c.id "
    "RETURN c.id AS id, c.level AS level, c.title AS title, c.summary AS summary, "
    "c.rank AS rank, c.parent AS parent, members, c.vec AS vec"
)
COUNTS = (
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
STAMP = "MERGE (s:SemragGraphState {name: 'graph'}) SET s.stamp = randomUUID()"
READ_STAMP = "OPTIONAL MATCH (s:SemragGraphState {name: 'graph'}) RETURN s.stamp AS stamp"
CLEAR = (  # in batches of its own transactions: a large graph never needs one huge one
    "MATCH (n) WHERE n:Entity OR n:Chunk OR n:Community OR n:SemragGraphState "
    "CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS"
)
SET_VECTORS = (
    "UNWIND $rows AS row MERGE (c:Chunk {key: row.key}) "
    "SET c.doc_id = row.doc_id, c.start = row.start, c.end = row.end, c.embedding = row.vector"
)
SEARCH_VECTORS = (
    "CALL db.index.vector.queryNodes('semrag_chunk_vectors', $k, $vector) YIELD node, score "
    "RETURN node.doc_id AS doc_id, node.start AS start, node.end AS end, score"
)
# One statement for every name of a query: its exact entity, else its token candidates.
LOOKUP = (
    "UNWIND $rows AS row "
    "OPTIONAL MATCH (x:Entity {id: row.key}) "
    "CALL (row, x) { "
    "  WITH row, x WHERE x IS NULL AND row.q <> '' "
    "  CALL db.index.fulltext.queryNodes('semrag_entity_tokens', row.q, {limit: $limit}) "
    "  YIELD node RETURN collect(node.id) AS candidates "
    "} "
    "RETURN row.i AS i, x IS NOT NULL AS exact, candidates"
)
LOOKUP_COLUMNS = ("i", "exact", "candidates")
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
EXPAND_HOPS = 2  # deeper searches go hop by hop (:meth:`Neo4jGraphStore.neighbourhood`)
EXPAND = {depth: _EXPAND_HEAD + _HOP * depth + _EXPAND_TAIL for depth in range(EXPAND_HOPS + 1)}
# The dense channel's entries (Neo4jVectorClient): their own label, apart from the graph.
DENSE_SCHEMA = (
    "CREATE CONSTRAINT semrag_vector_id IF NOT EXISTS FOR (v:SemragVector) REQUIRE v.id IS UNIQUE"
)
DENSE_INDEX = (
    "CREATE VECTOR INDEX semrag_dense_vectors IF NOT EXISTS FOR (v:SemragVector) "
    "ON (v.embedding) OPTIONS {indexConfig: {`vector.dimensions`: $dim, "
    "`vector.similarity_function`: 'cosine', `vector.quantization.enabled`: false}}"
)
DENSE_DIM = (
    "SHOW VECTOR INDEXES YIELD name, options WHERE name = 'semrag_dense_vectors' "
    "RETURN options.indexConfig['vector.dimensions'] AS dim"
)
DENSE_UPSERT = (
    "UNWIND $rows AS row MERGE (v:SemragVector {id: row.id}) "
    "SET v.text = row.text, v.doc_id = row.doc_id, v.embedding = row.vector"
)
DENSE_DELETE = "UNWIND $rows AS id MATCH (v:SemragVector {id: id}) DETACH DELETE v"
DENSE_SEARCH = (
    "CALL db.index.vector.queryNodes('semrag_dense_vectors', $k, $vector) YIELD node, score "
    "RETURN node.id AS id ORDER BY score DESC, id"
)
DENSE_CLEAR = "MATCH (v:SemragVector) CALL (v) { DETACH DELETE v } IN TRANSACTIONS OF 10000 ROWS"
# Lucene's query syntax: these characters are escaped so a name is searched as text.
LUCENE_SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')


def tokens_text(key: str) -> str:
    """An entity's name tokens as the whitespace-analysed text of its ``tokens`` property."""
    return " ".join(sorted(name_tokens(key)))


def as_floats(v: Any) -> list[float]:
    """A vector as the list of floats a vector index takes (its float32 values)."""
    return np.asarray(v, dtype=np.float32).reshape(-1).astype(np.float64).tolist()


def to_bytes(v: Any) -> bytes:
    """A vector as float32 bytes: what reads fetch (exact, and far cheaper than a list)."""
    return np.asarray(v, dtype="<f4").reshape(-1).tobytes()


def from_bytes(b: bytes) -> np.ndarray:
    return np.frombuffer(b, dtype="<f4")


def checked_vectors(vectors: npt.ArrayLike, n: int, name: str, per: str) -> np.ndarray:
    """``vectors`` as float32 rows, one per record (``n``), all finite (else ConfigError)."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim != 2 or len(arr) != n:
        raise ConfigError(f"{name} must hold one row per {per} ({n}), got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ConfigError(f"{name} hold NaN or infinite values")
    return arr


def entity_params(entities: Iterable[Entity]) -> list[dict[str, Any]]:
    return [
        {
            "id": e.id,
            "name": e.name,
            "type": e.type,
            "description": e.description,
            "tokens": tokens_text(e.id),
        }
        for e in entities
    ]


def relation_params(relations: Iterable[Relation]) -> list[dict[str, Any]]:
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


def mention_params(mentions: Iterable[Mention]) -> list[dict[str, Any]]:
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
