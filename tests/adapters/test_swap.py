"""Swap tests: the frameworks' tutorial ingestion code, run with their splitter and ours.

Each tutorial function below is written the way a user has it, taking only the splitter
class; the framework's own splitter and every semrag splitter run through the same lines,
changing only the class name. Ours must also keep the invariants: exact offsets into the
loaded document, and no chunk over ``chunk_size`` as the framework measures it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import PromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_text_splitters import RecursiveCharacterTextSplitter
from llama_index.core import Document as LIDocument
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter

from langchain_semrag import MFCTextSplitter, PSCTextSplitter, SemanticTextSplitter
from llama_index_semrag import MFCNodeParser, PSCNodeParser, SemanticNodeParser

pytestmark = pytest.mark.model  # our splitters default to the packaged MiniLM

ESSAY = (Path(__file__).parents[2] / "examples" / "data" / "three_topics.txt").read_text(
    encoding="utf-8"
)
# A lecture transcript as speech-to-text writes it: one utterance per line, no punctuation.
TRANSCRIPT = "\n".join(
    [
        "okay so welcome back everyone",
        "today we start with the honeybee colony",
        "a colony has one queen and thousands of workers",
        "the workers collect nectar and pollen from flowers",
        "they turn the nectar into honey inside the hive",
        "and they build the comb from wax that they make themselves",
        "right so now let us switch to something completely different",
        "the saturn five rocket had three stages",
        "the first stage burned kerosene and liquid oxygen",
        "it lifted the whole stack off the launch pad",
        "the upper stages used liquid hydrogen",
        "and the third stage sent the crew towards the moon",
    ]
)
LOADED = [  # what a document loader returns: text plus a source in the metadata
    {"text": ESSAY * 2, "source": "essay.txt"},
    {"text": TRANSCRIPT, "source": "lecture.txt"},
]


def langchain_tutorial(splitter_cls):
    """LangChain's RAG tutorial: loader output -> splitter -> vector store -> LCEL chain."""
    docs = [Document(page_content=d["text"], metadata={"source": d["source"]}) for d in LOADED]
    text_splitter = splitter_cls(chunk_size=1000, chunk_overlap=200, add_start_index=True)
    all_splits = text_splitter.split_documents(docs)

    vector_store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
    vector_store.add_documents(documents=all_splits)
    retriever = vector_store.as_retriever(search_kwargs={"k": 3})

    prompt = PromptTemplate.from_template("Context: {context}\nQuestion: {question}\nAnswer:")
    llm = FakeListLLM(responses=["Bees make honey."])

    def format_docs(docs):
        return "\n\n".join(doc.page_content for doc in docs)

    rag_chain = (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | prompt
        | llm
        | StrOutputParser()
    )
    answer = rag_chain.invoke("What do bees make?")
    return all_splits, retriever.invoke("What do bees make?"), answer


def llama_index_tutorial(parser_cls):
    """LlamaIndex's starter: IngestionPipeline -> VectorStoreIndex -> query engine."""
    documents = [LIDocument(text=d["text"], metadata={"source": d["source"]}) for d in LOADED]
    embed_model = MockEmbedding(embed_dim=64)
    pipeline = IngestionPipeline(
        transformations=[parser_cls(chunk_size=512, chunk_overlap=50), embed_model]
    )
    nodes = pipeline.run(documents=documents)

    index = VectorStoreIndex(nodes, embed_model=embed_model)
    query_engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=3)
    response = query_engine.query("What do bees make?")
    return documents, nodes, response


@pytest.mark.parametrize(
    "splitter_cls",
    [RecursiveCharacterTextSplitter, SemanticTextSplitter, PSCTextSplitter, MFCTextSplitter],
)
def test_langchain_tutorial_runs_with_each_splitter(splitter_cls):
    splits, retrieved, answer = langchain_tutorial(splitter_cls)
    assert answer == "Bees make honey."
    assert len(retrieved) == 3 and all(isinstance(d, Document) for d in retrieved)
    sources = {d["source"]: d["text"] for d in LOADED}
    assert {s.metadata["source"] for s in splits} == set(sources)
    for split in splits:
        assert len(split.page_content) <= 1000  # chunk_size, measured by len
        text = sources[split.metadata["source"]]
        start = split.metadata["start_index"]
        assert text[start : start + len(split.page_content)] == split.page_content


