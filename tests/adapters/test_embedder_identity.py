"""Both frameworks' apps reload an index with the model that built it, or get a typed error."""

from __future__ import annotations

import pytest

from semrag import SemanticIndex
from semrag.errors import EmbedderMismatchError
from semrag.testing import FakeEmbedder
from tests.counting import OtherFake

TEXTS = [
    "Honey bees dance to tell the hive where flowers grow.",
    "The rocket reached orbit after a long delay.",
    "Stock prices fell as investors sold their shares.",
]


class TestLangChain:
    @staticmethod
    def saved(tmp_path):
        """A LangChain app: a store built with one 384-d model, its index saved."""
        from langchain_semrag import SemanticVectorStore, SemragEmbeddings

        store = SemanticVectorStore(SemragEmbeddings(FakeEmbedder(dim=384)))
        store.add_texts(TEXTS, ids=["bees", "rocket", "stocks"])
        store.index.save(tmp_path / "idx")
        return tmp_path / "idx"

    @pytest.mark.model
    def test_a_reload_without_its_embedding_is_refused(self, tmp_path):
        with pytest.raises(EmbedderMismatchError, match="all-MiniLM-L6-v2"):
            SemanticIndex.load(self.saved(tmp_path))  # the default MiniLM: another model

    def test_a_store_given_another_embedding_for_its_index_is_refused(self, tmp_path):
        from langchain_core.embeddings import DeterministicFakeEmbedding

        from langchain_semrag import SemanticVectorStore, SemragEmbeddings

        index = SemanticIndex.load(self.saved(tmp_path), embedder=FakeEmbedder(dim=384))
        with pytest.raises(EmbedderMismatchError, match="DeterministicFakeEmbedding"):
            SemanticVectorStore(DeterministicFakeEmbedding(size=384), index=index)
        store = SemanticVectorStore(SemragEmbeddings(FakeEmbedder(dim=384)), index=index)
        assert [d.id for d in store.similarity_search("bees dancing", k=1)] == ["bees"]

    def test_a_store_moves_to_another_model_and_keeps_answering(self, tmp_path):
        from langchain_semrag import GraphRetriever, SemanticVectorStore, SemragEmbeddings

        index = SemanticIndex.load(self.saved(tmp_path), embedder=FakeEmbedder(dim=384))
        index.reembed(OtherFake(dim=384))
        store = SemanticVectorStore(SemragEmbeddings(OtherFake(dim=384)), index=index)
        assert [d.id for d in store.similarity_search("bees dancing", k=1)] == ["bees"]
        docs = GraphRetriever(index=index, k=1).invoke("rocket orbit")
        assert docs[0].metadata["semrag_doc_id"] == "rocket"


class TestLlamaIndex:
    @staticmethod
    def persisted(tmp_path):
        """A LlamaIndex app: a store built with one 384-d model, persisted."""
        from llama_index.core import Document, StorageContext, VectorStoreIndex

        import llama_index_semrag as ls

        emb = ls.SemragEmbedding(FakeEmbedder(dim=384))
        store = ls.SemanticVectorStore(embed_model=FakeEmbedder(dim=384))
        ctx = StorageContext.from_defaults(vector_store=store)
        docs = [
            Document(text=t, id_=i)
            for i, t in zip(["bees", "rocket", "stocks"], TEXTS, strict=True)
        ]
        VectorStoreIndex.from_documents(docs, storage_context=ctx, embed_model=emb)
        ctx.persist(persist_dir=str(tmp_path))
        return str(tmp_path)

    @pytest.mark.model
    def test_a_reload_without_its_embed_model_is_refused(self, tmp_path):
        import llama_index_semrag as ls

        with pytest.raises(EmbedderMismatchError, match="all-MiniLM-L6-v2"):
            ls.SemanticVectorStore.from_persist_dir(self.persisted(tmp_path))

    def test_a_reload_with_another_model_is_refused_and_with_its_own_answers(self, tmp_path):
        import llama_index_semrag as ls

        path = self.persisted(tmp_path)
        with pytest.raises(EmbedderMismatchError, match="OtherFake"):
            ls.SemanticVectorStore.from_persist_dir(path, embed_model=OtherFake(dim=384))
        store = ls.SemanticVectorStore.from_persist_dir(path, embed_model=FakeEmbedder(dim=384))
        assert store.index.search("bees dancing", k=1)[0].chunk.doc_id == "bees"
