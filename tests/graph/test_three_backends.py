"""One retriever contract on three backends: embedded, Neo4j, and a LangChain vector store.

The same documents and changes go to three indexes:

- **embedded**: every part in process (flat dense index, BM25, SSG, in-memory graph);
- **Neo4j**: the dense channel in Neo4j's vector index (``Neo4jVectorClient``) and the
  knowledge graph in a ``Neo4jGraphStore`` on the same real server;
- **LangChain**: the dense channel in LangChain's ``InMemoryVectorStore``.

Every retriever must return the same chunks in the same order on all three, with the same
scores: dense search, IAR, PPR, an SSG traversal, SKETCH, local and global community
search. BM25 is semrag's own on every backend (Neo4j's full-text index is not used as the
sparse channel), so its results are equal too.

The whole index in Neo4j, served with no corpus in process (``Neo4jIndexStore`` and
``Neo4jIndex``, where the sparse channel is Lucene's), has its contract in
``test_neo4j_index.py``.
"""

from __future__ import annotations

import pytest
from langchain_core.vectorstores import InMemoryVectorStore

import langchain_semrag as lcs
from semrag import Document, SemanticIndex
from semrag.errors import ConfigError
from semrag.graph import KnowledgeGraph
from semrag.retrieval import (
    CommunityRetriever,
    IntentAwareRetriever,
    PPRRetriever,
    SketchRetriever,
    SSGRetriever,
)
from tests.adapters.test_dense_backends import DIM, QUERIES, TEXTS, embedder, same_dense

pytestmark = [pytest.mark.neo4j, pytest.mark.integration, pytest.mark.enable_socket]

MORE = [
    "Justin Timberlake released SexyBack in 2006. Timberlake was born in Memphis.",
    "Memphis lies on the Mississippi river in Tennessee.",
]


@pytest.fixture
def neo4j(neo4j_server):
    from semrag.neo4j import Neo4jGraphStore, Neo4jVectorClient

    store = Neo4jGraphStore(neo4j_server.uri, neo4j_server.user, neo4j_server.password)
    store.clear()
    client = Neo4jVectorClient(store, DIM)
    client.clear()
    yield store, client
    client.clear()
    store.clear()
    store.close()


def retrievers(index: SemanticIndex, kg: KnowledgeGraph) -> dict[str, object]:
    return {
        "dense": lambda q: index.search(q, k=5),
        "bm25": lambda q: index.search_sparse(q, k=5),
        "iar": IntentAwareRetriever(index, k=5).retrieve,
        "ppr": PPRRetriever(index, k=5).retrieve,
        "ssg": SSGRetriever(index, strategy="query_traversal", k=5).retrieve,
        "sketch": SketchRetriever(index, kg, k=5).retrieve,
        "local": CommunityRetriever(index, kg, strategy="local", k=5).retrieve,
        "global": CommunityRetriever(index, kg, strategy="global", k=5).retrieve,
    }


def answers(index: SemanticIndex, kg: KnowledgeGraph) -> dict[str, list]:
    out = {}
    for name, retrieve in retrievers(index, kg).items():
        for q in [*QUERIES, "When was the performer of SexyBack born?"]:
            out[f"{name}: {q}"] = [
                (h.chunk.doc_id, h.chunk.start, h.chunk.end, round(h.score, 5)) for h in retrieve(q)
            ]
    return out


def test_every_retriever_answers_alike_on_the_three_backends(neo4j):
    store, client = neo4j
    emb = embedder()
    indexes = {
        "embedded": SemanticIndex(embedder=emb, ssg=True),
        "neo4j": SemanticIndex(embedder=emb, dense=client, ssg=True),
        "langchain": SemanticIndex(
            embedder=emb,
            dense=lcs.VectorStoreClient(InMemoryVectorStore(lcs.SemragEmbeddings(emb))),
            ssg=True,
        ),
    }
    graphs = {}
    for name, index in indexes.items():
        index.add_documents([Document(f"d{i}", t) for i, t in enumerate(TEXTS)])
        graphs[name] = KnowledgeGraph.build(index, store=store if name == "neo4j" else None)
    # changes reach every part of every backend (the graphs follow their indexes)
    for index in indexes.values():
        index.delete("d2")
        index.add_documents([Document(f"m{i}", t) for i, t in enumerate(MORE)])
        index.add_documents(
            [Document("d0", TEXTS[0] + " The hive is warm.")], on_conflict="replace"
        )
    for graph in graphs.values():
        graph.refresh_communities()
    want = answers(indexes["embedded"], graphs["embedded"])
    assert sum(map(len, want.values())) > 40  # the queries find something everywhere
    for name in ("neo4j", "langchain"):
        same_dense(indexes["embedded"], indexes[name], k=len(indexes[name].chunks()) + 2)
        got = answers(indexes[name], graphs[name])
        assert got == want, name
    nodes = store.counts()
    assert nodes["entities"] == len(graphs["embedded"].store.entities())
    assert client.search(emb.embed(["bees"])[0], 50)  # the vectors are in Neo4j


