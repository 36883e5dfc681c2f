"""The whole index in Neo4j: written change by change, served with no corpus in process.

A :class:`Neo4jIndexStore` follows an embedded index; after any sequence of changes the
database must hold exactly what a fresh build of the surviving documents writes (chunks
with text, offsets and vectors; window nodes; similarity edges with their scores; theme
bridges). A :class:`Neo4jIndex` then answers dense search exactly as the embedded index,
sparse search through Lucene's full-text index with an overlap of at least 0.8 with
semrag's BM25, and runs IAR and SPC with nothing but a database connection.
"""

from __future__ import annotations

import dataclasses

import pytest

from semrag import Document, SemanticIndex
from semrag.errors import ConfigError, StoreUnavailableError
from semrag.index import SSGConfig
from semrag.index.reader import query_vector
from semrag.postprocess import SPC
from semrag.retrieval import IntentAwareRetriever, SSGRetriever
from semrag.retrieval.ssg import ALGORITHMS
from semrag.testing import FakeEmbedder, FakeLLM
from tests.adapters.test_dense_backends import QUERIES, TEXTS, embedder

pytestmark = [pytest.mark.neo4j, pytest.mark.integration, pytest.mark.enable_socket]

# SKETCH's pieces: small enough that most chunks are cut into several.
PIECES = (8, 2)
# Every pair of windows is similar enough for an edge, so each change moves many edges.
SSG = SSGConfig(window=2, top_k=3, top_x=3, min_intra=-1.0, min_inter=-1.0, top_t=2)
LONG = [" ".join(TEXTS[(i + j) % len(TEXTS)] for j in range(2)) for i in range(len(TEXTS))]
MORE = [
    "Justin Timberlake released SexyBack in 2006. Timberlake was born in Memphis.",
    "Memphis lies on the Mississippi river in Tennessee. Blues music grew there.",
]


def changes(index: SemanticIndex) -> None:
    """Adds, a delete, a replacement and more adds: every path of the store's writes."""
    index.add_documents([Document(f"d{i}", t, {"n": i}) for i, t in enumerate(LONG)])
    index.delete("d2")
    index.add_documents([Document(f"m{i}", t) for i, t in enumerate(MORE)])
    index.add_documents(
        [Document("d0", TEXTS[0] + " The hive is warm in winter.")], on_conflict="replace"
    )
    index.delete(["d5", "m0"])


def fresh_dump(index: SemanticIndex, store) -> dict:
    """What a fresh build of ``index``'s documents writes to a cleared database."""
    from semrag.neo4j import Neo4jIndexStore

    split = index.reader().piece_index.split if index.reader().piece_index is not None else None
    fresh = SemanticIndex(
        embedder=index.embedder,
        ssg=index.reader().ssg_config,
        pieces=split,
        passages="passages" in index.parts,
    )
    fresh.add_documents([index.document(d) for d in index.doc_ids])
    writer = Neo4jIndexStore(store)
    writer.clear()
    writer.attach(fresh)
    return writer.dump()


def test_incremental_changes_leave_what_a_fresh_build_writes(graph_store):
    from semrag.neo4j import Neo4jIndexStore

    index = SemanticIndex(embedder=embedder(), ssg=SSG, pieces=PIECES, passages=True)
    writer = Neo4jIndexStore.for_index(index, graph_store)
    changes(index)
    got = writer.dump()
    assert got["mentions"]  # the passage graph's phrases, written change by change
    counts = got["counts"]
    assert counts["pieces"] > counts["chunks"]  # chunks cut into pieces, with vectors
    assert counts["documents"] == len(index.doc_ids) == 5
    assert counts["chunks"] == len(index.chunks())
    assert counts["edges"] > counts["windows"] > 0 and counts["bridges"] > 0
    assert got == fresh_dump(index, graph_store)


def test_a_failed_write_is_repaired_by_the_next_change_and_by_sync(graph_store, monkeypatch):
    from semrag.neo4j import Neo4jIndexStore

    index = SemanticIndex(embedder=embedder(), ssg=SSG, passages=True)
    writer = Neo4jIndexStore.for_index(index, graph_store)
    index.add_documents([Document(f"d{i}", t) for i, t in enumerate(LONG)])
    real = graph_store.session.transact

    def down(work, *, write):
        if write:
            raise StoreUnavailableError("Neo4j is unavailable (test)")
        return real(work, write=write)

    monkeypatch.setattr(graph_store.session, "transact", down)
    with pytest.raises(StoreUnavailableError, match="Neo4j is unavailable"):
        index.delete("d1")  # the index publishes; the database keeps the version before
    monkeypatch.setattr(graph_store.session, "transact", real)
    assert writer.counts()["documents"] == len(LONG)  # nothing half-written
    index.add_documents([Document("m0", MORE[0])])  # this change writes the difference
    assert writer.dump() == fresh_dump(index, graph_store)

    writer = Neo4jIndexStore.for_index(
        index2 := SemanticIndex(embedder=embedder(), ssg=True), graph_store
    )
    index2.add_documents([Document("a", TEXTS[0])])
    monkeypatch.setattr(graph_store.session, "transact", down)
    with pytest.raises(StoreUnavailableError, match="Neo4j is unavailable"):
        index2.add_documents([Document("b", TEXTS[1])])
    monkeypatch.setattr(graph_store.session, "transact", real)
    change = writer.sync()
    assert change.added_ids == ["b"] and writer.sync().added_ids == []
    assert writer.dump() == fresh_dump(index2, graph_store)


def test_a_new_writer_trusts_a_level_database_and_levels_any_other(graph_store):
    from semrag.neo4j import Neo4jIndexStore

    index = SemanticIndex(embedder=embedder(), ssg=True)
    Neo4jIndexStore.for_index(index, graph_store)
    index.add_documents([Document(f"d{i}", t) for i, t in enumerate(TEXTS)])
    before = graph_store.reads
    again = Neo4jIndexStore.for_index(index, graph_store)  # e.g. the writer restarted
    assert again.counts()["documents"] == len(TEXTS)
    other = SemanticIndex(embedder=embedder(), ssg=True)
    other.add_documents([Document("d0", TEXTS[0]), Document("x", MORE[1])])
    third = Neo4jIndexStore.for_index(other, graph_store)
    assert graph_store.reads > before
    assert third.dump() == fresh_dump(other, graph_store)
    # the same documents, now with SKETCH's pieces: every document is written again
    pieces = SemanticIndex(embedder=embedder(), pieces=PIECES, ssg=True)
    pieces.add_documents([other.document(d) for d in other.doc_ids])
    fourth = Neo4jIndexStore.for_index(pieces, graph_store)
    assert fourth.counts()["pieces"] > 0
    assert fourth.dump() == fresh_dump(pieces, graph_store)


