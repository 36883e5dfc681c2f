"""The front door in both frameworks: every parameter, semrag's errors, every query entry point.

* Each adapter retriever takes every parameter of its core retriever, under the same name
  and default, and shows it in its signature (declared once, in the core's).
* Every invalid value is semrag's ``ConfigError`` from either adapter, never a pydantic
  error that wraps it.
* Every query entry point of both adapters refuses an empty or whitespace query and one
  with a lone surrogate with ``ConfigError`` before any encoder runs.
* Hits carry a relevance in [0, 1] that the frameworks' similarity thresholds read.
"""

from __future__ import annotations

import inspect

import pytest
from langchain_core.documents import Document as LCDocument

import langchain_semrag as lcs
import llama_index_semrag as lis
from semrag import Document, SemanticIndex
from semrag.errors import ConfigError
from semrag.retrieval import CommunityRetriever as CoreCommunity
from semrag.retrieval import GraphRetriever as CoreGraph
from semrag.retrieval import IntentAwareRetriever as CoreIAR
from semrag.retrieval import SketchRetriever as CoreSketch
from semrag.retrieval import SSGRetriever as CoreSSG
from semrag.retrieval import parameters
from tests.counting import CountingEmbedder

PAIRS = [
    (CoreGraph, lcs.GraphRetriever, lis.GraphRetriever),
    (CoreIAR, lcs.IntentAwareRetriever, lis.IntentAwareRetriever),
    (CoreSSG, lcs.SSGRetriever, lis.SSGRetriever),
    (CoreSketch, lcs.SketchRetriever, lis.SketchRetriever),
    (CoreCommunity, lcs.CommunityRetriever, lis.CommunityRetriever),
]

TEXT = (
    "Honey bees dance to show where flowers grow. The waggle dance points at the food. "
    "Scouts come back and dance longer for richer flowers.\n\n"
    "Rockets burn fuel to reach orbit. The first stage falls away after two minutes."
)
BAD_QUERIES = ["", "   \n\t", "bees \ud800 dance"]


@pytest.fixture(scope="module")
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture(scope="module")
def index(embedder: CountingEmbedder) -> SemanticIndex:
    index = SemanticIndex(embedder=embedder, ssg=True)
    index.add_documents([Document("bees", TEXT, {"title": "Bees"})])
    return index


@pytest.mark.parametrize(("core", "lc", "li"), PAIRS, ids=[p[0].__name__ for p in PAIRS])
def test_every_core_parameter_is_an_adapter_parameter_with_the_same_default(core, lc, li):
    li_params = inspect.signature(li).parameters
    lc_params = inspect.signature(lc).parameters
    for p in parameters(core):
        default = p.default
        assert p.name in lc.model_fields, f"LangChain {lc.__name__} lacks {p.name}"
        field = lc.model_fields[p.name]
        if default is inspect.Parameter.empty:
            assert field.is_required(), p.name
        else:
            assert field.default == default, p.name
        assert lc_params[p.name].default == (
            inspect.Parameter.empty if default is inspect.Parameter.empty else default
        )
        assert li_params[p.name].default == default, f"LlamaIndex {li.__name__}: {p.name}"
        by_position = p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD  # index, as the core
        assert li_params[p.name].kind is (p.kind if by_position else inspect.Parameter.KEYWORD_ONLY)


def test_the_graph_retriever_declares_the_default_strategys_parameters():
    names = {p.name for p in parameters(CoreGraph)}
    assert {"strategy", "k", "per_passage", "damping", "similarity_weight", "llm"} <= names


@pytest.mark.parametrize("framework", [lcs, lis], ids=["langchain", "llama_index"])
def test_a_documented_parameter_is_taken_by_name_and_reaches_the_core(framework, index):
    r = framework.GraphRetriever(index=index, k=3, per_passage=3, damping=0.7)
    core = r._core.retriever  # the PPRRetriever the front door chose
    assert (core.per_passage, core.damping, core.k) == (3, 0.7, 3)
    # a parameter not given keeps the core's default
    assert framework.GraphRetriever(index=index)._core.retriever.per_passage == (
        CoreGraph(index).retriever.per_passage
    )