def test_neo4j_dense_channel_round_trips_and_checks_dimensions(neo4j, tmp_path):
    store, client = neo4j
    from semrag.neo4j import Neo4jVectorClient

    emb = embedder()
    index, embedded = (
        SemanticIndex(embedder=emb, dense=client, ssg=True),
        SemanticIndex(embedder=emb, ssg=True),
    )
    for ix in (index, embedded):
        ix.add_documents([Document(f"d{i}", t) for i, t in enumerate(TEXTS)])
    before = store.reads
    hits = index.search("river through Warsaw", k=2)
    assert store.reads - before == 1  # one vector-index read per search
    assert [h.chunk for h in hits] == [
        h.chunk for h in embedded.search("river through Warsaw", k=2)
    ]
    index.save(tmp_path / "i")
    loaded = SemanticIndex.load(tmp_path / "i", embedder=emb, dense=client)
    same_dense(index, loaded)
    with pytest.raises(ConfigError, match="dimension"):
        Neo4jVectorClient(store, DIM + 1)  # the database's index has DIM
    with pytest.raises(ConfigError, match="dimension"):
        client.search([0.0] * (DIM + 1), 3)
    index.delete(index.doc_ids)
    assert client.search(emb.embed(["bees"])[0], 10) == []  # deletes reached the store


def test_a_server_killed_mid_change_then_the_change_rerun_equals_a_fresh_build(neo4j_server):
    """Neo4j dies under two changes; after a restart the next change repairs everything.

    The add fails while staged (the index is unchanged); the delete is published in
    process while neither its vector deletes nor the graph's write reach the server (a
    warning, and the graph's StoreError). Re-running the add after the restart deletes the
    left-over vectors first and rewrites the graph from its ledger: every retriever then
    answers as a fresh embedded build of the same documents.
    """
    import warnings

    from semrag.errors import StoreError
    from semrag.neo4j import Neo4jGraphStore, Neo4jVectorClient

    connection = (neo4j_server.uri, neo4j_server.user, neo4j_server.password)
    store = Neo4jGraphStore(*connection, retry_seconds=1, connection_timeout=2)
    store.clear()
    client = Neo4jVectorClient(store, DIM)
    client.clear()
    emb = embedder()
    index = SemanticIndex(embedder=emb, dense=client, ssg=True)
    index.add_documents([Document(f"d{i}", t) for i, t in enumerate(TEXTS)])
    kg = KnowledgeGraph.build(index, store=store)
    more = [Document(f"m{i}", t) for i, t in enumerate(MORE)]
    neo4j_server.kill()
    try:
        with pytest.raises(StoreError, match="the vector store failed to take 2 entries:"):
            index.add_documents(more)
        assert sorted(index.doc_ids) == sorted(f"d{i}" for i in range(len(TEXTS)))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(StoreError):
                index.delete("d2")
        assert any("failed to delete" in str(w.message) for w in caught)
        assert "d2" not in index.doc_ids and index.reader().dense.pending_deletes > 0
    finally:
        neo4j_server.start()  # same data directory and port
    try:
        index.add_documents(more)  # the change re-run
        assert index.reader().dense.pending_deletes == 0
        fresh = SemanticIndex(embedder=emb, ssg=True)
        fresh.add_documents([Document(d, index.document(d).text) for d in index.doc_ids])
        fresh_kg = KnowledgeGraph.build(fresh)
        for graph in (kg, fresh_kg):
            graph.refresh_communities()
        assert answers(index, kg) == answers(fresh, fresh_kg)
        same_dense(fresh, index, k=len(index.chunks()) + 2)
        assert sorted(e.id for e in store.entities()) == sorted(
            e.id for e in fresh_kg.store.entities()
        )
        stored = client.search(emb.embed(["bees"])[0], 200)
        assert sorted(int(i) for i in stored) == index.reader().dense.ids.tolist()
    finally:
        client.clear()
        store.clear()
        store.close()
