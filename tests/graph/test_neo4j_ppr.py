"""The default multi-hop retriever served from Neo4j.

A :class:`Neo4jIndexStore` that follows an index with the ``passages`` part writes each
chunk's phrases as mention edges and each spelling's vector; a :class:`Neo4jIndex` reads
them once per stored version and walks the same graph, so ``GraphRetriever(reader)`` (PPR)
and IAR's extended channel rank as they do over the embedded index, sync and async, in both
frameworks. A serving process finds no phrase and embeds no name; a change the writer makes
is read on the next query.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from semrag import Document, SemanticIndex
from semrag.index.reader import MissingCapabilityError
from semrag.retrieval import GraphRetriever, IntentAwareRetriever, PPRRetriever
from tests.counting import CountingEmbedder

pytestmark = [pytest.mark.neo4j, pytest.mark.integration, pytest.mark.enable_socket]

PEOPLE = ["Ada Brook", "Carl Dunn", "Eva Frost", "Gus Hale", "Ida Jones", "Kurt Lane"]
CITIES = ["Memphis", "Warsaw", "Lyon", "Porto", "Kyoto", "Quito"]
RIVERS = ["Mississippi", "Vistula", "Rhone", "Douro", "Kamo", "Machangara"]


def corpus() -> list[Document]:
    """Two-hop chains: a person's page names a city, the city's page names its river."""
    docs = []
    for i, (person, city) in enumerate(zip(PEOPLE, CITIES, strict=True)):
        docs.append(
            Document(
                f"p{i}",
                f"{person}\n{person} was a painter. {person} was born in {city}. "
                f"{person} studied with {PEOPLE[(i + 1) % len(PEOPLE)]} for years.",
                {"title": person},
            )
        )
    for city, river in zip(CITIES, RIVERS, strict=True):
        docs.append(
            Document(
                f"c{city}",
                f"{city}\n{city} is an old city. The {river} River flows through {city}. "
                f"Its bridges cross the {river} at many points.",
                {"title": city},
            )
        )
    return docs


QUESTIONS = [f"Which river flows through the city where {p} was born?" for p in PEOPLE] + [
    "Who studied with Eva Frost?",
    "Kyoto bridges",
    "painter born in Porto",
]


def written(graph_store, **kwargs):
    """An index with the passages part, written to the database; and a reader of it."""
    from semrag.neo4j import Neo4jIndex, Neo4jIndexStore

    emb = CountingEmbedder()
    index = SemanticIndex(embedder=emb, passages=True, **kwargs)
    Neo4jIndexStore.for_index(index, graph_store)
    index.add_documents(corpus())
    return index, Neo4jIndex(graph_store, embedder=emb), emb


def ranking(hits):
    return [(h.chunk.doc_id, h.chunk.start, round(h.score, 6)) for h in hits]


def trails(hits):
    """The provenance of each hit, less the walk's score (compared to float precision)."""
    return [[{k: v for k, v in p.items() if k != "walk_score"} for p in h.provenance] for h in hits]


def test_ppr_from_the_database_ranks_as_the_embedded_walk(graph_store):
    index, reader, emb = written(graph_store)
    here, there = GraphRetriever(index, k=10), GraphRetriever(reader, k=10)
    for q in QUESTIONS:
        want, got = here.retrieve(q), there.retrieve(q)
        assert ranking(got) == ranking(want), q
        assert [h.chunk for h in got] == [h.chunk for h in want]
        assert trails(got) == trails(want)  # the walk's score: the same to float precision
        walks = [h.provenance[0]["walk_score"] for h in got]
        assert walks == pytest.approx([h.provenance[0]["walk_score"] for h in want], rel=1e-6)
    hits = there.retrieve(QUESTIONS[0], k=4)
    assert {"p0", "cMemphis"} <= {h.chunk.doc_id for h in hits}  # both hops
    # the title edges are weighted there as here (the mentions carry the title flag)
    served, own = PPRRetriever(reader).passage_graph(), PPRRetriever(index).passage_graph()
    assert np.array_equal(served.degree, own.degree)
    unweighted = PPRRetriever(index, title_weight=1.0).passage_graph()
    assert not np.array_equal(unweighted.degree, own.degree)