def test_the_reader_serves_dense_sparse_iar_and_spc_from_the_database(graph_store):
    from semrag.neo4j import Neo4jIndex, Neo4jIndexStore

    emb = embedder()
    index = SemanticIndex(embedder=emb, ssg=True)
    Neo4jIndexStore.for_index(index, graph_store, passages=False)  # IAR without PPR here
    changes(index)
    reader = Neo4jIndex(graph_store, embedder=emb)
    assert sorted(reader.doc_ids) == sorted(index.doc_ids) and "d0" in reader
    assert len(reader) == len(index) and len(reader.dense) == len(index.chunks())
    assert reader.version == index.version and "d2" not in reader
    overlaps = []
    for q in [*QUERIES, "Timberlake Memphis", "Nobel Prize"]:
        want = [(h.chunk, round(h.score, 5)) for h in index.search(q, k=4)]
        before = graph_store.reads
        got = [(h.chunk, round(h.score, 5)) for h in reader.search(q, k=4)]
        assert graph_store.reads - before == 1  # candidates and their chunks in one read
        assert got == want
        assert [h.chunk.metadata for h in reader.search(q, k=4)] == [c.metadata for c, _ in want]
        bm25 = {h.chunk for h in index.search_sparse(q, k=3)}
        lucene = {h.chunk for h in reader.search_sparse(q, k=3)}
        if bm25:
            overlaps.append(len(bm25 & lucene) / len(bm25))
    assert sum(overlaps) / len(overlaps) >= 0.8
    d0 = reader.documents(["d0"])["d0"]
    for chunk in reader.chunks_of(reader.overlapping_chunks_many([("d0", 0, 10**9)])[0]):
        assert d0.doc.text[chunk.start : chunk.end] == chunk.text
    assert d0.sentences == index.reader().sentences("d0")
    assert (d0.sentence_vectors == index.reader().sentence_vectors("d0")).all()

    iar = IntentAwareRetriever(reader, k=3)  # no passages stored: no extended channel
    assert iar.extended is None
    before = graph_store.reads
    hits = iar.retrieve("Which river flows by Memphis?")
    assert graph_store.reads - before == 3  # candidates, sparse scores, refining sentences
    assert hits and all(h.chunk in index.chunks(h.chunk.doc_id) for h in hits)
    assert any("Memphis" in h.chunk.text for h in hits)  # the full-text channel found it
    # IAR on the database and in process (both without the extended channel): the dense
    # channel is the same, the sparse one is Lucene's BM25 against semrag's
    same = []
    for q in [*QUERIES, "Which river flows by Memphis?", "Nobel Prize winner"]:
        here = {h.chunk for h in IntentAwareRetriever(index, k=3, extended=None).retrieve(q)}
        there = {h.chunk for h in IntentAwareRetriever(reader, k=3).retrieve(q)}
        same.append(len(here & there) / len(here))
    assert sum(same) / len(same) >= 0.8
    result = SPC(reader).process("Where was Marie Curie born?", reader.search("Curie Warsaw", k=2))
    assert result.chunks and all(
        index.document(c.chunk.doc_id).text[c.chunk.start : c.chunk.end] == c.chunk.text
        for c in result.chunks
    )


def test_the_reader_checks_what_it_is_given(graph_store):
    from semrag.neo4j import Neo4jIndex, Neo4jIndexStore
    from semrag.testing import FakeEmbedder

    with pytest.raises(ConfigError, match="no semrag index"):
        Neo4jIndex(graph_store, embedder=embedder())
    index = SemanticIndex(embedder=embedder(), ssg=True)
    Neo4jIndexStore.for_index(index, graph_store)
    index.add_documents([Document("a", TEXTS[0])])
    with pytest.raises(ConfigError, match="dimensional"):
        Neo4jIndex(graph_store, embedder=FakeEmbedder(dim=8))
    with pytest.raises(ConfigError, match="dimensional"):
        Neo4jIndexStore.for_index(
            SemanticIndex(embedder=FakeEmbedder(dim=8), ssg=True), graph_store
        )
    reader = Neo4jIndex(graph_store, embedder=embedder())
    with pytest.raises(KeyError, match="chunk ids not in the index:"):
        reader.chunks_of([10**9])
    with pytest.raises(ConfigError, match="Neo4jIndex.search: query is empty; there is"):
        reader.search("   ")
    assert reader.search_sparse("AND OR ( [ the", k=2) is not None  # Lucene syntax is escaped
    with pytest.raises(ConfigError, match="JSON"):
        index.add_documents([Document("b", TEXTS[1], {"when": object()})])
    assert "b" not in index and "b" not in reader  # the change failed while staged


def stored_with_ssg(graph_store, emb):
    """An index with a similarity graph, its changes followed into Neo4j, and a reader."""
    from semrag.neo4j import Neo4jIndex, Neo4jIndexStore

    index = SemanticIndex(embedder=emb, ssg=SSG)
    Neo4jIndexStore.for_index(index, graph_store)
    changes(index)
    return index, Neo4jIndex(graph_store, embedder=emb)


def test_every_ssg_algorithm_traverses_the_database_as_the_embedded_graph(graph_store):
    from semrag.neo4j import Neo4jIndex, Neo4jIndexStore

    emb = embedder()
    index, reader = stored_with_ssg(graph_store, emb)
    assert reader.ssg_config == SSG
    found = 0
    reads = {}
    for algorithm in ALGORITHMS:
        for q in [*QUERIES, "Which river flows by Memphis?", "Nobel Prize winner"]:
            runs = []
            for ix in (index, reader):
                llm = FakeLLM(['{"choice": 2}'], cycle=True) if "llm" in algorithm else None
                before = graph_store.reads
                hits = SSGRetriever(ix, strategy=algorithm, k=4, llm=llm).retrieve(q)
                runs.append(_traversal_answer(hits))
            reads.setdefault(algorithm, []).append(graph_store.reads - before)
            assert runs[1] == runs[0], (algorithm, q)
            found += len(runs[0])
    assert found > 2 * len(ALGORITHMS) * 6  # the traversals went somewhere
    # the anchor search loads the first nodes visited (and the anchor's look-ahead): on
    # this small graph a traversal needs at most one more read, a ranking none
    assert all(max(n) <= 2 for n in reads.values()), reads
    assert reads["basic_retrieval"] == [1] * 6, reads
    with pytest.raises(ConfigError, match="ssg=False"):
        bare = SemanticIndex(embedder=emb, ssg=False)
        Neo4jIndexStore(graph_store).clear()
        Neo4jIndexStore.for_index(bare, graph_store)
        bare.add_documents([Document("a", TEXTS[0])])
        Neo4jIndex(graph_store, embedder=emb).ssg_view()


