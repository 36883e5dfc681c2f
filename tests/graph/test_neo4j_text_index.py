"""The chunks' full-text index in Neo4j: scoring a few chunks asks Lucene for those alone.

Each chunk carries its id as a word of its own (``id_token``) in ``semrag_chunk_text``, so
:meth:`Neo4jIndex.sparse_scores_many` puts the asked chunks' tokens in the Lucene query
(boosted to 0) instead of scoring every chunk that shares a word with the query. The scores
must equal the old way's to the bit, for chunks with and without a match; a database
written before the tokens is upgraded once by the first writer that opens it, and a state
whose last writer did not write tokens is read the old way.
"""

from __future__ import annotations

import pytest

from semrag import Document, SemanticIndex
from tests.adapters.test_dense_backends import QUERIES, TEXTS, embedder

pytestmark = [pytest.mark.neo4j, pytest.mark.integration, pytest.mark.enable_socket]

ASKED = [*QUERIES, "Which river flows by Memphis?", "bees AND honey OR (hive)", "zzqx"]


def _written(store):
    from semrag.neo4j import Neo4jIndex, Neo4jIndexStore

    emb = embedder()
    index = SemanticIndex(embedder=emb)
    index.add_documents([Document(f"d{i}", t) for i, t in enumerate(TEXTS)])
    writer = Neo4jIndexStore(store, passages=False)
    writer.clear()
    writer.attach(index)
    return index, writer, Neo4jIndex(store, embedder=emb)


def _keyed(session) -> bool:
    state = session.read_rows("MATCH (s:SemragIndexState) RETURN s.id_tokens = s.version AS k")
    return bool(state and state[0]["k"])


def _scores(reader, ids):
    return reader.sparse_scores_many(ASKED, ids)


def _agree(first, second, tries=3):
    """Two reads of the scores, back to back, equal to the bit.

    Lucene merges segments in the background, and a merge that drops deleted documents
    moves its statistics (every BM25 score) between two reads; so a mismatch is read again.
    """
    for _ in range(tries):
        a, b = first(), second()
        if a.shape == b.shape and (a == b).all():
            return True
    return False


def test_scores_through_the_id_tokens_equal_the_scan_of_every_match(graph_store, monkeypatch):
    index, _, reader = _written(graph_store)
    ids = [int(i) for i in index.parts["dense"].ids]
    session = graph_store.session
    assert _keyed(session)
    keyed = _scores(reader, ids)
    assert (keyed > 0).any() and (keyed == 0).any()  # matches and chunks without a word
    state = "MATCH (s:SemragIndexState) SET s.id_tokens = "

    def scanned():  # read the old way, as an older writer's index is: every match scanned
        session.write_rows(state + "-1")
        try:
            return _scores(reader, ids)
        finally:
            session.write_rows(state + "s.version")

    assert _agree(lambda: _scores(reader, ids), scanned)  # to the bit
    # many asked chunks go in several Lucene queries, each under its clause limit
    from semrag.neo4j import index_reader

    many = list(range(max(ids) + 200))  # ids past the corpus score 0

    def wide():
        with monkeypatch.context() as m:
            m.setattr(index_reader, "_CLAUSES", 3)  # 64 ids a query at the least
            got = _scores(reader, many)
        assert not got[:, max(ids) + 1 :].any()
        return got[:, ids]

    assert _agree(lambda: _scores(reader, ids), wide)
    # the tokens are what is read: a chunk without its token is not found, unless read the
    # old way (a write changes Lucene's statistics: the scores are compared before it)
    hit = ids[int(keyed.max(0).argmax())]
    session.write_rows("MATCH (c:SemragChunk {id: $i}) REMOVE c.id_token", i=hit)
    assert not _scores(reader, [hit]).any()
    session.write_rows("MATCH (s:SemragIndexState) SET s.id_tokens = -1")
    assert _scores(reader, [hit]).any()


def test_a_query_never_matches_a_chunks_id_token(graph_store):
    index, _, reader = _written(graph_store)
    first = int(index.parts["dense"].ids[0])
    token = f"semrag{first}"
    assert reader.search_sparse(token, k=3) == []
    assert not reader.sparse_scores_many([token], [first]).any()


def test_a_database_written_before_the_id_tokens_is_upgraded_once(graph_store, caplog):
    from semrag.neo4j import Neo4jIndexStore
    from semrag.neo4j._text_index import TEXT_INDEX_FIELDS

    index, _, reader = _written(graph_store)
    ids = [int(i) for i in index.parts["dense"].ids]
    want = _scores(reader, ids)
    session = graph_store.session
    for statement in (  # what an older writer left
        "DROP INDEX semrag_chunk_text",
        "CREATE FULLTEXT INDEX semrag_chunk_text FOR (c:SemragChunk) ON EACH [c.text]",
        "CALL db.awaitIndex('semrag_chunk_text', 300)",
        "MATCH (c:SemragChunk) REMOVE c.id_token",
        "MATCH (s:SemragIndexState) REMOVE s.id_tokens",
    ):
        session.write_rows(statement)
    assert not _keyed(session)
    assert (_scores(reader, ids) == want).all()  # read the old way meanwhile
    with caplog.at_level("WARNING", logger="semrag.neo4j._text_index"):
        Neo4jIndexStore(graph_store, passages=False)
    assert "predates the chunks' id tokens" in caplog.text
    assert session.read_rows(TEXT_INDEX_FIELDS)[0]["properties"] == ["text", "id_token"]
    assert session.read_rows(
        "MATCH (c:SemragChunk) WHERE c.id_token IS NULL RETURN count(c) AS n"
    ) == [{"n": 0}]
    assert _keyed(session)
    assert (_scores(reader, ids) == want).all()
    caplog.clear()
    with caplog.at_level("WARNING", logger="semrag.neo4j._text_index"):
        Neo4jIndexStore(graph_store, passages=False)  # once: nothing left to upgrade
    assert "predates" not in caplog.text
