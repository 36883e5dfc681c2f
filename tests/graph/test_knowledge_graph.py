"""Extraction, resolution, communities and the graph retrievers, in the core and both frameworks."""

from __future__ import annotations

import asyncio
import functools
import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document as LCDocument
from langchain_core.language_models.fake import FakeListLLM
from langchain_tests.integration_tests import RetrieversIntegrationTests
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import QueryBundle

import langchain_semrag
import llama_index_semrag
from semrag import Document, SemanticIndex
from semrag.errors import ConfigError, LLMOutputError
from semrag.graph import (
    Community,
    Entity,
    HeuristicGraphExtractor,
    InMemoryGraphStore,
    KnowledgeGraph,
    LLMGraphExtractor,
    Relation,
    community_reports,
    detect_communities,
    resolve_entities,
)
from semrag.graph.communities import _relations_within
from semrag.graph.extract import Extraction
from semrag.neo4j import Neo4jGraphStore
from semrag.retrieval import CommunityRetriever, GraphRetriever, SketchRetriever
from semrag.testing import FakeEmbedder, FakeLLM
from semrag.types import Chunk

DOCS = [
    Document(
        "sexyback",
        "SexyBack\n\nSexyBack is a song by Justin Timberlake. It was released in 2006 "
        "with Timbaland as producer.",
    ),
    Document(
        "timberlake",
        "Justin Timberlake\n\nJustin Timberlake was born in Memphis on January 31, 1981. "
        "He rose to fame with NSync.",
    ),
    Document(
        "bees",
        "Honey bee\n\nHoney bees dance to tell the hive where flowers grow. "
        "Karl von Frisch studied the dance in Munich.",
    ),
]


@functools.cache
def shared() -> tuple[SemanticIndex, KnowledgeGraph]:
    index = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
    index.add_documents(DOCS)
    return index, KnowledgeGraph.build(index)


def chunk_of(text: str) -> Chunk:
    return Chunk("d", 0, len(text), text, len(text.split()))


# -- extraction --------------------------------------------------------------------------
def test_heuristic_extraction_entities_relations_evidence():
    text = "Ada Lovelace worked with Charles Babbage. The Analytical Engine was his design."
    out = HeuristicGraphExtractor().extract(chunk_of(text))
    names = {e.name for e in out.entities}
    assert {"Ada Lovelace", "Charles Babbage", "Analytical Engine"} <= names
    (rel,) = [
        r for r in out.relations if {r.source, r.target} == {"ada lovelace", "charles babbage"}
    ]
    assert rel.type == "CO_OCCURS" and rel.evidence == "Ada Lovelace worked with Charles Babbage."
    assert not any(
        {r.source, r.target} == {"ada lovelace", "analytical engine"} for r in out.relations
    )
    assert {m.entity_id for m in out.mentions} >= {"ada lovelace", "charles babbage"}


def test_heuristic_titles_and_noun_phrases():
    text = "Attics to Eden\n\nThe album was recorded by the band in a small studio."
    out = HeuristicGraphExtractor(noun_phrases=True).extract(chunk_of(text))
    names = {e.name: e.type for e in out.entities}
    assert names["Attics to Eden"] == "TITLE"
    assert names.get("small studio") == "CONCEPT"


def _extraction_reply():
    return json.dumps(
        {
            "entities": [
                {"name": "Ada Lovelace", "type": "PERSON", "description": "A mathematician."},
                {"name": "Analytical Engine", "type": "MACHINE", "description": "A computer."},
            ],
            "relations": [
                {
                    "source": "Ada Lovelace",
                    "target": "Analytical Engine",
                    "type": "WROTE_FOR",
                    "evidence": "She wrote programs for it.",
                },
                {"source": "Ada Lovelace", "target": "Charles Babbage", "type": "KNEW"},
            ],
        }
    )


