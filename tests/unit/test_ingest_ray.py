"""Ingestion on a local Ray cluster equals a single-process build.

Workers chunk and embed (one worker index each), the calling process commits each
prepared batch without embedding again: the index must hold the same chunks, ids, offsets
and vectors as ``add_documents`` in one process, and every retriever must answer the same.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from semrag import Document, SemanticIndex
from semrag.errors import ConfigError, DocumentConflictError
from semrag.fingerprint import PROBE_TEXTS
from semrag.retrieval import GraphRetriever, IntentAwareRetriever
from semrag.testing import FakeEmbedder
from tests.counting import CountingEmbedder

pytestmark = [pytest.mark.ray, pytest.mark.enable_socket]

TOPICS = ["bees", "rockets", "rivers", "markets", "painters", "volcanoes"]


def corpus(n: int = 24) -> list[Document]:
    return [
        Document(
            f"d{i:02d}",
            f"Title {i}\nThe {TOPICS[i % 6]} of Region {i % 5} were studied by Ada Brook. "
            f"Region {i % 5} lies near the {TOPICS[(i + 1) % 6]}. "
            f"In {1900 + i} the survey of {TOPICS[i % 6]} ended. " * (1 + i % 3),
            {"n": i, "source": f"file{i}.txt"},
        )
        for i in range(n)
    ]


def answers(index: SemanticIndex, q: str) -> dict:
    return {
        "dense": [(h.chunk.doc_id, h.chunk.start) for h in index.search(q, k=10)],
        "sparse": [(h.chunk.doc_id, h.chunk.start) for h in index.search_sparse(q, k=10)],
        "ppr": [(h.chunk.doc_id, h.chunk.start) for h in GraphRetriever(index).retrieve(q)],
        "iar": [(h.chunk.doc_id, h.chunk.start) for h in IntentAwareRetriever(index).retrieve(q)],
    }


def test_ray_ingestion_equals_a_single_process_build(ray_cluster):
    from semrag.ingest import ingest_with_ray

    docs = corpus()
    alone = SemanticIndex(embedder=FakeEmbedder())
    alone.add_documents(docs)

    writer_embedder = CountingEmbedder()
    index = SemanticIndex(embedder=writer_embedder)
    options = ray_cluster.data.DataContext.get_current().execution_options
    ordered = options.preserve_order
    report = ingest_with_ray(
        index,
        docs,
        make_index=functools.partial(SemanticIndex, embedder=FakeEmbedder()),
        workers=2,
        batch_size=5,
    )
    assert options.preserve_order == ordered  # the job kept order, then gave the setting back
    assert report.documents == len(docs) and report.batches >= 5  # at most 5 per batch
    assert report.chunks == len(alone.chunks()) and report.documents_per_second > 0
    # the writer embedded only its fingerprint's probe texts, never a document's text
    assert set(writer_embedder.embedded) <= set(PROBE_TEXTS)
    assert index.doc_ids == alone.doc_ids
    assert [(c.doc_id, c.start, c.end, c.text) for c in index.chunks()] == [
        (c.doc_id, c.start, c.end, c.text) for c in alone.chunks()
    ]
    ids = [index.reader().chunk_ids(d) for d in index.doc_ids]
    assert ids == [alone.reader().chunk_ids(d) for d in alone.doc_ids]
    flat = [i for doc in ids for i in doc]
    assert np.array_equal(index.reader().vectors_of(flat), alone.reader().vectors_of(flat))
    assert index.document("d03").metadata == docs[3].metadata
    for q in ["bees of Region 2", "Ada Brook rockets", "survey ended 1907", "markets"]:
        assert answers(index, q) == answers(alone, q), q


def test_ray_ingestion_refuses_batches_of_other_settings_and_repeated_ids(ray_cluster):
    from semrag.ingest import ingest_with_ray

    index = SemanticIndex(embedder=FakeEmbedder())
    with pytest.raises(ConfigError, match="embedder"):
        ingest_with_ray(
            index,
            corpus(4),
            make_index=functools.partial(SemanticIndex, embedder=FakeEmbedder(dim=128)),
            workers=1,
        )
    assert len(index) == 0  # nothing of another model slipped in
    twice = [*corpus(3), Document("d01", "Another text with the same id.")]
    with pytest.raises(DocumentConflictError, match="more than once"):
        ingest_with_ray(
            index,
            twice,
            make_index=functools.partial(SemanticIndex, embedder=FakeEmbedder()),
            workers=1,
            batch_size=3,
        )
    assert index.doc_ids == ["d00", "d01", "d02"]  # the batch before it committed
    with pytest.raises(ConfigError, match="workers"):
        ingest_with_ray(index, corpus(2), workers=0)


def test_a_prepared_batch_commits_without_embedding_and_checks_its_settings():
    # The writer's half, without Ray: prepare in one index, commit in another.
    worker = SemanticIndex(embedder=FakeEmbedder())
    batch = worker.prepare_documents(corpus(6))
    assert len(worker) == 0 and len(batch) == 6 and batch.doc_ids[0] == "d00"
    emb = CountingEmbedder()
    writer = SemanticIndex(embedder=emb)
    writer.add_prepared(batch)
    assert set(emb.embedded) <= set(PROBE_TEXTS)
    alone = SemanticIndex(embedder=FakeEmbedder())
    alone.add_documents(corpus(6))
    assert [c.text for c in writer.chunks()] == [c.text for c in alone.chunks()]
    with pytest.raises(DocumentConflictError, match="6 document id"):
        writer.add_prepared(batch)  # the same ids again
    writer.add_prepared(batch, on_conflict="skip")
    assert len(writer) == 6
    other = SemanticIndex(embedder=FakeEmbedder(), chunk_vectors="mean")
    with pytest.raises(ConfigError, match="chunk_vectors"):
        other.add_prepared(batch)
    exact = SemanticIndex(embedder=FakeEmbedder(), sentence_dtype="float32")
    with pytest.raises(ConfigError, match="sentence_dtype"):
        exact.add_prepared(batch)  # float16 sentence vectors would land in a float32 index
    assert len(other) == len(exact) == 0
    with pytest.raises(ConfigError, match="PreparedBatch"):
        writer.add_prepared(corpus(1))


def test_a_prepared_batch_is_named_records_that_pickle_and_are_checked_on_commit():
    import dataclasses
    import pickle

    from semrag.index.ingest.prepared import PREPARED_FORMAT, PreparedBatch, PreparedDocument

    worker = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
    batch = pickle.loads(pickle.dumps(worker.prepare_documents(corpus(4))))  # as Ray ships it
    first = batch.documents[0]
    assert isinstance(first, PreparedDocument) and batch.format == PREPARED_FORMAT
    assert first.id == "d00" and first.chunk_vectors.shape == (
        len(first.chunks),
        worker.embedder.dim,
    )
    assert len(first.node_vectors) == len(first.node_ranges) > 0
    assert batch.n_chunks == sum(len(d.chunks) for d in batch.documents)

    writer = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
    short = dataclasses.replace(first, chunk_vectors=first.chunk_vectors[:-1])
    broken = dataclasses.replace(batch, documents=(short, *batch.documents[1:]))
    with pytest.raises(ConfigError, match="'d00': chunk_vectors has shape"):
        writer.add_prepared(broken)
    stranger = dataclasses.replace(
        first, chunks=[dataclasses.replace(c, doc_id="x") for c in first.chunks]
    )
    with pytest.raises(ConfigError, match="chunks of another document"):
        writer.add_prepared(dataclasses.replace(batch, documents=(stranger,)))
    old = PreparedBatch(batch.settings, batch.documents, format=1)
    with pytest.raises(ConfigError, match="layout 1"):
        writer.add_prepared(old)
    assert len(writer) == 0  # nothing of a refused batch is kept
    writer.add_prepared(batch)
    assert writer.reader().indexed("d00").chunk_ids == list(range(len(first.chunks)))
    np.testing.assert_array_equal(writer.reader().indexed("d00").chunk_vectors, first.chunk_vectors)


def test_framework_documents_go_through_ray_as_through_add_documents(ray_cluster):
    # A LangChain loader's documents and LlamaIndex documents keep their ids and metadata.
    from langchain_core.documents import Document as LCDocument
    from llama_index.core import Document as LIDocument

    from semrag.ingest import ingest_with_ray

    lc = [
        LCDocument(d.text, metadata={"source": f"/data/{d.id}.txt", "n": d.metadata["n"]})
        for d in corpus(6)
    ]
    li = [
        LIDocument(text=d.text, id_=f"li-{d.id}", metadata={"n": d.metadata["n"]})
        for d in corpus(6)
    ]
    make = functools.partial(SemanticIndex, embedder=FakeEmbedder())
    for docs in (lc, li):
        alone = SemanticIndex(embedder=FakeEmbedder())
        alone.add_documents(docs)
        index = SemanticIndex(embedder=FakeEmbedder())
        ingest_with_ray(index, docs, make_index=make, workers=2, batch_size=2)
        assert index.doc_ids == alone.doc_ids
        assert [index.document(d).metadata for d in index.doc_ids] == [
            alone.document(d).metadata for d in alone.doc_ids
        ]
        assert [(c.doc_id, c.start, c.end) for c in index.chunks()] == [
            (c.doc_id, c.start, c.end) for c in alone.chunks()
        ]
