"""The corpus of an index in Neo4j: written by the index's changes, read with no state in process.

Two halves, one schema:

* :class:`Neo4jIndexStore` follows a :class:`~semrag.SemanticIndex` (the writer process) and
  writes every :class:`~semrag.index.change.Change` of it to Neo4j in **one transaction**
  (batched ``UNWIND``; a change of more than ``max_transaction_rows`` rows goes in steps):
  documents with their text and metadata, sentences with offsets and vectors, chunks with
  text, offsets and vectors, the semantic similarity graph's window nodes and the edges
  whose lists changed, and the theme bridges between documents.
* :class:`Neo4jIndex` serves queries from that database alone: dense search through the
  native vector index, sparse search through the full-text index, the similarity graph
  node by node, chunks, documents, sentences and their vectors by id. It holds nothing of
  the corpus, so any number of serving processes (or machines) read one database. It has
  the read methods retrievers use, so IAR, every SSG algorithm, SKETCH (over the stored
  pieces, or ``split=None``),
  community search (with ``KnowledgeGraph(store, embedder=...)``) and SPC run on it
  unchanged.

Schema (created idempotently, ``IF NOT EXISTS``; labels apart from the knowledge graph's):

* ``(:SemragDocument {id, text, metadata, themes, fingerprint, n_sentences, seq})``
  (``seq``: the document's place in the index's order);
* ``(:SemragChunk {id, doc_id, start, end, text, token_count, index, sentence_start,
  sentence_end, metadata, embedding, vec})``, with the vector index
  ``semrag_chunk_embedding`` (cosine, not quantized) and the full-text index
  ``semrag_chunk_text``;
* ``(:SemragSentence {key, doc_id, i, start, end, text, vec})`` (``text`` runs to the next
  sentence, so sentences concatenate to their document's text);
* ``(:SemragWindow {key, doc_id, n, first, end, embedding, vec})`` (a window node of the
  similarity graph: sentences ``first .. end - 1`` of its document), with the vector index
  ``semrag_window_embedding``, and ``(:SemragWindow)-[:SIMILAR {score, kind}]->
  (:SemragWindow)`` (``kind`` 0 within a document, 1 across documents);
* ``(:SemragDocument)-[:THEME_BRIDGE {score}]->(:SemragDocument)``;
* ``(:SemragPiece {key, doc_id, j, parent, start, end, text, token_count, index, embedding,
  vec})``, with the vector index ``semrag_piece_embedding``: SKETCH's small pieces, when
  the index keeps them (``SemanticIndex(pieces=...)``); ``parent`` is the chunk's id;
* ``(:SemragIndexState {name})``: the index version the database holds, the vector
  dimension, the embedder, the graph's config, size and PCA, and a digest of its edges.

``embedding`` is the float list the vector indexes read; ``vec`` is the same vector as
float32 bytes, which reads fetch (exact, and far cheaper to decode).

**Crash safety.** A change is one transaction: a server that dies under it keeps the
version before. The store then knows it is behind; the next change, or
:meth:`Neo4jIndexStore.sync`, compares the documents' fingerprints and places and the edges
it last wrote (checked against the stored digest) with the index and writes the
difference, so the database ends equal to a fresh build of the index's documents.

**Sparse channel.** Neo4j's full-text index is Lucene's BM25 (``k1 = 1.2``, ``b = 0.75``,
its standard analyzer: lower case, English stop words dropped) over the chunk text;
semrag's :class:`~semrag.index.sparse.BM25Index` is Okapi BM25 over its own tokens (no stop
words, another idf floor). The two rank alike but not identically: the contract test
checks an overlap of the top results of at least 0.8.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from semrag._validation import check_k, check_query
from semrag.embeddings import as_embedder
from semrag.errors import ConfigError, NotIndexedError, StoreError
from semrag.graph.neo4j import (
    _LUCENE_SPECIAL,
    Neo4jGraphStore,
    _Ask,
    _bytes,
    _Steps,
    _unbytes,
    _vector,
)
from semrag.index.change import Change, IndexedDocument
from semrag.index.ssg import SemanticSimilarityGraph, SSGConfig
from semrag.text.tokens import WhitespaceTokenizer
from semrag.types import Chunk, Document, ScoredChunk, Span

__all__ = ["Neo4jIndex", "Neo4jIndexStore"]

Floats = npt.NDArray[np.float32]
Ints = npt.NDArray[np.int64]

_STATE = "index"
_SCHEMA = (
    "CREATE CONSTRAINT semrag_document_id IF NOT EXISTS "
    "FOR (d:SemragDocument) REQUIRE d.id IS UNIQUE",
    "CREATE CONSTRAINT semrag_chunk_id IF NOT EXISTS FOR (c:SemragChunk) REQUIRE c.id IS UNIQUE",
    "CREATE CONSTRAINT semrag_sentence_key IF NOT EXISTS "
    "FOR (s:SemragSentence) REQUIRE s.key IS UNIQUE",
    "CREATE CONSTRAINT semrag_window_key IF NOT EXISTS "
    "FOR (w:SemragWindow) REQUIRE w.key IS UNIQUE",
    "CREATE CONSTRAINT semrag_piece_key IF NOT EXISTS FOR (p:SemragPiece) REQUIRE p.key IS UNIQUE",
    "CREATE CONSTRAINT semrag_state_name IF NOT EXISTS "
    "FOR (s:SemragIndexState) REQUIRE s.name IS UNIQUE",
    "CREATE INDEX semrag_chunk_doc_id IF NOT EXISTS FOR (c:SemragChunk) ON (c.doc_id)",
    "CREATE INDEX semrag_sentence_doc_id IF NOT EXISTS FOR (s:SemragSentence) ON (s.doc_id)",
    "CREATE INDEX semrag_window_doc_id IF NOT EXISTS FOR (w:SemragWindow) ON (w.doc_id)",
    "CREATE INDEX semrag_piece_doc_id IF NOT EXISTS FOR (p:SemragPiece) ON (p.doc_id)",
    "CREATE FULLTEXT INDEX semrag_chunk_text IF NOT EXISTS FOR (c:SemragChunk) ON EACH [c.text]",
)
_VECTOR_INDEXES = tuple(
    f"CREATE VECTOR INDEX semrag_{name}_embedding IF NOT EXISTS FOR (n:{label}) ON (n.embedding) "
    "OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine', "
    "`vector.quantization.enabled`: false}}"
    for name, label in (
        ("chunk", "SemragChunk"),
        ("window", "SemragWindow"),
        ("piece", "SemragPiece"),
    )
)
_READ_STATE = (  # properties(): no warning from a database that has none of these keys yet
    "OPTIONAL MATCH (s:SemragIndexState {name: $name}) RETURN properties(s) AS state"
)
_VECTOR_DIMS = (
    "SHOW VECTOR INDEXES YIELD name, options "
    "WHERE name IN ['semrag_chunk_embedding', 'semrag_window_embedding', "
    "'semrag_piece_embedding'] "
    "RETURN name, options.indexConfig['vector.dimensions'] AS dim"
)
_DROP_VECTOR_INDEXES = (
    "DROP INDEX semrag_chunk_embedding IF EXISTS",
    "DROP INDEX semrag_window_embedding IF EXISTS",
    "DROP INDEX semrag_piece_embedding IF EXISTS",
)
_WRITE_STATE = (
    "MERGE (s:SemragIndexState {name: $name}) "
    "SET s.version = $version, s.dim = $dim, s.embedder = $embedder, s.edges = $edges, "
    "s.ssg = $ssg, s.windows = $windows, s.pca_mean = $pca_mean, s.pca_components = $pca, "
    "s.pca_digest = $pca_digest, s.next_seq = $next_seq, s.pieces = $pieces"
)
# -- a change, in one transaction ------------------------------------------------------------
_DELETE_DOCS = (
    "UNWIND $ids AS id "
    "CALL (id) { MATCH (c:SemragChunk {doc_id: id}) DETACH DELETE c } "
    "CALL (id) { MATCH (s:SemragSentence {doc_id: id}) DETACH DELETE s } "
    "CALL (id) { MATCH (w:SemragWindow {doc_id: id}) DETACH DELETE w } "
    "CALL (id) { MATCH (p:SemragPiece {doc_id: id}) DETACH DELETE p } "
    "CALL (id) { MATCH (d:SemragDocument {id: id}) DETACH DELETE d }"
)
_UPSERT_DOCS = (
    "UNWIND $rows AS r MERGE (d:SemragDocument {id: r.id}) "
    "SET d.text = r.text, d.metadata = r.metadata, d.themes = r.themes, "
    "d.fingerprint = r.fingerprint, d.n_sentences = r.n_sentences, d.seq = r.seq"
)
_UPSERT_CHUNKS = (
    "UNWIND $rows AS r MERGE (c:SemragChunk {id: r.id}) "
    "SET c.doc_id = r.doc_id, c.start = r.start, c.end = r.end, c.text = r.text, "
    "c.token_count = r.token_count, c.index = r.index, c.sentence_start = r.sentence_start, "
    "c.sentence_end = r.sentence_end, c.metadata = r.metadata, c.embedding = r.vector, "
    "c.vec = r.vec"
)
_UPSERT_SENTENCES = (
    "UNWIND $rows AS r MERGE (s:SemragSentence {key: r.key}) "
    "SET s.doc_id = r.doc_id, s.i = r.i, s.start = r.start, s.end = r.end, s.text = r.text, "
    "s.vec = r.vec"
)
_UPSERT_WINDOWS = (
    "UNWIND $rows AS r MERGE (w:SemragWindow {key: r.key}) "
    "SET w.doc_id = r.doc_id, w.n = r.n, w.first = r.first, w.end = r.end, "
    "w.embedding = r.vector, w.vec = r.vec"
)
_UPSERT_PIECES = (
    "UNWIND $rows AS r MERGE (p:SemragPiece {key: r.key}) "
    "SET p.doc_id = r.doc_id, p.j = r.j, p.parent = r.parent, p.start = r.start, "
    "p.end = r.end, p.text = r.text, p.token_count = r.token_count, p.index = r.index, "
    "p.embedding = r.vector, p.vec = r.vec"
)
_DROP_OUT_EDGES = "UNWIND $keys AS k MATCH (:SemragWindow {key: k})-[e:SIMILAR]->() DELETE e"
_CREATE_EDGES = (
    "UNWIND $rows AS r MATCH (a:SemragWindow {key: r.src}), (b:SemragWindow {key: r.dst}) "
    "CREATE (a)-[:SIMILAR {score: r.score, kind: r.kind}]->(b)"
)
_DROP_BRIDGES = "UNWIND $ids AS id MATCH (:SemragDocument {id: id})-[e:THEME_BRIDGE]->() DELETE e"
_CREATE_BRIDGES = (
    "UNWIND $rows AS r MATCH (a:SemragDocument {id: r.src}), (b:SemragDocument {id: r.dst}) "
    "CREATE (a)-[:THEME_BRIDGE {score: r.score}]->(b)"
)
_FINGERPRINTS = (
    "MATCH (d:SemragDocument) "
    "RETURN d.id AS id, properties(d)['fingerprint'] AS fingerprint, properties(d)['seq'] AS seq"
)
_ALL_EDGES_DROP = (
    "MATCH (:SemragWindow)-[e:SIMILAR]->() CALL (e) { DELETE e } IN TRANSACTIONS OF 10000 ROWS"
)
_CLEAR = (
    "MATCH (n) WHERE n:SemragDocument OR n:SemragChunk OR n:SemragSentence OR n:SemragWindow "
    "OR n:SemragPiece OR n:SemragIndexState "
    "CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS"
)
# -- reads ----------------------------------------------------------------------------------
# part_key() in Cypher: the key of sentence i of the document {doc}
_SENTENCE_KEY = "toString(size({doc})) + ':' + {doc} + '#' + toString(i)"
# A chunk's stored properties (``vec`` last: rows without it leave it out).
_CHUNK_KEYS = (
    "id",
    "doc_id",
    "start",
    "end",
    "text",
    "token_count",
    "index",
    "sentence_start",
    "sentence_end",
    "metadata",
    "vec",
)
_CHUNK_FIELDS = ", ".join(f"c.{k} AS {k}" for k in _CHUNK_KEYS[:-1])


def _dense_query(n: str, keep: str) -> str:
    """Vector candidates of every query row, with their chunks (scored exactly by the caller).

    The vector index scores its ``n`` candidates exactly (cosine, in float32); only the
    best ``keep`` of them travel, with their text and vectors, and the caller scores those
    again as the embedded index does.
    """
    return (
        "UNWIND range(0, size($vectors) - 1) AS row "
        f"CALL (row) {{ CALL db.index.vector.queryNodes('semrag_chunk_embedding', {n}, "
        f"$vectors[row]) YIELD node, score RETURN node AS c ORDER BY score DESC LIMIT {keep} }} "
        f"RETURN 'dense' AS channel, row, {_CHUNK_FIELDS}, c.vec AS vec, 0.0 AS score"
    )


def _sparse_query(n: str) -> str:
    """The full-text top hits of every query row, with their chunks and Lucene scores."""
    return (
        "UNWIND range(0, size($queries) - 1) AS row "
        "CALL (row) { CALL db.index.fulltext.queryNodes('semrag_chunk_text', $queries[row], "
        f"{{limit: {n}}}) YIELD node AS c, score "
        f"RETURN {_CHUNK_FIELDS}, c.vec AS vec, score }} "
        "RETURN 'sparse' AS channel, row, id, doc_id, start, end, text, token_count, index, "
        "sentence_start, sentence_end, metadata, vec, score"
    )


_DENSE = _dense_query("$n", "$keep")
_DENSE_COLUMNS = ("channel", "row", *_CHUNK_KEYS, "score")
_SPARSE = _sparse_query("$n")
_CHANNELS = _dense_query("$dense_n", "$dense_keep") + " UNION ALL " + _sparse_query("$sparse_n")
_SPARSE_AMONG = (
    "UNWIND range(0, size($texts) - 1) AS row "
    "CALL (row) { CALL db.index.fulltext.queryNodes('semrag_chunk_text', $texts[row]) "
    "YIELD node, score WHERE node.id IN $ids RETURN node.id AS id, score } "
    "RETURN row, id, score"
)
_CHUNK_SENTENCES = (
    "UNWIND range(0, size($rows) - 1) AS row WITH row, $rows[row] AS r "
    "RETURN row, COLLECT { UNWIND range(r.first, r.end - 1) AS i "
    "MATCH (s:SemragSentence {key: " + _SENTENCE_KEY.format(doc="r.doc_id") + "}) "
    "RETURN s.vec } AS vecs"
)
_CHUNKS = f"UNWIND $ids AS i MATCH (c:SemragChunk {{id: i}}) RETURN {_CHUNK_FIELDS}, c.vec AS vec"
_DOC_CHUNKS = (
    f"MATCH (c:SemragChunk {{doc_id: $doc_id}}) RETURN {_CHUNK_FIELDS} ORDER BY c.index, c.id"
)
_PIECES_SEARCH = (  # as _DENSE, over SKETCH's pieces; each with its parent chunk
    "UNWIND range(0, size($vectors) - 1) AS row "
    "CALL (row) { CALL db.index.vector.queryNodes('semrag_piece_embedding', $n, $vectors[row]) "
    "YIELD node, score RETURN node AS p ORDER BY score DESC LIMIT $keep } "
    "MATCH (d:SemragDocument {id: p.doc_id}) MATCH (c:SemragChunk {id: p.parent}) "
    "RETURN row, d.seq AS seq, p.j AS j, p.start AS piece_start, p.end AS piece_end, "
    "p.text AS piece_text, p.token_count AS piece_tokens, p.index AS piece_index, "
    f"p.vec AS piece_vec, {_CHUNK_FIELDS}, c.vec AS vec"
)
_PIECES_COLUMNS = (
    "row",
    "seq",
    "j",
    "piece_start",
    "piece_end",
    "piece_text",
    "piece_tokens",
    "piece_index",
    "piece_vec",
    *_CHUNK_KEYS,
)
# Each span's chunk ids, and each chunk not fetched yet in this read once (as a list: many
# spans, such as the mentions of a neighbourhood, fall in a few chunks).
_OVERLAPPING_MANY = (
    "UNWIND range(0, size($spans) - 1) AS row WITH row, $spans[row] AS s "
    "MATCH (c:SemragChunk {doc_id: s[0]}) WHERE c.start < s[2] AND c.end > s[1] "
    "WITH row, c ORDER BY row, c.index, c.id "
    "WITH collect([row, c.id]) AS hits, collect(DISTINCT c) AS found "
    "RETURN hits, [c IN found WHERE NOT c.id IN $known | "
    "[" + ", ".join(f"c.{k}" for k in _CHUNK_KEYS) + "]] AS chunks"
)
_DOCUMENTS = (
    "UNWIND $ids AS id MATCH (d:SemragDocument {id: id}) CALL (d) { "
    "OPTIONAL MATCH (s:SemragSentence {doc_id: d.id}) WITH s ORDER BY s.i "
    "RETURN collect([s.start, s.end]) AS spans, collect(s.vec) AS vectors } "
    "RETURN d.id AS id, d.text AS text, d.metadata AS metadata, d.themes AS themes, "
    "spans, vectors"
)
_DOC_IDS = "MATCH (d:SemragDocument) RETURN d.id AS id ORDER BY d.id"
_COUNT_CHUNKS = "MATCH (c:SemragChunk) RETURN count(c) AS n"
_COUNT_DOCS = "MATCH (d:SemragDocument) RETURN count(d) AS n"
_HAS_DOC = "MATCH (d:SemragDocument {id: $id}) RETURN count(d) AS n"
_COUNTS = (
    "CALL () { MATCH (d:SemragDocument) RETURN count(d) AS documents } "
    "CALL () { MATCH (c:SemragChunk) RETURN count(c) AS chunks } "
    "CALL () { MATCH (s:SemragSentence) RETURN count(s) AS sentences } "
    "CALL () { MATCH (w:SemragWindow) RETURN count(w) AS windows } "
    "CALL () { MATCH (p:SemragPiece) RETURN count(p) AS pieces } "
    "CALL () { MATCH (:SemragWindow)-[e:SIMILAR]->() RETURN count(e) AS edges } "
    "CALL () { MATCH (:SemragDocument)-[b:THEME_BRIDGE]->() RETURN count(b) AS bridges } "
    "RETURN documents, chunks, sentences, windows, pieces, edges, bridges"
)
_DUMP_EDGES = (
    "MATCH (a:SemragWindow)-[e:SIMILAR]->(b:SemragWindow) "
    "RETURN a.doc_id AS a_doc, a.n AS a_n, b.doc_id AS b_doc, b.n AS b_n, "
    "e.kind AS kind, e.score AS score"
)
_DUMP_BRIDGES = (
    "MATCH (a:SemragDocument)-[e:THEME_BRIDGE]->(b:SemragDocument) "
    "RETURN a.id AS a, b.id AS b, e.score AS score"
)
_DUMP_CHUNKS = (
    "MATCH (c:SemragChunk) RETURN c.doc_id AS doc_id, c.start AS start, c.end AS end, "
    "c.text AS text, c.embedding AS embedding"
)
_DUMP_PIECES = (
    "MATCH (p:SemragPiece) RETURN p.doc_id AS doc_id, p.j AS j, p.start AS start, p.end AS end, "
    "p.text AS text, p.token_count AS token_count, p.embedding AS embedding"
)
_DUMP_WINDOWS = (
    "MATCH (w:SemragWindow) RETURN w.doc_id AS doc_id, w.n AS n, w.first AS first, w.end AS end"
)
# The similarity graph, a node (and its sentences) at a time: nodes are numbered per query.
_VIEW_STATE = (
    "MATCH (s:SemragIndexState {name: $name}) RETURN s.version AS version, s.windows AS windows"
)
_PCA = (
    "MATCH (s:SemragIndexState {name: $name}) "
    "RETURN s.pca_mean AS mean, s.pca_components AS components"
)
_LOADED = (  # a node v: its sentences, and its out-edges with their target nodes
    "RETURN v.key AS source, "
    "COLLECT { UNWIND range(v.first, v.end - 1) AS i "
    "MATCH (s:SemragSentence {key: " + _SENTENCE_KEY.format(doc="v.doc_id") + "}) "
    "RETURN {i: s.i, start: s.start, end: s.end, text: s.text, vec: s.vec} } AS sentences, "
    "COLLECT { MATCH (v)-[e:SIMILAR]->(w:SemragWindow) "
    "MATCH (d:SemragDocument {id: w.doc_id}) "
    "RETURN {score: e.score, kind: e.kind, key: w.key, doc_id: w.doc_id, first: w.first, "
    "end: w.end, vec: w.vec, n: w.n, seq: d.seq, metadata: d.metadata} } AS edges"
)


# How a traversal at node a would rank its out-neighbours v (edge e) as its next hop, from
# $rank (see _RemoteView.ahead_rank): weights of cos(v, q), the edge's score, cos(v, a),
# and a squared distance in the PCA space, where v's and a's coordinates add up: per axis
# i, at[i] holds a's part (_AT, once per node a) and v adds its own (vector.similarity.cosine
# is (1 + cos) / 2; the vectors are unit vectors). A term of weight 0 is not computed.
_AT = (
    "[i IN range(0, size($rank.axes) - 1) | $rank.scale[i] * "
    "(2 * vector.similarity.cosine(a.embedding, $rank.axes[i]) - 1) - $rank.base[i]] AS at"
)
_AHEAD_RANK = (
    "CASE WHEN $rank.query = 0 THEN 0.0 "
    "ELSE $rank.query * (2 * vector.similarity.cosine(v.embedding, {q}) - 1) END "
    "+ $rank.edge * e.score "
    "+ CASE WHEN $rank.source = 0 THEN 0.0 "
    "ELSE $rank.source * (2 * vector.similarity.cosine(v.embedding, a.embedding) - 1) END "
    "- reduce(d = 0.0, i IN range(0, size(at) - 1) | d + ($rank.scale[i] * "
    "(2 * vector.similarity.cosine(v.embedding, $rank.axes[i]) - 1) + at[i]) ^ 2)"
)
# The look-ahead follows the chain a traversal would walk: a0 (the node asked for), then
# each level's best-ranked hop. Its levels: the hops of a0, then of the next LEVELS - 1.
_LEVELS = 8


def _level(i: int, q: str) -> str:
    """Node ``a<i>``'s out-neighbours ranked as its next hop (``r<i>``); the best is ``a<i+1>``.

    Not ranked: visited nodes (``$visited``) and the chain so far; past level 0, nothing
    when ``$follow`` is 0 (no chain is followed).
    """
    chain = [f"a{j}" for j in range(i + 1)]
    kept = ", ".join([*chain, *(f"r{j}" for j in range(i))])
    return (
        f"CALL ({', '.join(chain)}) {{ WITH a{i} AS a "
        + ("" if i == 0 else "WHERE $follow > 0 ")
        + f"WITH a, {_AT} "
        "MATCH (a)-[e:SIMILAR]->(v:SemragWindow) "
        f"WHERE NOT v IN [c IN [{', '.join(chain)}] WHERE c IS NOT NULL] "
        "AND NOT v.key IN $visited "
        "WITH v, max(" + _AHEAD_RANK.format(q=q) + ") AS rank ORDER BY rank DESC "
        f"RETURN collect(v) AS r{i} }} "
        f"WITH {kept}, r{i}, r{i}[0] AS a{i + 1} "
    )


def _load_union(asked: str, q: str) -> str:
    """Load the nodes keyed ``asked`` and the likely next hops from the first of them.

    Those are the ``$ahead`` out-neighbours of the first that a traversal would rank
    first as its next hop (``$rank``), and the ``$follow`` best of each further node on
    the chain it would walk (:data:`_LEVELS`); none of them ``$known`` or asked.
    """
    fresh = f"WHERE NOT v.key IN {asked} AND NOT v.key IN $known"
    hops = " + ".join(
        f"[v IN r{i} {fresh}][..{'$ahead' if i == 0 else '$follow'}]" for i in range(_LEVELS)
    )
    return (
        f"UNWIND {asked} AS k MATCH (v:SemragWindow {{key: k}}) " + _LOADED + " UNION ALL "
        f"MATCH (a0:SemragWindow {{key: {asked}[0]}}) "
        + "".join(_level(i, q) for i in range(_LEVELS))
        + f"UNWIND {hops} AS v WITH DISTINCT v "
        + _LOADED
    )


_LOAD = "UNWIND $keys AS k MATCH (v:SemragWindow {key: k}) " + _LOADED
_LOAD_AHEAD = _load_union("$keys", "$q")
# The version read with the candidates, and the first $load of them (by the vector index's
# order) loaded as _LOAD_AHEAD loads: the search and a traversal's first load, one round trip.
_ANCHORS = (
    "MATCH (s:SemragIndexState {name: $name}) "
    "CALL () { CALL db.index.vector.queryNodes('semrag_window_embedding', $n, $vector) "
    "YIELD node AS w MATCH (d:SemragDocument {id: w.doc_id}) "
    "RETURN collect({key: w.key, doc_id: w.doc_id, first: w.first, end: w.end, vec: w.vec, "
    "n: w.n, seq: d.seq, metadata: d.metadata}) AS nodes, collect(w.key)[..$load] AS first } "
    "CALL (first) { CALL (first) { " + _load_union("first", "$vector") + " } "
    "RETURN collect({source: source, sentences: sentences, edges: edges}) AS loaded } "
    "RETURN s.version AS version, s.windows AS windows, nodes, loaded, "
    "s.pca_digest AS pca_digest, "
    "CASE WHEN $pca AND coalesce(s.pca_digest <> $pca_digest, true) "
    "THEN [s.pca_mean, s.pca_components] END AS pca"
)


def _pca_digest(mean: Any, components: Any) -> str:
    """A digest of a graph's PCA (its float32 values), stored beside it.

    A reader keeps the PCA it last read with its digest; the anchor search sends it back
    and gets the PCA again only when the stored one differs.
    """
    h = hashlib.sha256(np.asarray(mean, np.float32).tobytes())
    h.update(np.asarray(components, np.float32).tobytes())
    return h.hexdigest()


# Lucene's query syntax: special characters are escaped and its operators lower-cased, so a
# query is searched as words.
_LUCENE_OPERATORS = re.compile(r"\b(AND|OR|NOT|TO)\b")


_Result = TypeVar("_Result")
# what each Neo4jIndex's read() keeps, by id(index): see Neo4jIndex.read
_READS: contextvars.ContextVar[dict[int, dict[str, dict[Any, Any]]] | None] = (
    contextvars.ContextVar("semrag_neo4j_index_reads", default=None)
)


def part_key(doc_id: str, n: int) -> str:
    """The key of sentence or window ``n`` of ``doc_id`` (unambiguous for any id)."""
    return f"{len(doc_id)}:{doc_id}#{n}"


def lucene_query(text: str) -> str:
    """``text`` as a Lucene query of its words (specials escaped, operators as words)."""
    words = _LUCENE_OPERATORS.sub(lambda m: m.group(1).lower(), text)
    return _LUCENE_SPECIAL.sub(r"\\\1", words)


def _read_state(store: Neo4jGraphStore, name: str) -> dict[str, Any]:
    """The state node's properties (empty if the database holds no index of this name)."""
    return dict(store._read(_READ_STATE, name=name)[0]["state"] or {})