def test_llm_extraction_with_fake_llm_and_cache():
    llm = FakeLLM([_extraction_reply()])
    ex = LLMGraphExtractor(llm)
    text = "Ada Lovelace wrote programs for the Analytical Engine of Charles Babbage."
    out = ex.extract(chunk_of(text))
    by_id = {e.id: e for e in out.entities}
    assert by_id["ada lovelace"].type == "PERSON"
    assert "charles babbage" in by_id  # named only by a relation
    assert {(r.source, r.type, r.target) for r in out.relations} >= {
        ("ada lovelace", "WROTE_FOR", "analytical engine")
    }
    assert ex.extract(chunk_of(text)).entities == out.entities  # cached: no second call
    assert len(llm.prompts) == 1


def test_llm_extraction_keeps_only_what_the_text_says():
    text = "Ada Lovelace wrote programs for the Analytical Engine.\nCharles Babbage built it."
    reply = {
        "entities": [
            {"name": "Ada  lovelace", "type": "PERSON"},  # case and spacing differ: kept
            {"name": "Analytical Engine"},
            {"name": "Alan Turing", "type": "PERSON"},  # invented
        ],
        "relations": [
            {"source": "Ada Lovelace", "target": "Analytical Engine", "evidence": "made up"},
            {"source": "Alan Turing", "target": "Ada Lovelace", "type": "ADMIRED"},
            {
                "source": "Charles Babbage",
                "target": "Analytical Engine",
                "type": "BUILT",
                "evidence": "Charles Babbage built it.",
            },
        ],
    }
    out = LLMGraphExtractor(FakeLLM([json.dumps(reply)])).extract(chunk_of(text))
    names = {e.id for e in out.entities}
    assert names == {"ada lovelace", "analytical engine", "charles babbage"}
    evidence = {(r.source, r.target): r.evidence for r in out.relations}
    assert evidence == {
        ("ada lovelace", "analytical engine"): (
            "Ada Lovelace wrote programs for the Analytical Engine."
        ),
        ("charles babbage", "analytical engine"): "Charles Babbage built it.",
    }
    assert all(r.evidence in text for r in out.relations)
    assert any("1 LLM entities not in the text dropped (Alan Turing)" in n for n in out.notes)
    invented = {"entities": [{"name": "Grace Hopper"}], "relations": []}
    fallback = LLMGraphExtractor(FakeLLM([json.dumps(invented)])).extract(chunk_of(text))
    assert "ada lovelace" in {e.id for e in fallback.entities}
    assert any("heuristic used" in n for n in fallback.notes)


def test_llm_extraction_malformed_json_falls_back_or_raises():
    text = "Ada Lovelace met Charles Babbage."
    ex = LLMGraphExtractor(FakeLLM(["no json", '{"entities": 3}']))
    out = ex.extract(chunk_of(text))
    assert {e.name for e in out.entities} == {"Ada Lovelace", "Charles Babbage"}
    assert out.notes and "heuristic used" in out.notes[0]
    with pytest.raises(LLMOutputError, match="LLM reply failed validation after 2"):
        LLMGraphExtractor(FakeLLM(["nope"], cycle=True), on_error="raise").extract(chunk_of(text))


def test_llm_extraction_async_concurrency_limit():
    active, peak = 0, 0

    class Slow:
        def complete(self, prompt):
            return _extraction_reply()

        async def acomplete(self, prompt):
            nonlocal active, peak
            active += 1
            peak = max(peak, active)
            await asyncio.sleep(0.01)
            active -= 1
            return _extraction_reply()

    ex = LLMGraphExtractor(Slow(), max_concurrency=2)
    chunks = [chunk_of(f"Text number {i} about Ada Lovelace.") for i in range(6)]
    outs = asyncio.run(ex.aextract_many(chunks))
    assert len(outs) == 6 and peak == 2


def test_llm_extraction_with_langchain_fake_llm():
    from langchain_semrag import LangChainLLM

    ex = LLMGraphExtractor(LangChainLLM(FakeListLLM(responses=[_extraction_reply()])))
    out = ex.extract(chunk_of("Ada Lovelace and the Analytical Engine."))
    assert "analytical engine" in {e.id for e in out.entities}


