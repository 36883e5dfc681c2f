"""The vector stores over SemanticIndex, in both frameworks.

LangChain's: langchain-tests' standard vector-store suite, plus what it does not cover
(filters, MMR, relevance scores, the index serving semrag's retrievers).
"""

from __future__ import annotations

import pytest
from langchain_core.documents import Document as LCDocument
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_tests.integration_tests import VectorStoreIntegrationTests

import langchain_semrag
from semrag.errors import ConfigError
from semrag.retrieval import IntentAwareRetriever
from semrag.testing import FakeEmbedder

TEXTS = [
    "Honey bees dance to tell the hive where flowers grow.",
    "The queen bee lays the eggs of the colony.",
    "The rocket reached orbit after a long delay.",
    "Engineers cheered when the payload deployed.",
    "Stock prices fell as investors sold their shares.",
]


class TestSemanticVectorStoreStandard(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self):
        return langchain_semrag.SemanticVectorStore(self.get_embeddings())


class TestSemanticVectorStoreOnAGivenIndex(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self):
        from semrag import SemanticIndex

        index = SemanticIndex(embedder=FakeEmbedder(dim=6), sparse="lucene", dense="hnsw", ssg=True)
        return langchain_semrag.SemanticVectorStore(index=index)


def stores():
    emb = DeterministicFakeEmbedding(size=16)
    ours = langchain_semrag.SemanticVectorStore(emb)
    theirs = InMemoryVectorStore(emb)
    metas = [
        {"topic": "bees" if i < 2 else "space" if i < 4 else "money", "n": i} for i in range(5)
    ]
    ids = [f"t{i}" for i in range(5)]
    ours.add_texts(TEXTS, metas, ids=ids)
    theirs.add_texts(TEXTS, metas, ids=ids)
    return ours, theirs


def test_scores_and_order_equal_langchains_in_memory_store():
    ours, theirs = stores()
    for query in ("bees", "rocket orbit", "money"):
        a = ours.similarity_search_with_score(query, k=5)
        b = theirs.similarity_search_with_score(query, k=5)
        assert [d.id for d, _ in a] == [d.id for d, _ in b]
        assert [s for _, s in a] == pytest.approx([s for _, s in b], abs=1e-5)
        assert [d.metadata for d, _ in a] == [d.metadata for d, _ in b]


def test_filters_mmr_and_relevance():
    ours, theirs = stores()
    space = ours.similarity_search("anything", k=5, filter={"topic": "space"})
    assert sorted(d.id for d in space) == ["t2", "t3"]
    odd = ours.similarity_search("anything", k=5, filter=lambda m: m["n"] % 2 == 1)
    assert sorted(d.id for d in odd) == ["t1", "t3"]
    mmr = ours.max_marginal_relevance_search("bees", k=3, fetch_k=5, lambda_mult=0.5)
    ref = theirs.max_marginal_relevance_search("bees", k=3, fetch_k=5, lambda_mult=0.5)
    assert [d.id for d in mmr] == [d.id for d in ref]
    plain = ours.max_marginal_relevance_search("bees", k=3, fetch_k=5, lambda_mult=1.0)
    assert [d.id for d in plain] == [d.id for d in ours.similarity_search("bees", k=3)]
    rel = ours.similarity_search_with_relevance_scores("bees", k=5)
    assert all(0.0 <= s <= 1.0 for _, s in rel)
    retriever = ours.as_retriever(search_kwargs={"k": 2})
    assert [d.id for d in retriever.invoke("bees")] == [
        d.id for d in ours.similarity_search("bees", k=2)
    ]


def test_the_same_index_serves_semrags_retrievers():
    store = langchain_semrag.SemanticVectorStore(
        langchain_semrag.SemragEmbeddings(FakeEmbedder()), sparse="lucene", ssg=True
    )
    store.add_documents([LCDocument(t, metadata={"n": i}) for i, t in enumerate(TEXTS)])
    hits = IntentAwareRetriever(store.index, k=2).retrieve("queen bee eggs")
    assert hits[0].chunk.text == TEXTS[1]
    lc = langchain_semrag.SSGRetriever(index=store.index, strategy="basic_retrieval", k=2)
    assert lc.invoke("rocket orbit")
    with pytest.raises(TypeError, match="index_kwargs"):
        langchain_semrag.SemanticVectorStore(index=store.index, sparse="lucene")


