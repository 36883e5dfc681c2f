from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semrag import Document, SemanticIndex
from semrag.errors import ConfigError, LLMOutputError
from semrag.index.fusion import fuse_rrf, fuse_weighted, normalise_scores, normalise_weights
from semrag.retrieval import IntentAwareRetriever, classify_intent, plan_query
from semrag.testing import FakeEmbedder, FakeLLM
from semrag.text.phrases import content_words, entities, key_phrases
from semrag.types import ScoredChunk

CORPUS = [
    Document("paris", "Paris is the capital of France. The Eiffel Tower stands in Paris."),
    Document("tides", "Ocean tides are caused by the gravity of the Moon. The Sun adds a little."),
    Document("zq", "The Zorblax 9000 is a rare gadget sold by Quibble Inc in 1999."),
    Document("bees", "Honey bees dance to tell others where flowers are."),
]


@pytest.fixture()
def index():
    idx = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
    idx.add_documents(CORPUS)
    return idx


def test_the_extended_channel_counts_by_its_order_not_its_hits_scores(index):
    # a walk ranks by its own order; its hits' scores are relevances (cosines), which would
    # make the channel a second dense search
    firsts = {}
    for c in index.chunks():
        firsts.setdefault(c.doc_id, c)
    chunks = list(firsts.values())[:3]

    class Ordered:
        def retrieve(self, query, *, k=None):
            return [ScoredChunk(c, s) for c, s in zip(chunks, (0.1, 0.5, 0.9), strict=True)]

        async def aretrieve(self, query, *, k=None):
            return self.retrieve(query, k=k)

    weights = {"dense": 0.0, "sparse": 0.0, "extended": 1.0}
    iar = IntentAwareRetriever(index, extended=Ordered(), weights=weights, k=3, refine="none")
    assert [h.chunk for h in iar.retrieve("anything at all")] == chunks
    assert [h.chunk for h in asyncio.run(iar.aretrieve("anything at all"))] == chunks


# -- phrases -----------------------------------------------------------------------------
def test_entities_keep_offsets_and_skip_sentence_openers():
    text = 'However, Barack Obama met the "Red Cross" in 2009. The meeting ended.'
    found = entities(text)
    assert [p.text for p in found] == ["Barack Obama", "Red Cross", "2009"]
    assert all(text[p.start : p.end] == p.text for p in found)


def test_key_phrases_split_at_stop_words():
    assert [p.text for p in key_phrases("the cause of the ocean tides")] == ["cause", "ocean tides"]
    assert content_words("Who is the Queen?") == ["queen"]


# -- intent rules ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("query", "intent"),
    [
        ("Why do ocean tides happen?", "explanatory"),
        ("How does photosynthesis work?", "explanatory"),
        ("What is the difference between bees and wasps?", "explanatory"),
        ("How many moons does Mars have?", "entity"),
        ("Where is the Eiffel Tower?", "entity"),
        ("who wrote it?", "entity"),
        ("When was the performer of Sexy Back born?", "multi_hop"),
        ("Did Barack Obama meet Angela Merkel?", "entity"),  # one relation, checked
        ("What is the capital of France?", "entity"),  # the relation is the answer
        ("Who is the author of Hamlet?", "entity"),
        ("When was the author of Hamlet born?", "multi_hop"),
        ("What nationality is the director of film Blind Shaft?", "multi_hop"),
        ("Who is the father of the director of film Blind Shaft?", "multi_hop"),
        ("Who is the paternal grandfather of Diarmait Ua Briain?", "multi_hop"),
        ("Who directed the film whose star was born in Paris?", "multi_hop"),
        ("Which river flows through Paris and London?", "multi_hop"),
        ("Which film came out first, Blind Shaft or The Mask Of Fu Manchu?", "multi_hop"),
        ("Are Alex Bregman and Francesca Sterlacci from the same country?", "multi_hop"),
        ("What is the name of the city of Paris in Latin?", "entity"),  # appositive, attribute
        ("Is Crohn's disease hereditary?", "entity"),
        ("Where was John Smith's successor born?", "multi_hop"),
        ("tell me something nice", "general"),
    ],
)
def test_intent_rules(query, intent):
    assert classify_intent(query)[0] == intent