def test_entity_resolution_merges_close_names():
    ents = [Entity.of("Justin Timberlake"), Entity.of("J. Timberlake"), Entity.of("Memphis")]
    ext = Extraction(ents, [Relation("j. timberlake", "memphis")], [])
    vecs = np.array([[1, 0, 0], [0.99, 0.14, 0], [0, 0, 1]], np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    out = resolve_entities(ext, vecs, threshold=0.95)
    assert {e.id for e in out.entities} == {"justin timberlake", "memphis"}
    assert out.relations[0].source == "justin timberlake"
    with pytest.raises(ConfigError, match="2 vectors for 3 entities"):
        resolve_entities(ext, vecs[:2])


# -- communities -------------------------------------------------------------------------
@pytest.mark.parametrize("algorithm", ["leiden", "louvain"])
def test_communities_on_known_structure(algorithm):
    # two 4-cliques joined by one weak edge
    a, b = [f"a{i}" for i in range(4)], [f"b{i}" for i in range(4)]
    rels = [
        Relation(x, y, weight=3) for grp in (a, b) for i, x in enumerate(grp) for y in grp[i + 1 :]
    ]
    rels.append(Relation("a0", "b0", weight=0.1))
    comms, used = detect_communities(a + b, rels, algorithm=algorithm, levels=2)
    assert used == algorithm
    level0 = sorted(sorted(c.entity_ids) for c in comms if c.level == 0)
    assert level0 == [sorted(a), sorted(b)]
    assert all(0 < c.rank <= 1 for c in comms)
    ents = [Entity(e, e.upper(), "", f"{e} desc") for e in a + b]
    reports, notes = community_reports([c for c in comms if c.level == 0], ents, rels)
    assert all(r.title and r.summary for r in reports) and not notes
    llm_reports, notes = community_reports(
        [c for c in comms if c.level == 0][:1],
        ents,
        rels,
        llm=FakeLLM(['{"title": "T", "summary": "S."}']),
    )
    assert (llm_reports[0].title, llm_reports[0].summary) == ("T", "S.")
    bad, notes = community_reports(comms[:1], ents, rels, llm=FakeLLM(["x"], cycle=True))
    assert bad[0].summary and notes


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=40),
    st.lists(st.lists(st.integers(0, 9), max_size=6), max_size=6),
)
def test_report_relations_are_those_with_both_ends_inside(pairs, groups):
    # the one grouped pass equals filtering every relation for every community
    rels = [Relation(f"e{a}", f"e{b}", weight=1 + i) for i, (a, b) in enumerate(pairs)]
    comms = [Community(f"c{i}", i % 2, tuple(f"e{m}" for m in g)) for i, g in enumerate(groups)]
    expected = [
        [r for r in rels if r.source in c.entity_ids and r.target in c.entity_ids] for c in comms
    ]
    assert _relations_within(comms, rels) == expected


def test_knowledge_graph_build_and_communities_in_store():
    index, kg = shared()
    ids = {e.id for e in kg.store.entities()}
    assert {"justin timberlake", "sexyback", "memphis"} <= ids
    assert kg.store.read_communities() and kg.timings["extract_s"] >= 0
    assert kg.algorithm in ("leiden", "louvain")


def test_graph_documents_ingestion():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langchain_community.graphs.graph_document import GraphDocument, Node, Relationship
    src = LCDocument("Ada met Charles.", metadata={"doc_id": "d9", "start_index": 5})
    ada, bab = Node(id="Ada", type="Person"), Node(id="Charles", type="Person")
    gd = GraphDocument(
        nodes=[ada, bab],
        relationships=[Relationship(source=ada, target=bab, type="MET")],
        source=src,
    )
    kg = KnowledgeGraph(InMemoryGraphStore(), embedder=FakeEmbedder())
    assert kg.add_graph_documents([gd]) == 1
    assert kg.store.relations()[0].type == "MET"
    assert kg.store.chunks_for(["ada"])["ada"][0].key == "d9:5-21"