@pytest.mark.parametrize("framework", [lcs, lis], ids=["langchain", "llama_index"])
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"k": 0}, "k=0 is not allowed"),
        ({"k": "ten"}, "k='ten' is not allowed"),
        ({"per_passage": 0}, "per_passage=0 is not allowed"),
        ({"per_pasage": 3}, "did you mean 'per_passage'"),
        ({"strategy": "pagerank"}, "strategy='pagerank' is not allowed"),
        (
            {"strategy": "ssg:query_traversal", "damping": 0.5},
            "unexpected keyword argument .damping",
        ),
        ({"damping": 1.5}, "damping=1.5 is not allowed"),
    ],
)
def test_every_invalid_argument_is_a_config_error_from_either_adapter(
    framework, index, kwargs, match
):
    with pytest.raises(ConfigError, match=match):
        framework.GraphRetriever(index=index, **kwargs)


@pytest.mark.parametrize("framework", [lcs, lis], ids=["langchain", "llama_index"])
def test_other_retrievers_refuse_unknown_and_invalid_arguments_with_config_errors(framework, index):
    with pytest.raises(ConfigError, match="did you mean 'm'"):
        framework.IntentAwareRetriever(index=index, mm=3)
    with pytest.raises(ConfigError, match="m=0 is not allowed"):
        framework.IntentAwareRetriever(index=index, m=0)
    with pytest.raises(ConfigError, match="max_sentences=0 is not allowed"):
        framework.SSGRetriever(index=index, max_sentences=0)


def _entry_points(index: SemanticIndex) -> dict[str, object]:
    """Every query entry point of both adapters: name -> a call taking the query."""
    from langchain_classic.retrievers import ContextualCompressionRetriever
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    lc_store = lcs.SemanticVectorStore(index=index)
    li_store = lis.SemanticVectorStore(index=index)
    li_index = VectorStoreIndex.from_vector_store(
        li_store, embed_model=lis.SemragEmbedding(index.embedder)
    )
    _ = StorageContext  # the store is the storage: nothing else is asked of it
    node = NodeWithScore(node=TextNode(text="Bees dance.", start_char_idx=0, end_char_idx=11))
    lc_doc = LCDocument("Honey bees dance", metadata={"doc_id": "bees", "start_index": 0})
    points: dict[str, object] = {}
    for name, r in {
        "GraphRetriever": lcs.GraphRetriever(index=index),
        "IntentAwareRetriever": lcs.IntentAwareRetriever(index=index),
        "SSGRetriever": lcs.SSGRetriever(index=index),
        "RetrieveAndCheckRetriever": lcs.RetrieveAndCheckRetriever(index=index),
        "store.as_retriever": lc_store.as_retriever(),
        "ContextualCompressionRetriever(SPCCompressor)": ContextualCompressionRetriever(
            base_compressor=lcs.SPCCompressor(index=index), base_retriever=lc_store.as_retriever()
        ),
    }.items():
        points[f"langchain {name}.invoke"] = r.invoke
        points[f"langchain {name}.ainvoke"] = r.ainvoke
    points["langchain store.similarity_search"] = lc_store.similarity_search
    points["langchain store.asimilarity_search"] = lc_store.asimilarity_search
    points["langchain store.similarity_search_with_relevance_scores"] = (
        lc_store.similarity_search_with_relevance_scores
    )
    points["langchain store.max_marginal_relevance_search"] = lc_store.max_marginal_relevance_search
    spc = lcs.SPCCompressor(index=index)
    points["langchain SPCCompressor.compress_documents"] = lambda q: spc.compress_documents(
        [lc_doc], q
    )
    points["langchain SPCCompressor.acompress_documents"] = lambda q: spc.acompress_documents(
        [lc_doc], q
    )
    points["langchain SemragEmbeddings.embed_query"] = lcs.SemragEmbeddings(
        index.embedder
    ).embed_query
    for name, r in {
        "GraphRetriever": lis.GraphRetriever(index=index),
        "IntentAwareRetriever": lis.IntentAwareRetriever(index=index),
        "SSGRetriever": lis.SSGRetriever(index=index),
        "RetrieveAndCheckRetriever": lis.RetrieveAndCheckRetriever(index=index),
        "VectorStoreIndex.as_retriever": li_index.as_retriever(),
    }.items():
        points[f"llama_index {name}.retrieve"] = r.retrieve
        points[f"llama_index {name}.aretrieve"] = r.aretrieve
    post = lis.SPCPostprocessor(index=index)
    points["llama_index SPCPostprocessor.postprocess_nodes"] = lambda q: post.postprocess_nodes(
        [node], query_bundle=QueryBundle(q)
    )
    engine = RetrieverQueryEngine.from_args(
        lis.GraphRetriever(index=index), llm=MockLLM(), node_postprocessors=[post]
    )
    points["llama_index RetrieverQueryEngine.query"] = engine.query
    points["llama_index RetrieverQueryEngine.aquery"] = engine.aquery
    points["llama_index SemragEmbedding.get_query_embedding"] = lis.SemragEmbedding(
        index.embedder
    ).get_query_embedding
    from llama_index.core.vector_stores.types import VectorStoreQuery

    points["llama_index store.query"] = lambda q: li_store.query(
        VectorStoreQuery(query_str=q, similarity_top_k=2)
    )
    return points