def test_the_walks_dense_seeds_bring_ids_and_scores_only(graph_store, monkeypatch):
    # PPR's dense seeds are a long ranking (dense_seeds passages' worth of chunks, a thousand
    # and more on long documents): the reader answers dense_search with the vector index's
    # ids and scores as lists, one row per query, no chunk text and no vector. The ranking
    # is the embedded one; the scores agree to float32 rounding.
    import numpy as np

    index, reader, emb = written(graph_store)
    replies = []
    real = graph_store.session.read_rows

    def spy(query, **params):
        rows = real(query, **params)
        replies.append(rows)
        return rows

    monkeypatch.setattr(graph_store.session, "read_rows", spy)
    n = len(index.chunks())
    for q in QUESTIONS:
        v = emb.embed([q])[0]
        want_scores, want_ids = index.reader().dense_search(v, n)
        scores, ids = reader.dense_search(v, n)
        assert ids.tolist() == want_ids.tolist(), q
        assert np.allclose(scores, want_scores, atol=1e-6), q
        assert [set(r) for r in replies[-1]] == [{"row", "ids", "scores"}]
    scores, ids = reader.dense_search(emb.embed([QUESTIONS[0]])[0], 3)
    assert ids.size == 3 and scores[0] >= scores[1] >= scores[2]


def test_a_serving_process_reads_the_graph_once_and_builds_nothing(graph_store, monkeypatch):
    from semrag.neo4j import Neo4jIndex
    from semrag.retrieval import ppr

    index, _, _ = written(graph_store)
    emb = CountingEmbedder()
    reader = Neo4jIndex(graph_store, embedder=emb)

    def no_phrases(*args, **kwargs):
        raise AssertionError("the serving process derived phrases")

    monkeypatch.setattr(ppr, "derived", no_phrases)
    retriever = GraphRetriever(reader, k=5)
    for q in QUESTIONS[:3]:
        before = len(emb.embedded)
        retriever.retrieve(q)
        names = emb.embedded[before:]
        assert names[0] == q  # the query and only the query's own entities not in the graph
        assert all(n not in index.parts["passages"].registry.names for n in names[1:])
    part = reader.parts["passages"]
    assert part.reads == 1 and part.version == index.version
    # another retriever of the same process shares the graph read
    IntentAwareRetriever(reader, k=5).retrieve(QUESTIONS[1])
    assert part.reads == 1

    # a change the writer makes is read by the next query, only once, and only its documents
    read = part.documents_read
    index.add_documents(
        [Document("late", "Zed Young\nZed Young was born in Lyon.", {"title": "Zed Young"})]
    )
    hits = retriever.retrieve("Where was Zed Young born?")
    assert part.reads == 2 and part.version == index.version
    assert part.documents_read - read == 1
    assert "late" in {h.chunk.doc_id for h in hits}
    moved = Document("p1", "Carl Dunn\nCarl Dunn was born in Quito.", {"title": "Carl Dunn"})
    index.add_documents([moved], on_conflict="replace")
    index.delete("late")
    for q in QUESTIONS:  # the delta-read graph ranks as the embedded one
        want = GraphRetriever(index, k=5).retrieve(q)
        assert ranking(retriever.retrieve(q)) == ranking(want), q
    assert part.documents_read - read == 2  # the replaced document; a delete reads none


def test_iar_on_the_database_fuses_the_walk_as_its_extended_channel(graph_store):
    index, reader, _ = written(graph_store)
    assert reader.extended == "ppr"
    served = IntentAwareRetriever(reader, k=5)
    assert served.extended is not None
    here = IntentAwareRetriever(index, k=5)
    same = []
    for q in QUESTIONS:
        got = served.retrieve(q)
        assert got and any(h.channel_scores.get("extended", 0) > 0 for h in got)
        want = {h.chunk: h for h in here.retrieve(q)}
        same.append(len(want.keys() & {h.chunk for h in got}) / len(want))
        for h in got:  # the walk's raw score is the embedded walk's
            if h.chunk in want:
                raw, raw_here = h.provenance[0]["raw"], want[h.chunk].provenance[0]["raw"]
                assert raw["extended"] == pytest.approx(raw_here["extended"], rel=1e-6)
    # the sparse channel is Lucene's BM25 there and semrag's here; the rest is equal
    assert sum(same) / len(same) >= 0.8