def test_plan_weights_follow_the_intent_and_sum_to_one():
    entity = plan_query("Where does the Eiffel Tower stand?")
    explain = plan_query("Why do ocean tides happen?")
    assert entity.weights["sparse"] > entity.weights["dense"]
    assert explain.weights["dense"] > explain.weights["sparse"]
    for plan in (entity, explain):
        assert sum(plan.weights.values()) == pytest.approx(1.0)
    assert entity.sparse_queries == ("eiffel tower stand", "Eiffel Tower")
    assert entity.dense_queries == ("Where does the Eiffel Tower stand?", "the Eiffel Tower stand")


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.sampled_from(["Paris", "paris", "London", "Marie Curie", "river", "born", "the"]),
        max_size=400,
    ),
    st.integers(1, 10),
)
def test_sparse_subqueries_are_capped_and_unique(words, cap):
    plan = plan_query(" ".join(words) + "?", max_sparse=cap)
    uncapped = plan_query(" ".join(words) + "?", max_sparse=1000)
    assert len(plan.sparse_queries) == min(cap, len(uncapped.sparse_queries))
    assert plan.sparse_queries == uncapped.sparse_queries[:cap]
    keys = [q.lower() for q in uncapped.sparse_queries]
    assert len(keys) == len(set(keys))


def test_a_long_query_costs_at_most_max_keywords_sparse_searches(index):
    query = " and ".join(f"Topic{i} Item{i}" for i in range(300)) + "?"
    (hit, *_) = IntentAwareRetriever(index, max_keywords=5).retrieve(query)
    assert len(hit.provenance[0]["sparse_queries"]) <= 5
    with pytest.raises(ConfigError, match="max_sparse must be >= 1, got 0"):
        plan_query("x", max_sparse=0)


# -- fusion ------------------------------------------------------------------------------
def test_fusion_functions():
    assert normalise_scores([1.0, 3.0]).tolist() == [0.0, 1.0]
    assert normalise_scores([0.0, 4.0, float("nan")], "max").tolist() == [0.0, 1.0, 0.0]
    assert normalise_weights({"a": 1, "b": 3}) == {"a": 0.25, "b": 0.75}
    with pytest.raises(ConfigError, match="weights must not all be zero, got"):
        normalise_weights({"a": 0, "b": 0})
    with pytest.raises(ConfigError, match="weights must be finite and >= 0, got"):
        normalise_weights({"a": float("nan")})
    fused = fuse_weighted({"x": np.array([1.0, 0.0]), "y": np.array([0.0, 1.0])}, {"x": 3, "y": 1})
    assert fused.tolist() == [0.75, 0.25]
    with pytest.raises(ConfigError, match="channel score vectors differ in length:"):
        fuse_weighted({"x": [1.0], "y": [1.0, 2.0]}, {"x": 1, "y": 1})
    assert [d for d, _ in fuse_rrf([["a", "b"], ["c", "b"]])][0] == "b"


# -- the retriever -----------------------------------------------------------------------
def test_retrieve_returns_plan_and_channel_scores(index):
    hits = IntentAwareRetriever(index, k=2).retrieve("Where is the Eiffel Tower?")
    assert hits[0].chunk.doc_id == "paris"
    prov = hits[0].provenance[0]
    assert prov["channel"] == "iar" and prov["intent"] == "entity"
    assert set(prov["weights"]) == {"dense", "sparse", "extended"}
    assert {"dense", "sparse", "extended", "fused"} <= set(hits[0].channel_scores)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_a_rare_entity_is_found_through_the_sparse_channel(index):
    hits = IntentAwareRetriever(index, k=1, extended=None).retrieve("Who sells the Zorblax 9000?")
    assert hits[0].chunk.doc_id == "zq"
    assert hits[0].channel_scores["sparse"] == 1.0


def test_weights_change_the_ranking(index):
    # "moon gravity" matches "tides" in both channels; fixed weights select the channel.
    query = "Paris gravity Moon"
    dense_only = IntentAwareRetriever(
        index, k=4, weights={"dense": 1}, extended=None, refine="none"
    )
    sparse_only = IntentAwareRetriever(
        index, k=4, weights={"sparse": 1}, extended=None, refine="none"
    )
    d = [h.chunk.doc_id for h in dense_only.retrieve(query)]
    s = [h.chunk.doc_id for h in sparse_only.retrieve(query)]
    assert dense_only.retrieve(query)[0].provenance[0]["plan_source"] == "fixed"
    hits = sparse_only.retrieve(query)
    assert [h.channel_scores["sparse"] for h in hits] == sorted(
        (h.channel_scores["sparse"] for h in hits), reverse=True
    )
    assert set(d) == set(s)


