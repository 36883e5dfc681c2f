"""The model of a Neo4j-served index: checked on attach, changed through the store, crash-safe.

The last test kills the real server (SIGKILL) in the middle of a large change written by
``Neo4jIndexStore``, starts it again on the same data and checks that what a reader finds
is one committed version, whole: never a silent mix of two.
"""

from __future__ import annotations

import pytest

from semrag import Document, SemanticIndex
from semrag.errors import EmbedderMismatchError, StoreError, StoreUnavailableError
from semrag.testing import FakeEmbedder
from tests.counting import OtherFake
from tests.graph.test_neo4j_index import LONG, MORE

pytestmark = [pytest.mark.neo4j, pytest.mark.integration, pytest.mark.enable_socket]

QUERIES = ["where do bees find flowers", "river through Warsaw", "Timberlake Memphis", "orbit"]


def served(reader, queries=QUERIES) -> list:
    """Each query's top 5 that share a word with it, ties in a fixed order.

    (The fake models score chunks without a query word 0: which of them fill the top 5 is
    an arbitrary choice of each backend.)
    """
    out = []
    for q in queries:
        hits = reader.search(q, k=5)
        found = [(round(h.score, 4), h.chunk.doc_id, h.chunk.start) for h in hits if h.score > 1e-3]
        out.append(sorted(found, key=lambda t: (-t[0], t[1], t[2])))
    return out


def fresh_dump(index: SemanticIndex, store) -> dict:
    """What a fresh build over ``index``'s chunks, with its model, writes to a cleared database.

    (A re-embedded index keeps its chunks; a fresh ``add_documents`` would cut them with
    the new model.)
    """
    from semrag.neo4j import Neo4jIndexStore

    fresh = SemanticIndex(embedder=index.embedder, ssg=index.reader().ssg_config, passages=True)
    docs = [index.document(d) for d in index.doc_ids]
    fresh.add_chunks([c for d in index.doc_ids for c in index.chunks(d)], documents=docs)
    writer = Neo4jIndexStore(store)
    writer.clear()
    writer.attach(fresh)
    return writer.dump()


def filled(model) -> SemanticIndex:
    index = SemanticIndex(embedder=model, ssg=True, passages=True)
    index.add_documents([Document(f"d{i}", t) for i, t in enumerate([*LONG, *MORE])])
    return index


def test_the_reader_refuses_another_model_of_the_same_size(graph_store):
    from semrag.neo4j import Neo4jIndex, Neo4jIndexStore

    index = filled(FakeEmbedder(dim=32))
    Neo4jIndexStore.for_index(index, graph_store)
    with pytest.raises(EmbedderMismatchError, match="OtherFake"):
        Neo4jIndex(graph_store, embedder=OtherFake(dim=32))
    reader = Neo4jIndex(graph_store, embedder=FakeEmbedder(dim=32))
    assert reader.fingerprint.matches(index.fingerprint) and reader.note is None
    assert served(reader) == served(index)
    lenient = Neo4jIndex(graph_store, embedder=OtherFake(dim=32), allow_embedder_mismatch=True)
    assert "allow_embedder_mismatch" in lenient.note


def test_a_reembed_goes_through_the_store_and_the_database_serves_the_new_model(graph_store):
    from semrag.neo4j import Neo4jIndex, Neo4jIndexStore

    index = filled(FakeEmbedder(dim=32))
    writer = Neo4jIndexStore.for_index(index, graph_store)
    index.reembed(OtherFake(dim=32))  # one change, written as any change
    with pytest.raises(EmbedderMismatchError, match="the index 'index' in Neo4jGraphStore"):
        Neo4jIndex(graph_store, embedder=FakeEmbedder(dim=32))
    reader = Neo4jIndex(graph_store, embedder=OtherFake(dim=32))
    assert reader.version == index.version and served(reader) == served(index)
    assert writer.dump() == fresh_dump(index, graph_store)  # (it clears and writes a fresh one)
    # a writer of the same documents with another model rewrites every vector on attach
    again = filled(FakeEmbedder(dim=32))
    Neo4jIndexStore.for_index(again, graph_store)
    assert served(Neo4jIndex(graph_store, embedder=FakeEmbedder(dim=32))) == served(again)