def next_hop_scores(view, q, a):
    """How each rule scores node ``a``'s out-neighbours as the next hop, in numpy."""
    import numpy as np

    nodes, edges, _ = view._adjacent[a]
    vecs = np.stack([view._vectors[int(n)] for n in nodes])
    q3, a3 = view.graph.project_3d(np.vstack([q, view._vectors[a]]))
    n3 = view.graph.project_3d(vecs)
    return nodes.tolist(), {
        "query": vecs @ q,
        "edge": edges,
        "average": vecs @ q + edges,
        "fulldim": 2 * (vecs @ q) - vecs @ view._vectors[a],
        "geometric": -np.linalg.norm(n3 - (2 * q3 - a3), axis=1),
    }


def best_per_node(nodes, score, skip):
    best = {}
    for n, sc in zip(nodes, score.tolist(), strict=True):
        if n not in skip:
            best[n] = max(sc, best.get(n, float("-inf")))
    return best


def test_the_look_ahead_fetches_the_hops_each_traversal_ranks_first(graph_store):
    # The server ranks a loaded node's out-neighbours by each algorithm's own next-hop
    # score (ahead_rank); the ones it sends are those the algorithm's formula ranks first.
    import numpy as np

    from semrag.neo4j._cypher import as_floats
    from semrag.neo4j._index_cypher import LOAD_AHEAD
    from semrag.neo4j._session import Ask

    emb = embedder()
    index, reader = stored_with_ssg(graph_store, emb)
    ahead = 2
    checked = 0
    for query in QUERIES:
        view = reader.ssg_view()
        q = np.asarray(query_vector(reader, query), np.float32).reshape(-1)
        _, ids = view.run(view.search_steps(q, 1, pca=True, load=1))
        a = int(ids[0, 0])
        nodes, formula = next_hop_scores(view, q, a)  # a was loaded with the search
        for rule, score in formula.items():
            best = best_per_node(nodes, score, {a})
            params = {
                "keys": [view._keys[a]],
                "q": as_floats(q),
                "ahead": ahead,
                "follow": 0,
                "rank": view.ahead_rank(rule),
                "known": [],
                "visited": [],
            }
            rows = view.fetch(Ask(LOAD_AHEAD, params))
            sent = [view._numbers[r["source"]] for r in rows if r["source"] != view._keys[a]]
            want = sorted(best.values(), reverse=True)[:ahead]
            assert sorted((best[n] for n in sent), reverse=True) == pytest.approx(want, abs=1e-4)
            checked += len(best) > ahead
    assert checked >= 5  # rankings that had to choose
    with pytest.raises(ConfigError, match="look-ahead"):
        reader.ssg_view().ahead_rank("nearest")


def test_the_look_ahead_follows_the_chain_a_greedy_traversal_walks(graph_store):
    # With the anchor search alone, a greedy traversal's first LEVELS hops (each the best
    # unvisited out-neighbour by its rule) are loaded: the server followed the same chain.
    # Without following (follow=0) some are not.
    import numpy as np

    from semrag.neo4j._index_cypher import LEVELS
    from semrag.neo4j.remote_ssg import RemoteView

    emb = embedder()
    index, reader = stored_with_ssg(graph_store, emb)
    outcomes = {RemoteView.follow: [], 0: []}
    for follow in outcomes:
        for query in [*QUERIES, "Which river flows by Memphis?", "Nobel Prize winner"]:
            q = np.asarray(query_vector(reader, query), np.float32).reshape(-1)
            for rule in ("average", "fulldim", "geometric"):
                view = reader.ssg_view()
                view.follow = follow
                _, ids = view.run(view.search_steps(q, 1, pca=True, load=1, rank=rule))
                chain, outcome = [int(ids[0, 0])], "walked"
                while len(chain) <= LEVELS:
                    if chain[-1] not in view._adjacent:
                        outcome = "not loaded"
                        break
                    nodes, formula = next_hop_scores(view, q, chain[-1])
                    best = best_per_node(nodes, formula[rule], set(chain))
                    if not best:
                        outcome = "dead end"
                        break
                    chain.append(max(best, key=best.get))
                if outcome == "walked" and chain[-1] not in view._adjacent:
                    outcome = "not loaded"
                outcomes[follow].append(outcome)
    followed = outcomes[RemoteView.follow]
    assert "not loaded" not in followed and followed.count("walked") >= 10, outcomes
    assert "not loaded" in outcomes[0], outcomes


def test_the_anchor_search_sends_the_pca_only_when_it_changed(graph_store):
    # A reader keeps the PCA it read; the next anchor search gets it again only when the
    # stored PCA differs, and meanwhile ranks its look-ahead by the geometric rule with it.
    import numpy as np

    emb = embedder()
    index, reader = stored_with_ssg(graph_store, emb)
    q = np.asarray(query_vector(reader, QUERIES[0]), np.float32).reshape(-1)

    def anchor_search():
        view = reader.ssg_view()
        steps = view.search_steps(q, 1, pca=True, load=1, rank="geometric")
        ask = next(steps)
        rows = view.fetch(ask)
        with pytest.raises(StopIteration):
            steps.send(rows)
        return ask.params, rows[0], view.graph.project_3d(q[None, :])

    def embedded_projection():
        return index.reader().ssg_view().graph.project_3d(q[None, :])

    first, row, projected = anchor_search()
    assert first["pca_digest"] is None and row["pca"] is not None
    assert first["rank"]["axes"] == []  # by query similarity until the PCA is known
    np.testing.assert_allclose(projected, embedded_projection(), atol=1e-5)
    second, row, again = anchor_search()
    assert second["pca_digest"] == row["pca_digest"] is not None
    assert row["pca"] is None
    assert len(second["rank"]["axes"]) == 3  # the geometric rule, from the kept PCA
    np.testing.assert_array_equal(again, projected)
    index.add_documents([Document("new", "Rockets burn fuel. Engines roar at launch. " * 3)])
    third, row, changed = anchor_search()
    assert third["pca_digest"] == second["pca_digest"] != row["pca_digest"]
    assert row["pca"] is not None
    np.testing.assert_allclose(changed, embedded_projection(), atol=1e-5)
    assert not np.allclose(changed, projected, atol=1e-5)


def async_reads_only(graph_store, monkeypatch):
    """From here on the sync driver raises; the statements the async driver runs are listed."""
    from semrag.neo4j import _session as session_module

    statements = []
    real = session_module.AsyncDriverLoop.read

    async def seen(self, query, params):
        statements.append(query)
        return await real(self, query, params)

    def no_sync_read(query, **params):
        raise AssertionError("an async path used the sync driver")

    monkeypatch.setattr(session_module.AsyncDriverLoop, "read", seen)
    monkeypatch.setattr(graph_store.session, "read_rows", no_sync_read)
    return statements