# -- LlamaIndex ---------------------------------------------------------------------------
def li_store_and_index():
    from llama_index.core import Document as LIDocument
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter

    import llama_index_semrag

    emb = llama_index_semrag.SemragEmbedding(FakeEmbedder())
    store = llama_index_semrag.SemanticVectorStore(emb)
    docs = [
        LIDocument(text=" ".join(TEXTS[:2]), id_="bees", metadata={"topic": "bees"}),
        LIDocument(text=" ".join(TEXTS[2:4]), id_="space", metadata={"topic": "space"}),
        LIDocument(text=TEXTS[4], id_="money", metadata={"topic": "money"}),
    ]
    index = VectorStoreIndex.from_documents(
        docs,
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=emb,
        transformations=[SentenceSplitter(chunk_size=16, chunk_overlap=0)],
    )
    return store, index, emb


def test_llama_index_vector_store_index_end_to_end():
    from llama_index.core.llms import MockLLM

    store, index, _ = li_store_and_index()
    assert sorted(store.index.doc_ids) == ["bees", "money", "space"]  # nodes grouped by document
    assert len(store.index.chunks()) > 3  # one chunk per node
    nodes = index.as_retriever(similarity_top_k=2).retrieve("rocket orbit")
    assert nodes[0].node.ref_doc_id == "space"
    assert nodes[0].node.metadata == {"topic": "space"}
    assert "rocket" in nodes[0].node.get_content().lower()
    answer = index.as_query_engine(llm=MockLLM(), similarity_top_k=2).query("rocket orbit")
    assert answer.source_nodes[0].node.node_id == nodes[0].node.node_id
    index.delete_ref_doc("space")
    after = index.as_retriever(similarity_top_k=10).retrieve("rocket orbit")
    assert after and all(n.node.ref_doc_id != "space" for n in after)


def test_llama_index_queries_match_the_simple_vector_store():
    from llama_index.core.schema import TextNode
    from llama_index.core.vector_stores import SimpleVectorStore
    from llama_index.core.vector_stores.types import (
        FilterOperator,
        MetadataFilter,
        MetadataFilters,
        VectorStoreQuery,
        VectorStoreQueryMode,
    )

    import llama_index_semrag

    # Random-looking vectors, so no two scores tie (tie order is the stores' own).
    random_vectors = langchain_semrag.LangChainEmbedder(DeterministicFakeEmbedding(size=32))
    emb = llama_index_semrag.SemragEmbedding(random_vectors)
    ours = llama_index_semrag.SemanticVectorStore(emb)
    theirs = SimpleVectorStore()
    nodes = [
        TextNode(id_=f"n{i}", text=t, metadata={"n": i}, embedding=emb.get_text_embedding(t))
        for i, t in enumerate(TEXTS)
    ]
    assert ours.add(nodes) == [n.node_id for n in nodes]
    theirs.add(nodes)
    big = MetadataFilters(filters=[MetadataFilter(key="n", value=1, operator=FilterOperator.GT)])
    for filters in (None, big):
        q = VectorStoreQuery(
            query_str="bees",
            query_embedding=emb.get_query_embedding("bees"),
            similarity_top_k=3,
            filters=filters,
        )
        a, b = ours.query(q), theirs.query(q)
        assert a.ids == b.ids
        assert a.similarities == pytest.approx(b.similarities, abs=1e-5)
    by_vector = VectorStoreQuery(
        query_embedding=emb.get_query_embedding("bees"), similarity_top_k=2
    )
    assert ours.query(by_vector).ids == theirs.query(by_vector).ids
    only = VectorStoreQuery(query_str="bees", similarity_top_k=5, node_ids=["n3", "n4"])
    assert sorted(ours.query(only).ids) == ["n3", "n4"]
    sparse = ours.query(VectorStoreQuery(query_str="queen eggs", mode=VectorStoreQueryMode.SPARSE))
    assert sparse.ids == ["n1"]
    mmr = ours.query(
        VectorStoreQuery(query_str="bees", similarity_top_k=3, mode=VectorStoreQueryMode.MMR)
    )
    assert len(mmr.ids) == 3 and mmr.ids[0] == ours.query(VectorStoreQuery(query_str="bees")).ids[0]
    with pytest.raises(ConfigError, match="hybrid"):
        ours.query(VectorStoreQuery(query_str="bees", mode=VectorStoreQueryMode.HYBRID))
    assert [n.node_id for n in ours.get_nodes(["n0", "missing"])] == ["n0"]
    ours.delete_nodes(filters=big)
    assert sorted(n.node_id for n in ours.get_nodes()) == ["n0", "n1"]
    ours.clear()
    assert ours.get_nodes() == []


