from __future__ import annotations

import functools

import pytest
from langchain_core.documents import Document as LCDocument
from langchain_tests.integration_tests import RetrieversIntegrationTests
from llama_index.core.base.base_retriever import BaseRetriever as LIBaseRetriever
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import QueryBundle

import langchain_semrag
import llama_index_semrag
from semrag import Document, SemanticChunker, SemanticIndex
from semrag.index import SSGConfig
from semrag.testing import FakeEmbedder

TEXTS = [
    "The cat sat on the mat. The cat chased a mouse. The cat slept in the sun. A cat purrs.",
    "The dog barked at the mailman. The dog chased a ball. The dog slept by the fire.",
    "Stock prices fell sharply. Investors sold their shares. The market closed lower.",
    "Rockets launch from Florida. The rocket reached orbit. Astronauts docked at the station.",
]


@functools.cache
def shared_index() -> SemanticIndex:
    emb = FakeEmbedder()
    index = SemanticIndex(
        embedder=emb, chunker=SemanticChunker(emb), ssg=SSGConfig(min_intra=0.0, min_inter=0.0)
    )
    index.add_documents([Document(f"doc{i}", t, {"n": i}) for i, t in enumerate(TEXTS)])
    return index


class TestLangChainSSGRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self):
        return langchain_semrag.SSGRetriever

    @property
    def retriever_constructor_params(self):
        return {
            "index": shared_index(),
            "strategy": "query_traversal",
            "options": {"max_sentences": 40, "early_stop": False},
        }

    @property
    def retriever_query_example(self) -> str:
        return "the cat chased the dog"


def test_langchain_documents_carry_offsets_and_provenance():
    r = langchain_semrag.SSGRetriever(index=shared_index(), strategy="triangulation_fulldim", k=3)
    docs = r.invoke("rocket orbit")
    assert docs and all(isinstance(d, LCDocument) for d in docs)
    for d in docs:
        text = shared_index().document(d.metadata["doc_id"]).text
        assert text[d.metadata["start_index"] : d.metadata["end_index"]] == d.page_content
        assert d.metadata["semrag_provenance"][0]["algorithm"] == "triangulation_fulldim"
        assert set(d.metadata["semrag_channels"]) == {"dense", "step"}
        assert "n" in d.metadata


def test_langchain_rejects_unknown_fields_and_options():
    with pytest.raises(Exception, match="SSGRetriever"):  # noqa: B017 - pydantic's ValidationError
        langchain_semrag.SSGRetriever(index=shared_index(), kk=3)
    with pytest.raises(TypeError, match="SSGRetriever"):
        langchain_semrag.SSGRetriever(index=shared_index(), options={"max_sentnces": 3})


async def test_llama_index_retriever_sync_async_and_query_engine():
    r = llama_index_semrag.SSGRetriever(index=shared_index(), strategy="query_traversal", k=2)
    assert isinstance(r, LIBaseRetriever)
    nodes = r.retrieve("dog ball")
    anodes = await r.aretrieve(QueryBundle("dog ball"))
    assert [n.node.text for n in nodes] == [n.node.text for n in anodes]
    for n in nodes:
        text = shared_index().document(n.node.metadata["doc_id"]).text
        assert text[n.node.start_char_idx : n.node.end_char_idx] == n.node.text
        assert n.score == pytest.approx(n.node.metadata["semrag_score"])
    engine = RetrieverQueryEngine.from_args(r, llm=MockLLM())
    response = engine.query("dog ball")
    assert response.source_nodes and response.source_nodes[0].node.text == nodes[0].node.text


async def test_llama_index_k_per_call_sync_async_and_concurrent():
    import asyncio

    r = llama_index_semrag.IntentAwareRetriever(index=shared_index(), k=3)
    assert len(r.retrieve("the cat chased the dog")) == 3
    assert len(r.retrieve("the cat chased the dog", k=1)) == 1
    assert len(r.retrieve("the cat chased the dog")) == 3  # the call's k did not stick
    one, four = await asyncio.gather(
        r.aretrieve("the cat chased the dog", k=1), r.aretrieve("the cat chased the dog", k=4)
    )
    assert (len(one), len(four)) == (1, 4)
    assert one[0].node.text == four[0].node.text
    with pytest.raises(Exception, match="k"):
        r.retrieve("the cat", k=0)