def test_no_extended_channel_shares_its_weight_out(index):
    plan = IntentAwareRetriever(index, extended=None).plan("Where is the Eiffel Tower?")
    assert plan.weights["extended"] == 0.0
    assert sum(plan.weights.values()) == pytest.approx(1.0)


def test_extended_channel_maps_hits_onto_chunks(index):
    class Fixed:
        def retrieve(self, query, k=10):
            return index.search("bees flowers", k=1)

        async def aretrieve(self, query, k=10):
            return self.retrieve(query, k)

    hits = IntentAwareRetriever(index, k=4, extended=Fixed(), weights={"extended": 1}).retrieve("x")
    assert hits[0].chunk.doc_id == "bees"
    assert hits[0].channel_scores["extended"] == 1.0


def test_defaults_ppr_channel_and_no_sentence_refinement_for_multi_hop(index):
    from semrag.retrieval import PPRRetriever

    ret = IntentAwareRetriever(index, k=3)
    assert isinstance(ret.extended, PPRRetriever) and ret.refine == "auto"
    entity = ret.retrieve("Where is the Eiffel Tower?")
    multi = ret.retrieve("When was the capital of France founded?")
    assert multi[0].provenance[0]["intent"] == "multi_hop"
    assert all("sentence" in h.channel_scores for h in entity)
    assert not any("sentence" in h.channel_scores for h in multi)
    # without refinement the final order is the fused order
    assert [h.channel_scores["fused"] for h in multi] == [h.score for h in multi]
    assert (
        multi[0].provenance[0]["weights"]["extended"] > multi[0].provenance[0]["weights"]["dense"]
    )
    forced = IntentAwareRetriever(index, k=3, refine="sentence").retrieve(
        "When was the capital of France founded?"
    )
    assert all("sentence" in h.channel_scores for h in forced)


def test_the_walk_reuses_the_dense_channel_search(index, monkeypatch):
    """IAR's dense channel and its PPR walk's dense seeds cost one search of the vectors."""
    ret = IntentAwareRetriever(index, k=3)
    query = "When was the capital of France founded?"
    expected = ret.retrieve(query)
    dense = index.reader().dense
    searched = []
    inner = dense._exact_search
    monkeypatch.setattr(
        dense, "_exact_search", lambda v, q, k: searched.append(len(q)) or inner(v, q, k)
    )
    index.add_documents([Document("rome", "Rome is the capital of Italy.")])  # a new version
    ret.retrieve(query)
    plan = ret.plan(query)
    assert plan.weights["extended"] > 0 and len(plan.dense_queries) == 2
    assert searched == [2]  # one batch: the query and its declarative form, shared by the walk
    index.add_documents([Document("oslo", "Oslo is the capital of Norway.")])
    asyncio.run(ret.aretrieve(query))  # the async twin shares the search too
    assert searched == [2, 2]
    index.delete("rome")
    index.delete("oslo")
    assert [h.chunk for h in ret.retrieve(query)] == [h.chunk for h in expected]


def test_empty_index_and_bad_arguments():
    idx = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
    assert IntentAwareRetriever(idx).retrieve("anything") == []
    with pytest.raises(ConfigError, match="IntentAwareRetriever: k=0 is not allowed;"):
        IntentAwareRetriever(idx, k=0)
    with pytest.raises(ConfigError, match="IntentAwareRetriever: refine='llm' is not"):
        IntentAwareRetriever(idx, refine="llm")
    with pytest.raises(ConfigError, match="extended must be 'auto', 'ppr', 'ssg',"):
        IntentAwareRetriever(idx, extended=object())
    with pytest.raises(ConfigError, match="unknown intent 'nonsense'; intents are"):
        IntentAwareRetriever(idx, intent_weights={"nonsense": (1, 1, 1)})
    with pytest.raises(TypeError, match="IntentAwareRetriever: query must be a str,"):
        IntentAwareRetriever(idx).retrieve(None)