@pytest.mark.parametrize("splitter_cls", [SemanticTextSplitter, PSCTextSplitter, MFCTextSplitter])
def test_semrag_splitters_keep_their_invariants_in_the_tutorial(splitter_cls):
    splits, _, _ = langchain_tutorial(splitter_cls)
    sources = {d["source"]: d["text"] for d in LOADED}
    by_source: dict[str, list[Document]] = {}
    for split in splits:
        by_source.setdefault(split.metadata["source"], []).append(split)
        start, end = split.metadata["start_index"], split.metadata["end_index"]
        assert sources[split.metadata["source"]][start:end] == split.page_content
    for source, parts in by_source.items():
        # Nothing lost: every non-whitespace character of the source is in some chunk.
        covered = set()
        for p in parts:
            covered.update(range(p.metadata["start_index"], p.metadata["end_index"]))
        text = sources[source]
        assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())
    # The essay is repeated, so the copy's chunks start after the first copy (exact offsets,
    # where str.find would have located them in the first copy).
    essay_starts = [s.metadata["start_index"] for s in by_source["essay.txt"]]
    assert max(essay_starts) >= len(ESSAY)


def test_semantic_splitter_breaks_the_unpunctuated_transcript_by_topic():
    splits, _, _ = langchain_tutorial(SemanticTextSplitter)
    lecture = [s.page_content for s in splits if s.metadata["source"] == "lecture.txt"]
    # The transcript is far under the cap: only a semantic break can split it, and the
    # sentence splitter has to see its lines as sentences for that.
    assert len(TRANSCRIPT) < 1000 and len(lecture) >= 2
    assert any("honey" in part for part in lecture) and any("rocket" in part for part in lecture)
    assert not any("honey" in part and "rocket" in part for part in lecture)


@pytest.mark.parametrize(
    "parser_cls", [SentenceSplitter, SemanticNodeParser, PSCNodeParser, MFCNodeParser]
)
def test_llama_index_tutorial_runs_with_each_parser(parser_cls, minilm_tokenizer):
    documents, nodes, response = llama_index_tutorial(parser_cls)
    assert len(response.source_nodes) == 3
    texts = {d.doc_id: d.text for d in documents}
    assert {n.ref_doc_id for n in nodes} == set(texts)
    for node in nodes:
        text = texts[node.ref_doc_id]
        assert text[node.start_char_idx : node.end_char_idx] == node.text
        if parser_cls is not SentenceSplitter:  # SentenceSplitter counts tiktoken tokens
            assert minilm_tokenizer.count([node.text])[0] <= 512


def test_semrag_embeddings_serve_the_frameworks_vector_stores():
    from langchain_semrag import SemragEmbeddings
    from langchain_semrag.embeddings import to_embedder as lc_core
    from llama_index_semrag import SemragEmbedding
    from llama_index_semrag.embeddings import to_embedder as li_core

    lc = SemragEmbeddings()  # the packaged MiniLM, offline
    store = InMemoryVectorStore(lc)
    store.add_documents(SemanticTextSplitter(lc).split_documents([Document(ESSAY)]))
    (top,) = store.similarity_search("Where do bees store their honey?", k=1)
    assert "hone" in top.page_content.lower()
    assert len(lc.embed_query("x")) == 384 and lc_core(lc) is lc.embedder  # unwrapped

    li = SemragEmbedding()
    nodes = IngestionPipeline(transformations=[SemanticNodeParser(li), li]).run(
        documents=[LIDocument(text=ESSAY)]
    )
    index = VectorStoreIndex(nodes, embed_model=li)
    (hit,) = index.as_retriever(similarity_top_k=1).retrieve("Where do bees store their honey?")
    assert "hone" in hit.node.get_content().lower()
    assert li_core(li) is li.embedder