# -- retrievers --------------------------------------------------------------------------
def test_sketch_finds_the_second_hop_through_a_bridge():
    index, kg = shared()
    hits = SketchRetriever(index, kg, k=3).retrieve("When was the performer of SexyBack born?")
    docs = [h.chunk.doc_id for h in hits]
    assert "timberlake" in docs and "sexyback" in docs
    prov = next(h for h in hits if h.chunk.doc_id == "timberlake").provenance[0]
    assert prov["side"] in ("structured", "both")
    assert any(e["name"] == "Justin Timberlake" for e in prov["entities"])
    assert "SexyBack" in prov["query_entities"]
    for h in hits:
        assert index.document(h.chunk.doc_id).text[h.chunk.start : h.chunk.end] == h.chunk.text


def test_sketch_leaves_out_entities_mentioned_in_more_than_max_entity_chunks():
    index, kg = shared()
    query = "When was the performer of SexyBack born?"
    counts = {e.id: len(kg.store.chunks_for([e.id])[e.id]) for e in kg.store.entities()}
    assert counts["justin timberlake"] == 2  # the bridge is in both songs' and his chunks
    free = SketchRetriever(index, kg, k=3, max_entity_chunks=None).retrieve(query)
    assert any(e["name"] == "Justin Timberlake" for h in free for e in h.provenance[0]["entities"])
    assert not any("note" in h.provenance[0] for h in free)

    capped = SketchRetriever(index, kg, k=3, max_entity_chunks=1).retrieve(query)
    for h in capped:
        prov = h.provenance[0]
        assert all(counts[e["id"]] <= 1 for e in prov["entities"])  # none over the cap
        assert "Justin Timberlake" in prov["note"] and "over 1 chunks left out" in prov["note"]
    # structured candidates come only from entities within the cap
    sub, _ = kg.store.expand(["sexyback"], depth=1)
    crowded = {e.name for e in sub.entities if counts[e.id] > 1}
    assert crowded and all(name in capped[0].provenance[0]["note"] for name in crowded)
    # and a crowded neighbour is never a bridge (it would take a bridge's query for nothing)
    sub, refs = kg.store.expand(["sexyback"], depth=1)
    sketch = SketchRetriever(index, kg, max_entity_chunks=1)
    assert "justin timberlake" in sketch._bridges(sub, refs)
    del refs["justin timberlake"]
    assert "justin timberlake" not in sketch._bridges(sub, refs)


def test_sketch_token_budget_llm_ner_and_async():
    index, kg = shared()
    budget = SketchRetriever(index, kg, k=10, token_budget=20).retrieve("Justin Timberlake")
    assert sum(h.chunk.token_count for h in budget[1:]) <= 20
    llm = FakeLLM(['{"entities": ["Karl von Frisch"]}'])
    hits = SketchRetriever(index, kg, k=2, llm=llm).retrieve("Who studied the dance?")
    assert hits[0].chunk.doc_id == "bees"
    assert hits[0].provenance[0]["query_entities"] == ["Karl von Frisch"]
    bad = SketchRetriever(index, kg, k=2, llm=FakeLLM(["?"], cycle=True)).retrieve(
        "Karl von Frisch"
    )
    assert "NER: LLM reply invalid" in bad[0].provenance[0]["note"]
    r = SketchRetriever(index, kg, k=3)
    q = "When was the performer of SexyBack born?"
    assert [h.chunk for h in r.retrieve(q)] == [h.chunk for h in asyncio.run(r.aretrieve(q))]


def test_community_local_and_global():
    index, kg = shared()
    local = CommunityRetriever(index, kg, strategy="local", k=2, tau_e=0.0, tau_d=0.0)
    hits = local.retrieve("Justin Timberlake")
    assert hits[0].chunk.doc_id in ("timberlake", "sexyback")
    assert hits[0].provenance[0]["entities"][0]["name"]
    glob = CommunityRetriever(index, kg, strategy="global", k=3)
    ghits = glob.retrieve("honey bees dance")
    assert ghits and ghits[0].provenance[0]["community"].startswith("L")
    for h in ghits:  # points are sentences with exact offsets
        assert index.document(h.chunk.doc_id).text[h.chunk.start : h.chunk.end] == h.chunk.text
    assert [h.chunk for h in ghits] == [
        h.chunk for h in asyncio.run(glob.aretrieve("honey bees dance"))
    ]
    with pytest.raises(ConfigError, match="CommunityRetriever: strategy='nope' is not"):
        CommunityRetriever(index, kg, strategy="nope")
    empty = KnowledgeGraph(InMemoryGraphStore(), index=index)
    with pytest.raises(ConfigError, match="global search needs communities: build the"):
        CommunityRetriever(index, empty, strategy="global").retrieve("x")


