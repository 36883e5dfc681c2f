"""The flows users write first keep every document they meant (issue: document identity)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.documents import Document as LCDocument
from llama_index.core import Document as LIDocument
from llama_index.core import StorageContext, VectorStoreIndex, load_index_from_storage
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import NodeRelationship, NodeWithScore, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery

import langchain_semrag
import llama_index_semrag
from semrag import SemanticIndex
from semrag.errors import DocumentConflictError
from semrag.identity import content_id
from semrag.testing import FakeEmbedder

ROOT = Path(__file__).resolve().parents[2]
CHESS = "Chess is played on a board of 64 squares. The rook moves in straight lines."
BEES = "Honey bees dance to tell their sisters where flowers grow. Bees store nectar."
SUMMIT = (
    "The climate summit of 2019 was held in Oslo. Delegates from forty countries came. "
    "They agreed on new targets."
)


def lc_store() -> langchain_semrag.SemanticVectorStore:
    return langchain_semrag.SemanticVectorStore(langchain_semrag.SemragEmbeddings(FakeEmbedder()))


def test_langchain_store_names_entries_by_source_and_upserts_only_with_ids():
    store = lc_store()
    splits = [
        LCDocument(CHESS, metadata={"source": "chess.txt", "start_index": 0}),
        LCDocument(BEES, metadata={"source": "bees.txt"}),  # no start_index: its content
    ]
    ids = store.add_documents(splits)
    assert ids == ["chess.txt#start_index=0", f"bees.txt#{content_id(BEES)}"]
    with pytest.raises(
        DocumentConflictError, match="2 document id"
    ):  # the same run again: refused, not doubled
        store.add_documents(splits)
    assert len(store.index) == 2
    store.add_documents([LCDocument("Rooks castle.", id=ids[0], metadata={"source": "c"})])
    assert store.get_by_ids([ids[0]])[0].page_content == "Rooks castle."  # LangChain upsert
    (hit,) = store.similarity_search("bees nectar", k=1)
    assert hit.id == ids[1] and hit.metadata["source"] == "bees.txt"
    assert store.delete([ids[0], "nope"]) is False and store.index.doc_ids == [ids[1]]


def test_langchain_store_async_flow():
    async def flow() -> langchain_semrag.SemanticVectorStore:
        store = lc_store()
        await store.aadd_documents([LCDocument(CHESS, metadata={"source": "chess.txt"})])
        with pytest.raises(DocumentConflictError, match="1 document id"):
            await store.aadd_documents([LCDocument(CHESS, metadata={"source": "chess.txt"})])
        await store.aadd_documents([LCDocument(BEES, id="bees")])
        await store.adelete(["bees"])
        return store

    store = asyncio.run(flow())
    assert store.index.doc_ids == [f"chess.txt#{content_id(CHESS)}"]


def summit_nodes() -> list[TextNode]:
    """SUMMIT cut badly, as a splitter with a small budget does: a fragment 'in Oslo.'."""
    cuts = [SUMMIT.index(" in Oslo."), SUMMIT.index(" Delegates"), len(SUMMIT)]
    start, nodes = 0, []
    for i, end in enumerate(cuts):
        text = SUMMIT[start:end].strip()
        at = SUMMIT.index(text, start)
        nodes.append(
            TextNode(
                id_=f"n{i}",
                text=text,
                start_char_idx=at,
                end_char_idx=at + len(text),
                metadata={"topic": "climate"},
                relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id="summit")},
            )
        )
        start = end
    return nodes


def test_llama_index_nodes_of_one_document_are_one_document_and_spc_repairs_them():
    store = llama_index_semrag.SemanticVectorStore(embed_model=FakeEmbedder())
    nodes = summit_nodes()
    assert store.add(nodes) == ["n0", "n1", "n2"]
    assert store.index.doc_ids == ["summit"] and len(store.index.chunks("summit")) == 3
    assert store.index.document("summit").text == SUMMIT
    res = store.query(VectorStoreQuery(query_str="in Oslo", similarity_top_k=3))
    assert sorted(res.ids) == ["n0", "n1", "n2"]
    assert all(n.ref_doc_id == "summit" and n.metadata == {"topic": "climate"} for n in res.nodes)
    fragment = [NodeWithScore(node=n, score=1.0) for n in res.nodes if n.node_id == "n1"]
    assert fragment[0].node.get_content() == "in Oslo."
    spc = llama_index_semrag.SPCPostprocessor(index=store.index, options={"audit": False})
    out, *context = spc.postprocess_nodes(fragment, query_str="Where was the climate summit held?")
    assert out.node.metadata["semrag_spc"]["action"] == "repaired"
    assert out.node.get_content() == "in Oslo."  # the hit first, then the rest of its sentence
    assert context[0].node.metadata["semrag_spc"]["action"] == "context"
    assert "climate summit" in context[0].node.get_content()


def test_llama_index_batches_join_their_document_and_node_deletes_keep_the_rest():
    store = llama_index_semrag.SemanticVectorStore(embed_model=FakeEmbedder())
    first, second, third = summit_nodes()
    store.add([first])
    asyncio.run(store.async_add([second, third]))  # the next batch of the same document
    assert store.index.doc_ids == ["summit"] and len(store.index.chunks()) == 3
    store.add([TextNode(**{**second.model_dump(), "metadata": {"topic": "new"}})])  # upsert
    assert [n.metadata["topic"] for n in store.get_nodes(["n1"])] == ["new"]
    assert len(store.get_nodes()) == 3
    store.delete_nodes(["n0"])
    assert sorted(n.node_id for n in store.get_nodes()) == ["n1", "n2"]
    store.delete_nodes(["n1", "n2"])
    assert store.index.doc_ids == []


def test_llama_index_vector_store_index_persists_and_loads(tmp_path):
    emb = llama_index_semrag.SemragEmbedding(FakeEmbedder())
    store = llama_index_semrag.SemanticVectorStore(emb)
    storage = StorageContext.from_defaults(vector_store=store)
    docs = [LIDocument(text=SUMMIT, id_="summit"), LIDocument(text=CHESS, id_="chess")]
    index = VectorStoreIndex.from_documents(
        docs,
        storage_context=storage,
        embed_model=emb,
        transformations=[SentenceSplitter(chunk_size=20, chunk_overlap=0)],
        insert_batch_size=1,  # one node per add: the nodes still meet in their document
    )
    assert sorted(store.index.doc_ids) == ["chess", "summit"]
    assert len(store.index.chunks("summit")) > 1
    storage.persist(str(tmp_path))
    assert (tmp_path / "default__vector_store").is_dir()
    loaded = llama_index_semrag.SemanticVectorStore.from_persist_dir(str(tmp_path), embed_model=emb)
    again = load_index_from_storage(
        StorageContext.from_defaults(persist_dir=str(tmp_path), vector_store=loaded),
        embed_model=emb,
    )
    before = index.as_retriever(similarity_top_k=2).retrieve("Oslo summit")
    after = again.as_retriever(similarity_top_k=2).retrieve("Oslo summit")
    assert [n.node.node_id for n in after] == [n.node.node_id for n in before]
    assert all(n.node.ref_doc_id in ("summit", "chess") for n in after)
    again.delete_ref_doc("summit")
    assert loaded.index.doc_ids == ["chess"]


def run_app(name: str) -> str:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


@pytest.mark.model
def test_the_langchain_app_keeps_every_file_across_changes_and_processes():
    out = run_app("langchain_app.py")
    files = ["data/bees.txt", "data/chess.txt", "data/rockets.txt", "data/tea.txt"]
    assert f"after adding tea: {sorted([*files, 'data/bread.txt'])}" in out
    assert "refused: ['data/chess.txt']" in out and "deleted bread: True" in out
    assert f"saved: {files}" in out and f"loaded: {files}" in out  # a new process
    assert "[data/bees.txt] Honey bees dance" in out  # the chain cites its source
    assert "top hit: data/chess.txt | me. Castling moves the king two squares." in out


@pytest.mark.model
def test_the_llama_index_app_keeps_every_file_across_changes_and_processes():
    out = run_app("llama_index_app.py")
    assert "documents: ['data/bees.txt', 'data/chess.txt', 'data/rockets.txt']" in out
    assert "source: data/bees.txt" in out
    kept = "['data/bees.txt', 'data/chess.txt', 'data/tea.txt']"
    assert f"persisted: {kept}" in out and f"loaded: {kept}" in out
    assert "top hit: data/chess.txt | me. Castling moves the king two squares." in out


def test_semantic_index_ingests_llama_index_nodes_by_their_document():
    index = SemanticIndex(embedder=FakeEmbedder(), ssg=False)
    index.add_chunks(summit_nodes())
    assert index.doc_ids == ["summit"] and index.document("summit").text == SUMMIT
