"""Readers never wait for a change to be computed, and the dense index keeps versions.

* :class:`DenseIndex` changed by random adds and removals (some ids removed and left as
  dead rows, some compactions) answers exactly like one built fresh from the survivors,
  flat and HNSW, and saves and loads with its dead rows;
* a version taken before a change answers as before, whatever the change does;
* while a commit computes its change (the graph, the slow part), readers of every part
  go on and see the previous version; the new one appears all at once.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semrag import Document, SemanticIndex
from semrag._buffers import StoredRows
from semrag.errors import StoreError
from semrag.index import DenseIndex
from semrag.index.parts.live_ssg import LiveSSG
from semrag.testing import FakeEmbedder

DIM = 8

# Few distinct directions, so many rows tie exactly: ties must go to the lower id.
_DIRECTIONS = np.eye(DIM, dtype=np.float32)[:3]

ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.lists(st.integers(0, 2), min_size=1, max_size=12)),
        st.tuples(st.just("remove"), st.lists(st.integers(0, 60), min_size=1, max_size=10)),
    ),
    min_size=1,
    max_size=25,
)


def _fresh(kind: str, alive: dict[int, np.ndarray]) -> DenseIndex:
    fresh = DenseIndex(DIM, kind=kind)
    if alive:
        ids = sorted(alive)
        fresh.add(ids, np.stack([alive[i] for i in ids]))
    return fresh


@settings(max_examples=60, deadline=None)
@given(ops=ops, query=st.integers(0, 2))
def test_a_changed_dense_index_answers_like_a_fresh_one(ops, query):
    idx = DenseIndex(DIM)
    alive: dict[int, np.ndarray] = {}
    next_id = 0
    for op, args in ops:
        if op == "add":
            ids = list(range(next_id, next_id + len(args)))
            next_id += len(args)
            vecs = _DIRECTIONS[args]
            idx.add(ids, vecs)
            alive.update(zip(ids, vecs, strict=True))
        else:
            expected = len({i for i in args if i in alive})
            assert idx.remove(args) == expected
            for i in args:
                alive.pop(i, None)
        fresh = _fresh("flat", alive)
        assert len(idx) == len(alive)
        assert idx.ids.tolist() == sorted(alive)
        np.testing.assert_array_equal(idx.vectors, fresh.vectors)
        for k in (1, 3, 50):
            got, want = idx.search(_DIRECTIONS[query], k), fresh.search(_DIRECTIONS[query], k)
            assert got[1].tolist() == want[1].tolist()  # ties: the lower id, in both
            np.testing.assert_array_equal(got[0], want[0])


def test_hnsw_deletes_are_skipped_without_a_rebuild_and_round_trip(tmp_path):
    rng = np.random.default_rng(1)
    v = rng.normal(size=(400, DIM)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    idx = DenseIndex(DIM, kind="hnsw")
    idx.add(np.arange(400), v)
    graph = idx._version.graph
    gone = np.arange(0, 400, 7)
    assert idx.remove(gone) == gone.size
    assert idx._version.graph is graph  # the graph is kept; removed rows are skipped
    hits = idx.search(v, 5)[1]
    assert not np.isin(hits, gone).any() and (hits >= 0).all()
    flat = _fresh("flat", {i: v[i] for i in range(400) if i % 7})
    recall = (idx.search(v[1:50], 1)[1] == flat.search(v[1:50], 1)[1]).mean()
    assert recall >= 0.95

    idx.save(tmp_path)
    loaded = DenseIndex.load(tmp_path, idx.config())
    assert loaded.ids.tolist() == idx.ids.tolist()
    assert loaded.search(v[:30], 5)[1].tolist() == idx.search(v[:30], 5)[1].tolist()
    # A quarter of the rows removed: compacted, and the graph is new.
    idx.remove(np.arange(1, 400, 2))
    assert idx._version.dead is None and idx._version.graph is not graph
    assert not np.isin(idx.search(v, 5)[1], np.arange(1, 400, 2)).any()


def test_hnsw_holds_each_vector_once_and_a_version_keeps_its_rows(tmp_path):
    rng = np.random.default_rng(4)
    v = rng.normal(size=(3000, DIM)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    idx = DenseIndex(DIM, kind="hnsw", hnsw_dtype="float32")  # rows read back as given
    idx.add(np.arange(100), v[:100])
    graph = idx.buffer
    assert type(graph).__name__ == "IndexHNSWFlat"  # the graph holds the rows, no array
    old = idx.rows_view(np.arange(10, 20))
    assert isinstance(old, StoredRows) and old.index is graph
    np.testing.assert_array_equal(np.asarray(old), v[10:20])
    # a staged change inserts into the graph; dropped, the next one builds a new graph
    idx.staged([], np.arange(100, 200), v[100:200])
    idx.add(np.arange(200, 300), v[200:300])
    assert idx.buffer is not graph and idx.buffer.ntotal == 200
    np.testing.assert_array_equal(idx.vectors, np.concatenate([v[:100], v[200:300]]))
    # many inserts move FAISS's storage; rows read before still read the same
    graph = idx.buffer
    early = idx.rows_view(np.arange(200, 210))
    for a in range(300, 3000, 300):
        idx.add(np.arange(a, a + 300), v[a : a + 300])
    assert idx.buffer is graph
    np.testing.assert_array_equal(np.asarray(early), v[200:210])
    np.testing.assert_array_equal(np.asarray(old), v[10:20])
    np.testing.assert_array_equal(idx.vectors_of([5, 2999, 250]), v[[5, 2999, 250]])
    idx.remove(np.arange(0, 3000, 2))  # compacted: a new graph of the survivors
    assert idx.buffer is not graph
    kept = np.array([i for i in range(1, 3000, 2) if not 100 <= i < 200])  # never published
    assert idx.ids.tolist() == kept.tolist()
    np.testing.assert_array_equal(idx.vectors, v[kept])
    idx.save(tmp_path)
    back = DenseIndex.load(tmp_path, idx.config())
    np.testing.assert_array_equal(back.vectors, v[kept])
    assert back.search(v[:40], 5)[1].tolist() == idx.search(v[:40], 5)[1].tolist()
    np.save(tmp_path / "dense_vectors.npy", np.roll(v[kept], 1, axis=0))  # damaged save
    with pytest.raises(StoreError, match="other vectors"):
        DenseIndex.load(tmp_path, idx.config())


def test_hnsw_rows_read_while_inserts_move_the_storage_stay_right():
    rng = np.random.default_rng(5)
    v = rng.normal(size=(6000, DIM)).astype(np.float32)
    idx = DenseIndex(DIM, kind="hnsw")
    idx.add(np.arange(200), v[:200])
    old = idx.rows_view(np.arange(200))
    import faiss

    graph = idx.buffer
    faiss_storage = faiss.downcast_index(graph.storage)
    moves = {int(faiss_storage.codes.data())}
    done, wrong = threading.Event(), []

    def reader() -> None:
        pick = np.random.default_rng(threading.get_ident() % 2**32)
        while not done.is_set():
            rows = pick.integers(0, 200, 16)
            if not np.array_equal(old[rows], v[rows].astype(np.float16)):  # as stored
                wrong.append(rows)

    readers = [threading.Thread(target=reader) for _ in range(3)]
    for t in readers:
        t.start()
    try:
        for a in range(200, 6000, 100):
            idx.add(np.arange(a, a + 100), v[a : a + 100])
            moves.add(int(faiss_storage.codes.data()))
    finally:
        done.set()
        for t in readers:
            t.join(10)
    assert idx.buffer is graph and len(moves) > 3  # the storage moved while they read
    assert not wrong


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_a_version_taken_before_a_change_answers_as_before(kind):
    rng = np.random.default_rng(2)
    v = rng.normal(size=(200, DIM)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    idx = DenseIndex(DIM, kind=kind)
    idx.add(np.arange(100), v[:100])
    before = idx.search(v[:20], 5)
    old = idx._version
    idx.add(np.arange(100, 200), v[100:])  # appends into the same buffers
    idx.remove(np.arange(0, 100, 3))
    idx._version, new = old, idx._version
    again = idx.search(v[:20], 5)
    assert again[1].tolist() == before[1].tolist()
    idx._version = new
    assert np.isin(idx.search(v[100:120], 1)[1], np.arange(100, 200)).all()


def test_readers_go_on_while_a_commit_computes_its_change():
    index = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
    index.add_documents([Document("a", "Bees make honey. Hives hum all summer.")])
    inside, release = threading.Event(), threading.Event()
    apply = LiveSSG.apply

    def slow_apply(self, change):  # the graph's work, the slow part of a commit
        inside.set()
        assert release.wait(10)
        return apply(self, change)

    LiveSSG.apply = slow_apply
    try:
        writer = threading.Thread(
            target=index.add_documents,
            args=([Document("b", "Stocks fell sharply. Markets slid at the open.")],),
        )
        writer.start()
        assert inside.wait(10)
        # The commit is computing: every reader still answers, from the previous version.
        seen: list[object] = []
        reader = threading.Thread(
            target=lambda: seen.extend(
                [
                    index.version,
                    {h.chunk.doc_id for h in index.search("stocks", k=5)},
                    {h.chunk.doc_id for h in index.search_sparse("stocks markets", k=5)},
                    index.reader().ssg_view().graph.doc_ids,
                ]
            )
        )
        reader.start()
        reader.join(5)
        assert not reader.is_alive(), "a reader waited for the commit to compute"
        assert seen == [1, {"a"}, set(), ["a"]]
    finally:
        release.set()
        LiveSSG.apply = apply
        writer.join(10)
    assert index.version == 2
    assert {h.chunk.doc_id for h in index.search("stocks", k=5)} == {"a", "b"}
    assert index.reader().ssg_view().graph.doc_ids == ["a", "b"]


def test_a_change_that_fails_while_staged_changes_nothing():
    index = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
    index.add_documents([Document("a", "Bees make honey. Hives hum all summer.")])
    before = (index.version, index.doc_ids, len(index.reader().dense), len(index.reader().sparse))
    apply = LiveSSG.apply

    def failing(self, change):
        raise MemoryError("no room for the graph")

    LiveSSG.apply = failing
    try:
        with pytest.raises(MemoryError, match="no room for the graph"):
            index.add_documents([Document("b", "Stocks fell sharply.")])
    finally:
        LiveSSG.apply = apply
    assert (
        index.version,
        index.doc_ids,
        len(index.reader().dense),
        len(index.reader().sparse),
    ) == before
    assert {h.chunk.doc_id for h in index.search("stocks fell", k=5)} == {"a"}
    index.add_documents([Document("b", "Stocks fell sharply.")])  # and the index goes on
    assert index.doc_ids == ["a", "b"] and len(index.reader().dense) == len(index.chunks())


class _FailsLater(FakeEmbedder):
    """Fails on its ``fail_at``-th batch (a model that dies halfway through a bulk load)."""

    def __init__(self, fail_at: int) -> None:
        super().__init__(dim=DIM, cache_size=4)  # blocks of two sentences
        self.fail_at, self.batches = fail_at, 0

    def _embed_batch(self, texts):
        self.batches += 1
        if self.batches == self.fail_at:
            raise RuntimeError("model died")
        return super()._embed_batch(texts)


def test_one_add_documents_call_is_one_change_and_a_failure_adds_nothing():
    docs = [Document(f"d{i}", f"Doc {i} has bees. It has honey too.") for i in range(6)]
    index = SemanticIndex(embedder=FakeEmbedder(dim=DIM, cache_size=4), ssg=True)
    seen = []
    index.follow(type("Spy", (), {"apply": lambda self, change: seen.append(change)})())
    index.add_documents(docs)  # six blocks of two sentences
    assert index.version == 1 and len(seen) == 1 and len(seen[0].added) == 6

    broken = SemanticIndex(embedder=_FailsLater(fail_at=3), ssg=True)
    broken.add_documents([Document("keep", "Kept text. It stays.")])
    with pytest.raises(RuntimeError, match="model died"):
        broken.add_documents(docs)
    assert broken.doc_ids == ["keep"] and broken.version == 1
    assert {h.chunk.doc_id for h in broken.search("bees honey", k=5)} == {"keep"}
