"""One contract for every reader: the embedded index, the vector-store-backed index and Neo4j.

Each reader is built from the same changes as a reference embedded index and must answer
every :class:`~semrag.index.reader.CorpusReader` member as the reference does (BM25 on
Neo4j is Lucene's: its hits are checked for shape and order, and against the reference
by overlap in ``test_neo4j_index.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
from langchain_core.vectorstores import InMemoryVectorStore

import langchain_semrag as lcs
from semrag import SemanticIndex
from semrag.index.reader import CorpusReader, query_vector
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
    assert report.documents == len(ref.doc_ids) and len(report.checks) >= 25
    want = {"CorpusReader", "CorpusSearch", "SimilarityGraphReads", "KeptParts", "PieceReads"}
    assert want <= set(report.capabilities)
    served = type(reader).__name__ == "Neo4jIndex"
    assert ("AsyncReads" in report.capabilities) is served
    assert ("HoldsRecords" in report.capabilities) is not served


def chunks_of_doc(reader, doc_id, text):
    ids = reader.overlapping_chunks_many([(doc_id, 0, len(text))])[0]
    return ids, reader.chunks_of(ids)


def test_documents_and_chunks_agree(pair):
    ref, reader = pair
    assert sorted(reader.doc_ids) == sorted(ref.doc_ids)
    assert reader.documents(["nope"]) == {}
    with reader.read():
        records, want = reader.documents(ref.doc_ids), ref.documents(ref.doc_ids)
        assert sorted(records) == sorted(want)
        for d, r in records.items():
            assert r.doc.text == want[d].doc.text
            assert dict(r.doc.metadata) == dict(want[d].doc.metadata)
            assert list(r.sentences) == list(want[d].sentences)
            assert list(r.themes) == list(want[d].themes)
            text = r.doc.text
            assert spans(chunks_of_doc(reader, d, text)[1]) == spans(chunks_of_doc(ref, d, text)[1])
            np.testing.assert_allclose(r.sentence_vectors, want[d].sentence_vectors, atol=1e-5)


def test_chunk_ids_lead_to_the_same_chunks_and_vectors(pair):
    ref, reader = pair
    for d, record in ref.documents(ref.doc_ids).items():
        ids, _ = chunks_of_doc(reader, d, record.doc.text)
        want, _ = chunks_of_doc(ref, d, record.doc.text)
        assert spans(reader.chunks_of(ids)) == spans(ref.chunks_of(want))
        many = reader.overlapping_chunks_many([(d, 0, len(record.doc.text)), (d, 0, 0)])
        assert many[0] == ids and many[1] == []
        np.testing.assert_allclose(reader.vectors_of(ids), ref.vectors_of(want), atol=1e-5)
        got = reader.sentence_vectors_of(ids)
        assert [v.shape for v in got] == [v.shape for v in ref.sentence_vectors_of(want)]


def test_searches_agree(pair):
    ref, reader = pair
    for q in QUERIES:
        vector = query_vector(ref, q)
        np.testing.assert_allclose(query_vector(reader, q), vector, atol=1e-6)
        scores, ids = reader.dense_search(vector, 4)
        want_scores, want = ref.dense_search(vector, 4)
        assert spans(reader.chunks_of(ids.tolist())) == spans(ref.chunks_of(want.tolist()))
        np.testing.assert_allclose(scores, want_scores, atol=1e-4)
    queries = QUERIES[:2]
    vectors = np.stack([query_vector(ref, q) for q in queries])
    dense_ids, sparse_hits = reader.search_channels(vectors, queries, 3)
    assert np.asarray(dense_ids).shape == (2, 3) and len(sparse_hits) == 2
    for found in sparse_hits:
        assert len(found) <= 3 and [s for _, s in found] == sorted(
            (s for _, s in found), reverse=True
        )
    if type(reader).__name__ != "Neo4jIndex":  # semrag's own BM25 (Neo4j's is Lucene's)
        assert sparse_hits == ref.search_channels(vectors, queries, 3)[1]
    chunk_ids = [int(i) for i in np.asarray(dense_ids)[0] if i >= 0]
    scores = reader.sparse_scores_many(queries, chunk_ids)
    assert scores.shape == (2, len(chunk_ids))
    np.testing.assert_allclose(scores[0], reader.sparse_scores_many(queries[:1], chunk_ids)[0])


def test_the_ssg_view_serves_the_traversals(pair):
    from semrag.retrieval import SSGRetriever

    ref, reader = pair
    assert reader.ssg_view() is not None
    want = [h.chunk.text for h in SSGRetriever(ref, k=3).retrieve(QUERIES[0])]
    assert [h.chunk.text for h in SSGRetriever(reader, k=3).retrieve(QUERIES[0])] == want
