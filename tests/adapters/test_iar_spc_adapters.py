from __future__ import annotations

import functools
import json

import pytest
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.documents import Document as LCDocument
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.retrievers import BaseRetriever as LCBaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests
from llama_index.core import Document as LIDocument
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle

import langchain_semrag
import llama_index_semrag
from semrag import Document, SemanticIndex
from semrag.identity import content_id
from semrag.testing import FakeEmbedder

TEXT = (
    "Prime Minister John Smith faced an inquiry into party funding. "
    "He then announced his resignation shortly after the investigation concluded. "
    "The election was held in June. Turnout reached a record high of 71 percent."
)
OTHER = "Honey bees dance to tell the hive where flowers grow. The queen lays the eggs."


@functools.cache
def shared_index() -> SemanticIndex:
    index = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
    index.add_documents([Document("pm", TEXT, {"kind": "news"}), Document("bees", OTHER)])
    return index


def damaged_lc_doc(**meta) -> LCDocument:
    fragment = "He then announced his resignation shortly after the investigation concluded."
    return LCDocument(fragment, metadata={"start_index": TEXT.index(fragment), **meta})


def plan_reply() -> str:
    return json.dumps(
        {
            "intent": "entity",
            "paraphrases": ["John Smith resignation"],
            "keywords": ["resignation"],
            "weights": {"dense": 0.2, "sparse": 0.8, "extended": 0.0},
        }
    )


# -- LangChain ----------------------------------------------------------------------------------
class TestLangChainIntentAwareRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self):
        return langchain_semrag.IntentAwareRetriever

    @property
    def retriever_constructor_params(self):
        return {"index": shared_index()}

    @property
    def retriever_query_example(self) -> str:
        return "Why did John Smith resign?"


def test_langchain_iar_metadata_and_llm_path():
    docs = langchain_semrag.IntentAwareRetriever(index=shared_index(), k=2).invoke(
        "Where do honey bees dance?"
    )
    assert docs[0].metadata["doc_id"] == "bees"
    plan = docs[0].metadata["semrag_provenance"][0]
    assert plan["intent"] in ("entity", "general", "multi_hop", "explanatory")
    assert {"dense", "sparse", "extended"} <= set(docs[0].metadata["semrag_channels"])
    src = shared_index().document(docs[0].metadata["doc_id"]).text
    assert (
        src[docs[0].metadata["start_index"] : docs[0].metadata["end_index"]] == docs[0].page_content
    )

    llm = FakeListLLM(responses=[plan_reply()])
    docs = langchain_semrag.IntentAwareRetriever(index=shared_index(), k=1, llm=llm).invoke(
        "Who quit?"
    )
    assert docs[0].metadata["doc_id"] == "pm"
    assert docs[0].metadata["semrag_provenance"][0]["plan_source"] == "llm"
    assert docs[0].metadata["semrag_provenance"][0]["weights"]["sparse"] == pytest.approx(0.8)


def test_langchain_iar_llm_malformed_json_falls_back():
    llm = FakeListLLM(responses=["certainly! here you go", "{broken"])
    docs = langchain_semrag.IntentAwareRetriever(index=shared_index(), k=1, llm=llm).invoke(
        "Where do honey bees dance?"
    )
    plan = docs[0].metadata["semrag_provenance"][0]
    assert plan["plan_source"] == "rules" and "LLM reply invalid" in plan["note"]


def test_langchain_spc_compressor_in_contextual_compression_retriever():
    class Fixed(LCBaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager):
            return [damaged_lc_doc(doc_id="pm")]

    retriever = ContextualCompressionRetriever(
        base_compressor=langchain_semrag.SPCCompressor(
            index=shared_index(), options={"audit": True}
        ),
        base_retriever=Fixed(),
    )
    doc, antecedent, *_ = retriever.invoke("Why did John Smith resign?")  # the anytime order
    assert doc.page_content.startswith("He then")  # the hit first, whole
    assert antecedent.page_content.startswith("Prime Minister John Smith")  # what it asks for
    for d in (doc, antecedent):
        assert TEXT[d.metadata["start_index"] : d.metadata["end_index"]] == d.page_content
    assert doc.metadata["semrag_spc"]["action"] == "repaired"
    assert antecedent.metadata["semrag_spc"]["action"] == "context"
    assert antecedent.metadata["semrag_spc"]["before"] == doc.metadata["semrag_spc"]["before"]
    assert "missing" in doc.metadata["semrag_coverage"]


