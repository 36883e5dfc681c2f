"""A large change reaches the dense and BM25 parts a block at a time.

A one-call add of a million chunks used to hold their vectors three times over while the
dense part was staged (each record's rows, one matrix of them all, and that matrix sorted
by id): gigabytes at that size. :meth:`Change.added_batches` hands them over in batches of
whole documents, and :meth:`DenseIndex.staged_batches` places each batch as it comes. The
result must be the index a one-batch change makes, exact or HNSW. BM25 held every token of
such a change as a Python string until it was published (about sixty bytes a token); it
now holds them as numbers (:class:`~semrag.index.parts.sparse.Numbered`) and writes a
segment per block.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import semrag.index.parts.dense as dense_module
import semrag.index.parts.passages as passages_module
import semrag.index.parts.sparse as sparse_module
from semrag import Document, SemanticIndex
from semrag.errors import ConfigError
from semrag.index import BM25Index, DenseIndex, bm25_tokenize
from semrag.index.change import Change, IndexedDocument
from semrag.index.parts.passages import NameRegistry
from semrag.index.parts.sparse import numbered_blocks
from semrag.static_embedder import StaticEmbedder
from semrag.testing import FakeEmbedder

DIM = 8


def record(name: str, ids: list[int], seed: int) -> IndexedDocument:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(len(ids), DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    empty = np.zeros((0, DIM), np.float32)
    return IndexedDocument(
        Document(name, "text"), [], empty, [], ids, vectors, [], empty, [], empty[0:1]
    )


def change_of(sizes: list[int], seed: int = 0) -> Change:
    docs, start = [], 0
    for i, n in enumerate(sizes):
        docs.append(record(f"d{i}", list(range(start, start + n)), seed + i))
        start += n
    return Change(1, added=tuple(docs))


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, 9), max_size=12), rows=st.integers(1, 20))
def test_batches_are_whole_documents_in_order_and_make_up_every_added_row(sizes, rows):
    change = change_of(sizes)
    batches = list(change.added_batches(rows))
    whole = change.added_vectors()
    if whole is None:
        assert batches == []
        return
    assert np.array_equal(np.concatenate([ids for ids, _ in batches]), np.arange(sum(sizes)))
    assert np.array_equal(np.concatenate([v for _, v in batches]), whole)
    ends = set(np.cumsum(sizes).tolist())
    for ids, vectors in batches[:-1]:
        assert len(ids) == len(vectors) >= rows  # full, except the last
        assert int(ids[-1]) + 1 in ends  # a batch ends where a document does
        # and holds no document past the one that filled it
        assert len(ids) - rows < max(sizes)


def test_documents_out_of_id_order_come_as_one_batch():
    a, b = record("a", [10, 11], 1), record("b", [3, 4, 5], 2)
    batches = list(Change(1, added=(a, b)).added_batches(1))
    assert len(batches) == 1
    assert batches[0][0].tolist() == [10, 11, 3, 4, 5]


@pytest.mark.parametrize("kind", ["flat", "hnsw", "auto"])
def test_a_change_staged_in_batches_is_the_index_one_batch_makes(kind, monkeypatch):
    change = change_of([5, 0, 7, 3, 9, 1, 6], seed=4)
    whole = DenseIndex(DIM, kind=kind, approximate="hnsw", approximate_from=12)
    ((ids, vectors),) = change.added_batches(10**9)
    whole.staged([], ids, vectors)()
    monkeypatch.setattr(dense_module, "_BLOCK", 4)
    batched = DenseIndex(DIM, kind=kind, approximate="hnsw", approximate_from=12)
    batched.stage(change)()
    assert whole.approximate == batched.approximate == (kind != "flat")
    assert np.array_equal(batched.ids, whole.ids)
    assert np.array_equal(batched.vectors, whole.vectors)
    queries = change.added_vectors()[::3]
    for (s1, i1), (s2, i2) in [(whole.search(queries, 4), batched.search(queries, 4))]:
        assert np.array_equal(i1, i2) and np.allclose(s1, s2)


def test_an_exact_index_grows_its_buffer_once_for_a_batched_change(monkeypatch):
    monkeypatch.setattr(dense_module, "_BLOCK", 4)
    change = change_of([3] * 30)
    index = DenseIndex(DIM)
    index.stage(change)()
    assert len(index) == 90
    assert index.buffer.shape[0] == 90  # no doubling past what the change needs


def test_the_default_index_adds_in_batches_and_answers_as_before(monkeypatch):
    """A real index: batches of a few rows give the hits one batch gives (exact search)."""
    docs = [
        Document(f"d{i}", f"Topic {i} is about rivers and towns. " * (i % 4 + 2)) for i in range(30)
    ]
    one = SemanticIndex(embedder=FakeEmbedder(dim=32), dense="flat")
    one.add_documents(docs)
    monkeypatch.setattr(dense_module, "_BLOCK", 5)
    many = SemanticIndex(embedder=FakeEmbedder(dim=32), dense="flat")
    many.add_documents(docs)
    assert len(many.reader().dense) == len(one.reader().dense) == len(one.chunks())
    for q in ["rivers", "Topic 7 towns", "about"]:
        assert [(h.chunk.doc_id, h.chunk.start) for h in many.search(q, k=5)] == [
            (h.chunk.doc_id, h.chunk.start) for h in one.search(q, k=5)
        ]


@settings(max_examples=50, deadline=None)
@given(
    lists=st.lists(st.lists(st.sampled_from("ab bc cd de ef fg".split()), max_size=6)),
    block=st.integers(1, 5),
)
def test_numbered_blocks_give_back_every_token_list(lists, block):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sparse_module, "_BLOCK_TEXTS", block)
        blocks = numbered_blocks(iter(lists))
    back = []
    for b in blocks:
        assert b.lengths.size <= block and len(set(b.vocab)) == len(b.vocab)
        at = 0
        for n in b.lengths.tolist():
            back.append([b.vocab[t] for t in b.numbers[at : at + n].tolist()])
            at += n
    assert back == lists


def test_bm25_adds_a_block_at_a_time_and_scores_as_one_block(monkeypatch):
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(40)]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(0, 12)))) for _ in range(60)]
    one = BM25Index()
    one.add(list(range(60)), texts)
    monkeypatch.setattr(sparse_module, "_BLOCK_TEXTS", 7)
    many = BM25Index()
    many.add(list(range(60)), texts)
    for query in ["w1", "w2 w3 w39", "w0 w0 w7", "absent"]:
        a, b = one.search(query, k=60), many.search(query, k=60)
        assert [i for i, _ in a] == [i for i, _ in b]
        assert np.allclose([s for _, s in a], [s for _, s in b])


def test_new_phrase_names_are_embedded_a_block_at_a_time_into_rows_reserved_once(monkeypatch):
    monkeypatch.setattr(passages_module, "_EMBED_BLOCK", 3)
    calls: list[int] = []

    names = passages_module.NAMES
    embed = names.embed

    def counting(texts):
        calls.append(len(texts))
        return embed(texts)

    monkeypatch.setattr(names, "embed", counting)
    registry = NameRegistry()
    for i in range(10):
        registry.name(f"Name {i}")
    buffer_before = registry.vectors.buf
    assert registry.embed_new() == 10
    assert max(calls) <= 3 and sum(calls) == 10
    assert registry.vectors.buf.shape[0] == 64  # one buffer: no copy while it filled
    assert registry.vectors.buf is not buffer_before
    assert np.allclose(registry.vectors.view, StaticEmbedder().embed(registry.names), atol=1e-6)


def test_bm25_takes_token_lists_as_its_own_tokenizer_makes_them():
    texts = ["Bees find flowers", "rockets reach the orbit", ""]
    by_text, by_tokens = BM25Index(), BM25Index()
    by_text.add([0, 1, 2], texts)
    by_tokens.add_tokens([0, 1, 2], [bm25_tokenize(t) for t in texts])
    assert by_tokens.search("bees orbit", k=3) == by_text.search("bees orbit", k=3)
    with pytest.raises(ConfigError, match="ids and token lists differ in length"):
        by_tokens.add_tokens([3, 4], [["one"]])