def test_retrievers_of_both_frameworks_see_changes_on_the_next_call():
    """Built once, every adapter retriever answers from the index (and graph) as it is now."""
    from semrag.graph import KnowledgeGraph

    emb = FakeEmbedder()
    index = SemanticIndex(embedder=emb, ssg=SSGConfig(min_intra=0.0, min_inter=0.0))
    index.add_documents([Document(f"doc{i}", t) for i, t in enumerate(TEXTS)])
    kg = KnowledgeGraph.build(index, communities=False)  # follows the index
    made = {
        "lc ssg": langchain_semrag.SSGRetriever(index=index, strategy="basic_retrieval", k=3),
        "lc iar": langchain_semrag.IntentAwareRetriever(index=index, k=3),
        "lc ppr": langchain_semrag.GraphRetriever(index=index, k=3),
        "lc sketch": langchain_semrag.SketchRetriever(index=index, graph=kg, k=3),
        "li ssg": llama_index_semrag.SSGRetriever(index=index, strategy="basic_retrieval", k=3),
        "li iar": llama_index_semrag.IntentAwareRetriever(index=index, k=3),
        "li ppr": llama_index_semrag.GraphRetriever(index=index, k=3),
        "li sketch": llama_index_semrag.SketchRetriever(index=index, graph=kg, k=3),
    }
    query = "Zeppelin airships over Lakehurst"

    def doc_ids(name: str, retriever) -> list[str]:
        if name.startswith("lc"):
            return [d.metadata["doc_id"] for d in retriever.invoke(query)]
        return [n.node.ref_doc_id for n in retriever.retrieve(query)]

    before = {name: doc_ids(name, r) for name, r in made.items()}
    assert all("zeppelin" not in ids for ids in before.values())
    index.add_documents(
        [Document("zeppelin", "Zeppelin airships flew over Lakehurst. Zeppelin airships burned.")]
    )
    for name, r in made.items():
        assert doc_ids(name, r)[0] == "zeppelin", name
    index.delete("zeppelin")
    for name, r in made.items():
        assert "zeppelin" not in doc_ids(name, r), name


def test_both_frameworks_answer_alike_from_a_float16_graph():
    """``SSGConfig(vector_dtype="float16")`` is an index option: the adapters need nothing
    new, and on these texts they give the answers of the float32 graph."""
    answers = {}
    for dtype in ("float32", "float16"):
        emb = FakeEmbedder()
        cfg = SSGConfig(min_intra=0.0, min_inter=0.0, knn="hnsw", vector_dtype=dtype)
        index = SemanticIndex(embedder=emb, ssg=cfg)
        index.add_documents([Document(f"doc{i}", t) for i, t in enumerate(TEXTS)])
        assert index.reader().ssg_view().graph.node_vectors.dtype == dtype
        lc = langchain_semrag.SSGRetriever(index=index, strategy="query_traversal", k=3)
        li = llama_index_semrag.SSGRetriever(index=index, strategy="query_traversal", k=3)
        lc_iar = langchain_semrag.IntentAwareRetriever(index=index, k=3)
        answers[dtype] = (
            [(d.metadata["doc_id"], d.metadata["start_index"]) for d in lc.invoke("the cat slept")],
            [(n.node.ref_doc_id, n.node.start_char_idx) for n in li.retrieve("the cat slept")],
            [d.metadata["doc_id"] for d in lc_iar.invoke("why did the market close lower")],
        )
        assert answers[dtype][0] == answers[dtype][1]
    assert answers["float16"] == answers["float32"]


def test_both_frameworks_name_the_capability_a_reader_lacks_when_built():
    # a third party's reader with the contract only: no records, no kept passage phrases
    import langchain_semrag as lcs
    import llama_index_semrag as lis
    from semrag.index.reader import MissingCapabilityError
    from tests.unit.test_reader_capabilities import QUERIES, _index, _narrow

    reader = _narrow(_index())
    with pytest.raises(MissingCapabilityError, match="HoldsRecords.*passages=True"):
        lcs.GraphRetriever(index=reader)  # semrag's error, never one pydantic wraps
    with pytest.raises(MissingCapabilityError, match="HoldsRecords.*passages=True"):
        lis.GraphRetriever(index=reader)
    # what the reader offers serves: IAR with no graph channel, in both frameworks
    docs = lcs.IntentAwareRetriever(index=reader).invoke(QUERIES[0])
    nodes = lis.IntentAwareRetriever(index=reader).retrieve(QUERIES[0])
    assert [d.page_content for d in docs] == [n.node.get_content() for n in nodes] != []