async def test_langchain_spc_compressor_sources_async_and_unavailable():
    compressor = langchain_semrag.SPCCompressor(
        sources={"news.txt": TEXT}, embeddings=FakeEmbedder()
    )
    docs = [damaged_lc_doc(source="news.txt"), damaged_lc_doc(source="elsewhere.txt")]
    out = await compressor.acompress_documents(docs, "Why did John Smith resign?")
    actions = [(d.metadata["source"], d.metadata["semrag_spc"]["action"]) for d in out]
    hits = [a for a in actions if a[1] != "context"]  # the context of a hit is its source's
    assert hits == [("news.txt", "repaired"), ("elsewhere.txt", "source_unavailable")]
    assert {source for source, a in actions if a == "context"} == {"news.txt"}
    kept = next(d for d in out if d.metadata["source"] == "elsewhere.txt")
    assert kept.page_content == docs[1].page_content  # no invented neighbours
    sync = compressor.compress_documents(docs, "Why did John Smith resign?")
    assert [d.page_content for d in sync] == [d.page_content for d in out]


def test_langchain_spc_compressor_with_fake_llm():
    replies = [
        json.dumps({"score": 0.1, "problems": ["He"]}),
        json.dumps({"text": "John Smith resigned after the inquiry."}),
        json.dumps({"elements": ["John Smith"]}),
        json.dumps({"scores": [0.9]}),
    ]
    compressor = langchain_semrag.SPCCompressor(
        index=shared_index(), llm=FakeListLLM(responses=replies), options={"audit": True}
    )
    (doc,) = compressor.compress_documents([damaged_lc_doc(doc_id="pm")], "Why did he resign?")
    assert doc.page_content == "John Smith resigned after the inquiry."
    assert doc.metadata["semrag_spc"]["method"] == "llm"
    assert doc.metadata["semrag_coverage"]["missing"] == []


def test_langchain_retrieve_and_check_retriever():
    r = langchain_semrag.RetrieveAndCheckRetriever(index=shared_index(), k=1, max_rounds=2)
    docs = r.invoke("When did John Smith resign, and what do honey bees do?")
    assert docs and {d.metadata["doc_id"] for d in docs} <= {"pm", "bees"}
    assert any(p.get("step") == "spc" for p in docs[0].metadata["semrag_provenance"])


# -- LlamaIndex ---------------------------------------------------------------------------------
async def test_llama_index_iar_sync_async_and_query_engine():
    r = llama_index_semrag.IntentAwareRetriever(index=shared_index(), k=2)
    nodes = r.retrieve("Where do honey bees dance?")
    anodes = await r.aretrieve(QueryBundle("Where do honey bees dance?"))
    assert [n.node.text for n in nodes] == [n.node.text for n in anodes]
    assert nodes[0].node.metadata["doc_id"] == "bees"
    assert nodes[0].node.metadata["semrag_provenance"][0]["channel"] == "iar"
    engine = RetrieverQueryEngine.from_args(r, llm=MockLLM())
    assert engine.query("honey bees").source_nodes


def test_llama_index_iar_with_mock_llm_falls_back_on_its_non_json_reply():
    # MockLLM echoes the prompt: not the JSON asked for, so the rules are used and noted.
    r = llama_index_semrag.IntentAwareRetriever(index=shared_index(), k=1, llm=MockLLM())
    (node,) = r.retrieve("Where do honey bees dance?")
    assert node.node.metadata["semrag_provenance"][0]["plan_source"] == "rules"
    assert "note" in node.node.metadata["semrag_provenance"][0]


async def test_llama_index_spc_postprocessor_on_foreign_nodes():
    doc = LIDocument(text=TEXT, id_="news")
    nodes = SentenceSplitter(chunk_size=20, chunk_overlap=0).get_nodes_from_documents([doc])
    damaged = next(n for n in nodes if n.get_content().startswith("He then"))
    post = llama_index_semrag.SPCPostprocessor(sources={"news": TEXT}, embed_model=FakeEmbedder())
    out = post.postprocess_nodes(
        [NodeWithScore(node=damaged, score=0.5)], query_str="Why did John Smith resign?"
    )
    assert [n.node.metadata["semrag_spc"]["action"] for n in out][:2] == ["repaired", "context"]
    for n in out:
        assert TEXT[n.node.start_char_idx : n.node.end_char_idx] == n.node.get_content()
    assert "John Smith" in out[1].node.get_content()  # the antecedent the hit asks for
    aout = await post.apostprocess_nodes(
        [NodeWithScore(node=damaged, score=0.5)], query_str="Why did John Smith resign?"
    )
    assert [n.node.get_content() for n in aout] == [n.node.get_content() for n in out]
    with pytest.raises(ValueError, match="SPCPostprocessor needs the query"):
        post.postprocess_nodes([NodeWithScore(node=damaged, score=0.5)])