async def test_every_query_entry_point_refuses_a_bad_query_before_any_encoder_runs(index, embedder):
    points = _entry_points(index)
    assert len(points) >= 30
    for name, call in points.items():
        for query in BAD_QUERIES:
            before = len(embedder.embedded)
            with pytest.raises(ConfigError, match="query"):
                result = call(query)
                if inspect.isawaitable(result):
                    await result
            assert len(embedder.embedded) == before, f"{name} embedded {query!r}"
        good = call("How do bees show where flowers are?")  # and a good query is answered
        if inspect.isawaitable(good):
            await good


def test_graph_hits_carry_a_relevance_a_similarity_cutoff_keeps(index):
    from llama_index.core.postprocessor import SimilarityPostprocessor

    query = "How do bees show where flowers grow?"
    nodes = lis.GraphRetriever(index=index, k=5, per_passage=None).retrieve(query)
    dense = {h.chunk.text: h.score for h in index.search(query, 10)}
    for n in nodes:  # the relevance is the chunk's cosine with the query, as dense search's
        assert 0.0 <= n.score <= 1.0
        assert n.score == pytest.approx(max(dense[n.node.text], 0.0), abs=1e-5)
        assert n.node.metadata["semrag_provenance"][0]["walk_score"] > 0
    cutoff = 0.3
    kept = SimilarityPostprocessor(similarity_cutoff=cutoff).postprocess_nodes(nodes)
    wanted = {t for t, s in dense.items() if s >= cutoff} & {n.node.text for n in nodes}
    assert kept and {n.node.text for n in kept} == wanted
    docs = lcs.GraphRetriever(index=index, k=5, per_passage=None).invoke(query)
    assert [d.metadata["semrag_score"] for d in docs] == pytest.approx([n.score for n in nodes])


def test_the_langchain_store_relevance_is_the_cosine_a_threshold_reads(index):
    store = lcs.SemanticVectorStore(index=index)
    query = "rockets reach orbit"
    scored = store.similarity_search_with_score(query, k=4)
    relevant = store.similarity_search_with_relevance_scores(query, k=4)
    assert [r for _, r in relevant] == pytest.approx([max(s, 0.0) for _, s in scored])
    kept = store.as_retriever(
        search_type="similarity_score_threshold", search_kwargs={"score_threshold": 0.3, "k": 4}
    ).invoke(query)
    assert [d.page_content for d in kept] == [d.page_content for d, s in scored if s >= 0.3]


@pytest.mark.parametrize("framework", [lcs, lis], ids=["langchain", "llama_index"])
def test_the_loop_takes_every_parameter_of_retrieve_and_check(framework, index):
    from semrag.retrieval import RetrieveAndCheck

    own = {p.name for p in parameters(RetrieveAndCheck)} - {"retriever", "spc"}
    r = framework.RetrieveAndCheckRetriever(index=index, max_rounds=2, follow_up_k=1)
    assert (r._core.max_rounds, r._core.follow_up_k) == (2, 1)
    assert own <= set(inspect.signature(framework.RetrieveAndCheckRetriever).parameters)
    with pytest.raises(ConfigError, match="max_rounds=0 is not allowed"):
        framework.RetrieveAndCheckRetriever(index=index, max_rounds=0)