def test_async_equals_sync(index):
    ret = IntentAwareRetriever(index, k=3)
    for q in ("Where is the Eiffel Tower?", "Why are there tides?"):
        sync = ret.retrieve(q)
        async_ = asyncio.run(ret.aretrieve(q))
        assert [(h.chunk.doc_id, h.chunk.start, round(h.score, 6)) for h in sync] == [
            (h.chunk.doc_id, h.chunk.start, round(h.score, 6)) for h in async_
        ]


# -- the LLM path ------------------------------------------------------------------------
def _plan_reply(weights=None, keywords=("Zorblax",)):
    return json.dumps(
        {
            "intent": "entity",
            "paraphrases": ["which company sells the Zorblax gadget"],
            "keywords": list(keywords),
            "weights": weights or {"dense": 0.2, "sparse": 0.7, "extended": 0.1},
        }
    )


def test_llm_plan_sets_subqueries_and_weights(index):
    llm = FakeLLM([_plan_reply()])
    ret = IntentAwareRetriever(index, k=1, llm=llm)
    plan = ret.plan("Who sells it?")
    assert plan.source == "llm"
    assert plan.dense_queries == ("Who sells it?", "which company sells the Zorblax gadget")
    assert plan.sparse_queries == ("Zorblax",)
    assert plan.weights["sparse"] == pytest.approx(0.7)
    hit = IntentAwareRetriever(index, k=1, llm=FakeLLM([_plan_reply()])).retrieve("Who sells it?")
    assert hit[0].chunk.doc_id == "zq"
    assert "QUERY: Who sells it?" in llm.prompts[0]


def test_malformed_llm_plan_falls_back_to_rules_and_says_so(index):
    llm = FakeLLM(["not json at all", '{"paraphrases": "wrong type"}'])
    plan = IntentAwareRetriever(index, llm=llm).plan("Where is the Eiffel Tower?")
    assert plan.source == "rules" and plan.intent == "entity"
    assert "LLM reply invalid" in plan.note
    assert len(llm.prompts) == 2  # one retry
    with pytest.raises(LLMOutputError, match="LLM reply failed validation after 2"):
        IntentAwareRetriever(index, llm=FakeLLM(["nope"], cycle=True), on_llm_error="raise").plan(
            "Where?"
        )


def test_llm_path_async_equals_sync(index):
    q = "Who sells it?"
    sync = IntentAwareRetriever(index, k=2, llm=FakeLLM([_plan_reply()])).retrieve(q)
    async_ = asyncio.run(
        IntentAwareRetriever(index, k=2, llm=FakeLLM([_plan_reply()])).aretrieve(q)
    )
    assert [h.chunk.doc_id for h in sync] == [h.chunk.doc_id for h in async_]
    assert sync[0].provenance[0]["plan_source"] == "llm"


def test_knowledge_graph_becomes_the_extended_channel():
    from semrag.graph import KnowledgeGraph
    from semrag.retrieval import SketchRetriever

    idx = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
    idx.add_documents(
        [
            Document("song", "SexyBack is a song by Justin Timberlake."),
            Document("bio", "Justin Timberlake was born in Memphis."),
            Document("bees", "Honey bees dance to share where flowers are."),
        ]
    )
    kg = KnowledgeGraph.build(idx, communities=False)
    ret = IntentAwareRetriever(idx, k=3, graph=kg)
    assert isinstance(ret.extended, SketchRetriever)
    hits = ret.retrieve("When was the performer of SexyBack born?")
    assert {"song", "bio"} <= {h.chunk.doc_id for h in hits[:2]}
    assert any(h.channel_scores["extended"] > 0 for h in hits)
    with pytest.raises(ConfigError, match="extended='sketch' needs graph="):
        IntentAwareRetriever(idx, extended="sketch")
    assert IntentAwareRetriever(idx, graph=kg, extended="ssg").extended.__class__.__name__ == (
        "SSGRetriever"
    )
    bare = SemanticIndex(embedder=FakeEmbedder())  # the default: no similarity graph
    bare.add_documents([Document("bees", "Honey bees dance.")])
    with pytest.raises(ConfigError, match=r"index\.enable\('ssg'\)"):
        IntentAwareRetriever(bare, extended="ssg")  # asked for, not silently dropped