async def test_llama_index_async_paths():
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
    from llama_index.core.vector_stores.types import VectorStoreQuery

    import llama_index_semrag

    store = llama_index_semrag.SemanticVectorStore(FakeEmbedder())
    nodes = [
        TextNode(
            id_=f"n{i}",
            text=t,
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=f"d{i % 2}")},
        )
        for i, t in enumerate(TEXTS)
    ]
    await store.async_add(nodes)
    q = VectorStoreQuery(query_str="rocket orbit", similarity_top_k=2)
    assert (await store.aquery(q)).ids == store.query(q).ids
    await store.adelete("d0")
    assert sorted(n.node_id for n in await store.aget_nodes()) == ["n1", "n3"]
    assert {n.ref_doc_id for n in await store.aget_nodes()} == {"d1"}
    await store.adelete_nodes(["n1"])
    await store.aclear()
    assert store.get_nodes() == []


@pytest.mark.parametrize("framework", ["langchain", "llama_index"])
def test_the_stores_keep_sketch_pieces_with_the_index(framework):
    """``pieces=`` reaches the store's index; SKETCH in that framework reads those pieces."""
    from semrag.graph import KnowledgeGraph

    long = " ".join(f"Rocket launch {i} reached orbit after the countdown." for i in range(30))
    if framework == "langchain":
        store = langchain_semrag.SemanticVectorStore(
            langchain_semrag.SemragEmbeddings(FakeEmbedder()), pieces=(12, 3)
        )
        store.add_texts([long, *TEXTS])
        graph = KnowledgeGraph.build(store.index, communities=False)
        retriever = langchain_semrag.SketchRetriever(
            index=store.index, graph=graph, k=2, options={"split": (12, 3)}
        )
        hits = [d.page_content for d in retriever.invoke("rocket orbit")]
    else:
        from llama_index.core.schema import TextNode

        import llama_index_semrag

        emb = llama_index_semrag.SemragEmbedding(FakeEmbedder())
        store = llama_index_semrag.SemanticVectorStore(emb, pieces=(12, 3))
        nodes = [TextNode(text=t, id_=f"n{i}") for i, t in enumerate([long, *TEXTS])]
        for n in nodes:
            n.embedding = emb.get_text_embedding(n.text)
        store.add(nodes)
        graph = KnowledgeGraph.build(store.index, communities=False)
        retriever = llama_index_semrag.SketchRetriever(
            index=store.index, graph=graph, k=2, split=(12, 3)
        )
        hits = [n.node.get_content() for n in retriever.retrieve("rocket orbit")]
    kept = store.index.reader().piece_index
    assert kept is not None and len(kept.pieces) > len(store.index.chunks())
    assert retriever._core.pieces()[2] is kept.dense  # SKETCH searched the index's pieces
    texts = {c.text for c in kept.pieces.values()} | {c.text for c in store.index.chunks()}
    assert hits and set(hits) <= texts