def _traversal_answer(hits):
    # a hit's chunk.index is its node's number: per query on Neo4j
    return [
        (
            dataclasses.replace(h.chunk, index=0),
            round(h.score, 5),
            [(p["edge"], p["sentences"]) for p in h.provenance],
        )
        for h in hits
    ]


async def test_async_traversals_await_every_read_on_the_async_driver(graph_store, monkeypatch):
    # Each algorithm's aretrieve gives what retrieve gives, with every read a step awaited
    # on the async driver (the sync driver is never used), and geometric_3d's PCA arrives
    # with the anchor search (no read of its own).
    from semrag.neo4j._index_cypher import PCA

    emb = embedder()
    index, reader = stored_with_ssg(graph_store, emb)
    queries = [*QUERIES, "Which river flows by Memphis?"]

    def retriever(algorithm):
        llm = FakeLLM(['{"choice": 2}'], cycle=True) if "llm" in algorithm else None
        return SSGRetriever(reader, strategy=algorithm, k=4, llm=llm)

    sync = {a: [_traversal_answer(retriever(a).retrieve(q)) for q in queries] for a in ALGORITHMS}
    statements = async_reads_only(graph_store, monkeypatch)
    for algorithm in ALGORITHMS:
        got = [_traversal_answer(await retriever(algorithm).aretrieve(q)) for q in queries]
        assert got == sync[algorithm], algorithm
        assert any(got), algorithm
    assert len(statements) >= len(ALGORITHMS) * len(queries)  # an anchor search each
    assert PCA not in statements


async def test_the_readers_async_twins_leave_the_loop_free(graph_store, monkeypatch):
    # The cases of tests/unit/test_loop_stalls.py (ELSEWHERE): a slow model, and a network
    # so slow that each read blocks the store's I/O loop for DELAY, must not stall the
    # caller's loop; and the async twins never touch the sync driver.
    import time

    import numpy as np

    from semrag.neo4j import Neo4jIndex, Neo4jIndexStore
    from semrag.neo4j import _session as session_module
    from tests.unit.test_loop_stalls import DELAY, ELSEWHERE, MAX_STALL, SlowEmbedder, longest_stall

    index = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
    Neo4jIndexStore.for_index(index, graph_store)
    index.add_documents([Document(f"d{i}", t) for i, t in enumerate(TEXTS)])
    reader = Neo4jIndex(graph_store, embedder=SlowEmbedder())
    real = session_module.AsyncDriverLoop.read

    async def slow_read(self, query, params):
        time.sleep(DELAY)  # blocks the I/O loop, which is not the caller's
        return await real(self, query, params)

    def no_sync_read(query, **params):
        raise AssertionError("an async twin used the sync driver")

    monkeypatch.setattr(session_module.AsyncDriverLoop, "read", slow_read)
    monkeypatch.setattr(graph_store.session, "read_rows", no_sync_read)
    q = np.asarray(FakeEmbedder().embed(["bees"]))
    cases = {
        "asearch": lambda: reader.asearch("bees", k=2),
        "asearch_sparse": lambda: reader.asearch_sparse("bees", k=2),
        "asearch_channels": lambda: reader.asearch_channels(q, ["bees"], 3),
        "asparse_scores_many": lambda: reader.asparse_scores_many(["bees"], [0, 1, 2]),
        "asentence_vectors_of": lambda: reader.asentence_vectors_of([0, 1]),
        "aoverlapping_chunks_many": lambda: reader.aoverlapping_chunks_many([("d0", 0, 9)]),
        "adocuments": lambda: reader.adocuments(["d0", "d1"]),
        "acurrent_version": lambda: reader.acurrent_version(),
        "adense_search": lambda: reader.adense_search(q[0], 2),
        "achunks_of": lambda: reader.achunks_of([0, 1]),
        "alookup": lambda: graph_store.alookup(["bees", "honey"], fuzzy_limit=2),
        "aexpand": lambda: graph_store.aexpand(["bees"], depth=2),
        "achunks_for": lambda: graph_store.achunks_for(["bees"]),
        "achange_stamp": lambda: graph_store.achange_stamp(),
        "asearch_entities": lambda: graph_store.asearch_entities(q[0], 5),
        "aread_rows": lambda: graph_store.session.aread_rows("RETURN 1 AS n"),
        "arun_steps": lambda: graph_store.session.arun_steps(
            graph_store.read_steps(graph_store.chunks_for, ["bees"])[1]
        ),
        "arun_together": lambda: graph_store.session.arun_together(
            [
                graph_store.read_steps(graph_store.lookup, ["bees"], fuzzy_limit=2)[1],
                reader.dense.read_steps(reader.dense.search, q, 2)[1],
            ]
        ),
    }
    session = {"aread_rows", "arun_steps", "arun_together"}  # store.session's, under them all
    assert {k.rsplit(".", 1)[1] for k in ELSEWHERE} | session == set(cases)
    for name, make in cases.items():
        assert await longest_stall(make) < MAX_STALL, name
    assert (await reader.asearch("bees", k=2))[0].chunk.doc_id == "d0"
    assert await reader.acurrent_version() == index.version
    scores, ids = await reader.adense_search(q[0], 3)
    want_scores, want_ids = index.reader().dense_search(q[0], 3)  # the hashed vectors tie: scores
    assert np.allclose(scores, want_scores, atol=1e-6) and ids[0] == want_ids[0]
    assert await reader.achunks_of([2, 0]) == [index.chunk(2), index.chunk(0)]
    spans = [("d0", 0, 9), ("d1", 5, 400), ("nowhere", 0, 5)]
    assert await reader.aoverlapping_chunks_many(spans) == index.reader().overlapping_chunks_many(
        spans
    )