def test_graph_retriever_front_door():
    index, kg = shared()
    for strategy in ("sketch", "local", "global", "ssg:query_traversal"):
        r = GraphRetriever(index, kg, strategy=strategy, k=2)
        assert r.retrieve("Justin Timberlake born"), strategy
    with pytest.raises(ConfigError, match="GraphRetriever: strategy='magic' is not"):
        GraphRetriever(index, kg, strategy="magic")
    with pytest.raises(ConfigError, match="strategy 'sketch' needs a KnowledgeGraph"):
        GraphRetriever(index, None, strategy="sketch")


# -- adapters ----------------------------------------------------------------------------
class TestLangChainSketchRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self):
        return langchain_semrag.SketchRetriever

    @property
    def retriever_constructor_params(self):
        index, kg = shared()
        return {"index": index, "graph": kg}

    @property
    def retriever_query_example(self) -> str:
        return "When was Justin Timberlake born?"


class TestLangChainCommunityRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self):
        return langchain_semrag.CommunityRetriever

    @property
    def retriever_constructor_params(self):
        index, kg = shared()
        return {
            "index": index,
            "graph": kg,
            "strategy": "local",
            "options": {"tau_e": -1.0, "tau_d": -1.0},  # every entity and chunk qualifies
        }

    @property
    def retriever_query_example(self) -> str:
        return "Justin Timberlake"


async def test_langchain_graph_adapters_sync_async_and_provenance():
    index, kg = shared()
    r = langchain_semrag.GraphRetriever(index=index, graph=kg, strategy="global", k=2)
    docs = r.invoke("honey bees")
    adocs = await r.ainvoke("honey bees")
    assert [d.page_content for d in docs] == [d.page_content for d in adocs]
    assert docs[0].metadata["semrag_provenance"][0]["mode"] == "global"
    s = langchain_semrag.SketchRetriever(
        index=index, graph=kg, k=2, llm=FakeListLLM(responses=['{"entities": ["SexyBack"]}'])
    )
    (doc, *_) = s.invoke("Who made it?")
    assert doc.metadata["semrag_provenance"][0]["query_entities"] == ["SexyBack"]


async def test_llama_index_graph_adapters():
    index, kg = shared()
    for retriever in (
        llama_index_semrag.SketchRetriever(index=index, graph=kg, k=2),
        llama_index_semrag.CommunityRetriever(index=index, graph=kg, strategy="global", k=2),
        llama_index_semrag.GraphRetriever(
            index=index, graph=kg, strategy="local", k=2, tau_e=0.0, tau_d=0.0
        ),
    ):
        nodes = retriever.retrieve("Justin Timberlake")
        anodes = await retriever.aretrieve(QueryBundle("Justin Timberlake"))
        assert nodes and [n.node.text for n in nodes] == [n.node.text for n in anodes]
        assert nodes[0].node.metadata["semrag_provenance"][0]["channel"] in ("sketch", "community")
    engine = RetrieverQueryEngine.from_args(
        llama_index_semrag.SketchRetriever(index=index, graph=kg, k=2), llm=MockLLM()
    )
    assert engine.query("SexyBack").source_nodes