def _json(value: Mapping[str, Any], what: str) -> str:
    try:
        return json.dumps(dict(value), sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"{what} must be JSON (str, numbers, bools, None, lists, dicts) to be stored in "
            f"Neo4j: {exc}"
        ) from exc


def _fingerprint(entry: IndexedDocument) -> str:
    """What identifies one version of a document in the store (text, metadata, chunk ids)."""
    h = hashlib.sha256(entry.doc.text.encode("utf-8", "surrogatepass"))
    h.update(_json(entry.doc.metadata, "document metadata").encode())
    h.update(np.asarray(entry.chunk_ids, np.int64).tobytes())
    return h.hexdigest()


class _Edges:
    """A similarity graph's edges and bridges in keys that survive renumbering.

    ``rows`` is an ``(edges, 6)`` int64 array: source document number, source window,
    target document number, target window, kind, and the float32 score's bits; document
    numbers index :attr:`doc_ids`.
    """

    def __init__(self, graph: SemanticSimilarityGraph | None) -> None:
        if graph is None or graph.n_nodes == 0:
            self.doc_ids: list[str] = [] if graph is None else list(graph.doc_ids)
            self.rows = np.zeros((0, 6), np.int64)
            self.bridges: dict[str, list[tuple[str, float]]] = {d: [] for d in self.doc_ids}
            return
        self.doc_ids = list(graph.doc_ids)
        node_doc = graph.node_doc.astype(np.int64)
        local = np.arange(node_doc.size) - np.searchsorted(node_doc, node_doc, side="left")
        indptr, indices, scores, kinds = graph.csr()
        src = np.repeat(np.arange(node_doc.size), np.diff(indptr))
        dst = indices.astype(np.int64)
        bits = np.asarray(scores, np.float32).view(np.int32).astype(np.int64)
        self.rows = np.stack(
            [
                node_doc[src],
                local[src],
                node_doc[dst],
                local[dst],
                kinds.astype(np.int64),
                bits,
            ],
            axis=1,
        )
        self.bridges = {
            self.doc_ids[d]: [(self.doc_ids[j], float(s)) for j, s in row]
            for d, row in enumerate(graph.theme_bridges)
        }

    def digest(self) -> str:
        """A digest of every edge and bridge, by document id."""
        h = hashlib.sha256(json.dumps(self.doc_ids).encode())
        h.update(np.ascontiguousarray(self.rows).tobytes())
        h.update(json.dumps(sorted(self.bridges.items())).encode())
        return h.hexdigest()

    def renumbered(
        self, doc_ids: Sequence[str], gone: set[str]
    ) -> tuple[Ints, set[tuple[int, int]]]:
        """These rows in ``doc_ids``' numbering, and the new numbers of sources to rewrite.

        Rows of documents in ``gone`` are dropped; a kept source that pointed into a gone
        document is to be rewritten (its edge left with the document).
        """
        pos = {d: i for i, d in enumerate(doc_ids)}
        new_of_old = np.array(
            [-1 if d in gone or d not in pos else pos[d] for d in self.doc_ids] or [0], np.int64
        )
        if not self.rows.size:
            return self.rows, set()
        rows = self.rows.copy()
        rows[:, 0] = new_of_old[rows[:, 0]]
        rows[:, 2] = new_of_old[rows[:, 2]]
        lost = (rows[:, 0] >= 0) & (rows[:, 2] < 0)
        dirty = {(int(a), int(b)) for a, b in rows[lost][:, :2]}
        return rows[(rows[:, 0] >= 0) & (rows[:, 2] >= 0)], dirty