async def test_the_async_twins_answer_as_the_sync_methods_on_the_async_driver(graph_store):
    # Same answers as the sync twins (which read through the sync driver), read through
    # the async driver only; IAR's async path awaits its round trips the same way.
    import numpy as np

    from semrag.neo4j import Neo4jIndex, Neo4jIndexStore

    emb = embedder()
    index = SemanticIndex(embedder=emb, ssg=True)
    Neo4jIndexStore.for_index(index, graph_store)
    index.add_documents([Document(f"d{i}", t) for i, t in enumerate(LONG)])
    reader = Neo4jIndex(graph_store, embedder=emb)
    iar = IntentAwareRetriever(reader, k=3)
    vectors = np.asarray(emb.embed(QUERIES[:2]))
    ids = [0, 2, 4, 5]
    sync = {
        "search": [reader.search(q, k=3) for q in QUERIES],
        "sparse": [reader.search_sparse(q, k=3) for q in QUERIES],
        "channels": reader.search_channels(vectors, QUERIES[:2], 4),
        "scores": reader.sparse_scores_many(QUERIES[:2], ids),
        "sentences": reader.sentence_vectors_of(ids),
        "iar": [iar.retrieve(q) for q in QUERIES],
    }
    sync_reads = graph_store.reads
    calls = []
    real = graph_store.session.read_rows

    def counted(query, **params):
        calls.append(query)
        return real(query, **params)

    graph_store.session.read_rows = counted  # the async twins must not come here
    got = {
        "search": [await reader.asearch(q, k=3) for q in QUERIES],
        "sparse": [await reader.asearch_sparse(q, k=3) for q in QUERIES],
        "channels": await reader.asearch_channels(vectors, QUERIES[:2], 4),
        "scores": await reader.asparse_scores_many(QUERIES[:2], ids),
        "sentences": await reader.asentence_vectors_of(ids),
        "iar": [await iar.aretrieve(q) for q in QUERIES],
    }
    del graph_store.session.read_rows
    assert calls == []
    assert graph_store.reads > sync_reads  # counted on the async side too
    for key in ("search", "sparse", "iar"):
        assert [
            [(h.chunk.doc_id, h.chunk.start, round(h.score, 5)) for h in hits] for hits in got[key]
        ] == [
            [(h.chunk.doc_id, h.chunk.start, round(h.score, 5)) for h in hits] for hits in sync[key]
        ], key
        assert all(got[key]), key
    assert np.array_equal(got["channels"][0], sync["channels"][0])
    assert got["channels"][1] == sync["channels"][1]
    np.testing.assert_allclose(got["scores"], sync["scores"])
    assert got["scores"].any()
    for a, b in zip(got["sentences"], sync["sentences"], strict=True):
        np.testing.assert_array_equal(a, b)
        assert len(a)


async def test_concurrent_async_reads_share_one_loop_not_a_thread_each(graph_store, monkeypatch):
    # 32 concurrent searches with a slow (awaiting) network: all 32 reads are in flight at
    # once, where a worker thread per read would cap them at the thread pool's size.
    import asyncio
    import concurrent.futures

    from semrag.neo4j import Neo4jIndex, Neo4jIndexStore
    from semrag.neo4j import _session as session_module

    emb = FakeEmbedder()
    index = SemanticIndex(embedder=emb, ssg=True)
    Neo4jIndexStore.for_index(index, graph_store)
    index.add_documents([Document(f"d{i}", t) for i, t in enumerate(TEXTS)])
    reader = Neo4jIndex(graph_store, embedder=emb)
    real = session_module.AsyncDriverLoop.read
    flight = {"now": 0, "most": 0}

    async def slow_read(self, query, params):
        flight["now"] += 1  # on the I/O loop only: no lock needed
        flight["most"] = max(flight["most"], flight["now"])
        try:
            await asyncio.sleep(0.3)
            return await real(self, query, params)
        finally:
            flight["now"] -= 1

    monkeypatch.setattr(session_module.AsyncDriverLoop, "read", slow_read)
    loop = asyncio.get_running_loop()
    loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=4))
    hits = await asyncio.gather(*(reader.asearch_sparse(TEXTS[i % 6][:20], k=2) for i in range(32)))
    assert all(hits)
    assert flight["most"] >= 24, flight
    # a cancelled caller cancels its read on the I/O loop
    task = asyncio.create_task(reader.asearch_sparse("bees", k=2))
    while flight["now"] == 0:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):
        if flight["now"] == 0:
            break
        await asyncio.sleep(0.01)
    assert flight["now"] == 0


def reads_to_run_together():
    """Reads sharing parameter names; one finds nothing, one takes two steps, one names no
    columns (it cannot join a statement)."""
    from semrag.neo4j._session import Ask

    def one(query, columns, **params):
        return (yield Ask(query, params, columns))

    def two_steps():
        first = yield Ask("UNWIND $xs AS x RETURN x * 2 AS n", {"xs": [1, 2]}, ("n",))
        xs = [r["n"] for r in first]
        return (yield Ask("UNWIND $xs AS x RETURN x + 1 AS n, x AS end", {"xs": xs}, ("n", "end")))

    return [
        one("UNWIND $xs AS x RETURN x AS n, [x, 'a'] AS pair", ("n", "pair"), xs=[3, 4, 5]),
        one("UNWIND $xs AS x RETURN x AS n", ("n",), xs=[]),
        two_steps(),
        one("RETURN $xs AS xs", (), xs=[7]),
    ]


async def test_reads_asked_together_run_as_one_statement_per_step(graph_store):
    # Each read gets the rows it gets alone; the three that name their columns share one
    # statement per step (the two-step one's second alone), the fourth runs apart.
    alone = [graph_store.session.run_steps(steps) for steps in reads_to_run_together()]
    assert alone[0][1] == {"n": 4, "pair": [4, "a"]} and alone[1] == []
    assert alone[2] == [{"n": 3, "end": 2}, {"n": 5, "end": 4}]
    before = graph_store.reads
    assert graph_store.session.run_together(reads_to_run_together()) == alone
    assert graph_store.reads - before == 3  # three joined, the fourth, the second step
    before = graph_store.reads
    assert await graph_store.session.arun_together(reads_to_run_together()) == alone
    assert graph_store.reads - before == 3
    before = graph_store.reads
    assert graph_store.session.run_together(reads_to_run_together()[:2]) == alone[:2]
    assert graph_store.reads - before == 1


async def test_async_reads_raise_the_stores_errors_and_stop_with_the_store(neo4j_server):
    from semrag.errors import StoreError
    from semrag.neo4j import Neo4jGraphStore

    store = Neo4jGraphStore(neo4j_server.uri, neo4j_server.user, neo4j_server.password)
    assert (await store.session.aread_rows("RETURN 1 AS n")) == [{"n": 1}]
    with pytest.raises(StoreError, match="rejected a statement"):
        await store.session.aread_rows("RETURN nonsense(")
    thread = store.session._aio._thread
    store.close()
    assert not thread.is_alive()
    with pytest.raises(StoreUnavailableError, match="closed"):
        await store.session.aread_rows("RETURN 1 AS n")
    # async_driver=False: the sync driver in worker threads, and no I/O loop
    threads = Neo4jGraphStore(
        neo4j_server.uri, neo4j_server.user, neo4j_server.password, async_driver=False
    )
    try:
        before = threads.reads
        assert (await threads.session.aread_rows("RETURN 1 AS n")) == [{"n": 1}]
        with pytest.raises(StoreError, match="rejected a statement"):
            await threads.session.aread_rows("RETURN nonsense(")
        assert threads.session._aio is None and threads.reads == before + 2
    finally:
        threads.close()