@pytest.fixture(scope="module")
def own_server():
    """A server of these tests' own: each kills it and starts it again."""
    from tests.neo4j_server.server import Neo4jTestServer

    server = Neo4jTestServer()
    server.start()
    yield server
    server.kill()  # its data is thrown away: no clean shutdown to wait for
    server.cleanup()


def store_on(server):
    from semrag.neo4j import Neo4jGraphStore

    # fail fast once the server is gone (the driver would retry for 15 s by default)
    return Neo4jGraphStore(
        server.uri, server.user, server.password, retry_seconds=1, connection_timeout=3
    )


def kill_after(store, server, statements: int, monkeypatch) -> list[int]:
    """SIGKILL ``server`` inside a write transaction, after ``statements`` of its statements.

    Counts statements across the write transactions from now on; the one that reaches the
    count kills the server before its next statement (so before its commit).
    """
    real = store.session.transact
    ran = [0]

    class Tx:
        def __init__(self, tx) -> None:
            self.tx = tx

        def run(self, *args, **kwargs):
            if ran[0] == statements and server.process is not None:
                server.kill()
            ran[0] += 1
            return self.tx.run(*args, **kwargs)

    def transact(work, *, write):
        return real((lambda tx: work(Tx(tx))) if write else work, write=write)

    monkeypatch.setattr(store.session, "transact", transact)
    return ran


@pytest.mark.parametrize("in_steps", [False, True], ids=["one-transaction", "in-steps"])
def test_a_server_killed_in_a_large_change_comes_back_with_one_version_whole(
    own_server, monkeypatch, in_steps
):
    from semrag.neo4j import Neo4jIndex, Neo4jIndexStore

    old, new = FakeEmbedder(dim=32), OtherFake(dim=32)
    docs = [Document(f"p{i}", f"{LONG[i % len(LONG)]} Part {i} of the record.") for i in range(30)]
    index = SemanticIndex(embedder=old, passages=True)
    index.add_documents(docs)
    store = store_on(own_server)
    Neo4jIndexStore(store).clear()
    rows = 200 if in_steps else 50_000  # in steps: every few hundred rows commit
    Neo4jIndexStore.for_index(index, store, max_transaction_rows=rows)
    before = served(index)
    assert served(Neo4jIndex(store, embedder=old)) == before

    kill_after(store, own_server, 3, monkeypatch)  # a few statements into the re-embedding
    with pytest.raises(StoreUnavailableError):
        index.reembed(new)  # the index moves on; the database is cut off mid-write
    assert own_server.process is None
    monkeypatch.undo()
    store.close()

    own_server.start()  # the same data directory: Neo4j recovers its transaction log
    store = store_on(own_server)
    if in_steps:
        # the first steps had committed: a reader refuses the mix rather than serve it
        with pytest.raises(StoreError, match="interrupted"):
            Neo4jIndex(store, embedder=old)
    else:  # the one transaction never committed: the version before, whole
        reader = Neo4jIndex(store, embedder=old)
        assert reader.version == index.version - 1
        assert served(reader) == before
        with pytest.raises(EmbedderMismatchError, match="the index 'index' in Neo4jGraphStore"):
            Neo4jIndex(store, embedder=new)
    # the writer attached again writes what is missing: the index's version, whole
    writer = Neo4jIndexStore.for_index(index, store, max_transaction_rows=rows)
    reader = Neo4jIndex(store, embedder=new)
    assert reader.version == index.version and served(reader) == served(index)
    assert writer.dump() == fresh_dump(index, store)
    store.close()
