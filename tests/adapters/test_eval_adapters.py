"""semrag.eval takes both frameworks' splitters, retrievers, embeddings and LLMs as they are."""

from __future__ import annotations

import json

import pytest

from semrag import Document, SemanticIndex
from semrag.errors import ConfigError
from semrag.eval import evaluate_retrievers, evaluate_splitters, generate_questions, read_questions
from semrag.testing import FakeEmbedder

DOCS = [
    Document(
        "bees",
        "Honey bees dance to show where flowers grow. The hive follows the dance. "
        "Bees carry pollen between the flowers of the valley.",
    ),
    Document(
        "rockets",
        "Rockets burn fuel to reach orbit. Their engines roar at launch. "
        "The Saturn V carried Apollo 11 to the Moon.",
    ),
]
QUESTIONS = [
    {
        "question": "How do bees show where flowers are?",
        "excerpts": [{"text": "Honey bees dance to show where flowers grow."}],
    },
    {
        "question": "What carried Apollo 11 to the Moon?",
        "excerpts": [{"text": "The Saturn V carried Apollo 11 to the Moon."}],
    },
]


def test_langchain_splitters_embeddings_and_retrievers():
    from langchain_core.documents import Document as LCDocument
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    import langchain_semrag as lcs

    qs = read_questions(QUESTIONS, DOCS)
    emb = DeterministicFakeEmbedding(size=32)
    table = evaluate_splitters(
        [LCDocument(d.text, id=d.id) for d in DOCS],  # LangChain documents as the corpus
        qs,
        {
            "semrag": lcs.SemanticTextSplitter(FakeEmbedder(dim=32)),
            "recursive": RecursiveCharacterTextSplitter(chunk_size=60, chunk_overlap=0),
        },
        embedder=emb,  # a LangChain Embeddings embeds every splitter's chunks
        budgets=(100, 1000),
    )
    assert table.data["embedder"] == "DeterministicFakeEmbedding"
    for name in ("semrag", "recursive"):
        row = table.row(name)
        assert row["lost"] == 0 and row["chunks"] >= 2 and row["recall 1000"] == 1.0
    index = SemanticIndex(embedder=FakeEmbedder(dim=32))
    index.add_documents(DOCS)
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(lcs.SemragEmbeddings(FakeEmbedder(dim=32)))
    store.add_documents([LCDocument(d.text, metadata={"source": d.id}) for d in DOCS])
    vectors = store.as_retriever(search_kwargs={"k": 2})
    scores = evaluate_retrievers(
        index,
        qs,
        {"graph": lcs.GraphRetriever(index=index, k=4), "vectors": vectors},
        ks=(1, 2),
        baseline="vectors",
    )
    assert scores.row("graph")["R@2"] == scores.row("vectors")["R@2"] == 1.0
    assert "R@1 - vectors 95% CI" in scores.row("graph")


def test_a_langchain_document_transformer_that_is_no_text_splitter_is_evaluated():
    """langchain-experimental's SemanticChunker is a BaseDocumentTransformer only."""
    from langchain_core.documents import BaseDocumentTransformer
    from langchain_core.documents import Document as LCDocument

    class Sentences(BaseDocumentTransformer):
        def transform_documents(self, documents, **kwargs):
            return [
                LCDocument(page_content=s.strip() + ".")
                for d in documents
                for s in d.page_content.split(".")
                if s.strip()
            ]

    table = evaluate_splitters(
        DOCS,
        read_questions(QUESTIONS, DOCS),
        {"sentences": Sentences()},
        embedder=FakeEmbedder(dim=32),
        budgets=(1000,),
    )
    row = table.row("sentences")
    assert row["chunks"] == 6 and row["lost"] == 0 and row["recall 1000"] == 1.0


def test_llama_index_parsers_embeddings_and_retrievers():
    from llama_index.core import Document as LIDocument
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.node_parser import SentenceSplitter

    import llama_index_semrag as lis

    qs = read_questions(QUESTIONS, DOCS)
    table = evaluate_splitters(
        [LIDocument(text=d.text, id_=d.id) for d in DOCS],
        qs,
        {
            "semrag": lis.SemanticNodeParser(FakeEmbedder(dim=8)),
            "sentence": SentenceSplitter(chunk_size=64, chunk_overlap=0),
        },
        embedder=MockEmbedding(embed_dim=8),
        budgets=(1000,),
    )
    assert table.data["embedder"] == "MockEmbedding(unknown)"
    assert all(
        table.row(n)["lost"] == 0 and table.row(n)["recall 1000"] == 1.0
        for n in ("semrag", "sentence")
    )
    li_docs = [LIDocument(text=d.text, id_=d.id) for d in DOCS]
    vector = VectorStoreIndex.from_documents(
        li_docs, embed_model=lis.SemragEmbedding(FakeEmbedder(dim=32))
    )
    index = SemanticIndex(embedder=FakeEmbedder(dim=32))
    index.add_documents(DOCS)
    scores = evaluate_retrievers(
        index,
        qs,
        {
            "vector": vector.as_retriever(similarity_top_k=2),
            "graph": lis.GraphRetriever(index=index),
        },
        ks=(2,),
    )
    assert scores.row("vector")["R@2"] == 1.0 and scores.row("graph")["full@2"] == 1.0


@pytest.mark.parametrize("framework", ["langchain", "llama_index"])
def test_generation_with_each_frameworks_llm(framework):
    reply = json.dumps(
        {
            "question": "What carried Apollo 11?",
            "excerpts": ["The Saturn V carried Apollo 11 to the Moon."],
        }
    )
    if framework == "langchain":
        from langchain_core.language_models import FakeListChatModel

        llm = FakeListChatModel(responses=[reply])
    else:
        from llama_index.core.llms import MockLLM

        class Scripted(MockLLM):
            def complete(self, prompt, formatted=False, **kwargs):
                from llama_index.core.base.llms.types import CompletionResponse

                return CompletionResponse(text=reply)

        llm = Scripted()
    rockets = [DOCS[1]]
    out = generate_questions(rockets, llm, n=1, max_calls=2)
    assert [q.question for q in out.questions] == ["What carried Apollo 11?"]
    (excerpt,) = out.questions[0].excerpts
    assert (
        rockets[0].text[excerpt.start : excerpt.end]
        == "The Saturn V carried Apollo 11 to the Moon."
    )


def test_an_unknown_object_is_refused_with_what_to_give():
    with pytest.raises(ConfigError, match="not a retriever"):
        index = SemanticIndex(embedder=FakeEmbedder(dim=8))
        index.add_documents(DOCS)
        evaluate_retrievers(index, read_questions(QUESTIONS, DOCS), {"x": 3})