def test_llama_index_spc_postprocessor_in_a_query_engine():
    r = llama_index_semrag.IntentAwareRetriever(index=shared_index(), k=2)
    engine = RetrieverQueryEngine.from_args(
        r,
        llm=MockLLM(),
        node_postprocessors=[llama_index_semrag.SPCPostprocessor(index=shared_index(), k=1)],
    )
    response = engine.query("Why did John Smith resign?")
    (node,) = response.source_nodes
    assert "semrag_spc" in node.node.metadata
    assert node.node.metadata["semrag_coverage"]["llm_calls"] == 0


def test_llama_index_retrieve_and_check_retriever():
    r = llama_index_semrag.RetrieveAndCheckRetriever(index=shared_index(), k=1, max_rounds=2)
    nodes = r.retrieve("When did John Smith resign, and what do honey bees do?")
    assert nodes and nodes[0].node.metadata["doc_id"] in ("pm", "bees")


# -- nothing dropped silently through the adapters -------------------------------------------
def test_langchain_spc_keeps_chunks_split_without_start_index():
    from langchain_text_splitters import CharacterTextSplitter

    splitter = CharacterTextSplitter(separator=". ", chunk_size=60, chunk_overlap=0)
    docs = splitter.create_documents([TEXT], metadatas=[{"source": "pm"}])
    assert len(docs) == 4 and all("start_index" not in d.metadata for d in docs)
    compressor = langchain_semrag.SPCCompressor(
        embeddings=FakeEmbedder(), k=10, options={"audit": False}
    )
    assert len(compressor.compress_documents(docs, "Why did John Smith resign?")) == 4
    two = [
        LCDocument("Bees dance.", metadata={"start_index": 0}),
        LCDocument("Stocks fell.", metadata={"start_index": 0}),
    ]
    assert len(compressor.compress_documents(two, "bees?")) == 2


def test_langchain_spc_llm_compressed_documents_have_no_offsets():
    def script(prompt: str) -> str:
        if "semantically complete" in prompt:
            return json.dumps({"score": 0.1, "problems": []})
        if "Rewrite the text" in prompt:
            return json.dumps({"text": "John Smith resigned after the inquiry."})
        return json.dumps({"elements": [], "scores": [], "follow_up": []})

    from semrag.testing import FakeLLM

    compressor = langchain_semrag.SPCCompressor(
        index=shared_index(), llm=FakeLLM(script), options={"refine": False, "audit": False}
    )
    (doc,) = compressor.compress_documents([damaged_lc_doc(doc_id="pm")], "Why did he resign?")
    assert doc.page_content == "John Smith resigned after the inquiry."
    assert doc.metadata["start_index"] is None and doc.metadata["end_index"] is None


def test_llama_index_spc_keeps_nodes_without_offsets():
    from llama_index.core.schema import TextNode

    nodes = [
        NodeWithScore(node=TextNode(text=t), score=1.0)
        for t in ("Bees dance.", "Stocks fell.", "Rain came.")
    ]
    post = llama_index_semrag.SPCPostprocessor(embed_model=FakeEmbedder(), k=10, audit=False)
    assert len(post.postprocess_nodes(nodes, query_str="bees?")) == 3


def test_retrieve_and_check_returns_the_loops_evidence_in_both_frameworks():
    query = "What did the queen bee lay, and when was the election?"
    lc = langchain_semrag.RetrieveAndCheckRetriever(index=shared_index(), k=1, max_rounds=2)
    li = llama_index_semrag.RetrieveAndCheckRetriever(index=shared_index(), k=1, max_rounds=2)
    lc_docs = lc.invoke(query)
    li_nodes = li.retrieve(query)
    assert [d.page_content for d in lc_docs] == [n.node.get_content() for n in li_nodes]
    assert len(lc_docs) > 1  # round 1 held k=1 chunk; the follow-up round added evidence
    assert len(lc.invoke(query, k=1)) == 1