class Neo4jIndexStore:
    """Keeps an index's corpus, vectors and similarity graph in Neo4j, change by change.

    Attach it to the index that writes (``store.attach(index)``, or
    ``Neo4jIndexStore.for_index(index, graph_store)``); every later change of the index is
    written in one transaction, after the index has published it. A database that already
    holds this index (same version and edges) is trusted as it is; any other is brought
    level by writing the difference. Serve queries with :class:`Neo4jIndex`.

    Args:
        store: the :class:`~semrag.graph.Neo4jGraphStore` whose connection (and database)
            to use; the knowledge graph may live beside the corpus in the same database.
        name: the name of this index's state node (one database holds one corpus).
        max_transaction_rows: a change of more rows than this (a first build of a large
            corpus, say) is written as a sequence of transactions (whole documents each,
            then the edges in batches, the version last) rather than one; a failure
            halfway is repaired as any failed write is (the next change, or :meth:`sync`,
            writes the difference and rewrites the edges).

    Raises:
        ConfigError: if the database holds vectors of another dimension.
        StoreUnavailableError: if the server cannot be reached.
    """

    def __init__(
        self, store: Neo4jGraphStore, *, name: str = _STATE, max_transaction_rows: int = 50_000
    ) -> None:
        if max_transaction_rows < 1:
            raise ConfigError(f"max_transaction_rows must be >= 1, got {max_transaction_rows}")
        self.store = store
        self.name = name
        self.max_transaction_rows = max_transaction_rows
        self._index: Any = None
        self._edges: _Edges | None = None
        self._version: int | None = None
        self._behind = False
        self._next_seq = 0
        self._lock = threading.Lock()
        for statement in _SCHEMA:
            store._write(statement)

    # -- attaching ------------------------------------------------------------------------------
    @classmethod
    def for_index(cls, index: Any, store: Neo4jGraphStore, **kwargs: Any) -> Neo4jIndexStore:
        """A store attached to ``index`` (see :meth:`attach`)."""
        out = cls(store, **kwargs)
        out.attach(index)
        return out

    def attach(self, index: Any) -> None:
        """Follow ``index``: bring the database level with it now, then write every change.

        Raises:
            ConfigError: if the database holds vectors of another dimension, or the store
                already follows another index.
        """
        if self._index is not None and self._index is not index:
            raise ConfigError("this Neo4jIndexStore already follows another index")
        dim = int(index.embedder.dim)
        have = [self._state().get("dim")]
        have += [r["dim"] for r in self.store._read(_VECTOR_DIMS)]
        for d in have:
            if d is not None and int(d) != dim:
                raise ConfigError(
                    f"the database holds {d}-dimensional vectors; the index has {dim}: "
                    "use a database of its own for this index (database=...), or clear() it"
                )
        for statement in _VECTOR_INDEXES:
            self.store._write(statement, dim=dim)
        self.store._read("CALL db.awaitIndexes(300)")
        self._index = index
        self._next_seq = int(self._state().get("next_seq") or 0)
        index.follow(self, replay=self._catch_up)

    def _catch_up(self, documents: list[IndexedDocument], version: int) -> Change:
        """The change that brings the database level with ``documents`` (at ``version``)."""
        state = self._state()
        edges = self._graph_edges()
        same = state.get("version") == version and state.get("edges") == edges.digest()
        same_pieces = state.get("pieces") == self._pieces_split()
        if same and same_pieces:
            self._edges, self._version = edges, version
            return Change(version)  # the database holds this index already
        self._edges, self._version = None, None  # unknown: every edge is rewritten
        return self._difference(documents, version, everything=not same_pieces)

    def _difference(
        self, documents: Sequence[IndexedDocument], version: int, *, everything: bool = False
    ) -> Change:
        """The change that makes the database hold ``documents``, in their order.

        A stored document is kept if it is the same version (fingerprint) and comes after
        the documents kept before it; from the first one that is not, every document is
        written again (added documents go to the end), so the database's order is the
        index's. ``everything``: write every document again (the pieces kept changed).
        """
        have = {r["id"]: (r["fingerprint"], r["seq"]) for r in self.store._read(_FINGERPRINTS)}
        added: list[IndexedDocument] = []
        last = -1
        for d in documents:
            fingerprint, seq = have.get(d.id, (None, None))
            stale = fingerprint != _fingerprint(d) or seq is None or seq <= last
            if added or everything or stale:
                added.append(d)
            else:
                last = seq
        again = {d.id for d in added}
        keep = {d.id for d in documents}
        removed = tuple(_Gone(i) for i in have if i not in keep or i in again)
        return Change(version, added=tuple(added), removed=removed)  # type: ignore[arg-type]

    def sync(self) -> Change:
        """Bring the database level with the attached index now (after a failed write).

        Returns:
            The change that was written (empty if the database was level).

        Raises:
            ConfigError: if the store is not attached.
        """
        if self._index is None:
            raise ConfigError("attach the store to an index first (store.attach(index))")
        with self._index.read():
            docs = [self._index.indexed(d) for d in self._index.doc_ids]
            version = self._index.version
        with self._lock:
            change = self._repair(docs, version)
            rows = _document_rows(change.added, windows=self._index.ssg_config is not None)
            self._write(change, rows)
            return change

    # -- a change -------------------------------------------------------------------------------
    def stage(self, change: Change) -> Callable[[], None]:
        """Check and convert ``change``'s rows now; the returned function writes them.

        The index stages its followers before it publishes a change, so rows the database
        cannot take (metadata that is not JSON) fail the change while nothing has changed.
        The write itself runs after the index publishes (it needs the published similarity
        graph): one transaction. A store that missed a change (its last write failed)
        writes the difference with the index instead, so the database ends level either way.

        Raises:
            ConfigError: for metadata that is not JSON.
        """
        rows = _document_rows(change.added, windows=self._index.ssg_config is not None)
        return lambda: self._apply(change, rows)

    def apply(self, change: Change) -> None:
        """Write ``change`` in one transaction (:meth:`stage` and its write in a row).

        Raises:
            StoreUnavailableError: if the server cannot be reached (the database keeps the
                version before; the next change or :meth:`sync` repairs it).
        """
        self.stage(change)()

    def _apply(self, change: Change, rows: tuple[list[dict[str, Any]], ...]) -> None:
        with self._lock:
            if not change and self._version == change.version and not self._behind:
                return  # the catch-up of a database that holds this index already
            if self._behind or (self._version is not None and self._version != change.version - 1):
                docs = [self._index.indexed(d) for d in self._index.doc_ids]
                change = self._repair(docs, change.version)
                rows = _document_rows(change.added, windows=self._index.ssg_config is not None)
            self._write(change, rows)

    def _repair(self, documents: Sequence[IndexedDocument], version: int) -> Change:
        """The difference with ``documents``, after the edges written last are checked.

        A write that failed may have committed all the same (the reply was lost); the
        state's digest tells, and edges not known for sure are all rewritten.
        """
        if self._edges is not None and self._state().get("edges") != self._edges.digest():
            self._edges = None
        return self._difference(documents, version)

    def _write(self, change: Change, rows: tuple[list[dict[str, Any]], ...]) -> None:
        graph = self._graph()
        new = _Edges(graph)
        gone = set(change.removed_ids) | set(change.added_ids)
        added_ids = set(change.added_ids)
        if self._edges is None:  # nothing known of the database's edges: rewrite them all
            self.store._run_batched(_ALL_EDGES_DROP)
            sources = {(a, b) for a, b in np.unique(new.rows[:, :2], axis=0).tolist()}
            bridge_docs = set(new.doc_ids)
            drop_sources: list[str] = []
        else:
            old_rows, sources = self._edges.renumbered(new.doc_ids, gone)
            sources |= _changed_sources(old_rows, new.rows, new.doc_ids, added_ids)
            drop_sources = [
                part_key(new.doc_ids[d], n) for d, n in sources if new.doc_ids[d] not in added_ids
            ]
            numbers = [i for i, d in enumerate(new.doc_ids) if d in added_ids]
            of_added = new.rows[np.isin(new.rows[:, 0], numbers), :2]
            sources |= {(d, n) for d, n in np.unique(of_added, axis=0).tolist()}
            old_bridges = self._edges.bridges
            bridge_docs = {
                d
                for d in new.doc_ids
                if d in added_ids
                or new.bridges.get(d) != old_bridges.get(d)
                or any(t in gone for t, _ in old_bridges.get(d, ()))  # left with its target
            }
        edge_rows = _edge_rows(new, sources)
        bridge_rows = [
            {"src": d, "dst": t, "score": s} for d in sorted(bridge_docs) for t, s in new.bridges[d]
        ]
        docs, chunks, sentences, windows = rows
        pieces = self._piece_rows(change.added_ids)
        next_seq = self._next_seq
        for row in docs:  # added documents go after every document there (the index's order)
            row["seq"], next_seq = next_seq, next_seq + 1
        if next_seq >= 1 << 31:
            raise StoreError("more than 2**31 documents were written to this database")
        dim = int(self._index.embedder.dim)
        batch = self.store.batch_size

        def batches(query: str, key: str, rows: Sequence[Any]) -> list[list[_Statement]]:
            return [[(query, {key: rows[i : i + batch]})] for i in range(0, len(rows), batch)]

        steps: list[list[_Statement]] = batches(_DELETE_DOCS, "ids", sorted(gone))
        parts = (chunks, sentences, windows, pieces)
        for group in _by_document(docs, parts, self.max_transaction_rows):
            steps.append(
                [
                    (query, {"rows": part[i : i + batch]})
                    for query, part in zip(
                        (
                            _UPSERT_DOCS,
                            _UPSERT_CHUNKS,
                            _UPSERT_SENTENCES,
                            _UPSERT_WINDOWS,
                            _UPSERT_PIECES,
                        ),
                        group,
                        strict=True,
                    )
                    for i in range(0, len(part), batch)
                ]
            )
        steps += batches(_DROP_OUT_EDGES, "keys", drop_sources)
        steps += batches(_CREATE_EDGES, "rows", edge_rows)
        steps += batches(_DROP_BRIDGES, "ids", sorted(bridge_docs - added_ids))
        steps += batches(_CREATE_BRIDGES, "rows", bridge_rows)
        state = {
            "name": self.name,
            "version": change.version,
            "dim": dim,
            "embedder": repr(self._index.embedder),
            "edges": new.digest(),
            "ssg": None if graph is None else json.dumps(graph.config.to_dict()),
            "windows": 0 if graph is None else graph.n_nodes,
            "pca_mean": None if graph is None else _vector(graph.pca_mean),
            "pca": None if graph is None else _vector(graph.pca_components),
            "pca_digest": None
            if graph is None
            else _pca_digest(graph.pca_mean, graph.pca_components),
            "next_seq": next_seq,
            "pieces": self._pieces_split(),
        }
        steps.append([(_WRITE_STATE, state)])
        size = sum(len(p.get("rows", p.get("ids", p.get("keys", ())))) for g in steps for _, p in g)
        try:
            if size <= self.max_transaction_rows:  # all of it or none of it
                self.store._transact(_run_steps(steps), write=True)
            else:  # in steps: a failure halfway is repaired as any failed write is
                self._behind, self._edges = True, None
                for step in steps:
                    self.store._transact(_run_steps([step]), write=True)
        except StoreError:
            self._behind = True  # the next change (or sync) writes the difference
            raise
        self._edges, self._version, self._behind = new, change.version, False
        self._next_seq = next_seq

    def _pieces_split(self) -> list[int] | None:
        """The split of the index's SKETCH pieces (``SemanticIndex(pieces=...)``), if any."""
        kept = getattr(self._index, "piece_index", None)
        return None if kept is None else list(kept.split)

    def _piece_rows(self, doc_ids: Iterable[str]) -> list[dict[str, Any]]:
        """Rows of the published pieces of these documents (none without a piece index)."""
        kept = getattr(self._index, "piece_index", None)
        if kept is None:
            return []
        return [
            {
                "key": part_key(doc_id, j),
                "doc_id": doc_id,
                "j": j,
                "parent": int(parent),
                "start": piece.start,
                "end": piece.end,
                "text": piece.text,
                "token_count": int(piece.token_count),
                "index": int(piece.index),
                "vector": v,
                "vec": v,
            }
            for doc_id in doc_ids
            for j, (piece, parent, v) in enumerate(kept.pieces_of(doc_id))
        ]

    def _graph(self) -> SemanticSimilarityGraph | None:
        return self._index.ssg if self._index.ssg_config is not None else None

    def _graph_edges(self) -> _Edges:
        return _Edges(self._graph())

    def _state(self) -> dict[str, Any]:
        return _read_state(self.store, self.name)

    # -- the IndexPart protocol -------------------------------------------------------------------
    def save(self, directory: Any) -> list[str]:
        """Nothing to save: the database is the state (the index's own save is enough)."""
        return []

    def clear(self) -> None:
        """Delete the stored corpus (10,000 nodes per transaction) and its vector indexes.

        Resumable: a failure halfway leaves part of the corpus; clearing again finishes.
        """
        self.store._run_batched(_CLEAR)
        for statement in _DROP_VECTOR_INDEXES:
            self.store._write(statement)
        self._edges, self._version = None, None

    def counts(self) -> dict[str, int]:
        """Documents, chunks, sentences, windows, similarity edges and bridges stored."""
        return dict(self.store._read(_COUNTS)[0])

    def dump(self) -> dict[str, Any]:
        """Everything stored, by document id and offsets (ids aside): for comparing builds."""
        read = self.store._read
        return {
            "chunks": sorted(
                (r["doc_id"], r["start"], r["end"], r["text"], tuple(r["embedding"]))
                for r in read(_DUMP_CHUNKS)
            ),
            "windows": sorted(tuple(r.values()) for r in read(_DUMP_WINDOWS)),
            "pieces": sorted(
                (
                    *(r[k] for k in ("doc_id", "j", "start", "end", "text", "token_count")),
                    tuple(r["embedding"]),
                )
                for r in read(_DUMP_PIECES)
            ),
            "edges": sorted(tuple(r.values()) for r in read(_DUMP_EDGES)),
            "bridges": sorted(tuple(r.values()) for r in read(_DUMP_BRIDGES)),
            "counts": self.counts(),
        }

    def __repr__(self) -> str:
        return f"Neo4jIndexStore({self.store!r}, version={self._version})"