async def test_iar_searches_each_vector_once_the_walk_ranking_serving_its_dense_channel(
    graph_store, monkeypatch
):
    # The walk ranks the query's vector for its dense seeds; IAR's dense channel then takes
    # that ranking's head by id instead of asking the vector index again (one search fewer
    # a query, on Neo4j the slowest statement), in the statement that also reads the chunks
    # the walk's hits cover. Its answers are those of a second search.
    from semrag.neo4j._read_context import ReadContext

    index, reader, _ = written(graph_store)
    retriever = IntentAwareRetriever(reader, k=5)
    searched = []
    session = graph_store.session
    real, areal = session.read_rows, session.aread_rows

    apart = []  # statements reading the walk's hits' chunks without the channels

    def count(query, params):
        if "db.index.vector.queryNodes('semrag_chunk_embedding'" in query:
            searched[-1] += sum(len(v) for k, v in params.items() if k.endswith("vectors"))
        if "c.start < s[2]" in query and "AS channel" not in query:
            apart.append(query)

    def spy(query, **params):
        count(query, params)
        return real(query, **params)

    async def aspy(query, **params):
        count(query, params)
        return await areal(query, **params)

    monkeypatch.setattr(session, "read_rows", spy)
    monkeypatch.setattr(session, "aread_rows", aspy)

    def answers(hits):
        return [(h.chunk, round(h.score, 6), h.channel_scores) for h in hits]

    reused, reused_async, planned = [], [], []
    for q in QUESTIONS:
        searched.append(0)
        reused.append(answers(retriever.retrieve(q)))
        searched.append(0)
        reused_async.append(answers(await retriever.aretrieve(q)))
        planned += [len(retriever.plan(q).dense_queries)] * 2
    assert searched == planned  # each vector once: the walk's search serves the channel
    assert apart == []  # the walk's hits' chunks come in the channels' statement
    monkeypatch.setattr(ReadContext, "ranked_candidates", lambda self, q, k: None)
    again = []
    for q in QUESTIONS:
        searched.append(0)
        again.append(answers(retriever.retrieve(q)))
    assert searched[len(planned) :] == [n + 1 for n in planned[::2]]  # the channel searches too
    assert reused == again == reused_async


async def test_the_async_walk_awaits_the_driver_and_answers_as_the_sync_one(
    graph_store, monkeypatch
):
    index, reader, _ = written(graph_store)
    retriever = GraphRetriever(reader, k=6)
    want = [ranking(retriever.retrieve(q)) for q in QUESTIONS]  # reads the graph first
    # after the graph is read, a query's reads (version, dense seeds, hits) await the driver
    from semrag.neo4j import _session as session_module

    def no_sync_read(query, **params):
        raise AssertionError("an async path used the sync driver")

    monkeypatch.setattr(graph_store.session, "read_rows", no_sync_read)
    monkeypatch.setattr(session_module.Neo4jSession, "run_steps", no_sync_read)
    got = await asyncio.gather(*(retriever.aretrieve(q) for q in QUESTIONS))
    assert [ranking(g) for g in got] == want


def test_enabling_the_part_after_attaching_writes_it(graph_store):
    from semrag.neo4j import Neo4jIndex, Neo4jIndexStore

    emb = CountingEmbedder()
    index = SemanticIndex(embedder=emb)
    store = Neo4jIndexStore.for_index(index, graph_store, passages=False)
    index.add_documents(corpus())
    reader = Neo4jIndex(graph_store, embedder=emb)
    assert reader.parts == {} and reader.extended is None
    with pytest.raises(MissingCapabilityError, match="HoldsRecords.*passages=True"):
        GraphRetriever(reader)  # said when built, not at the first query
    assert IntentAwareRetriever(reader).extended is None  # no channel, said plainly above

    GraphRetriever(index).retrieve(QUESTIONS[0])  # the writer's retriever derives its own
    assert "passages" not in index.parts and reader.parts == {}  # nothing enabled
    index.enable("passages")  # an explicit call ...
    assert "passages" in reader.parts  # ... and the store wrote it at once
    assert ranking(GraphRetriever(reader).retrieve(QUESTIONS[0])) == ranking(
        GraphRetriever(index).retrieve(QUESTIONS[0])
    )
    fresh = SemanticIndex(embedder=emb, passages=True)
    fresh.add_documents([index.document(d) for d in index.doc_ids])
    got = store.dump()["mentions"]
    store.clear()
    assert got and got == Neo4jIndexStore.for_index(fresh, graph_store).dump()["mentions"]