def test_spc_compressor_repairs_semrag_splitter_output_by_its_document_id():
    splitter = langchain_semrag.SemanticTextSplitter(FakeEmbedder(), buffer_size=0, threshold=0.99)
    docs = splitter.create_documents([TEXT])  # no "source": the id is the text's content id
    damaged = [d for d in docs if d.page_content.startswith("He then")]
    assert damaged and "doc_id" not in damaged[0].metadata
    assert damaged[0].metadata["semrag_doc_id"] == content_id(TEXT)
    compressor = langchain_semrag.SPCCompressor(
        sources={content_id(TEXT): TEXT}, embeddings=FakeEmbedder(), options={"audit": False}
    )
    out, *context = compressor.compress_documents(damaged, "Why did John Smith resign?")
    assert out.metadata["semrag_spc"]["action"] == "repaired"
    assert "John Smith" in context[0].page_content


def test_semantic_index_ingests_both_frameworks_documents_with_their_ids():
    from llama_index.core.schema import NodeRelationship

    index = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
    lc_docs = [
        LCDocument("Honey bees dance to share where flowers grow.", id="lc-bees"),
        LCDocument("The queen lays the eggs.", metadata={"doc_id": "lc-queen", "topic": "bees"}),
    ]
    li_docs = [LIDocument(text=TEXT, id_="li-pm", metadata={"kind": "news"})]
    index.add_documents([*lc_docs, *li_docs])
    assert sorted(index.doc_ids) == ["lc-bees", "lc-queen", "li-pm"]
    assert index.document("lc-queen").metadata["topic"] == "bees"
    assert index.document("li-pm").text == TEXT and index.document("li-pm").metadata == {
        "kind": "news"
    }
    splits = langchain_semrag.SemanticTextSplitter(FakeEmbedder()).split_documents(
        [LCDocument(OTHER, metadata={"source": "bees.txt"})]
    )
    index.add_documents(splits)  # a splitter's own output goes straight in
    (node,) = llama_index_semrag.SSGRetriever(index=index, k=1).retrieve("queen eggs")
    assert node.node.ref_doc_id == node.node.metadata["doc_id"]
    assert NodeRelationship.SOURCE in node.node.relationships
    with pytest.raises(TypeError, match="LangChain / LlamaIndex"):
        index.add_documents([42])


@pytest.mark.model
def test_spc_without_an_embedder_uses_the_packaged_model_in_both_frameworks():
    # the splitters default to the packaged MiniLM; so do SPCCompressor / SPCPostprocessor
    compressor = langchain_semrag.SPCCompressor(sources={"news.txt": TEXT})
    doc, *context = compressor.compress_documents(
        [damaged_lc_doc(source="news.txt")], "Why did John Smith resign?"
    )
    assert doc.metadata["semrag_spc"]["action"] == "repaired"
    assert "John Smith" in context[0].page_content
    li_doc = LIDocument(text=TEXT, id_="news")
    nodes = SentenceSplitter(chunk_size=20, chunk_overlap=0).get_nodes_from_documents([li_doc])
    damaged = next(n for n in nodes if n.get_content().startswith("He then"))
    post = llama_index_semrag.SPCPostprocessor(sources={"news": TEXT})
    out, *_ = post.postprocess_nodes(
        [NodeWithScore(node=damaged, score=0.5)], query_str="Why did John Smith resign?"
    )
    assert out.node.metadata["semrag_spc"]["action"] == "repaired"


