"""The dense channel on the user's vector store equals the embedded one.

Backends: LangChain's InMemoryVectorStore (it embeds with the index's model), LangChain
FAISS (it takes semrag's vectors through add_embeddings) and LlamaIndex's
SimpleVectorStore (semrag's vectors as node embeddings). Each must give the same dense
top-k (ids and scores) as the embedded flat index, after any sequence of changes, and the
retrievers built on the index the same results.
"""

from __future__ import annotations

import warnings

import faiss
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core.vector_stores import SimpleVectorStore

import langchain_semrag as lcs
import llama_index_semrag as lis
from semrag import Document, SemanticIndex
from semrag.errors import ConfigError, StoreError
from semrag.retrieval import IntentAwareRetriever, SSGRetriever

with warnings.catch_warnings():  # the package warns on import that it is being sunset
    warnings.simplefilter("ignore", DeprecationWarning)
    from langchain_community.docstore.in_memory import InMemoryDocstore
    from langchain_community.vectorstores import FAISS

DIM = 32
TEXTS = [
    "Honey bees dance to tell the hive where flowers grow. The queen lays the eggs.",
    "The rocket reached orbit after a long delay. Engineers cheered in the room.",
    "Stock prices fell as investors sold their shares. The market closed lower.",
    "Marie Curie was born in Warsaw. She won the Nobel Prize twice.",
    "Warsaw lies on the Vistula river. It is the capital of Poland.",
    "Cats sleep most of the day. A cat purrs when it is content.",
]
QUERIES = ["where do bees find flowers", "river through Warsaw", "market shares", "orbit"]


def embedder():
    # Random-looking vectors: no two scores tie, so every backend's order is determined.
    return lcs.LangChainEmbedder(DeterministicFakeEmbedding(size=DIM))


def clients(emb):
    lc_faiss = FAISS(
        embedding_function=lcs.SemragEmbeddings(emb),
        index=faiss.IndexFlatIP(DIM),
        docstore=InMemoryDocstore(),
        index_to_docstore_id={},
    )
    return {
        "langchain-in-memory": lcs.VectorStoreClient(
            InMemoryVectorStore(lcs.SemragEmbeddings(emb))
        ),
        "langchain-faiss": lcs.VectorStoreClient(lc_faiss),
        "llama-index-simple": lis.VectorStoreClient(SimpleVectorStore()),
    }


BACKENDS = list(clients(embedder()))


def pair(backend):
    emb = embedder()
    embedded = SemanticIndex(embedder=emb, ssg=True)
    external = SemanticIndex(embedder=emb, dense=clients(emb)[backend], ssg=True)
    return embedded, external