class _Gone:
    """A removed document known only by its id (what a difference with the database needs)."""

    __slots__ = ("id", "chunk_ids")

    def __init__(self, doc_id: str) -> None:
        self.id = doc_id
        self.chunk_ids: list[int] = []


def _changed_sources(
    old: Ints, new: Ints, doc_ids: Sequence[str], added: set[str]
) -> set[tuple[int, int]]:
    """Sources (document number, window) whose edges differ between ``old`` and ``new``.

    Sources of ``added`` documents are left out (they are written whole). Each source's
    edge list is summarised by its length and a 64-bit hash of its edges as a multiset
    (in one pass over the rows, which come grouped by source), and only the summaries
    are compared: linear in the edges, where sorting the edges themselves took seconds
    per change at 100k chunks.
    """
    is_added = np.array([d in added for d in doc_ids] or [False])
    parts = [rows[~is_added[rows[:, 0]]] if rows.size else rows for rows in (old, new)]
    summaries = [_edge_list_summaries(rows) for rows in parts]
    keys, sums, counts = (np.concatenate(pair) for pair in zip(*summaries, strict=True))
    if not keys.size:
        return set()
    order = np.lexsort((counts, sums, keys))
    k, h, n = keys[order], sums[order], counts[order]
    same = (k[1:] == k[:-1]) & (h[1:] == h[:-1]) & (n[1:] == n[:-1])
    alone = np.ones(len(order), bool)
    alone[1:] &= ~same
    alone[:-1] &= ~same
    return {(int(x) >> 32, int(x) & 0xFFFFFFFF) for x in k[alone].tolist()}


_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))


def _mixed(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """SplitMix64's finaliser of each value (wrapping arithmetic)."""
    z = x + _MIX[0]
    z = (z ^ (z >> np.uint64(30))) * _MIX[1]
    z = (z ^ (z >> np.uint64(27))) * _MIX[2]
    return z ^ (z >> np.uint64(31))


def _edge_list_summaries(rows: Ints) -> tuple[Ints, npt.NDArray[np.uint64], Ints]:
    """``(source keys, multiset hashes, lengths)`` of each run of rows with one source."""
    if not rows.size:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros(0, np.int64)
    source = (rows[:, 0] << 32) | rows[:, 1]
    starts = np.flatnonzero(np.r_[True, source[1:] != source[:-1]])
    target = ((rows[:, 2] << 32) | rows[:, 3]).astype(np.uint64)
    label = ((rows[:, 4] << 32) | (rows[:, 5] & 0xFFFFFFFF)).astype(np.uint64)
    edge = _mixed(_mixed(target) ^ label)
    return source[starts], np.add.reduceat(edge, starts), np.diff(np.r_[starts, len(source)])


class _EdgeRows(Sequence[dict[str, Any]]):
    """The rows of some edges, made a slice at a time (a first build has millions)."""

    def __init__(self, ids: Sequence[str], rows: Ints) -> None:
        self._ids, self._rows = ids, rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, at: Any) -> Any:
        if isinstance(at, slice):
            return _EdgeRows(self._ids, self._rows[at])
        return self._row(self._rows[at])

    def _row(self, row: Ints) -> dict[str, Any]:
        a, n, b, m, kind, bits = (int(x) for x in row)
        return {
            "src": part_key(self._ids[a], n),
            "dst": part_key(self._ids[b], m),
            "kind": kind,
            "score": float(np.int32(bits).view(np.float32)),
        }


def _edge_rows(edges: _Edges, sources: set[tuple[int, int]]) -> _EdgeRows:
    if not sources or not edges.rows.size:
        return _EdgeRows(edges.doc_ids, edges.rows[:0])
    want = np.array(sorted(sources), np.int64)
    keys = edges.rows[:, 0] * (1 << 32) + edges.rows[:, 1]
    pick = np.isin(keys, want[:, 0] * (1 << 32) + want[:, 1])
    return _EdgeRows(edges.doc_ids, edges.rows[pick])


_Statement = tuple[str, dict[str, Any]]


def _run_steps(steps: Sequence[Sequence[_Statement]]) -> Callable[[Any], None]:
    """A transaction function running every statement of ``steps`` in order."""

    def work(tx: Any) -> None:
        for step in steps:
            for query, params in step:
                tx.run(query, _wire(params)).consume()

    return work