async def test_a_context_budget_through_both_frameworks_over_their_own_retrievers():
    """SPC(context=) after a LangChain vector store (doc_id + start_index) and after a
    LlamaIndex retriever (start_char_idx): sync and async alike, within the budget, every
    hit whole, what was added in the metadata."""
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from llama_index.core import VectorStoreIndex

    emb = FakeEmbedder()
    split = RecursiveCharacterTextSplitter(chunk_size=60, chunk_overlap=0, add_start_index=True)
    chunks = split.split_documents([LCDocument(TEXT, metadata={"doc_id": "news"})])
    store = InMemoryVectorStore(langchain_semrag.SemragEmbeddings(emb))
    store.add_documents(chunks)
    compressor = langchain_semrag.SPCCompressor(sources={"news": TEXT}, embeddings=emb, context=200)
    retriever = ContextualCompressionRetriever(
        base_compressor=compressor, base_retriever=store.as_retriever(search_kwargs={"k": 4})
    )
    query = "Why did John Smith resign?"
    docs = retriever.invoke(query)
    assert docs == await retriever.ainvoke(query)
    assert sum(len(d.page_content) for d in docs) <= 200
    for d in docs:
        start = d.metadata["start_index"]
        assert TEXT[start : start + len(d.page_content)] == d.page_content
        spc = d.metadata["semrag_spc"]
        before, after = spc["before"], spc["after"]
        if spc["action"] != "cut_at_budget":  # only the last hit may be cut, at the budget
            assert after[0] <= before[0] and before[1] <= after[1]  # grown, never trimmed

    index = VectorStoreIndex.from_documents(
        [LIDocument(text=TEXT, id_="news")],
        embed_model=llama_index_semrag.SemragEmbedding(emb),
        transformations=[SentenceSplitter(chunk_size=24, chunk_overlap=0)],
    )
    post = llama_index_semrag.SPCPostprocessor(
        sources={"news": TEXT}, embed_model=emb, context=40, unit="tokens"
    )
    nodes = index.as_retriever(similarity_top_k=3).retrieve(query)
    out = post.postprocess_nodes(nodes, query_str=query)
    aout = await post.apostprocess_nodes(nodes, query_str=query)
    assert [n.node.get_content() for n in out] == [n.node.get_content() for n in aout]
    assert sum(len(n.node.get_content().split()) for n in out) <= 40
    for n in out:
        assert TEXT[n.node.start_char_idx : n.node.end_char_idx] == n.node.get_content()


def test_spc_keeps_a_retrievers_own_order_in_both_frameworks():
    """A graph walk's order is not the query's cosine: SPC keeps it (cut to k) in both."""
    from langchain_semrag.retrievers import to_lc_documents
    from llama_index_semrag.retrievers import to_nodes

    index, query = shared_index(), "When was the election held?"
    walked = list(reversed(index.search(query, 3)))  # least similar first
    want = [(h.chunk.doc_id, h.chunk.start) for h in walked[:2]]
    lc = langchain_semrag.SPCCompressor(index=index, k=2)
    docs = lc.compress_documents(to_lc_documents(walked), query)
    hits = [d.metadata["semrag_spc"] for d in docs]
    got = [(m["doc_id"], m["before"][0]) for m in hits if m["action"] != "context"]
    assert got == want
    li = llama_index_semrag.SPCPostprocessor(index=index, k=2)
    nodes = li.postprocess_nodes(to_nodes(walked), query_str=query)
    hits = [n.node.metadata["semrag_spc"] for n in nodes]
    got = [(m["doc_id"], m["before"][0]) for m in hits if m["action"] != "context"]
    assert got == want


@pytest.mark.parametrize("framework", ["langchain", "llama_index"])
def test_spc_in_both_frameworks_takes_every_spc_parameter_and_the_index_by_position(framework):
    """``SPC(index, context=..., refine=False)`` is written the same way in both frameworks."""
    import inspect

    from semrag.errors import ConfigError
    from semrag.postprocess import SPC

    cls = (
        langchain_semrag.SPCCompressor
        if framework == "langchain"
        else llama_index_semrag.SPCPostprocessor
    )
    index = shared_index()
    names = set(inspect.signature(SPC).parameters) - {"embedder"}
    assert names <= set(cls.model_fields)
    made = cls(index, context=300, refine=False, delta=0.4, audit=True)
    core = made._core
    assert (core.index is not None, core.context, core.refine, core.delta, core.audit) == (
        True,
        300,
        False,
        0.4,
        True,
    )
    default = cls(index)._core  # what is not given keeps SPC's default
    assert (default.refine, default.delta, default.context) == (True, 0.5, None)
    with pytest.raises(ConfigError, match="did you mean 'context'"):
        cls(index, contxt=300)  # LlamaIndex's model alone would drop it silently
    with pytest.raises(ConfigError, match="refine is given twice"):
        cls(index, refine=False, options={"refine": True})
    with pytest.raises(ConfigError, match="delta"):
        cls(index, delta=2.0)  # SPC's own check
    with pytest.raises(ConfigError, match="multiple values for argument 'index'"):
        cls(index, index=index)
