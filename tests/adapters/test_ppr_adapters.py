"""The multi-hop PPR strategy (GraphRetriever's default) in LangChain and LlamaIndex."""

from __future__ import annotations

import functools

from langchain_core.documents import Document as LCDocument
from langchain_core.language_models.fake import FakeListLLM
from llama_index.core.llms import MockLLM
from llama_index.core.schema import QueryBundle

import langchain_semrag
import llama_index_semrag
from semrag import SemanticIndex
from semrag.testing import FakeEmbedder
from tests.unit.test_ppr import DOCS, QUESTION


@functools.cache
def shared_index() -> SemanticIndex:
    index = SemanticIndex(embedder=FakeEmbedder())
    index.add_documents(DOCS)
    return index


async def test_langchain_graph_retriever_defaults_to_ppr_sync_and_async():
    r = langchain_semrag.GraphRetriever(index=shared_index(), k=2)
    docs = r.invoke(QUESTION)
    assert all(isinstance(d, LCDocument) for d in docs)
    assert [d.metadata["doc_id"] for d in docs] == ["film", "quill"]
    trail = docs[1].metadata["semrag_provenance"][0]
    assert trail["strategy"] == "ppr" and trail["hop"] == 1 and trail["via"] == "Marta Quill"
    src, meta = shared_index().document("quill").text, docs[1].metadata
    assert src[meta["start_index"] : meta["end_index"]] == docs[1].page_content
    adocs = await r.ainvoke(QUESTION)
    assert [d.metadata["doc_id"] for d in adocs] == ["film", "quill"]


def test_langchain_ppr_takes_a_langchain_llm_for_query_entities():
    llm = FakeListLLM(responses=['{"entities": ["Lisbon"]}'])
    r = langchain_semrag.GraphRetriever(index=shared_index(), k=1, options={"llm": llm})
    docs = r.invoke("Which city was she born in?")
    assert docs[0].metadata["doc_id"] == "quill"
    assert docs[0].metadata["semrag_provenance"][0]["entity_source"] == "llm"


async def test_llama_index_graph_retriever_defaults_to_ppr_sync_and_async():
    r = llama_index_semrag.GraphRetriever(index=shared_index(), k=2)
    nodes = r.retrieve(QUESTION)
    assert [n.node.metadata["doc_id"] for n in nodes] == ["film", "quill"]
    anodes = await r.aretrieve(QueryBundle(QUESTION))
    assert [n.node.metadata["doc_id"] for n in anodes] == ["film", "quill"]
    walk = [n.node.metadata["semrag_provenance"][0]["walk_score"] for n in nodes]
    assert walk[0] >= walk[1] > 0 and all(0.0 <= n.score <= 1.0 for n in nodes)


def test_llama_index_mock_llm_reply_is_not_json_and_the_rules_take_over():
    r = llama_index_semrag.GraphRetriever(index=shared_index(), k=2, llm=MockLLM(max_tokens=8))
    nodes = r.retrieve(QUESTION)
    trail = nodes[0].node.metadata["semrag_provenance"][0]
    assert "failed" in trail["entity_source"]
    assert [n.node.metadata["doc_id"] for n in nodes] == ["film", "quill"]


def test_both_adapters_rank_as_the_core_one_hit_a_passage_when_asked():
    from semrag.retrieval import GraphRetriever
    from tests.unit.test_ppr import _fine_index

    index = _fine_index()  # documents cut into several chunks each
    for options in ({"per_passage": 1}, {"per_passage": 3, "similarity_weight": 2.0}):
        core = GraphRetriever(index, k=6, **options).retrieve(QUESTION)
        want = [(h.chunk.doc_id, h.chunk.start) for h in core]
        lc = langchain_semrag.GraphRetriever(index=index, k=6, options=options).invoke(QUESTION)
        li = llama_index_semrag.GraphRetriever(index=index, k=6, **options).retrieve(QUESTION)
        assert [(d.metadata["doc_id"], d.metadata["start_index"]) for d in lc] == want
        assert [(n.node.metadata["doc_id"], n.node.start_char_idx) for n in li] == want
        docs = [d for d, _ in want]
        assert (len(set(docs)) == len(docs)) == (options["per_passage"] == 1)


def test_both_adapters_take_follow_titles_and_say_which_hit_a_title_moved():
    lc = {
        follow: langchain_semrag.GraphRetriever(index=shared_index(), k=2, follow_titles=follow)
        for follow in (True, False)
    }
    li = {
        follow: llama_index_semrag.GraphRetriever(index=shared_index(), k=2, follow_titles=follow)
        for follow in (True, False)
    }
    for follow in (True, False):
        docs = lc[follow].invoke(QUESTION)
        nodes = li[follow].retrieve(QUESTION)
        links = {
            d.metadata["semrag_provenance"][0]["link"]
            for d in docs
            if d.metadata["doc_id"] == "quill"
        } | {
            n.node.metadata["semrag_provenance"][0]["link"]
            for n in nodes
            if n.node.metadata["doc_id"] == "quill"
        }
        assert links == ({"title"} if follow else {"entity"})
