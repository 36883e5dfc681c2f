"""The index's Cypher (the schema in :mod:`semrag.neo4j.index_writer`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from semrag.neo4j._cypher import LUCENE_SPECIAL

STATE = "index"
# The chunks' full-text index: their words, and each chunk's id as a token of its own
# (``id_token``), so that scoring a few chunks asks Lucene for those chunks alone.
TEXT_INDEX = (
    "CREATE FULLTEXT INDEX semrag_chunk_text IF NOT EXISTS "
    "FOR (c:SemragChunk) ON EACH [c.text, c.id_token]"
)
ID_TOKEN = "'semrag' + toString({})"  # a chunk's id token, from its id (see id_token)
SCHEMA = (
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
    "CREATE CONSTRAINT semrag_phrase_key IF NOT EXISTS "
    "FOR (p:SemragPhrase) REQUIRE p.key IS UNIQUE",
    "CREATE INDEX semrag_document_seq IF NOT EXISTS FOR (d:SemragDocument) ON (d.seq)",
)
VECTOR_INDEXES = tuple(
    f"CREATE VECTOR INDEX semrag_{name}_embedding IF NOT EXISTS FOR (n:{label}) ON (n.embedding) "
    "OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine', "
    "`vector.quantization.enabled`: false}}"
    for name, label in (
        ("chunk", "SemragChunk"),
        ("window", "SemragWindow"),
        ("piece", "SemragPiece"),
    )
)
# a change written in several transactions is marked until its last one (WRITE_STATE)
MARK_WRITING = "MERGE (s:SemragIndexState {name: $name}) SET s.writing = $version"
READ_STATE = (  # properties(): no warning from a database that has none of these keys yet
    "OPTIONAL MATCH (s:SemragIndexState {name: $name}) RETURN properties(s) AS state"
)
VECTOR_DIMS = (
    "SHOW VECTOR INDEXES YIELD name, options "
    "WHERE name IN ['semrag_chunk_embedding', 'semrag_window_embedding', "
    "'semrag_piece_embedding'] "
    "RETURN name, options.indexConfig['vector.dimensions'] AS dim"
)
DROP_VECTOR_INDEXES = (
    "DROP INDEX semrag_chunk_embedding IF EXISTS",
    "DROP INDEX semrag_window_embedding IF EXISTS",
    "DROP INDEX semrag_piece_embedding IF EXISTS",
)
WRITE_STATE = (
    "MERGE (s:SemragIndexState {name: $name}) "
    "SET s.version = $version, s.dim = $dim, s.embedder = $embedder, "
    "s.fingerprint = $fingerprint, s.edges = $edges, s.writing = null, "
    "s.ssg = $ssg, s.windows = $windows, s.pca_mean = $pca_mean, s.pca_components = $pca, "
    "s.pca_digest = $pca_digest, s.next_seq = $next_seq, s.pieces = $pieces, "
    "s.passages = $passages, s.id_tokens = $version"
)
# -- a change, in one transaction ------------------------------------------------------------
DELETE_DOCS = (
    "UNWIND $ids AS id "
    "CALL (id) { MATCH (c:SemragChunk {doc_id: id}) DETACH DELETE c } "
    "CALL (id) { MATCH (s:SemragSentence {doc_id: id}) DETACH DELETE s } "
    "CALL (id) { MATCH (w:SemragWindow {doc_id: id}) DETACH DELETE w } "
    "CALL (id) { MATCH (p:SemragPiece {doc_id: id}) DETACH DELETE p } "
    "CALL (id) { MATCH (d:SemragDocument {id: id}) DETACH DELETE d }"
)
UPSERT_DOCS = (
    "UNWIND $rows AS r MERGE (d:SemragDocument {id: r.id}) "
    "SET d.text = r.text, d.metadata = r.metadata, d.themes = r.themes, "
    "d.fingerprint = r.fingerprint, d.n_sentences = r.n_sentences, d.seq = r.seq"
)
UPSERT_CHUNKS = (
    "UNWIND $rows AS r MERGE (c:SemragChunk {id: r.id}) "
    "SET c.doc_id = r.doc_id, c.start = r.start, c.end = r.end, c.text = r.text, "
    "c.token_count = r.token_count, c.index = r.index, c.sentence_start = r.sentence_start, "
    "c.sentence_end = r.sentence_end, c.metadata = r.metadata, c.embedding = r.vector, "
    "c.vec = r.vec, c.id_token = " + ID_TOKEN.format("r.id")
)
UPSERT_SENTENCES = (
    "UNWIND $rows AS r MERGE (s:SemragSentence {key: r.key}) "
    "SET s.doc_id = r.doc_id, s.i = r.i, s.start = r.start, s.end = r.end, s.text = r.text, "
    "s.vec = r.vec"
)
UPSERT_WINDOWS = (
    "UNWIND $rows AS r MERGE (w:SemragWindow {key: r.key}) "
    "SET w.doc_id = r.doc_id, w.n = r.n, w.first = r.first, w.end = r.end, "
    "w.embedding = r.vector, w.vec = r.vec"
)
UPSERT_PIECES = (
    "UNWIND $rows AS r MERGE (p:SemragPiece {key: r.key}) "
    "SET p.doc_id = r.doc_id, p.j = r.j, p.parent = r.parent, p.start = r.start, "
    "p.end = r.end, p.text = r.text, p.token_count = r.token_count, p.index = r.index, "
    "p.embedding = r.vector, p.vec = r.vec"
)
DROP_OUT_EDGES = "UNWIND $keys AS k MATCH (:SemragWindow {key: k})-[e:SIMILAR]->() DELETE e"
CREATE_EDGES = (
    "UNWIND $rows AS r MATCH (a:SemragWindow {key: r.src}), (b:SemragWindow {key: r.dst}) "
    "CREATE (a)-[:SIMILAR {score: r.score, kind: r.kind}]->(b)"
)
DROP_BRIDGES = "UNWIND $ids AS id MATCH (:SemragDocument {id: id})-[e:THEME_BRIDGE]->() DELETE e"
CREATE_BRIDGES = (
    "UNWIND $rows AS r MATCH (a:SemragDocument {id: r.src}), (b:SemragDocument {id: r.dst}) "
    "CREATE (a)-[:THEME_BRIDGE {score: r.score}]->(b)"
)
FINGERPRINTS = (
    "MATCH (d:SemragDocument) "
    "RETURN d.id AS id, properties(d)['fingerprint'] AS fingerprint, properties(d)['seq'] AS seq"
)
ALL_EDGES_DROP = (
    "MATCH (:SemragWindow)-[e:SIMILAR]->() CALL (e) { DELETE e } IN TRANSACTIONS OF 10000 ROWS"
)
CLEAR = (
    "MATCH (n) WHERE n:SemragDocument OR n:SemragChunk OR n:SemragSentence OR n:SemragWindow "
    "OR n:SemragPiece OR n:SemragPhrase OR n:SemragName OR n:SemragIndexState "  # Name: before 0.4
    "CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS"
)
# -- the passage graph's phrases (the index's ``passages`` part) -------------------------------
# A chunk's phrases in its order: (:SemragChunk)-[:MENTIONS {i, name, title}]->
# (:SemragPhrase {key}); ``name`` is the spelling there (its vector is embedded where the
# graph is read), ``title`` whether the key is the document's title.
CREATE_MENTIONS = (
    "UNWIND $rows AS r MATCH (c:SemragChunk {id: r.id}) "
    "UNWIND range(0, size(r.keys) - 1) AS i "
    "MERGE (p:SemragPhrase {key: r.keys[i]}) "
    "CREATE (c)-[:MENTIONS {i: i, name: r.names[i], title: r.titles[i]}]->(p)"
)
DROP_MENTIONS = "UNWIND $ids AS id MATCH (:SemragChunk {doc_id: id})-[m:MENTIONS]->() DELETE m"
# The next ``$n`` documents after seq ``$after`` (the index's order), each chunk with its
# mentions as [i, key, name, title] (unordered: sorted by i when read; title: the key is the
# document's title, null in a database written before 0.4).
PASSAGE_ROWS = (
    "MATCH (d:SemragDocument) WHERE d.seq > $after WITH d ORDER BY d.seq LIMIT $n "
    "OPTIONAL MATCH (c:SemragChunk {doc_id: d.id}) "
    "OPTIONAL MATCH (c)-[m:MENTIONS]->(p:SemragPhrase) "
    "WITH d, c, collect(CASE WHEN m IS NULL THEN null ELSE [m.i, p.key, m.name, m.title] END) "
    "AS found "
    "RETURN d.seq AS seq, d.id AS doc, c.id AS id, c.index AS index, c.start AS start, found "
    "ORDER BY seq, index"
)
DUMP_MENTIONS = (
    "MATCH (c:SemragChunk)-[m:MENTIONS]->(p:SemragPhrase) "
    "RETURN c.doc_id AS doc_id, c.start AS start, m.i AS i, p.key AS key, m.name AS name"
)
# -- reads ----------------------------------------------------------------------------------
# part_key() in Cypher: the key of sentence i of the document {doc}
_SENTENCE_KEY = "toString(size({doc})) + ':' + {doc} + '#' + toString(i)"
# A chunk's stored properties (``vec`` last: rows without it leave it out).
CHUNK_KEYS = (
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
_CHUNK_FIELDS = ", ".join(f"c.{k} AS {k}" for k in CHUNK_KEYS[:-1])


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


DENSE = _dense_query("$n", "$keep")
DENSE_COLUMNS = ("channel", "row", *CHUNK_KEYS, "score")
# A long ranking by the vector index's own scores ((1 + cos) / 2): ids and scores only, as
# two lists per query row (a row per candidate costs the driver more than the search).
# A node a concurrent commit deleted can still come out of the vector index with no
# properties: collect() would drop its null id and keep its score, so it is left out first.
DENSE_IDS = (
    "UNWIND range(0, size($vectors) - 1) AS row "
    "CALL (row) { CALL db.index.vector.queryNodes('semrag_chunk_embedding', $n, $vectors[row]) "
    "YIELD node, score WITH node.id AS id, score WHERE id IS NOT NULL "
    "RETURN collect(id) AS ids, collect(score) AS scores } "
    "RETURN row, ids, scores"
)
DENSE_IDS_COLUMNS = ("row", "ids", "scores")
SPARSE = _sparse_query("$n")
# Rows whose candidates this read already ranked (a walk's dense seeds of the same query
# vector) bring those candidates' chunks by id, with no second vector search.
_RANKED = (
    "UNWIND $ranked AS r UNWIND r.ids AS i MATCH (c:SemragChunk {id: i}) "
    f"RETURN 'ranked' AS channel, r.row AS row, {_CHUNK_FIELDS}, c.vec AS vec, 0.0 AS score"
)
CHANNELS = " UNION ALL ".join(
    (_dense_query("$dense_n", "$dense_keep"), _RANKED, _sparse_query("$sparse_n"))
)
CHANNELS_COLUMNS = ("channel", "row", *CHUNK_KEYS, "score")
# The full-text scores of some chunks: with the chunks' id tokens in the index (the state's
# id_tokens is its version), Lucene is asked for those chunks only (its id clause is
# boosted to 0: the scores are the words' alone); else it scores every chunk that shares a
# word with the query and the statement keeps the asked ones.
SPARSE_AMONG = (
    "OPTIONAL MATCH (s:SemragIndexState {name: $name}) "
    "WITH coalesce(s.id_tokens = s.version, false) AS keyed "
    "CALL (keyed) { "
    "WITH keyed WHERE keyed UNWIND $keyed AS q "
    "CALL db.index.fulltext.queryNodes('semrag_chunk_text', q.text) YIELD node, score "
    "RETURN q.row AS row, node.id AS id, score "
    "UNION ALL "
    "WITH keyed WHERE NOT keyed UNWIND range(0, size($texts) - 1) AS row "
    "CALL (row) { CALL db.index.fulltext.queryNodes('semrag_chunk_text', $texts[row]) "
    "YIELD node, score WHERE node.id IN $ids RETURN node.id AS id, score } "
    "RETURN row, id, score } "
    "RETURN row, id, score"
)
CHUNK_SENTENCES = (
    "UNWIND range(0, size($rows) - 1) AS row WITH row, $rows[row] AS r "
    "RETURN row, COLLECT { UNWIND range(r.first, r.end - 1) AS i "
    "MATCH (s:SemragSentence {key: " + _SENTENCE_KEY.format(doc="r.doc_id") + "}) "
    "RETURN s.vec } AS vecs"
)
CHUNKS = f"UNWIND $ids AS i MATCH (c:SemragChunk {{id: i}}) RETURN {_CHUNK_FIELDS}, c.vec AS vec"
COUNT_DOCS = "MATCH (d:SemragDocument) RETURN count(d) AS n"
HAS_DOC = "MATCH (d:SemragDocument {id: $id}) RETURN count(d) AS n"
PIECES_SEARCH = (  # as DENSE, over SKETCH's pieces; each with its parent chunk
    "UNWIND range(0, size($vectors) - 1) AS row "
    "CALL (row) { CALL db.index.vector.queryNodes('semrag_piece_embedding', $n, $vectors[row]) "
    "YIELD node, score RETURN node AS p ORDER BY score DESC LIMIT $keep } "
    "MATCH (d:SemragDocument {id: p.doc_id}) MATCH (c:SemragChunk {id: p.parent}) "
    "RETURN row, d.seq AS seq, p.j AS j, p.start AS piece_start, p.end AS piece_end, "
    "p.text AS piece_text, p.token_count AS piece_tokens, p.index AS piece_index, "
    f"p.vec AS piece_vec, {_CHUNK_FIELDS}, c.vec AS vec"
)
PIECES_COLUMNS = (
    "row",
    "seq",
    "j",
    "piece_start",
    "piece_end",
    "piece_text",
    "piece_tokens",
    "piece_index",
    "piece_vec",
    *CHUNK_KEYS,
)
# Each span's chunk ids, and each chunk not fetched yet in this read once (as a list: many
# spans, such as the mentions of a neighbourhood, fall in a few chunks).
OVERLAPPING_MANY = (
    "UNWIND range(0, size($spans) - 1) AS row WITH row, $spans[row] AS s "
    "MATCH (c:SemragChunk {doc_id: s[0]}) WHERE c.start < s[2] AND c.end > s[1] "
    "WITH row, c ORDER BY row, c.index, c.id "
    "WITH collect([row, c.id]) AS hits, collect(DISTINCT c) AS found "
    "RETURN hits, [c IN found WHERE NOT c.id IN $known | "
    "[" + ", ".join(f"c.{k}" for k in CHUNK_KEYS) + "]] AS chunks"
)
OVERLAPPING_COLUMNS = ("hits", "chunks")
DOCUMENTS = (
    "UNWIND $ids AS id MATCH (d:SemragDocument {id: id}) CALL (d) { "
    "OPTIONAL MATCH (s:SemragSentence {doc_id: d.id}) WITH s ORDER BY s.i "
    "RETURN collect([s.start, s.end]) AS spans, collect(s.vec) AS vectors } "
    "RETURN d.id AS id, d.text AS text, d.metadata AS metadata, d.themes AS themes, "
    "spans, vectors"
)
DOC_IDS = "MATCH (d:SemragDocument) RETURN d.id AS id ORDER BY d.id"
COUNT_CHUNKS = "MATCH (c:SemragChunk) RETURN count(c) AS n"
COUNTS = (
    "CALL () { MATCH (d:SemragDocument) RETURN count(d) AS documents } "
    "CALL () { MATCH (c:SemragChunk) RETURN count(c) AS chunks } "
    "CALL () { MATCH (s:SemragSentence) RETURN count(s) AS sentences } "
    "CALL () { MATCH (w:SemragWindow) RETURN count(w) AS windows } "
    "CALL () { MATCH (p:SemragPiece) RETURN count(p) AS pieces } "
    "CALL () { MATCH (:SemragWindow)-[e:SIMILAR]->() RETURN count(e) AS edges } "
    "CALL () { MATCH (:SemragDocument)-[b:THEME_BRIDGE]->() RETURN count(b) AS bridges } "
    "RETURN documents, chunks, sentences, windows, pieces, edges, bridges"
)
DUMP_EDGES = (
    "MATCH (a:SemragWindow)-[e:SIMILAR]->(b:SemragWindow) "
    "RETURN a.doc_id AS a_doc, a.n AS a_n, b.doc_id AS b_doc, b.n AS b_n, "
    "e.kind AS kind, e.score AS score"
)
DUMP_BRIDGES = (
    "MATCH (a:SemragDocument)-[e:THEME_BRIDGE]->(b:SemragDocument) "
    "RETURN a.id AS a, b.id AS b, e.score AS score"
)
DUMP_CHUNKS = (
    "MATCH (c:SemragChunk) RETURN c.doc_id AS doc_id, c.start AS start, c.end AS end, "
    "c.text AS text, c.embedding AS embedding"
)
DUMP_PIECES = (
    "MATCH (p:SemragPiece) RETURN p.doc_id AS doc_id, p.j AS j, p.start AS start, p.end AS end, "
    "p.text AS text, p.token_count AS token_count, p.embedding AS embedding"
)
DUMP_WINDOWS = (
    "MATCH (w:SemragWindow) RETURN w.doc_id AS doc_id, w.n AS n, w.first AS first, w.end AS end"
)
# The similarity graph, a node (and its sentences) at a time: nodes are numbered per query.
VIEW_STATE = (
    "MATCH (s:SemragIndexState {name: $name}) RETURN s.version AS version, s.windows AS windows"
)
PCA = (
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
# $rank (see RemoteView.ahead_rank): weights of cos(v, q), the edge's score, cos(v, a),
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
LEVELS = 8


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
    the chain it would walk (:data:`LEVELS`); none of them ``$known`` or asked.
    """
    fresh = f"WHERE NOT v.key IN {asked} AND NOT v.key IN $known"
    hops = " + ".join(
        f"[v IN r{i} {fresh}][..{'$ahead' if i == 0 else '$follow'}]" for i in range(LEVELS)
    )
    return (
        f"UNWIND {asked} AS k MATCH (v:SemragWindow {{key: k}}) " + _LOADED + " UNION ALL "
        f"MATCH (a0:SemragWindow {{key: {asked}[0]}}) "
        + "".join(_level(i, q) for i in range(LEVELS))
        + f"UNWIND {hops} AS v WITH DISTINCT v "
        + _LOADED
    )