def _wire(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` as the driver takes them, made as a batch is sent.

    Rows keep their vectors as numpy rows until then (a first build of a large corpus
    would hold every vector again as a list of floats): ``vector`` goes as a float list
    (what the vector indexes read), ``vec`` as float32 bytes.
    """
    rows = params.get("rows")
    if rows is None:
        return params
    wired = []
    for row in rows:
        if isinstance(row.get("vec"), np.ndarray):
            row = dict(row, vec=_bytes(row["vec"]))
            if "vector" in row:
                row["vector"] = _vector(row["vector"])
        wired.append(row)
    return {**params, "rows": wired}


def _by_document(
    docs: list[dict[str, Any]], parts: Sequence[list[dict[str, Any]]], most: int
) -> Iterator[tuple[list[dict[str, Any]], ...]]:
    """The rows in groups of whole documents, each group at most ``most`` rows (or one doc).

    ``parts`` are row lists keyed by ``doc_id`` (chunks, sentences, ...); a group is the
    documents' rows, then each part's rows of those documents.
    """
    width = 1 + len(parts)
    by_doc: dict[str, list[list[dict[str, Any]]]] = {
        d["id"]: [[d]] + [[] for _ in parts] for d in docs
    }
    for j, rows in enumerate(parts, start=1):
        for row in rows:
            by_doc[row["doc_id"]][j].append(row)
    group: list[list[dict[str, Any]]] = [[] for _ in range(width)]
    size = 0
    for doc in by_doc.values():
        n = sum(map(len, doc))
        if size and size + n > most:
            yield tuple(group)
            group, size = [[] for _ in range(width)], 0
        for g, rows in zip(group, doc, strict=True):
            g.extend(rows)
        size += n
    if size:
        yield tuple(group)


def _document_rows(
    added: Iterable[IndexedDocument], *, windows: bool
) -> tuple[list[dict[str, Any]], ...]:
    """Rows of the documents, chunks, sentences and (with ``windows``) window nodes.

    Each document's ``seq`` (its place in the index's order) is set when it is written.
    """
    docs: list[dict[str, Any]] = []
    chunks: list[dict[str, Any]] = []
    sentences: list[dict[str, Any]] = []
    nodes: list[dict[str, Any]] = []
    for e in added:
        doc_id = e.doc.id
        docs.append(
            {
                "id": doc_id,
                "text": e.doc.text,
                "metadata": _json(e.doc.metadata, "document metadata"),
                "themes": list(e.themes),
                "fingerprint": _fingerprint(e),
                "n_sentences": len(e.sentences),
            }
        )
        for cid, c, v in zip(e.chunk_ids, e.chunks, e.chunk_vectors, strict=True):
            chunks.append(
                {
                    "id": int(cid),
                    "doc_id": doc_id,
                    "start": c.start,
                    "end": c.end,
                    "text": c.text,
                    "token_count": int(c.token_count),
                    "index": int(c.index),
                    "sentence_start": int(c.sentence_start),
                    "sentence_end": int(c.sentence_end),
                    "metadata": _json(c.metadata, "chunk metadata"),
                    "vector": v,
                    "vec": v,
                }
            )
        spans = e.sentences
        for i, (s, v) in enumerate(zip(spans, e.sentence_vectors, strict=True)):
            stop = spans[i + 1].start if i + 1 < len(spans) else s.end
            sentences.append(
                {
                    "key": part_key(doc_id, i),
                    "doc_id": doc_id,
                    "i": i,
                    "start": s.start,
                    "end": s.end,
                    "text": e.doc.text[s.start : max(stop, s.end)],  # up to the next sentence
                    "vec": v,
                }
            )
        if windows:
            for n, ((a, b), v) in enumerate(zip(e.node_ranges, e.node_vectors, strict=True)):
                nodes.append(
                    {
                        "key": part_key(doc_id, n),
                        "doc_id": doc_id,
                        "n": n,
                        "first": int(a),
                        "end": int(b),
                        "vector": v,
                        "vec": v,
                    }
                )
    return docs, chunks, sentences, nodes


# -- serving --------------------------------------------------------------------------------------
class _RemoteDense:
    """Exact-rescored vector search on a :class:`Neo4jIndex` (``_search_steps`` says which)."""

    def __init__(self, owner: Neo4jIndex) -> None:
        self._owner = owner

    def search(self, queries: npt.ArrayLike, k: int) -> tuple[Floats, Ints]:
        """``(scores, ids)`` of shape ``(queries, k)``, best first (id -1 where none)."""
        return self._owner._run(self._search_steps(queries, k))

    async def asearch(self, queries: npt.ArrayLike, k: int) -> tuple[Floats, Ints]:
        """Async twin of :meth:`search`, on the async driver."""
        return await self._owner._arun(self._search_steps(queries, k))

    def read_steps(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, _Steps[Any]] | None:
        """The store and the steps of :meth:`search` (``None`` for other methods).

        For :class:`semrag._steps.Together`: run with other reads on the store at once.
        """
        if name != "search":
            return None
        return self._owner.store, self._search_steps(*args, **kwargs)

    def _search_steps(self, queries: npt.ArrayLike, k: int) -> _Steps[tuple[Floats, Ints]]:
        raise NotImplementedError


class _Dense(_RemoteDense):
    """``index.dense`` of a :class:`Neo4jIndex`: length and batched exact-rescored search."""

    def __len__(self) -> int:
        return int(self._owner._read(_COUNT_CHUNKS)[0]["n"])

    def _search_steps(self, queries: npt.ArrayLike, k: int) -> _Steps[tuple[Floats, Ints]]:
        return self._owner._dense_steps(np.atleast_2d(np.asarray(queries, np.float32)), k)

    def vectors_of(self, ids: Sequence[int]) -> Floats:
        """Stored vectors of these chunks (fetched with them)."""
        return self._owner.vectors_of(ids)


class _RemotePieces:
    """``index.piece_index`` of a :class:`Neo4jIndex`: SKETCH's pieces, fetched as searched.

    A piece's id is ``seq << 32 | j`` (its document's place, its place in the document);
    ``pieces`` and ``parents`` hold the pieces the searches of the current ``read()`` found.
    """

    def __init__(self, owner: Neo4jIndex, split: tuple[int, int]) -> None:
        self._owner = owner
        self.split = split
        self.dense = _PieceDense(owner)
        self.pieces: Mapping[int, Chunk] = _Found(owner, 0)
        self.parents: Mapping[int, int] = _Found(owner, 1)

    def __repr__(self) -> str:
        return f"stored pieces (split={self.split})"


class _Found(Mapping[int, Any]):
    """Field ``at`` of the pieces found in this read (``KeyError`` for others)."""

    def __init__(self, owner: Neo4jIndex, at: int) -> None:
        self._owner, self._at = owner, at

    def __getitem__(self, piece_id: int) -> Any:
        found = self._owner._cache("pieces").get(int(piece_id))
        if found is None:
            raise NotIndexedError(f"piece {piece_id} was not found by a search in this read()")
        return found[self._at]

    def __iter__(self) -> Iterator[int]:
        return iter(self._owner._cache("pieces"))

    def __len__(self) -> int:
        return len(self._owner._cache("pieces"))


class _PieceDense(_RemoteDense):
    """Exact-rescored vector search over the stored pieces (as ``_Dense`` over chunks)."""

    def _search_steps(self, queries: npt.ArrayLike, k: int) -> _Steps[tuple[Floats, Ints]]:
        owner = self._owner
        q = np.atleast_2d(np.asarray(queries, np.float32))
        owner._check_dim(q)
        rows = yield _Ask(
            _PIECES_SEARCH,
            {
                "n": owner._candidates(int(k)),
                "keep": owner._kept(int(k)),
                "vectors": [_vector(v) for v in q],
            },
            _PIECES_COLUMNS,
        )
        pieces = owner._cache("pieces")
        found = []
        for r in rows:
            owner._remember(r)  # the parent chunk (and its vector), for the rest of the read
            piece_id = int(r["seq"]) << 32 | int(r["j"])
            if piece_id not in pieces:
                piece = replace(
                    _chunk(r),
                    start=r["piece_start"],
                    end=r["piece_end"],
                    text=r["piece_text"],
                    token_count=r["piece_tokens"],
                    index=r["piece_index"],
                )
                pieces[piece_id] = (piece, int(r["id"]), _unbytes(r["piece_vec"]))
            found.append((r["row"], piece_id, pieces[piece_id][2]))
        return _ranked(found, q, k)

    def vectors_of(self, ids: Sequence[int]) -> Floats:
        """Vectors of pieces found in this read."""
        pieces = self._owner._cache("pieces")
        if not ids:
            return np.zeros((0, self._owner.embedder.dim), np.float32)
        return np.stack([pieces[int(i)][2] for i in ids])


class _Sparse:
    """``index.sparse`` of a :class:`Neo4jIndex`: the full-text index."""

    def __init__(self, owner: Neo4jIndex) -> None:
        self._owner = owner

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """``(chunk id, Lucene BM25 score)`` of the top ``k`` chunks, best first."""
        return self._owner._sparse_search([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int) -> list[list[tuple[int, float]]]:
        """:meth:`search` for each query, in one round trip."""
        return self._owner._sparse_search(list(queries), k) if queries else []


class Neo4jIndex:
    """Serves an index stored by :class:`Neo4jIndexStore`, holding no corpus in process.

    Every read is a query to the database (counted in ``store.reads``); within
    ``with index.read():`` the chunks, documents and vectors a query has fetched are kept
    for the rest of the block, so one retrieval asks for each at most once. It offers
    the read methods of :class:`~semrag.SemanticIndex` that dense and sparse search,
    :class:`~semrag.retrieval.IntentAwareRetriever` (without the extended channel) and
    :class:`~semrag.postprocess.SPC` use.

    Each round trip reads one committed version (a change is one transaction); a change
    that lands between two round trips of one query can be seen by the second only.

    The async twins (:meth:`asearch`, :meth:`asearch_channels`, ...) await the store's
    async driver (see :mod:`semrag.graph.neo4j`): no worker thread waits on the network,
    and what they decode runs in a worker thread. Each read method is written once, as
    steps that ask for statements; the sync and the async method drive the same steps.
    ``read()`` is a context, not a lock, so a coroutine holds it across its awaits
    (``async_reads``), which IAR's async path does.

    Args:
        store: the :class:`~semrag.graph.Neo4jGraphStore` (connection and database).
        embedder: embeds queries; ``None`` for the packaged MiniLM. Its dimension must be
            the stored one.
        tokenizer: counts tokens for SPC's budgets (default: the embedder's tokenizer, as
            the index's chunker counts by default).
        oversample: candidates asked of the (approximate) vector indexes per result, for
            the first 20 results (chunks for dense search, windows for an SSG anchor);
            semrag scores them exactly, so the top ``k`` equal an exact search's unless the
            vector index misses one of them (on the 2Wiki benchmark's 5,060 chunks, 4 and
            40 changed the top 20 of 3 of 40 queries, 10 and 100 of none; over all 500
            questions full@10 still moves by 0.002).
        min_candidates: the fewest candidates asked.
        name: the stored index's name (as given to :class:`Neo4jIndexStore`).

    Raises:
        ConfigError: if the database holds no index of that name, or vectors of another
            dimension than the embedder's.
    """

    extended = None
    """IAR's default extended channel here: none (PPR builds its passage graph in process)."""
    async_reads = True
    """Its ``a...`` read methods await the database, and ``read()`` may span awaits."""

    def __init__(
        self,
        store: Neo4jGraphStore,
        *,
        embedder: Any = None,
        tokenizer: Any = None,
        oversample: int = 10,
        min_candidates: int = 100,
        name: str = _STATE,
    ) -> None:
        if oversample < 1 or min_candidates < 1:
            raise ConfigError(
                f"oversample and min_candidates must be >= 1, got {oversample}, {min_candidates}"
            )
        self.store = store
        self.name = name
        self.embedder = as_embedder(embedder)
        self.tokenizer = (
            tokenizer or getattr(self.embedder, "tokenizer", None) or (WhitespaceTokenizer())
        )
        self.oversample, self.min_candidates = int(oversample), int(min_candidates)
        state = _read_state(store, name)
        if state.get("version") is None:
            raise ConfigError(
                f"the database holds no semrag index named {name!r}: "
                "write one with Neo4jIndexStore.for_index(index, store)"
            )
        if int(state["dim"]) != self.embedder.dim:
            raise ConfigError(
                f"the stored index has {state['dim']}-dimensional vectors "
                f"({state['embedder']}); the embedder gives {self.embedder.dim}"
            )
        self.ssg_config = SSGConfig(**json.loads(state["ssg"])) if state.get("ssg") else None
        """The stored similarity graph's config (``None`` without one)."""
        pieces = state.get("pieces")
        self.piece_index = _RemotePieces(self, (int(pieces[0]), int(pieces[1]))) if pieces else None
        """SKETCH's small pieces as stored (``SemanticIndex(pieces=...)`` in the writer), or
        ``None``: then SKETCH searches the chunks here (``split=None``)."""
        self.dense = _Dense(self)
        self.sparse = _Sparse(self)
        self._pca_read: tuple[str, tuple[Floats, Floats]] | None = None  # (digest, PCA)

    # -- plumbing -------------------------------------------------------------------------------
    def _read(self, query: str, **params: Any) -> list[dict[str, Any]]:
        return self.store._read(query, **params)

    def _run(self, steps: _Steps[_Result]) -> _Result:
        """Drive read steps with blocking reads."""
        return self.store._run(steps)

    async def _arun(self, steps: _Steps[_Result]) -> _Result:
        """Drive read steps with the async driver (the steps run in worker threads)."""
        return await self.store._arun(steps)

    @contextlib.contextmanager
    def read(self, *, followers: bool = False) -> Iterator[None]:
        """Keep what one query fetches for the length of the block (see the class doc).

        The kept rows live in a context variable: a thread's own, a task's own, and
        seen by the worker threads a task starts (``asyncio.to_thread`` copies it).
        """
        held = _READS.get()
        if held is not None and id(self) in held:
            yield
            return
        token = _READS.set({**(held or {}), id(self): {"chunks": {}, "docs": {}, "pieces": {}}})
        try:
            yield
        finally:
            _READS.reset(token)

    def _cache(self, kind: str) -> dict[Any, Any]:
        held = _READS.get()
        cache = held.get(id(self)) if held is not None else None
        return cache[kind] if cache is not None else {}  # outside a read: kept for one call

    def _candidates(self, k: int) -> int:
        """Candidates asked of a vector index for ``k`` results.

        ``oversample`` times the first 20 of them (a long ranking, such as
        basic_retrieval's, needs no more candidates per result past its head), and at least
        ``min_candidates``.
        """
        return max(self.min_candidates, k + (self.oversample - 1) * min(k, 20))

    @staticmethod
    def _kept(k: int) -> int:
        """Candidates fetched for ``k`` results: the vector index's best ``2 k``.

        Its scores are exact cosines in float32, the embedded index's are float32 dot
        products of unit vectors: they differ in the last bits, far less than ``k`` places
        of rank apart (only more than ``k`` exactly tied vectors could be cut differently).
        """
        return 2 * k

    @property
    def version(self) -> int:
        """The index version the database holds."""
        return self.current_version()

    def current_version(self) -> int:
        """:attr:`version` as a method, for callers that also await :meth:`acurrent_version`."""
        return self._run(self._version_steps())

    async def acurrent_version(self) -> int:
        """Async twin of :meth:`current_version`, on the async driver."""
        return await self._arun(self._version_steps())

    def _version_steps(self) -> _Steps[int]:
        rows = yield _Ask(_READ_STATE, {"name": self.name})
        return int((rows[0]["state"] or {})["version"])

    # -- searches -------------------------------------------------------------------------------
    def embed_query(self, query: str) -> Floats:
        """The query's unit vector."""
        return self.embedder.embed([query])[0]

    async def aembed_query(self, query: str) -> Floats:
        """Async twin of :meth:`embed_query`."""
        return (await self.embedder.aembed([query]))[0]

    def _dense_steps(self, queries: Floats, k: int) -> _Steps[tuple[Floats, Ints]]:
        self._check_dim(queries)
        rows = yield _Ask(
            _DENSE,
            {
                "n": self._candidates(int(k)),
                "keep": self._kept(int(k)),
                "vectors": [_vector(q) for q in queries],
            },
            _DENSE_COLUMNS,
        )
        return self._dense_rows(rows, queries, k)

    def _check_dim(self, queries: Floats) -> None:
        if queries.shape[1] != self.embedder.dim:
            raise ConfigError(
                f"query of dimension {queries.shape[1]}; the index has {self.embedder.dim}"
            )

    def _dense_rows(
        self, rows: Sequence[Mapping[str, Any]], queries: Floats, k: int
    ) -> tuple[Floats, Ints]:
        return _ranked([(r["row"], int(r["id"]), self._remember(r)) for r in rows], queries, k)

    def _sparse_search(self, queries: Sequence[str], k: int) -> list[list[tuple[int, float]]]:
        return self._run(self._sparse_steps(queries, k))

    def _sparse_steps(
        self, queries: Sequence[str], k: int
    ) -> _Steps[list[list[tuple[int, float]]]]:
        rows = yield _Ask(_SPARSE, {"n": int(k), "queries": [lucene_query(q) for q in queries]})
        return self._sparse_rows(rows, len(queries))

    def _sparse_rows(
        self, rows: Sequence[Mapping[str, Any]], n_queries: int
    ) -> list[list[tuple[int, float]]]:
        out: list[list[tuple[int, float]]] = [[] for _ in range(n_queries)]
        for r in rows:
            self._remember(r)
            out[r["row"]].append((int(r["id"]), float(r["score"])))
        for hits in out:
            hits.sort(key=lambda h: (-h[1], h[0]))
        return out

    def search_channels(
        self, vectors: npt.ArrayLike, queries: Sequence[str], k: int
    ) -> tuple[Ints, list[list[tuple[int, float]]]]:
        """Dense top-``k`` ids of each vector and full-text top ``k`` of each query, at once.

        One round trip (the chunks come with them), as
        :meth:`semrag.SemanticIndex.search_channels` is one read.
        """
        return self._run(self._channels_steps(vectors, queries, k))

    async def asearch_channels(
        self, vectors: npt.ArrayLike, queries: Sequence[str], k: int
    ) -> tuple[Ints, list[list[tuple[int, float]]]]:
        """Async twin of :meth:`search_channels`."""
        return await self._arun(self._channels_steps(vectors, queries, k))

    def _channels_steps(
        self, vectors: npt.ArrayLike, queries: Sequence[str], k: int
    ) -> _Steps[tuple[Ints, list[list[tuple[int, float]]]]]:
        v = np.atleast_2d(np.asarray(vectors, np.float32))
        if not queries:
            return (yield from self._dense_steps(v, k))[1], []
        self._check_dim(v)
        rows = yield _Ask(
            _CHANNELS,
            {
                "dense_n": self._candidates(int(k)),
                "dense_keep": self._kept(int(k)),
                "sparse_n": int(k),
                "vectors": [_vector(q) for q in v],
                "queries": [lucene_query(q) for q in queries],
            },
        )
        dense = [r for r in rows if r["channel"] == "dense"]
        sparse = [r for r in rows if r["channel"] == "sparse"]
        return self._dense_rows(dense, v, k)[1], self._sparse_rows(sparse, len(queries))

    def search_vector(self, vector: Floats, k: int) -> list[ScoredChunk]:
        """Dense top-``k`` chunks for a query vector (exact scores, as the embedded index)."""
        with self.read():
            return self._run(self._search_vector_steps(vector, k))

    async def asearch_vector(self, vector: Floats, k: int) -> list[ScoredChunk]:
        """Async twin of :meth:`search_vector`."""
        with self.read():
            return await self._arun(self._search_vector_steps(vector, k))

    def _search_vector_steps(self, vector: Floats, k: int) -> _Steps[list[ScoredChunk]]:
        k = check_k("Neo4jIndex.search", k, 10)
        scores, ids = yield from self._dense_steps(np.asarray(vector, np.float32)[None, :], k)
        keep = ids[0] >= 0
        rows = yield from self._rows_steps([int(i) for i in ids[0][keep]])
        return [
            ScoredChunk(c, float(s), {"dense": float(s)}, ({"channel": "dense", "rank": r},))
            for r, ((c, _), s) in enumerate(zip(rows, scores[0][keep], strict=True))
        ]

    def search(self, query: str, k: int = 10) -> list[ScoredChunk]:
        """Dense top-``k`` chunks for ``query`` (one round trip: the chunks come with them)."""
        check_query("Neo4jIndex.search", query)
        return self.search_vector(self.embed_query(query), k)

    async def asearch(self, query: str, k: int = 10) -> list[ScoredChunk]:
        """Async twin of :meth:`search` (on the async driver)."""
        check_query("Neo4jIndex.search", query)
        return await self.asearch_vector(await self.aembed_query(query), k)

    def search_sparse(self, query: str, k: int = 10) -> list[ScoredChunk]:
        """Full-text (Lucene BM25) top-``k`` chunks for ``query``."""
        with self.read():
            return self._run(self._search_sparse_steps(query, k))

    async def asearch_sparse(self, query: str, k: int = 10) -> list[ScoredChunk]:
        """Async twin of :meth:`search_sparse` (on the async driver)."""
        with self.read():
            return await self._arun(self._search_sparse_steps(query, k))

    def _search_sparse_steps(self, query: str, k: int) -> _Steps[list[ScoredChunk]]:
        check_query("Neo4jIndex.search_sparse", query)
        k = check_k("Neo4jIndex.search_sparse", k, 10)
        hits = (yield from self._sparse_steps([query], k))[0]
        rows = yield from self._rows_steps([i for i, _ in hits])
        return [
            ScoredChunk(c, s, {"sparse": s}, ({"channel": "sparse", "rank": r},))
            for r, ((c, _), (_, s)) in enumerate(zip(rows, hits, strict=True))
        ]

    def sparse_scores(self, query: str, chunk_ids: Sequence[int]) -> npt.NDArray[np.float64]:
        """Full-text scores of ``query`` for the given chunks (0 where no term matches)."""
        return self.sparse_scores_many([query], chunk_ids)[0]

    def sparse_scores_many(
        self, queries: Sequence[str], chunk_ids: Sequence[int]
    ) -> npt.NDArray[np.float64]:
        """:meth:`sparse_scores` of each query, in one round trip."""
        return self._run(self._sparse_scores_steps(queries, chunk_ids))

    async def asparse_scores_many(
        self, queries: Sequence[str], chunk_ids: Sequence[int]
    ) -> npt.NDArray[np.float64]:
        """Async twin of :meth:`sparse_scores_many`."""
        return await self._arun(self._sparse_scores_steps(queries, chunk_ids))

    def _sparse_scores_steps(
        self, queries: Sequence[str], chunk_ids: Sequence[int]
    ) -> _Steps[npt.NDArray[np.float64]]:
        ids = [int(i) for i in chunk_ids]
        out = np.zeros((len(queries), len(ids)), np.float64)
        if not ids or not queries:
            return out
        texts = [lucene_query(q) for q in queries]
        column = {i: j for j, i in enumerate(ids)}
        for r in (yield _Ask(_SPARSE_AMONG, {"texts": texts, "ids": ids})):
            out[r["row"], column[int(r["id"])]] = float(r["score"])
        return out

    def sentence_vectors_of(self, chunk_ids: Sequence[int]) -> list[Floats]:
        """The vectors of each chunk's sentences, in one round trip."""
        return self._run(self._sentence_vectors_steps(chunk_ids))

    async def asentence_vectors_of(self, chunk_ids: Sequence[int]) -> list[Floats]:
        """Async twin of :meth:`sentence_vectors_of`."""
        return await self._arun(self._sentence_vectors_steps(chunk_ids))

    def _sentence_vectors_steps(self, chunk_ids: Sequence[int]) -> _Steps[list[Floats]]:
        chunks = [c for c, _ in (yield from self._rows_steps(chunk_ids))]
        rows = [
            {"doc_id": c.doc_id, "first": c.sentence_start, "end": c.sentence_end} for c in chunks
        ]
        out: list[Floats] = [np.zeros((0, self.embedder.dim), np.float32) for _ in chunks]
        for r in (yield _Ask(_CHUNK_SENTENCES, {"rows": rows})) if rows else []:
            if r["vecs"]:
                out[r["row"]] = np.stack([_unbytes(b) for b in r["vecs"]])
        return out

    # -- the corpus, by id ----------------------------------------------------------------------
    def _remember(self, row: Mapping[str, Any]) -> Floats:
        """Keep a fetched chunk row for the rest of this read; returns its vector."""
        vector = _unbytes(row["vec"])
        self._cache("chunks").setdefault(int(row["id"]), (_chunk(row), vector))
        return vector

    def _rows(self, ids: Sequence[int]) -> list[tuple[Chunk, Floats]]:
        """``(chunk, vector)`` of each id: one round trip for those not fetched in this read."""
        return self._run(self._rows_steps(ids))

    def _rows_steps(self, ids: Sequence[int]) -> _Steps[list[tuple[Chunk, Floats]]]:
        known = self._cache("chunks")
        missing = sorted({int(i) for i in ids} - known.keys())
        if missing:
            for r in (yield _Ask(_CHUNKS, {"ids": missing})):
                known[int(r["id"])] = (_chunk(r), _unbytes(r["vec"]))
        unknown = [int(i) for i in ids if int(i) not in known]
        if unknown:
            raise NotIndexedError(f"chunk ids not in the index: {unknown[:5]}")
        return [known[int(i)] for i in ids]

    def _chunks(self, ids: Sequence[int]) -> list[Chunk]:
        return [c for c, _ in self._rows(ids)]

    def chunk(self, chunk_id: int) -> Chunk:
        """The chunk stored under an integer id (``KeyError`` if absent)."""
        return self._rows([chunk_id])[0][0]

    def vectors_of(self, chunk_ids: Sequence[int]) -> Floats:
        """Stored unit vectors of the given chunks, shape ``(len(chunk_ids), dim)``."""
        rows = self._rows(chunk_ids)
        if not rows:
            return np.zeros((0, self.embedder.dim), np.float32)
        return np.stack([v for _, v in rows])

    def chunks(self, doc_id: str) -> list[Chunk]:
        """Chunks of one document, in its order."""
        return [_chunk(r) for r in self._read(_DOC_CHUNKS, doc_id=doc_id)]

    def overlapping_chunks(self, doc_id: str, start: int, end: int) -> list[int]:
        """Ids of ``doc_id``'s chunks that share a character with ``[start, end)``."""
        return self.overlapping_chunks_many([(doc_id, start, end)])[0]

    def overlapping_chunks_many(self, spans: Sequence[tuple[str, int, int]]) -> list[list[int]]:
        """:meth:`overlapping_chunks` of each ``(doc_id, start, end)``, in one round trip.

        The chunks come with them (kept for the rest of a ``read()``).
        """
        return self._run(self._overlapping_steps(spans))

    async def aoverlapping_chunks_many(
        self, spans: Sequence[tuple[str, int, int]]
    ) -> list[list[int]]:
        """Async twin of :meth:`overlapping_chunks_many`, on the async driver."""
        return await self._arun(self._overlapping_steps(spans))

    def _overlapping_steps(self, spans: Sequence[tuple[str, int, int]]) -> _Steps[list[list[int]]]:
        asked = [(d, int(a), int(b)) for d, a, b in spans]
        unique = list(dict.fromkeys(asked))
        if not unique:
            return []
        known = self._cache("chunks")
        rows = yield _Ask(
            _OVERLAPPING_MANY, {"spans": [list(s) for s in unique], "known": list(known)}
        )
        found: list[list[int]] = [[] for _ in unique]
        for r in rows:
            for c in r["chunks"]:
                self._remember(dict(zip(_CHUNK_KEYS, c, strict=True)))
            for row, cid in r["hits"]:
                found[row].append(int(cid))
        at = {s: i for i, s in enumerate(unique)}
        return [list(found[at[s]]) for s in asked]

    def fetch_documents(self, doc_ids: Sequence[str]) -> None:
        """Fetch these documents (text, sentences, vectors) in one round trip.

        Kept for the rest of a ``read()`` (outside one there is nowhere to keep them); ids
        not stored are left out (reading one of them later raises ``KeyError``).
        """
        self._run(self._fetch_documents_steps(doc_ids))

    async def afetch_documents(self, doc_ids: Sequence[str]) -> None:
        """Async twin of :meth:`fetch_documents`, on the async driver."""
        await self._arun(self._fetch_documents_steps(doc_ids))

    def _fetch_documents_steps(self, doc_ids: Sequence[str]) -> _Steps[None]:
        cache = self._cache("docs")
        missing = sorted({d for d in doc_ids if d not in cache})
        if missing:
            for r in (yield _Ask(_DOCUMENTS, {"ids": missing})):
                cache[r["id"]] = self._document_entry(r)
            for d in missing:
                cache.setdefault(d, None)  # not stored: KeyError when read, no round trip

    def _document(self, doc_id: str) -> tuple[Document, list[Span], Floats, list[str]]:
        cache = self._cache("docs")
        if doc_id not in cache:
            rows = self._read(_DOCUMENTS, ids=[doc_id])
            cache[doc_id] = self._document_entry(rows[0]) if rows else None
        entry = cache[doc_id]
        if entry is None:
            raise NotIndexedError(doc_id)
        return entry

    def _document_entry(
        self, r: Mapping[str, Any]
    ) -> tuple[Document, list[Span], Floats, list[str]]:
        spans = [Span(a, b) for a, b in r["spans"] if a is not None]
        vectors = (
            np.stack([_unbytes(b) for b in r["vectors"]])
            if spans
            else np.zeros((0, self.embedder.dim), np.float32)
        )
        doc = Document(r["id"], r["text"], json.loads(r["metadata"]))
        return doc, spans, vectors, list(r["themes"] or [])

    def document(self, doc_id: str) -> Document:
        """The stored document ``doc_id`` (``KeyError`` if absent)."""
        return self._document(doc_id)[0]

    def sentences(self, doc_id: str) -> list[Span]:
        """Sentence spans of ``doc_id``."""
        return self._document(doc_id)[1]

    def sentence_vectors(self, doc_id: str) -> Floats:
        """Unit vectors of ``doc_id``'s sentences, aligned with :meth:`sentences`."""
        return self._document(doc_id)[2]

    def themes(self, doc_id: str) -> list[str]:
        """Themes of ``doc_id``."""
        return self._document(doc_id)[3]

    def ssg_view(self) -> _RemoteView:
        """The similarity graph as :class:`~semrag.retrieval.SSGRetriever` reads it.

        Fetched as the traversal goes: the anchor search (with the version, and the first
        nodes' sentences and edges) is one round trip, and more nodes are loaded in
        batches: the node asked for, the met nodes closest to the query, and the asked
        node's out-neighbours the traversal most likely visits next (see ``_RemoteView``).
        A node's number holds for one query only.

        Raises:
            ConfigError: if the stored index has no similarity graph.
        """
        if self.ssg_config is None:
            raise ConfigError("the stored index was built with ssg=False")
        return _RemoteView(self)

    @property
    def doc_ids(self) -> list[str]:
        """Ids of the stored documents (sorted; the database keeps no insertion order)."""
        return [r["id"] for r in self._read(_DOC_IDS)]

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and self._read(_HAS_DOC, id=doc_id)[0]["n"] > 0

    def __len__(self) -> int:
        return int(self._read(_COUNT_DOCS)[0]["n"])

    def __repr__(self) -> str:
        return f"Neo4jIndex({self.store!r}, embedder={self.embedder!r})"


def _ranked(
    found: Sequence[tuple[int, int, Floats]], queries: Floats, k: int
) -> tuple[Floats, Ints]:
    """``(scores, ids)`` of each query row's top ``k`` of its ``(row, id, vector)`` candidates.

    Scored exactly (the dot product, as the embedded dense index), ties to the lower id.
    """
    scores = np.full((len(queries), k), -np.inf, np.float32)
    ids = np.full((len(queries), k), -1, np.int64)
    by_row: dict[int, list[tuple[float, int]]] = {}
    for row, i, v in found:
        by_row.setdefault(row, []).append((-float(v @ queries[row]), i))
    for row, got in by_row.items():
        got.sort()
        top = got[:k]
        ids[row, : len(top)] = [i for _, i in top]
        scores[row, : len(top)] = [-s for s, _ in top]
    return scores, ids


def _chunk(r: Mapping[str, Any]) -> Chunk:
    return Chunk(
        doc_id=r["doc_id"],
        start=int(r["start"]),
        end=int(r["end"]),
        text=r["text"],
        token_count=int(r["token_count"]),
        index=int(r["index"]),
        sentence_start=int(r["sentence_start"]),
        sentence_end=int(r["sentence_end"]),
        metadata=json.loads(r["metadata"]),
    )


class _Rows:
    """Rows fetched so far, indexed like an array (an int, or a list of ints)."""

    def __init__(self, get: Callable[[int], Any], dim: int) -> None:
        self._get, self._dim = get, dim

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, (int, np.integer)):
            return self._get(int(idx))
        rows = [self._get(int(i)) for i in idx]
        return np.stack(rows) if rows else np.zeros((0, self._dim), np.float32)


class _RemoteGraph:
    """:class:`~semrag.index.ssg.SemanticSimilarityGraph`'s read side, fetched as needed."""

    def __init__(self, view: _RemoteView) -> None:
        self._view = view
        self._pca: tuple[Floats, Floats] | None = None
        self.node_vectors = _Rows(lambda n: view._vectors[n], view.dim)
        self.node_sentences = _Rows(lambda n: view._ranges[n], 2)

    @property
    def n_nodes(self) -> int:
        """Window nodes in the stored graph (read with the anchor search, or now)."""
        return int(self._view._read_state()["windows"] or 0)

    def neighbours(self, node: int) -> tuple[Ints, Floats, npt.NDArray[np.int8]]:
        """``(nodes, scores, kinds)`` of the edges leaving ``node`` (fetched in a batch)."""
        view = self._view
        if node not in view._adjacent:
            view._owner._run(view.load_steps([node]))
        return view._adjacent[node]

    def project_3d(self, vectors: Floats) -> Floats:
        """Project vectors with the stored graph's PCA.

        Read with the anchor search when it asked for it, else once per query.
        """
        pca = self._pca
        if pca is None:
            view = self._view
            r = view._owner._read(_PCA, name=view._owner.name)[0]
            pca = self._keep_pca(r["mean"], r["components"])
        mean, components = pca
        v = np.asarray(vectors, dtype=np.float32)
        return ((v - mean) @ components.T).astype(np.float32)

    def _keep_pca(
        self, mean: Sequence[float] | None, components: Sequence[float] | None
    ) -> tuple[Floats, Floats]:
        dim = self._view.dim
        self._pca = (
            np.asarray(mean or np.zeros(dim), np.float32),
            np.asarray(components or [], np.float32).reshape(-1, dim),
        )
        return self._pca


class _RemoteNodeIndex:
    """The anchor search: the window vector index, candidates scored exactly."""

    def __init__(self, view: _RemoteView) -> None:
        self._view = view

    def search(self, query: Floats, k: int) -> tuple[Floats, Ints]:
        """``(scores, ids)`` of shape ``(1, k)``, best first (ties to the lower node)."""
        view = self._view
        return view._owner._run(view.search_steps(query, k))


class _RemoteView:
    """:class:`~semrag.index.semantic_index.SSGView` over the database, for one query.

    A node's number is ``seq << 32 | n`` (window ``n`` of the document placed ``seq`` in
    the index's order) and a sentence's ``seq << 32 | i``: both sort as the embedded
    index's global numbers do, so every tie a traversal breaks by number breaks alike,
    and a run of sentence numbers is a run of one document's sentences.

    Nodes arrive with their vectors (from the anchor search, or as a loaded node's
    neighbours). A node's sentences and out-edges are loaded when first needed, in one
    round trip with those of the ``batch - 1`` other met nodes closest to the query that
    are not loaded yet and of the node's ``ahead`` out-neighbours that the traversal's own
    next-hop rule ranks first (the server ranks them, :meth:`ahead_rank`). A greedy
    traversal (one next hop per node) then most likely walks a chain: the best of those,
    that node's best hop, and so on; the server follows that chain for ``_LEVELS - 1``
    more nodes and loads the ``follow`` best hops of each too. So a traversal mostly goes
    to loaded nodes, and most steps need no round trip. The anchor search loads its first
    candidates the same way, in its own round trip.

    A traversal asks for its reads as steps (:meth:`search_steps`, :meth:`load_steps`)
    that yield statements, answered by :meth:`fetch` or, on the async path, awaited on the
    store's async driver (:meth:`afetch`). Read through the graph's methods instead, the
    view loads what they need with blocking reads.
    """

    batch = 8
    ahead = 16
    follow = 2
    async_reads = True
    """Its reads are steps a traversal yields, answered by :meth:`fetch` / :meth:`afetch`."""

    def __init__(self, owner: Neo4jIndex) -> None:
        self._owner = owner
        self.dim = dim = owner.embedder.dim
        self._state: Mapping[str, Any] | None = None
        self._q: Floats | None = None
        self._keys: dict[int, str] = {}
        self._numbers: dict[str, int] = {}  # node number by key
        self._vectors: dict[int, Floats] = {}
        self._ranges: dict[int, tuple[int, int]] = {}
        self._adjacent: dict[int, tuple[Ints, Floats, npt.NDArray[np.int8]]] = {}
        self._docs: dict[int, str] = {}  # by seq
        self._metadata: dict[str, Any] = {}
        self._sentences: dict[int, tuple[Span, str, Floats]] = {}
        self.graph = _RemoteGraph(self)
        self.node_index = _RemoteNodeIndex(self)
        self.sentence_matrix = _Rows(self._sentence_vector, dim)

    def _read_state(self) -> Mapping[str, Any]:
        if self._state is None:
            rows = self._owner._read(_VIEW_STATE, name=self._owner.name)
            if not rows:
                raise ConfigError(f"the database holds no semrag index named {self._owner.name!r}")
            self._state = rows[0]
        return self._state

    @property
    def version(self) -> int:
        """The index version this query read (with its anchor search)."""
        return int(self._read_state()["version"])

    def _add(self, row: Mapping[str, Any]) -> int:
        """The number of the node in ``row`` (kept when first met)."""
        seq = int(row["seq"]) << 32
        node = seq | int(row["n"])
        if node in self._keys:
            return node
        doc_id = row["doc_id"]
        if int(row["seq"]) not in self._docs:
            self._docs[int(row["seq"])] = doc_id
            self._metadata[doc_id] = json.loads(row["metadata"])
        self._keys[node] = row["key"]
        self._numbers[row["key"]] = node
        self._vectors[node] = _unbytes(row["vec"])
        self._ranges[node] = (seq | int(row["first"]), seq | int(row["end"]))
        return node

    def fetch(self, ask: _Ask) -> list[dict[str, Any]]:
        """Answer one read a step asked for (blocking)."""
        return self._owner.store._read(ask.query, **ask.params)

    async def afetch(self, ask: _Ask) -> list[dict[str, Any]]:
        """Async twin of :meth:`fetch`, on the store's async driver."""
        return await self._owner.store._aread(ask.query, **ask.params)

    def search_steps(
        self, query: Floats, k: int, *, pca: bool = False, load: int = 0, rank: str = "query"
    ) -> _Steps[tuple[Floats, Ints]]:
        """The anchor search as a step: ``(scores, ids)`` of shape ``(1, k)``, best first.

        Ties go to the lower node. The index version comes in the same round trip, with
        ``pca`` the graph's PCA, which ``triangulation_geometric_3d`` projects with, and
        with ``load`` the first ``min(load, batch)`` candidates in the vector index's order
        loaded as :meth:`load_steps` loads them (with the look-ahead of the first, ranked
        by ``rank``): what a traversal loads next, unless exact scores reorder the
        candidates. The PCA is sent only when it differs from the one this index last read
        (:func:`_pca_digest`): that one, if any, ranks this search's look-ahead (by the
        geometric rule) before the search says whether it is current.
        """
        owner = self._owner
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        self._q = q
        seen = owner._pca_read if pca else None
        if seen is not None:  # until the search says it is current, it only ranks the look-ahead
            self.graph._pca = seen[1]
        found = yield _Ask(
            _ANCHORS,
            {
                "name": owner.name,
                "n": owner._candidates(int(k)),
                "vector": _vector(q),
                "pca": bool(pca),
                "pca_digest": None if seen is None else seen[0],
                "load": min(int(load), self.batch),
                "ahead": int(self.ahead),
                "follow": self._follow(rank),
                "rank": self.ahead_rank(rank),
                "known": [],
                "visited": [],
            },
        )
        if not found:
            raise ConfigError(f"the database holds no semrag index named {owner.name!r}")
        self._state = found[0]
        if pca:
            digest = found[0]["pca_digest"]
            if seen is None or digest != seen[0]:  # changed, or no digest stored
                kept = self.graph._keep_pca(*found[0]["pca"])
                owner._pca_read = None if digest is None else (digest, kept)
        nodes = sorted({self._add(r) for r in found[0]["nodes"]})
        loaded = found[0]["loaded"]
        first = [r["key"] for r in found[0]["nodes"][: min(int(load), self.batch)]]
        self._take(loaded, [self._numbers[key] for key in first])
        scores = np.full((1, k), -np.inf, np.float32)
        ids = np.full((1, k), -1, np.int64)
        if nodes:
            sims = np.stack([self._vectors[i] for i in nodes]) @ q
            top = np.argsort(-sims, kind="stable")[:k]
            ids[0, : top.size] = np.asarray(nodes, np.int64)[top]
            scores[0, : top.size] = sims[top]
        return scores, ids

    def ahead_rank(self, rank: str) -> dict[str, Any]:
        """How the look-ahead ranks a node's out-neighbours: as a traversal's next hop.

        ``rank`` names the traversal's rule: ``"query"`` (similarity to the query),
        ``"edge"`` (the edge's score: ``ssg_traversal``), ``"average"`` (query similarity
        plus edge score: ``triangulation_average``), ``"fulldim"`` (nearest ``2 q - node``:
        ``triangulation_fulldim``), ``"geometric"`` (the same in the PCA space:
        ``triangulation_geometric_3d``; by query similarity until the PCA is known). The
        ranking only decides what is fetched early; the traversal scores every hop itself.

        Raises:
            ConfigError: for an unknown rule.
        """
        weights = {
            "query": (1.0, 0.0, 0.0),
            "edge": (0.0, 1.0, 0.0),
            "average": (1.0, 1.0, 0.0),
            "fulldim": (2.0, 0.0, -1.0),
            "geometric": (0.0, 0.0, 0.0),
        }
        if rank not in weights:
            raise ConfigError(f"unknown look-ahead rule {rank!r}: one of {sorted(weights)}")
        pca = self.graph._pca
        if rank == "geometric" and (pca is None or self._q is None):
            rank = "query"
        query, edge, source = weights[rank]
        out: dict[str, Any] = {
            "query": query,
            "edge": edge,
            "source": source,
            "axes": [],
            "scale": [],
            "base": [],
        }
        if rank == "geometric":
            assert pca is not None and self._q is not None
            mean, components = pca
            q3 = self.graph.project_3d(self._q[None, :])[0]
            # From node a, hop v scores -|p(v) + p(a) - 2 p(q)| with p(x) = (x - mean) C^T:
            # per axis, |C_i| (v + a) . C_i / |C_i| - 2 (mean . C_i + p_i(q)).
            for axis, t in zip(components, q3, strict=False):
                norm = float(np.linalg.norm(axis))
                if norm > 0:
                    out["axes"].append(_vector(axis / norm))
                    out["scale"].append(norm)
                    out["base"].append(2 * (float(mean @ axis) + float(t)))
        return out

    def _follow(self, rank: str) -> int:
        """Hops loaded per further level of the predicted chain (for a greedy rule only).

        Every rule but ``"query"`` is greedy (one next hop per node); ``"query"``'s
        traversals go best-first over all met nodes, or down a ranking.
        """
        return 0 if rank == "query" else self.follow

    def load_steps(
        self, nodes: Sequence[int], *, rank: str = "query", visited: Iterable[int] = ()
    ) -> _Steps[None]:
        """Load the sentences and out-edges of the ``nodes`` not loaded yet.

        The next likely nodes come with them (see the class doc; ``rank`` as in
        :meth:`ahead_rank`; ``visited``: the nodes the traversal has visited, which it
        never goes to again): one step, or none when all are loaded.
        """
        asked = [int(n) for n in dict.fromkeys(nodes) if int(n) not in self._adjacent]
        if not asked:
            return
        batch = list(asked)
        waiting = [n for n in self._keys if n not in self._adjacent and n not in asked]
        room = self.batch - len(batch)
        if waiting and self._q is not None and room > 0:
            sims = np.stack([self._vectors[n] for n in waiting]) @ self._q
            batch += [waiting[j] for j in np.argsort(-sims, kind="stable")[:room]]
        keys = [self._keys[n] for n in batch]
        if self.ahead and self._q is not None:
            params = {
                "keys": keys,
                "q": _vector(self._q),
                "ahead": int(self.ahead),
                "follow": self._follow(rank),
                "rank": self.ahead_rank(rank),
                "known": [self._keys[n] for n in self._adjacent],
                "visited": [self._keys[int(n)] for n in visited if int(n) in self._keys],
            }
            ask = _Ask(_LOAD_AHEAD, params)
        else:
            ask = _Ask(_LOAD, {"keys": keys})
        rows = yield ask
        self._take(rows, batch)

    def _take(self, rows: list[dict[str, Any]], asked: Sequence[int]) -> None:
        """Keep the sentences and out-edges that a load of the ``asked`` nodes returned."""
        keys = {self._keys[n] for n in asked}
        rows.sort(key=lambda r: r["source"] not in keys)  # the asked nodes meet the others
        for r in rows:
            source = self._numbers[r["source"]]
            seq = source & ~0xFFFFFFFF
            for srow in r["sentences"]:
                self._sentences.setdefault(
                    seq | int(srow["i"]),
                    (
                        Span(int(srow["start"]), int(srow["end"])),
                        srow["text"],
                        _unbytes(srow["vec"]),
                    ),
                )
            edges = sorted((int(e["kind"]), -float(e["score"]), self._add(e)) for e in r["edges"])
            self._adjacent[source] = (
                np.array([n for _, _, n in edges], np.int64),
                np.array([-s for _, s, _ in edges], np.float32),
                np.array([k for k, _, _ in edges], np.int8),
            )
        for n in asked:  # a node the database no longer has: no sentences, no edges
            self._adjacent.setdefault(
                n, (np.zeros(0, np.int64), np.zeros(0, np.float32), np.zeros(0, np.int8))
            )

    def _sentence(self, global_index: int) -> tuple[Span, str, Floats]:
        found = self._sentences.get(global_index)
        if found is None:
            owner = next((n for n, (a, b) in self._ranges.items() if a <= global_index < b), None)
            if owner is None or owner in self._adjacent:
                raise NotIndexedError(f"sentence {global_index} was not met in this query")
            self._owner._run(self.load_steps([owner]))
            found = self._sentences[global_index]
        return found

    def _sentence_vector(self, global_index: int) -> Floats:
        return self._sentence(global_index)[2]

    def sentence_location(self, global_index: int) -> tuple[str, Span]:
        """``(doc_id, span)`` of a sentence met in this query, by its number."""
        return self._docs[global_index >> 32], self._sentence(global_index)[0]

    def sentence_text(self, global_index: int) -> str:
        """The text of a sentence met in this query."""
        span, text, _ = self._sentence(global_index)
        return text[: span.end - span.start]

    def node_chunk(self, node: int) -> Chunk:
        """A window node as a :class:`Chunk` with exact offsets."""
        a, b = self._ranges[node]
        return self.sentences_chunk(a, b, index=node)

    def sentences_chunk(self, first: int, end: int, *, index: int = 0) -> Chunk:
        """Sentences ``first .. end - 1`` (met in this query, all of one document) as a chunk.

        Raises:
            ConfigError: if the range is empty, crosses a document or was not met.
        """
        seq = first >> 32
        if not (first < end and (end - 1) >> 32 == seq):
            raise ConfigError(f"sentences {first}..{end - 1} are not a run of one document")
        try:
            rows = [self._sentence(i) for i in range(first, end)]
        except KeyError as exc:
            raise ConfigError(f"sentences {first}..{end - 1} were not met in this query") from exc
        doc_id = self._docs[seq]
        text = "".join(t for _, t, _ in rows[:-1]) + self.sentence_text(end - 1)
        start, stop = rows[0][0].start, rows[-1][0].end
        if len(text) != stop - start:
            raise StoreError(f"the stored sentences of {doc_id!r} do not tile its text")
        return Chunk(
            doc_id=doc_id,
            start=start,
            end=stop,
            text=text,
            token_count=int(self._owner.tokenizer.count([text])[0]),
            index=index,
            sentence_start=first - (seq << 32),
            sentence_end=end - (seq << 32),
            metadata=self._metadata[doc_id],
        )