# -- on a real Neo4j ---------------------------------------------------------------------
@pytest.mark.neo4j
@pytest.mark.integration
@pytest.mark.enable_socket
def test_sketch_and_communities_on_neo4j(neo4j_server):
    index, _ = shared()
    store = Neo4jGraphStore(neo4j_server.uri, neo4j_server.user, neo4j_server.password)
    store.clear()
    try:
        kg = KnowledgeGraph.build(index, store=store)
        assert store.counts()["communities"] > 0
        question = "When was the performer of SexyBack born?"
        before = store.reads
        hits = SketchRetriever(index, kg, k=3).retrieve(question)
        assert store.reads - before == 2  # one lookup, one expansion
        assert "timberlake" in [h.chunk.doc_id for h in hits]
        in_memory = SketchRetriever(index, KnowledgeGraph.build(index), k=3).retrieve(question)
        assert [(h.chunk, h.score) for h in hits] == [(h.chunk, h.score) for h in in_memory]
        ghits = CommunityRetriever(index, kg, strategy="global", k=2).retrieve("honey bees")
        assert ghits
    finally:
        store.clear()
        store.close()


def test_intent_aware_adapters_take_the_graph():
    index, kg = shared()
    lc = langchain_semrag.IntentAwareRetriever(index=index, graph=kg, k=2)
    li = llama_index_semrag.IntentAwareRetriever(index=index, graph=kg, k=2)
    q = "When was the performer of SexyBack born?"
    lc_ids = [d.metadata["doc_id"] for d in lc.invoke(q)]
    li_ids = [n.node.metadata["doc_id"] for n in li.retrieve(q)]
    assert lc_ids == li_ids and set(lc_ids) == {"sexyback", "timberlake"}


def test_retriever_caches_follow_changes_of_the_index_and_the_graph():
    index = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
    index.add_documents(DOCS)
    kg = KnowledgeGraph.build(index)
    sketch = SketchRetriever(index, kg, k=3)
    assert "bees" in {h.chunk.doc_id for h in sketch.retrieve("Honey bees dance")}
    before = index.version
    index.delete("bees")
    index.add_documents([Document("ants", "Leafcutter ants farm fungus in their nests.")])
    assert index.version > before
    found = {h.chunk.doc_id for h in sketch.retrieve("leafcutter ants fungus nests")}
    assert "ants" in found  # a new document's pieces are searched on the next call
    assert "bees" not in {h.chunk.doc_id for h in sketch.retrieve("Honey bees dance")}
    glob = CommunityRetriever(index, kg, strategy="global", k=3)
    first = glob.reports()
    assert glob.reports()[1] is first[1]  # cached while the graph stays
    kg.build_communities(levels=1)
    assert glob.reports()[1] is not first[1]  # refreshed once the graph's communities changed


def test_sketch_pieces_follow_the_index_and_embed_only_changed_documents():
    from semrag import Document, SemanticIndex

    def long_doc(doc_id: str, topic: str) -> Document:
        return Document(doc_id, " ".join(f"{topic} fact number {i} is here." for i in range(40)))

    class Counting(FakeEmbedder):
        embedded: list[str] = []

        def embed(self, texts):
            self.embedded.extend(texts)
            return super().embed(texts)

    def table(r):
        pieces, parents, dense = r.pieces()
        ids = dense.ids.tolist()
        return (
            [(pieces[i].doc_id, pieces[i].start, pieces[i].end) for i in ids],
            [parents[i] for i in ids],
            dense.vectors.tolist(),
        )

    embedder = Counting()
    index = SemanticIndex(embedder=embedder, ssg=True, pieces=(12, 3))
    index.add_documents([long_doc("a", "Bees"), long_doc("b", "Rockets")])
    kg = KnowledgeGraph.build(index, communities=False)
    kept = SketchRetriever(index, kg, split=(12, 3))
    before = table(kept)
    assert len(before[0]) > len(index.chunks())  # the long chunks were split
    assert table(kept)[2] == index.reader().piece_index.dense.vectors.tolist()  # the index's part
    embedder.embedded.clear()
    index.add_documents([long_doc("c", "Honey")])
    index.add_documents([long_doc("a", "Stocks")], on_conflict="replace")  # a new version of "a"
    texts = [t for t in embedder.embedded if "is here" in t]  # not the graph's entity names
    assert texts  # the changes embedded their own documents' text (pieces included)
    assert all("Honey" in t or "Stocks" in t for t in texts)
    embedder.embedded.clear()
    table(kept)
    assert not embedder.embedded  # the query side embeds no piece
    index.delete("b")
    embedder.embedded.clear()
    kept_table = table(kept)
    assert not embedder.embedded  # a delete embeds nothing
    fresh = SketchRetriever(index, kg, split=(12, 3))
    fresh_table = table(fresh)
    assert [len(x) for x in kept_table] == [len(x) for x in fresh_table]
    assert kept_table[0] == fresh_table[0] and kept_table[1] == fresh_table[1]
    np.testing.assert_allclose(kept_table[2], fresh_table[2], rtol=0, atol=0)
    q = "Which fact about honey?"
    assert [(h.chunk.doc_id, h.chunk.start) for h in kept.retrieve(q)] == [
        (h.chunk.doc_id, h.chunk.start) for h in fresh.retrieve(q)
    ]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.sampled_from([-0.5, 0.1, 0.3, 0.3, 0.7, 0.9]), max_size=30),
    st.integers(1, 8),
    st.sampled_from([-1.0, 0.2, 0.5]),
)
def test_local_search_entities_are_the_best_above_the_floor_ties_by_id(values, k, floor):
    from semrag.retrieval.community import best_above

    sims = np.array(values, np.float32)
    ids = [f"e{(7 * i) % 31:02d}" for i in range(len(values))]  # ids not in input order
    by_rank = np.lexsort((np.array(ids, dtype=str), -sims)) if len(values) else []
    expected = [int(i) for i in by_rank[:k] if sims[i] > floor]
    assert best_above(sims, ids.__getitem__, k, floor) == expected