def with_graph(graph_store):
    """An index and its knowledge graph written to one database, and both as served.

    The writer keeps the index (``Neo4jIndexStore``) and its graph in one database; the
    serving side opens both with nothing but the connection and the embedder.
    """
    from semrag.graph import KnowledgeGraph
    from semrag.neo4j import Neo4jIndex, Neo4jIndexStore

    emb = embedder()
    graph_store.clear()
    index = SemanticIndex(embedder=emb, ssg=SSG, pieces=PIECES)
    Neo4jIndexStore.for_index(index, graph_store)
    kg = KnowledgeGraph.build(index, store=graph_store)
    changes(index)
    kg.refresh_communities()
    return (
        index,
        kg,
        Neo4jIndex(graph_store, embedder=emb),
        KnowledgeGraph(graph_store, embedder=emb),
    )


def test_sketch_and_community_search_serve_from_the_database_with_the_graph_beside_it(
    graph_store,
):
    from semrag.retrieval import CommunityRetriever, SketchRetriever

    index, kg, reader, served = with_graph(graph_store)
    pairs = {
        "sketch": (
            SketchRetriever(index, kg, split=None),
            SketchRetriever(reader, served, split=None),
        ),
        "sketch pieces": (  # the paper's search over small pieces, stored by the writer
            SketchRetriever(index, kg, split=PIECES),
            SketchRetriever(reader, served, split=PIECES),
        ),
        "local": (
            CommunityRetriever(index, kg, strategy="local"),
            CommunityRetriever(reader, served, strategy="local"),
        ),
        "global": (
            CommunityRetriever(index, kg, strategy="global"),
            CommunityRetriever(reader, served, strategy="global"),
        ),
    }
    found = 0
    # round trips per query once the served graph has embedded its names and reports:
    # one per stage (SKETCH: names and dense search together, neighbourhood, chunks of its
    # mentions; community search: the graph's change stamp first)
    most = {"sketch": 3, "sketch pieces": 3, "local": 3, "global": 3}
    for name, (here, there) in pairs.items():
        there.retrieve(QUERIES[0], k=4)
        for q in [*QUERIES, "Which river flows by Memphis?", "Where was Marie Curie born?"]:
            want = [(h.chunk, round(h.score, 5)) for h in here.retrieve(q, k=4)]
            before = graph_store.reads
            assert [(h.chunk, round(h.score, 5)) for h in there.retrieve(q, k=4)] == want, name
            assert graph_store.reads - before <= most[name], (name, q)
            found += len(want)
    assert found > 20
    spans = [(c.doc_id, c.start, c.end - 1) for c in index.chunks()] + [("nowhere", 0, 5)]
    assert reader.overlapping_chunks_many(spans) == index.reader().overlapping_chunks_many(spans)
    assert reader.overlapping_chunks_many(spans) == [
        reader.overlapping_chunks_many([s])[0] for s in spans
    ]
    with reader.read():
        before = graph_store.reads
        records = reader.documents([*index.doc_ids, "nowhere"])
        assert sorted(records) == sorted(index.doc_ids)
        for doc_id in index.doc_ids:
            assert records[doc_id].doc == index.document(doc_id)
            assert records[doc_id].sentences == index.reader().sentences(doc_id)
        assert reader.documents(index.doc_ids[:1])  # kept for the read: no second trip
        assert graph_store.reads - before == 1
    with pytest.raises(ConfigError, match="split=None"):
        SketchRetriever(reader, served, split=(50, 8)).retrieve("Memphis")
    graph_store.clear()


def community_pairs(index, kg, reader, served):
    """Local and global search on the writer's graph and on the served one, by mode.

    (The test embedder's vectors are random: ``tau_d=-1`` takes any entity the query names.)
    """
    from semrag.retrieval import CommunityRetriever

    return {
        mode: (
            CommunityRetriever(index, kg, strategy=mode, tau_d=-1.0),
            CommunityRetriever(reader, served, strategy=mode, tau_d=-1.0),
        )
        for mode in ("local", "global")
    }


def community_answers(retriever, queries):
    return [[(h.chunk, round(h.score, 5)) for h in retriever.retrieve(q, k=4)] for q in queries]


def test_a_served_graph_sees_the_changes_another_process_writes(graph_store):
    # The serving side keeps entity and report vectors; a change the writer makes (a
    # new document, its entities, new communities) must show in its next answers, as
    # the writer's own graph gives them, within three round trips once it has re-read.

    index, kg, reader, served = with_graph(graph_store)
    pairs = community_pairs(index, kg, reader, served)
    queries = ["Ada Lovelace", "Charles Babbage", *QUERIES[:2]]

    def answers(retriever):
        return community_answers(retriever, queries)

    for here, there in pairs.values():
        assert answers(there) == answers(here)
    stamp = graph_store.change_stamp()
    index.add_documents(
        [
            Document(
                "ada",
                "Ada Lovelace was born in London. Ada Lovelace worked with Charles Babbage. "
                "Charles Babbage designed the Analytical Engine in London.",
            )
        ]
    )
    kg.refresh_communities()
    assert graph_store.change_stamp() != stamp
    for mode, (here, there) in pairs.items():
        want = answers(here)
        assert answers(there) == want, mode
        if mode == "local":  # the new entities are found
            assert any(c.doc_id == "ada" for hits in want for c, _ in hits)
        before = graph_store.reads
        there.retrieve(queries[0], k=4)
        assert graph_store.reads - before <= 3, mode


class _Recording:
    """An embedder that records every text it embeds (and delegates to ``inner``)."""

    def __init__(self, inner):
        self.inner, self.dim, self.texts = inner, inner.dim, []

    def embed(self, texts):
        self.texts.extend(texts)
        return self.inner.embed(texts)