def same_dense(a: SemanticIndex, b: SemanticIndex, k: int = 4) -> None:
    """The same chunks with the same scores in the same order.

    Two scores within float32 rounding of each other are one tie: the embedded index
    scores with one matrix product, the store-backed part with another, and their last
    bits may differ, which can swap two near-tied chunks. Chunks tied with the last place
    are compared by number only: which of them make the cut is each store's own tie rule.
    """
    for q in QUERIES:
        ha, hb = a.search(q, k=k), b.search(q, k=k)
        assert [h.score for h in ha] == pytest.approx([h.score for h in hb], abs=1e-5)

        def ranked(hits):
            last = round(hits[-1].score, 5) if len(hits) == k else None
            return sorted(
                (-round(h.score, 5), h.chunk.doc_id, h.chunk.start)
                for h in hits
                if round(h.score, 5) != last
            )

        assert ranked(ha) == ranked(hb)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dense_and_retrievers_equal_the_embedded_index(backend):
    a, b = pair(backend)
    docs = [Document(f"d{i}", t) for i, t in enumerate(TEXTS)]
    a.add_documents(docs)
    b.add_documents(docs)
    same_dense(a, b, k=len(a.chunks()) + 2)
    for q in QUERIES:
        for make in (
            lambda ix: IntentAwareRetriever(ix, k=3),
            lambda ix: SSGRetriever(ix, strategy="query_traversal", k=3),
        ):
            ra, rb = make(a).retrieve(q), make(b).retrieve(q)
            assert [(h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in ra] == [
                (h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in rb
            ]


@settings(max_examples=15, deadline=None)
@example("langchain-in-memory", [("add", 0), ("add", 1), ("add", 2), ("add", 3), ("add", 0)])
@given(
    st.sampled_from(BACKENDS),
    st.lists(
        st.tuples(st.sampled_from(["add", "delete"]), st.integers(0, len(TEXTS) - 1)),
        min_size=1,
        max_size=8,
    ),
)
def test_any_sequence_of_changes_keeps_the_backends_equal(backend, ops):
    a, b = pair(backend)
    for op, i in ops:
        for index in (a, b):
            if op == "add":
                index.add_documents(
                    [Document(f"d{i}", TEXTS[i] + f" Version {len(ops)}.")], on_conflict="replace"
                )
            else:
                index.delete(f"d{i}")
    assert a.doc_ids == b.doc_ids
    assert np.array_equal(a.reader().dense.ids, b.reader().dense.ids)
    same_dense(a, b, k=len(TEXTS) * 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_save_and_load_with_the_store(tmp_path, backend):
    emb = embedder()
    client = clients(emb)[backend]
    index = SemanticIndex(embedder=emb, dense=client, ssg=True)
    index.add_documents([Document(f"d{i}", t) for i, t in enumerate(TEXTS)])
    index.save(tmp_path / "i")
    with pytest.raises(ConfigError, match="pass it as dense="):
        SemanticIndex.load(tmp_path / "i", embedder=emb)
    loaded = SemanticIndex.load(tmp_path / "i", embedder=emb, dense=client)
    same_dense(index, loaded)
    flat = SemanticIndex(embedder=emb, ssg=True)
    flat.add_documents([Document("x", "Bees.")])
    flat.save(tmp_path / "flat")
    with pytest.raises(ConfigError, match="not"):
        SemanticIndex.load(tmp_path / "flat", embedder=emb, dense=client)


class Failing:
    """A store that takes nothing."""

    def upsert(self, ids, texts, vectors, metadatas):
        raise ConnectionError("store down")

    def delete(self, ids):
        raise AssertionError("nothing to delete")

    def search(self, vector, k):
        return []


def test_a_failing_store_leaves_the_index_as_it_was():
    index = SemanticIndex(embedder=embedder(), dense=Failing(), ssg=True)
    with pytest.raises(StoreError, match="store down"):
        index.add_documents([Document("a", "Bees dance.")])
    assert len(index) == 0 and index.search("bees", k=3) == []
    with pytest.raises(ConfigError, match="SemanticIndex: dense="):
        SemanticIndex(embedder=embedder(), dense=object(), ssg=True)


class Flaky:
    """An exact in-memory store whose next ``fail_deletes`` deletes fail."""

    def __init__(self) -> None:
        self.rows: dict[str, np.ndarray] = {}
        self.fail_deletes = 0

    def upsert(self, ids, texts, vectors, metadatas):
        self.rows.update(zip(ids, np.asarray(vectors, dtype=np.float32), strict=True))

    def delete(self, ids):
        if self.fail_deletes:
            self.fail_deletes -= 1
            raise ConnectionError("connection dropped")
        for i in ids:
            self.rows.pop(i, None)

    def search(self, vector, k):
        keys = list(self.rows)
        sims = [float(self.rows[i] @ vector) for i in keys]
        return [keys[j] for j in np.argsort(sims)[::-1][:k]]


def test_a_store_that_fails_to_delete_leaves_every_part_published(tmp_path):
    client = Flaky()
    index = SemanticIndex(embedder=embedder(), dense=client, ssg=True)
    index.add_documents([Document(f"d{i}", t) for i, t in enumerate(TEXTS)])
    before = set(index.reader().dense.ids.tolist())
    client.fail_deletes = 1
    with pytest.warns(RuntimeWarning, match="failed to delete .* next change"):
        index.delete("d0")
    gone = before - set(index.reader().dense.ids.tolist())
    assert gone
    # Every part took the change (the dense part's failure came after its publish).
    assert "d0" not in index.doc_ids and index.version == 2
    fresh = SemanticIndex(embedder=embedder(), ssg=True)
    fresh.add_documents([Document(f"d{i}", t) for i, t in enumerate(TEXTS) if i])
    for q in QUERIES:
        assert [h.chunk.doc_id for h in index.search_sparse(q, k=5)] == [
            h.chunk.doc_id for h in fresh.search_sparse(q, k=5)
        ]
    same_dense(index, fresh)
    assert gone <= {int(i) for i in client.rows}  # still in the store, never returned
    assert index.reader().dense.pending_deletes == len(gone)
    index.save(tmp_path / "i")  # the pending deletes are saved with the index
    index = SemanticIndex.load(tmp_path / "i", embedder=embedder(), dense=client)
    assert index.reader().dense.pending_deletes == len(gone)
    index.add_documents([Document("new", "Bees make honey in the hive.")])
    assert not gone & {int(i) for i in client.rows}  # deleted with the next change
    assert index.reader().dense.pending_deletes == 0
    assert {int(i) for i in client.rows} == set(index.reader().dense.ids.tolist())