def test_the_default_store_gives_the_index_its_phrases_so_the_default_retriever_serves(
    graph_store,
):
    # The flow a user writes: a default index, a default store, the default retriever served.
    from semrag.neo4j import Neo4jIndex, Neo4jIndexStore

    emb = CountingEmbedder()
    index = SemanticIndex(embedder=emb)
    index.add_documents(corpus()[:4])
    Neo4jIndexStore.for_index(index, graph_store)  # enables the phrases, writes them
    assert "passages" in index.parts
    index.add_documents(corpus()[4:])
    reader = Neo4jIndex(graph_store, embedder=emb)
    assert reader.extended == "ppr"
    for q in QUESTIONS[:4]:
        assert ranking(GraphRetriever(reader).retrieve(q)) == ranking(
            GraphRetriever(index).retrieve(q)
        )


async def test_both_frameworks_serve_the_walk_from_the_database(graph_store):
    import langchain_semrag as lcs
    import llama_index_semrag as lis

    index, reader, _ = written(graph_store)
    q = QUESTIONS[2]
    spans = {}
    for name, ix in (("here", index), ("there", reader)):
        lc, li = lcs.GraphRetriever(index=ix, k=4), lis.GraphRetriever(index=ix, k=4)
        got = (
            [(d.metadata["doc_id"], d.metadata["start_index"]) for d in lc.invoke(q)],
            [(n.node.metadata["doc_id"], n.node.start_char_idx) for n in li.retrieve(q)],
        )
        got_async = (
            [(d.metadata["doc_id"], d.metadata["start_index"]) for d in await lc.ainvoke(q)],
            [(n.node.metadata["doc_id"], n.node.start_char_idx) for n in await li.aretrieve(q)],
        )
        assert got_async == got
        spans[name] = got
    assert spans["here"] == spans["there"] and spans["here"][0]


def test_a_passage_read_that_races_a_delete_is_read_again_or_a_store_error(
    graph_store, monkeypatch
):
    # A row a concurrent delete removed comes back with nulls (its seq among them); the
    # read is retried when the stored version moved meanwhile, and a StoreError when it did
    # not: never the raw TypeError of int(None).
    from semrag.errors import StoreError
    from semrag.neo4j import Neo4jIndex
    from semrag.neo4j._index_cypher import PASSAGE_ROWS

    index, _, _ = written(graph_store)
    reader = Neo4jIndex(graph_store, embedder=CountingEmbedder())
    part = reader.parts["passages"]
    session = graph_store.session
    real_rows, real_version = session.read_rows, reader.current_version
    damaged = {"left": 1}
    moved = {"by": 0}

    def racing(query, **params):
        rows = real_rows(query, **params)
        if query == PASSAGE_ROWS and damaged["left"] and rows:
            damaged["left"] -= 1
            moved["by"] += 1  # the writer committed while this page was read
            rows = [{**rows[0], "seq": None}, *rows[1:]]
        return rows

    monkeypatch.setattr(session, "read_rows", racing)
    monkeypatch.setattr(reader, "current_version", lambda: real_version() + moved["by"])
    hits = GraphRetriever(reader, k=5).retrieve(QUESTIONS[0])
    assert ranking(hits) == ranking(GraphRetriever(index, k=5).retrieve(QUESTIONS[0]))
    assert part.reads == 1 and damaged["left"] == 0

    damaged["left"] = 1
    stale = Neo4jIndex(graph_store, embedder=CountingEmbedder())
    monkeypatch.setattr(stale, "current_version", real_version)  # nothing moved: damage
    with pytest.raises(StoreError, match="damaged"):
        GraphRetriever(stale, k=5).retrieve(QUESTIONS[0])
