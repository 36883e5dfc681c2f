from __future__ import annotations

import pytest
from llama_index.core import Document as LIDocument
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import NodeParser
from llama_index.core.schema import MetadataMode, NodeRelationship

from llama_index_semrag import LlamaIndexEmbedder, LlamaIndexLLM, SemanticNodeParser
from semrag.errors import EmbeddingError, LLMOutputError
from semrag.llm import acomplete_json, complete_json
from semrag.testing import FakeEmbedder

CATS = "The cat sat on the mat. The cat sat on the rug."
STOCKS = "Stock prices fell sharply today. Stock prices rose sharply later."


def parser(**kw):
    kw.setdefault("embed_model", FakeEmbedder())
    kw.setdefault("buffer_size", 0)
    kw.setdefault("threshold", 0.6)
    return SemanticNodeParser(**kw)


def test_is_a_node_parser():
    assert isinstance(parser(), NodeParser)


def test_offsets_relationships_and_metadata():
    text = f"{CATS} {STOCKS} {CATS} {STOCKS}"
    doc = LIDocument(text=text, metadata={"source": "a.txt"}, id_="doc")
    nodes = parser().get_nodes_from_documents([doc])
    assert [n.text for n in nodes] == [CATS, STOCKS, CATS, STOCKS]
    for n in nodes:
        assert text[n.start_char_idx : n.end_char_idx] == n.text
        assert n.metadata["source"] == "a.txt"
        assert n.ref_doc_id == "doc"
        assert "semrag_token_count" not in n.get_content(metadata_mode=MetadataMode.EMBED)
    # The repeated passage gets its own offset, not the first occurrence's.
    assert nodes[2].start_char_idx == len(CATS) + len(STOCKS) + 2
    assert nodes[1].relationships[NodeRelationship.PREVIOUS].node_id == nodes[0].node_id
    assert nodes[1].relationships[NodeRelationship.NEXT].node_id == nodes[2].node_id
    assert NodeRelationship.PREVIOUS not in nodes[0].relationships


def test_in_an_ingestion_pipeline():
    docs = [LIDocument(text=f"{CATS} {STOCKS}"), LIDocument(text=STOCKS)]
    nodes = IngestionPipeline(transformations=[parser()]).run(documents=docs)
    assert [n.text for n in nodes] == [CATS, STOCKS, STOCKS]
    assert nodes[2].ref_doc_id == docs[1].id_


async def test_async_equals_sync():
    docs = [LIDocument(text=f"{CATS} {STOCKS}", id_="a"), LIDocument(text=CATS, id_="b")]
    p = parser()
    sync = p.get_nodes_from_documents(docs)
    asyn = await p.aget_nodes_from_documents(docs)
    key = [(n.text, n.start_char_idx, n.end_char_idx, n.ref_doc_id) for n in sync]
    assert key == [(n.text, n.start_char_idx, n.end_char_idx, n.ref_doc_id) for n in asyn]


def test_accepts_llama_index_embeddings():
    p = SemanticNodeParser(embed_model=MockEmbedding(embed_dim=8), max_tokens=32)
    assert isinstance(p.chunker.embedder, LlamaIndexEmbedder)
    text = f"{CATS} {STOCKS}"
    nodes = p.get_nodes_from_documents([LIDocument(text=text)])
    assert all(text[n.start_char_idx : n.end_char_idx] == n.text for n in nodes)


def test_bad_llama_index_embeddings_raise():
    class Wrong(BaseEmbedding):
        def _get_text_embedding(self, text):
            return [float("nan")] * 4

        def _get_query_embedding(self, query):
            return [0.0] * 4

        async def _aget_query_embedding(self, query):
            return [0.0] * 4

    with pytest.raises(EmbeddingError, match="NaN"):
        SemanticNodeParser(embed_model=Wrong()).get_nodes_from_documents(
            [LIDocument(text=f"{CATS} {STOCKS}")]
        )


def test_unknown_option_raises():
    with pytest.raises(TypeError, match="SemanticChunker.__init__"):
        SemanticNodeParser(embed_model=FakeEmbedder(), chunk_sise=3)


SCHEMA = {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "string"}}}


async def test_llm_bridge_with_mock_llm():
    # MockLLM echoes the prompt, which here contains the JSON: this drives the JSON path.
    llm = LlamaIndexLLM(MockLLM())
    prompt = 'Reply with exactly {"answer": "Paris"}'
    assert complete_json(llm, prompt, SCHEMA) == {"answer": "Paris"}
    assert await acomplete_json(llm, prompt, SCHEMA) == {"answer": "Paris"}
    with pytest.raises(LLMOutputError, match="LLM reply failed validation after 2"):
        complete_json(llm, "Reply with nothing useful", SCHEMA)


def test_llm_bridge_rejects_non_models():
    with pytest.raises(TypeError, match="expected a LlamaIndex LLM, got object"):
        LlamaIndexLLM(object())  # type: ignore[arg-type]