def test_a_served_graph_reads_the_stored_name_and_report_vectors(graph_store):
    # The writer stores every entity's name vector and every report's vector; a serving
    # process asks the database's vector index for the names near the query (local) and
    # reads the reports' vectors (global), and embeds nothing but its queries, before and
    # after a change, with the writer's answers. An entity stored without its vector is
    # embedded by the served graph (and only that one), with the same answers.
    from semrag.graph import KnowledgeGraph
    from semrag.graph.communities import report_text
    from semrag.graph.types import Entity
    from semrag.neo4j import Neo4jIndex

    index, kg, _, _ = with_graph(graph_store)
    names, queries_seen = _Recording(index.embedder), _Recording(index.embedder)
    served = KnowledgeGraph(graph_store, embedder=names)
    reader = Neo4jIndex(graph_store, embedder=queries_seen)
    pairs = community_pairs(index, kg, reader, served)
    queries = ["Ada Lovelace", "Memphis", *QUERIES[:3]]

    def answers(retriever):
        return community_answers(retriever, queries)

    for here, there in pairs.values():
        want = answers(here)
        assert any(want)
        assert answers(there) == want
        before = graph_store.reads
        answers(there)  # what global search reads once per version is read
        assert graph_store.reads - before <= 3 * len(queries)
    index.add_documents([Document("ada", "Ada Lovelace was born in London. She met Babbage.")])
    kg.refresh_communities()
    for mode, (here, there) in pairs.items():
        want = answers(here)
        assert answers(there) == want, mode
    assert any(c.doc_id == "ada" for hits in answers(pairs["local"][0]) for c, _ in hits)
    assert names.texts == []  # no entity name was embedded to serve
    reports = {report_text(c) for c in graph_store.read_communities()}
    assert reports and not reports & set(queries_seen.texts)  # nor any report
    graph_store.upsert([Entity("zz top", "ZZ Top", "ORG")])  # no vector
    assert graph_store.search_entities(index.reader().embed_query("ZZ Top"), 5)[2] == [
        Entity("zz top", "ZZ Top", "ORG")
    ]
    here, there = pairs["local"]
    assert answers(there) == answers(here)  # the new entity mentions no chunk
    assert set(names.texts) == {"ZZ Top"}


def test_the_store_keeps_name_vectors_and_checks_them(graph_store):
    import numpy as np

    from semrag.graph.types import Community, Entity

    graph_store.clear()
    assert graph_store.search_entities(np.ones(4), 3)[0] == []  # no graph: nothing to find
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(5, 4)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ents = [Entity(f"e{i}", f"E{i}", "THING") for i in range(5)]
    graph_store.upsert(ents, entity_vectors=vecs)
    found, got, bare = graph_store.search_entities(vecs[3], 2)
    assert found[0] == ents[3] and len(found) == 2 and bare == []
    assert graph_store.search_entities(vecs[3], 5, keep=1)[0] == [ents[3]]  # the best only
    assert np.array_equal(got[0], vecs[3])  # the float32 vector written, exactly
    graph_store.update(entities=[Entity("e3", "E3", "THING")])  # rewritten without one
    found, got, bare = graph_store.search_entities(vecs[3], 2)
    assert ents[3] not in found and bare == [ents[3]] and len(got) == 2
    assert graph_store.search_entities(vecs[3], 2, most=0) is None  # too many to embed
    graph_store.update(entities=[Entity("e3", "E3", "THING")], entity_vectors=vecs[3:4])
    assert graph_store.search_entities(vecs[3], 1)[:3:2] == ([ents[3]], [])
    with pytest.raises(ConfigError, match="dimension 3"):
        graph_store.search_entities(np.ones(3), 2)
    with pytest.raises(ConfigError, match="one row per entity"):
        graph_store.upsert(ents, entity_vectors=vecs[:2])
    with pytest.raises(ConfigError, match="NaN"):
        graph_store.upsert(ents[:1], entity_vectors=np.full((1, 4), np.nan))
    with pytest.raises(ConfigError, match="has 4"):
        graph_store.upsert(ents[:1], entity_vectors=np.ones((1, 8)))
    graph_store.write_communities(
        [Community("c0", 0, ("e0", "e1"), title="T")], report_vectors=vecs[:1]
    )
    comms, reports = graph_store.read_reports(0)
    assert [c.id for c in comms] == ["c0"] and np.array_equal(reports, vecs[:1])
    with pytest.raises(ConfigError, match="one row per community"):
        graph_store.write_communities(comms, report_vectors=vecs)
    graph_store.write_communities(comms)
    assert graph_store.read_reports(0) == (comms, None)
    graph_store.clear()  # the index goes with the entities: another dimension is welcome
    graph_store.upsert(ents[:1], entity_vectors=np.ones((1, 8)) / np.sqrt(8))
    assert graph_store.search_entities(np.ones(8), 1)[0] == ents[:1]
    graph_store.session.write_rows("CREATE (:Entity {id: 'old', name: 'Old'})")  # an older writer's
    graph_store.ensure_schema()
    assert graph_store.search_entities(np.ones(8), 1)[2] == [Entity("old", "Old")]
    graph_store.clear()