def sentence_runs(retriever, comm, version):
    """The retriever's sentence runs of one community (its read steps, driven here)."""
    import functools

    from semrag._steps import call, drive

    return drive(retriever._sentence_runs([comm], version), functools.partial(call, None))[0]


def test_global_search_reads_each_communitys_most_mentioning_chunks():
    """``max_chunks`` bounds the chunks read per community; ``None`` reads them all."""
    index, kg = shared()
    capped = CommunityRetriever(index, kg, strategy="global", k=50, max_chunks=1)
    every = CommunityRetriever(index, kg, strategy="global", k=50, max_chunks=None)
    query = "Who produced the song by Justin Timberlake?"
    got, full = capped.retrieve(query), every.retrieve(query)
    assert {h.chunk.doc_id for h in got} <= {h.chunk.doc_id for h in full}
    comms, _ = every.reports()
    version = (kg.version, index.version)
    for comm in comms:
        refs = kg.store.chunks_for(list(comm.entity_ids))
        mentions: dict[tuple, int] = {}
        for rs in refs.values():
            for r in {(r.doc_id, r.start, r.end) for r in rs}:
                mentions[r] = mentions.get(r, 0) + 1
        runs = sentence_runs(capped, comm, version)
        assert len(runs) == min(1, len(mentions))
        if mentions:  # the chunk that mentions the most members (ties: document order)
            doc_id, start, end = min(mentions, key=lambda c: (-mentions[c], c))
            assert runs[0][0] == doc_id
            spans = index.reader().sentences(doc_id)
            assert spans[runs[0][1]].start <= start and end <= spans[runs[0][2] - 1].end
        assert len(sentence_runs(every, comm, version)) == len(mentions)


def test_community_ranks_treat_float_noise_as_a_tie_broken_by_index_order():
    from semrag.retrieval.community import _ranked

    # the same text scored by two backends: 2e-8 apart, in either order
    a = {("d3", 2): (0.00023749,), ("d4", 0): (0.00023751,), ("d1", 0): (0.5,)}
    b = {("d3", 2): (0.00023751,), ("d4", 0): (0.00023749,), ("d1", 0): (0.5,)}
    assert [key for key, _ in _ranked(a)] == [key for key, _ in _ranked(b)]
    assert [key for key, _ in _ranked(a)] == [("d1", 0), ("d3", 2), ("d4", 0)]
    assert [key for key, _ in _ranked(a, 2)] == [("d1", 0), ("d3", 2)]
    far = {("d4", 0): (0.3,), ("d3", 2): (0.2,)}  # a real difference still ranks
    assert [key for key, _ in _ranked(far)] == [("d4", 0), ("d3", 2)]