LOAD = "UNWIND $keys AS k MATCH (v:SemragWindow {key: k}) " + _LOADED
LOAD_AHEAD = _load_union("$keys", "$q")
# The version read with the candidates, and the first $load of them (by the vector index's
# order) loaded as LOAD_AHEAD loads: the search and a traversal's first load, one round trip.
ANCHORS = (
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


# Lucene's query syntax: special characters are escaped and its operators lower-cased, so a
# query is searched as words.
_LUCENE_OPERATORS = re.compile(r"\b(AND|OR|NOT|TO)\b")


def part_key(doc_id: str, n: int) -> str:
    """The key of sentence or window ``n`` of ``doc_id`` (unambiguous for any id)."""
    return f"{len(doc_id)}:{doc_id}#{n}"


def lucene_query(text: str) -> str:
    """``text`` as a Lucene query of the chunks' words (specials escaped, operators as words).

    The query names the ``text`` field, so it never matches a chunk's id token.
    """
    words = LUCENE_SPECIAL.sub(r"\\\1", _LUCENE_OPERATORS.sub(lambda m: m.group(1).lower(), text))
    return f"text:({words})"


def id_token(chunk_id: int) -> str:
    """A chunk's id as the full-text index holds it (:data:`ID_TOKEN`)."""
    return f"semrag{int(chunk_id)}"


def among(query: str, tokens: Sequence[str]) -> str:
    """A Lucene query of ``query`` (:func:`lucene_query`) over the chunks of ``tokens`` only.

    The id clause is boosted to 0, so a chunk's score is its words' score alone (Lucene
    sums a conjunction's scores), equal to the score :func:`lucene_query` gives it.
    """
    return f"+{query} +id_token:({' '.join(tokens)})^0"