def test_a_bulk_write_of_name_vectors_rebuilds_their_index_and_readers_wait_it_out(
    graph_store, monkeypatch
):
    # A whole graph's vectors go in with the index dropped and built again; a write that
    # fails halfway leaves no index, and readers rank in process (None) until the next
    # write of vectors builds it again.
    import numpy as np

    from semrag.graph.types import Entity
    from semrag.neo4j import _cypher
    from semrag.neo4j import graph_store as graph_store_module

    graph_store.clear()
    monkeypatch.setattr(graph_store_module, "BULK_VECTORS", 3)
    rng = np.random.default_rng(1)
    vecs = rng.normal(size=(6, 4)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ents = [Entity(f"e{i}", f"E{i}", "THING") for i in range(6)]
    graph_store.upsert(ents[:2], entity_vectors=vecs[:2])  # not bulk: the index is made
    graph_store.upsert(ents, entity_vectors=vecs)  # bulk: rebuilt over all six
    for i in range(6):
        assert graph_store.search_entities(vecs[i], 1)[0] == [ents[i]]
    real = graph_store.session.write_batches

    def fails_on_vectors(query, rows):
        if query == _cypher.SET_ENTITY_VECTORS:
            real(query, rows[:1])
            raise StoreUnavailableError("connection lost")
        real(query, rows)

    monkeypatch.setattr(graph_store.session, "write_batches", fails_on_vectors)
    with pytest.raises(StoreUnavailableError, match="connection lost"):
        graph_store.update(entities=ents, entity_vectors=vecs)
    assert graph_store.search_entities(vecs[0], 1) is None  # no index: rank in process
    monkeypatch.setattr(graph_store.session, "write_batches", real)
    graph_store.update(entities=ents[:1], entity_vectors=vecs[:1])  # builds the index again
    found, _, bare = graph_store.search_entities(vecs[2], 1)
    assert found == [] or found[0] != ents[2]  # its vector was not written:
    assert ents[2] in bare  # it is among those the reader embeds
    graph_store.clear()


def test_every_write_of_the_graph_changes_its_stamp(graph_store):
    from semrag.graph.types import ChunkRef, Community, Entity, Mention

    graph_store.clear()
    assert graph_store.change_stamp() is None
    seen = [None]

    def changed():
        stamp = graph_store.change_stamp()
        assert stamp not in seen
        seen.append(stamp)

    ada = Entity("ada lovelace", "Ada Lovelace", "PERSON")
    graph_store.upsert([ada], [], [Mention("ada lovelace", ChunkRef("d", 0, 5))])
    changed()
    graph_store.update(entities=[Entity("london", "London", "PLACE")])
    changed()
    graph_store.write_communities([Community("c0", 0, ("ada lovelace", "london"))])
    changed()
    graph_store.delete_document("d")
    changed()
    graph_store.clear()
    assert graph_store.change_stamp() is None


async def test_sketch_and_community_async_paths_await_every_read_on_the_async_driver(
    graph_store, monkeypatch
):
    # aretrieve answers as retrieve, with each lookup, search, expansion and fetch awaited
    # on the async driver (the sync driver is never used once the served graph has its
    # entity and report vectors).
    from semrag.retrieval import CommunityRetriever, SketchRetriever

    _, _, reader, served = with_graph(graph_store)
    retrievers = {
        "sketch": SketchRetriever(reader, served, split=None),
        "sketch pieces": SketchRetriever(reader, served, split=PIECES),
        "local": CommunityRetriever(reader, served, strategy="local"),
        "global": CommunityRetriever(reader, served, strategy="global"),
    }
    queries = [*QUERIES, "Which river flows by Memphis?", "Where was Marie Curie born?"]

    def answer(hits):
        return [(h.chunk, round(h.score, 5), h.provenance) for h in hits]

    sync = {n: [answer(r.retrieve(q, k=4)) for q in queries] for n, r in retrievers.items()}
    statements = async_reads_only(graph_store, monkeypatch)
    for name, r in retrievers.items():
        got, trips = [], []
        for q in queries:
            before = len(statements)
            got.append(answer(await r.aretrieve(q, k=4)))
            trips.append(len(statements) - before)
        assert got == sync[name], name
        assert any(got), name
        assert all(1 <= n <= 3 for n in trips), (name, trips)  # awaited round trips


def test_both_frameworks_take_the_database_index_as_they_take_an_index(graph_store):
    # Swapped in by one argument: index=reader (and graph=the served graph).
    from langchain_core.documents import Document as LCDocument
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    import langchain_semrag as lcs
    import llama_index_semrag as lis

    index, kg, reader, served = with_graph(graph_store)
    q = "Which river flows by Memphis?"

    def spans(docs):
        return [(d.metadata["doc_id"], d.metadata["start_index"]) for d in docs]

    def node_spans(nodes):
        return [(n.node.metadata["doc_id"], n.node.start_char_idx) for n in nodes]

    for ix, kgx in ((index, kg), (reader, served)):
        lc = {
            "ssg": lcs.SSGRetriever(index=ix, strategy="triangulation_fulldim", k=3),
            "iar": lcs.IntentAwareRetriever(index=ix, k=3, options={"extended": None}),
            "sketch": lcs.SketchRetriever(index=ix, graph=kgx, k=3, options={"split": None}),
            "local": lcs.CommunityRetriever(index=ix, graph=kgx, strategy="local", k=3),
        }
        li = {
            "ssg": lis.SSGRetriever(index=ix, strategy="triangulation_fulldim", k=3),
            "iar": lis.IntentAwareRetriever(index=ix, k=3, extended=None),
            "sketch": lis.SketchRetriever(index=ix, graph=kgx, k=3, split=None),
            "global": lis.CommunityRetriever(index=ix, graph=kgx, strategy="global", k=3),
        }
        got = {f"lc {n}": spans(r.invoke(q)) for n, r in lc.items()}
        got |= {f"li {n}": node_spans(r.retrieve(q)) for n, r in li.items()}
        hits = ix.search("Memphis river", k=2)
        docs = [
            LCDocument(
                h.chunk.text, metadata={"doc_id": h.chunk.doc_id, "start_index": h.chunk.start}
            )
            for h in hits
        ]
        got["lc spc"] = spans(lcs.SPCCompressor(index=ix, k=2).compress_documents(docs, q))
        nodes = [
            NodeWithScore(
                node=TextNode(
                    text=h.chunk.text,
                    metadata={"doc_id": h.chunk.doc_id},
                    start_char_idx=h.chunk.start,
                    end_char_idx=h.chunk.end,
                ),
                score=h.score,
            )
            for h in hits
        ]
        post = lis.SPCPostprocessor(index=ix, k=2)
        got["li spc"] = node_spans(post.postprocess_nodes(nodes, QueryBundle(q)))
        if ix is index:
            want = got
    assert sum(map(bool, want.values())) >= len(want) - 1  # local may find no entity
    # IAR fuses the sparse channel (Lucene there, semrag's BM25 here): compare what is equal
    for name in [n for n in want if "iar" not in n]:
        assert got[name] == want[name], name
    assert set(got["lc iar"]) & set(want["lc iar"])
    graph_store.clear()


def test_a_large_change_goes_in_steps_and_a_failure_halfway_is_repaired(graph_store, monkeypatch):
    from semrag.neo4j import Neo4jIndexStore

    index = SemanticIndex(embedder=embedder(), ssg=SSG)
    writer = Neo4jIndexStore.for_index(index, graph_store, max_transaction_rows=10)
    real, calls = graph_store.session.transact, []

    def counted(work, *, write):
        calls.append(write)
        if write and len(calls) == 6:
            raise StoreUnavailableError("Neo4j is unavailable (test)")
        return real(work, write=write)

    monkeypatch.setattr(graph_store.session, "transact", counted)
    with pytest.raises(StoreUnavailableError, match="Neo4j is unavailable"):
        index.add_documents([Document(f"d{i}", t) for i, t in enumerate(LONG)])
    assert 0 < writer.counts()["documents"] < len(LONG)  # the steps before the failure landed
    monkeypatch.setattr(graph_store.session, "transact", real)
    writer.sync()
    assert writer.dump() == fresh_dump(index, graph_store)
    index.delete("d3")  # the store follows on, in steps again
    assert writer.dump() == fresh_dump(index, graph_store)
    with pytest.raises(ConfigError, match="max_transaction_rows must be >= 1, got 0"):
        Neo4jIndexStore(graph_store, max_transaction_rows=0)


def test_a_fresh_database_leaves_no_server_notices_in_the_log(graph_store, caplog):
    """Counts and reads name relationship types a fresh database does not hold yet; the
    server's notice of each would reach the caller's log as a warning per statement."""
    from semrag.neo4j import Neo4jIndexStore

    with caplog.at_level("INFO", logger="neo4j"):
        counts = Neo4jIndexStore(graph_store).counts()
    assert counts["edges"] == 0 and counts["bridges"] == 0
    assert not [r for r in caplog.records if r.name.startswith("neo4j.notifications")]
