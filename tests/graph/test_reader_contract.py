"""One contract for every reader: the embedded index, the vector-store-backed index and Neo4j.

Each reader is built from the same changes as a reference embedded index and must answer
every :class:`~semrag.index.reader.CorpusReader` member as the reference does (BM25 on
Neo4j is Lucene's: its hits are checked for shape and order, and against the reference
by overlap in ``test_neo4j_index.py``).
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from langchain_core.vectorstores import InMemoryVectorStore

import langchain_semrag as lcs
from semrag import SemanticIndex
from semrag.index.reader import CorpusReader
from semrag.testing import check_reader
from tests.adapters.test_dense_backends import QUERIES, embedder
from tests.graph.test_neo4j_index import changes

NEO4J = [pytest.mark.neo4j, pytest.mark.integration, pytest.mark.enable_socket]
READERS = ["embedded", "vector-store", pytest.param("neo4j", marks=NEO4J)]


@pytest.fixture(params=READERS)
def pair(request):
    """``(reference, reader)``: the same changes, the reader of the kind asked for.

    What retrievers read: an embedded index's ``reader()``, a ``Neo4jIndex`` itself.
    """
    emb = embedder()
    reference = SemanticIndex(embedder=emb, ssg=True)
    changes(reference)
    kind = request.param
    if kind == "embedded":
        return reference.reader(), reference.reader()
    if kind == "vector-store":
        store = InMemoryVectorStore(lcs.SemragEmbeddings(emb))
        index = SemanticIndex(embedder=emb, dense=lcs.VectorStoreClient(store), ssg=True)
        changes(index)
        return reference.reader(), index.reader()
    from semrag.neo4j import Neo4jIndex, Neo4jIndexStore

    store = request.getfixturevalue("graph_store")
    written = SemanticIndex(embedder=emb, ssg=True)
    Neo4jIndexStore.for_index(written, store)
    changes(written)
    return reference.reader(), Neo4jIndex(store, embedder=emb)


def spans(chunks):
    return [(c.doc_id, c.start, c.end, c.text) for c in chunks]


def hits(found):
    return [(h.chunk.doc_id, h.chunk.start, h.chunk.end, round(h.score, 4)) for h in found]


def test_every_reader_is_a_corpus_reader(pair):
    _, reader = pair
    assert isinstance(reader, CorpusReader)


def test_check_reader_holds_on_every_reader(pair):
    # the contract suite shipped for third-party readers (semrag.testing.check_reader)
    ref, reader = pair
    report = check_reader(reader, queries=QUERIES, reference=ref)
    assert report.documents == len(ref.doc_ids) and len(report.checks) >= 30
    want = {"CorpusReads", "CorpusSearch", "SimilarityGraphReads", "KeptParts", "PieceReads"}
    assert want <= set(report.capabilities)
    served = type(reader).__name__ == "Neo4jIndex"
    assert ("AsyncReads" in report.capabilities) is served
    assert ("HoldsRecords" in report.capabilities) is not served


def test_documents_and_chunks_agree(pair):
    ref, reader = pair
    assert sorted(reader.doc_ids) == sorted(ref.doc_ids) and len(reader) == len(ref)
    assert all(d in reader for d in ref.doc_ids) and "nope" not in reader
    reader.fetch_documents(ref.doc_ids)
    with reader.read():
        for d in ref.doc_ids:
            assert reader.document(d).text == ref.document(d).text
            assert dict(reader.document(d).metadata) == dict(ref.document(d).metadata)
            assert reader.sentences(d) == ref.sentences(d)
            assert reader.themes(d) == ref.themes(d)
            assert spans(reader.chunks(d)) == spans(ref.chunks(d))
            np.testing.assert_allclose(
                reader.sentence_vectors(d), ref.sentence_vectors(d), atol=1e-5
            )


def test_chunk_ids_lead_to_the_same_chunks_and_vectors(pair):
    ref, reader = pair
    for d in ref.doc_ids:
        doc = ref.document(d)
        ids = reader.overlapping_chunks(d, 0, len(doc.text))
        want = ref.overlapping_chunks(d, 0, len(doc.text))
        assert spans(reader.chunk(i) for i in ids) == spans(ref.chunk(i) for i in want)
        many = reader.overlapping_chunks_many([(d, 0, len(doc.text)), (d, 0, 0)])
        assert many[0] == ids and many[1] == []
        np.testing.assert_allclose(reader.vectors_of(ids), ref.vectors_of(want), atol=1e-5)
        got = reader.sentence_vectors_of(ids)
        assert [v.shape for v in got] == [v.shape for v in ref.sentence_vectors_of(want)]


def test_searches_agree(pair):
    ref, reader = pair
    for q in QUERIES:
        np.testing.assert_allclose(reader.embed_query(q), ref.embed_query(q), atol=1e-6)
        assert hits(reader.search(q, 4)) == hits(ref.search(q, 4))
        vector = ref.embed_query(q)
        assert hits(reader.search_vector(vector, 4)) == hits(ref.search(q, 4))
        sparse = reader.search_sparse(q, 3)
        assert len(sparse) <= 3 and [h.score for h in sparse] == sorted(
            (h.score for h in sparse), reverse=True
        )
        if reader is ref or isinstance(reader, SemanticIndex):  # semrag's own BM25
            assert hits(sparse) == hits(ref.search_sparse(q, 3))
    queries = QUERIES[:2]
    vectors = np.stack([ref.embed_query(q) for q in queries])
    dense_ids, sparse_hits = reader.search_channels(vectors, queries, 3)
    assert np.asarray(dense_ids).shape == (2, 3) and len(sparse_hits) == 2
    chunk_ids = [int(i) for i in np.asarray(dense_ids)[0] if i >= 0]
    scores = reader.sparse_scores_many(queries, chunk_ids)
    assert scores.shape == (2, len(chunk_ids))
    np.testing.assert_allclose(scores[0], reader.sparse_scores(queries[0], chunk_ids))


def test_async_twins_equal_the_sync_reads(pair):
    ref, reader = pair

    async def both():
        return await reader.aembed_query(QUERIES[0]), await reader.asearch(QUERIES[0], 3)

    vector, found = asyncio.run(both())
    np.testing.assert_allclose(vector, reader.embed_query(QUERIES[0]), atol=1e-6)
    assert hits(found) == hits(reader.search(QUERIES[0], 3))


def test_the_ssg_view_serves_the_traversals(pair):
    from semrag.retrieval import SSGRetriever

    ref, reader = pair
    assert reader.ssg_view() is not None
    want = [h.chunk.text for h in SSGRetriever(ref, k=3).retrieve(QUERIES[0])]
    assert [h.chunk.text for h in SSGRetriever(reader, k=3).retrieve(QUERIES[0])] == want
