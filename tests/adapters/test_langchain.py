from __future__ import annotations

import numpy as np
import pytest
from langchain_core.documents import Document as LCDocument
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_text_splitters import TextSplitter

from langchain_semrag import LangChainEmbedder, LangChainLLM, SemanticTextSplitter
from semrag.errors import EmbeddingError, LLMOutputError
from semrag.identity import content_id
from semrag.llm import complete_json
from semrag.testing import FakeEmbedder, check_chunks

CATS = "The cat sat on the mat. The cat sat on the rug."
STOCKS = "Stock prices fell sharply today. Stock prices rose sharply later."


class BagOfWords(Embeddings):
    """A LangChain Embeddings with FakeEmbedder's word-overlap geometry."""

    def __init__(self):
        self.inner = FakeEmbedder(dim=64, cache_size=0)
        self.calls = 0

    def embed_documents(self, texts):
        self.calls += 1
        return self.inner.embed(texts).tolist()

    def embed_query(self, text):
        return self.embed_documents([text])[0]


def splitter(**kw):
    kw.setdefault("embeddings", FakeEmbedder())
    kw.setdefault("buffer_size", 0)
    kw.setdefault("threshold", 0.6)
    return SemanticTextSplitter(**kw)


def test_is_a_text_splitter():
    assert isinstance(splitter(), TextSplitter)


def test_split_text():
    assert splitter().split_text(f"{CATS} {STOCKS}") == [CATS, STOCKS]


def test_offsets_are_exact_when_a_passage_repeats():
    text = f"{CATS} {STOCKS} {CATS} {STOCKS}"
    docs = splitter().create_documents([text], metadatas=[{"source": "a"}])
    assert [d.page_content for d in docs] == [CATS, STOCKS, CATS, STOCKS]
    for d in docs:
        start, end = d.metadata["start_index"], d.metadata["end_index"]
        assert text[start:end] == d.page_content
    assert docs[2].metadata["start_index"] == len(CATS) + len(STOCKS) + 2
    assert all(d.metadata["source"] == "a" for d in docs)
    assert [d.metadata["semrag_chunk_index"] for d in docs] == [0, 1, 2, 3]


def test_split_documents_keeps_metadata_and_ids():
    docs = [
        LCDocument(page_content=f"{CATS} {STOCKS}", metadata={"page": 1}, id="doc-1"),
        LCDocument(page_content=STOCKS, metadata={"page": 2}),
    ]
    out = splitter().split_documents(docs)
    assert [(d.metadata["page"], d.metadata["semrag_doc_id"]) for d in out] == [
        (1, "doc-1"),
        (1, "doc-1"),
        (2, content_id(STOCKS)),  # no id, no source: named by its content
    ]
    assert docs[0].metadata == {"page": 1}  # inputs untouched


async def test_async_equals_sync():
    docs = [LCDocument(page_content=f"{CATS} {STOCKS}"), LCDocument(page_content=CATS)]
    s = splitter()
    assert await s.atransform_documents(docs) == s.transform_documents(docs)
    assert await s.acreate_documents([CATS]) == s.create_documents([CATS])


def test_accepts_langchain_embeddings_and_batches():
    emb = BagOfWords()
    s = SemanticTextSplitter(embeddings=emb, buffer_size=0, threshold=0.6)
    texts = [f"{CATS} {STOCKS}", f"{STOCKS} {CATS}"]
    docs = s.create_documents(texts)
    assert [d.page_content for d in docs] == [CATS, STOCKS, STOCKS, CATS]
    assert emb.calls == 1  # all sentences of both texts in one call


def test_deterministic_fake_embeddings_tile_text():
    text = f"{CATS} {STOCKS} " * 5
    s = SemanticTextSplitter(embeddings=DeterministicFakeEmbedding(size=16), max_tokens=30)
    chunks = s.chunker.chunk(text)
    check_chunks(text, chunks, max_tokens=30, overlapping=True)


def test_bad_langchain_embeddings_raise_embedding_error():
    class Short(BagOfWords):
        def embed_documents(self, texts):
            return super().embed_documents(texts)[:-1]

    with pytest.raises(EmbeddingError, match="for 4 texts"):
        SemanticTextSplitter(embeddings=Short(), buffer_size=0).split_text(f"{CATS} {STOCKS}")
    bridge = LangChainEmbedder(BagOfWords())
    assert bridge.embed(["a b"]).shape == (1, 64)
    with pytest.raises(TypeError, match="expected a LangChain Embeddings, got object"):
        LangChainEmbedder(object())  # type: ignore[arg-type]


def test_unknown_option_raises():
    with pytest.raises(TypeError, match="SemanticChunker.__init__"):
        SemanticTextSplitter(embeddings=FakeEmbedder(), chunk_sise=3)


SCHEMA = {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "string"}}}


@pytest.mark.parametrize("model_cls", [FakeListLLM, FakeListChatModel])
def test_llm_bridge_drives_the_json_path(model_cls):
    llm = LangChainLLM(model_cls(responses=['{"answer": "Paris"}']))
    assert complete_json(llm, "Capital of France?", SCHEMA) == {"answer": "Paris"}


async def test_llm_bridge_malformed_json_raises():
    llm = LangChainLLM(FakeListChatModel(responses=["not json", '{"wrong": 1}']))
    with pytest.raises(LLMOutputError, match="LLM reply failed validation after 2"):
        complete_json(llm, "Capital?", SCHEMA)
    allm = LangChainLLM(FakeListChatModel(responses=['```json\n{"answer": "Rome"}\n```']))
    assert await allm.acomplete("x") == '```json\n{"answer": "Rome"}\n```'


def test_llm_bridge_rejects_non_models():
    with pytest.raises(TypeError, match="expected a LangChain language model, got str"):
        LangChainLLM("gpt")  # type: ignore[arg-type]


def test_bridge_vectors_normalised():
    out = LangChainEmbedder(DeterministicFakeEmbedding(size=8)).embed(["a", "b"])
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
