"""The HNSW dense index stores identical vectors once and answers as an exact index does."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semrag.errors import StoreError
from semrag.index.parts._distinct import DistinctRows, row_hashes
from semrag.index.parts.dense import DenseIndex

DIM = 8
POOL = np.random.default_rng(7).normal(size=(24, DIM)).astype(np.float32)
POOL /= np.linalg.norm(POOL, axis=1, keepdims=True)
# float16 values: the graph's default storage (hnsw_dtype="float16") holds them exactly
POOL = POOL.astype(np.float16).astype(np.float32)

# a step: add vectors picked from the pool (many repeats), or remove some ids
steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.lists(st.integers(0, POOL.shape[0] - 1), max_size=30)),
        st.tuples(st.just("remove"), st.lists(st.integers(0, 200), max_size=25)),
    ),
    min_size=1,
    max_size=8,
)


def _replay(kind: str, plan: list) -> tuple[DenseIndex, dict[int, int]]:
    index, held, next_id = DenseIndex(DIM, kind=kind), {}, 0
    for op, values in plan:
        if op == "add":
            ids = np.arange(next_id, next_id + len(values))
            next_id += len(values)
            index.add(ids, POOL[values] if values else np.zeros((0, DIM), np.float32))
            held.update(zip(ids.tolist(), values, strict=True))
        else:
            index.remove(values)
            for i in values:
                held.pop(i, None)
    return index, held


@settings(max_examples=60, deadline=None)
@given(steps)
def test_hnsw_with_repeated_vectors_answers_as_the_exact_index(plan):
    hnsw, held = _replay("hnsw", plan)
    flat, _ = _replay("flat", plan)
    assert hnsw.ids.tolist() == flat.ids.tolist() == sorted(held)
    # distinct pool vectors score apart: only a vector's own rows tie
    gaps = np.diff(np.sort(POOL @ POOL.T, axis=1), axis=1)
    assert gaps.min() > 1e-4
    np.testing.assert_array_equal(hnsw.vectors, flat.vectors)
    live = sorted(held)
    exact = POOL.astype(np.float64) @ POOL[[held[i] for i in live]].astype(np.float64).T
    for k in (1, 5, 40):
        scores, ids = hnsw.search(POOL, k)
        for q in range(POOL.shape[0]):  # best first; one vector's rows: lower ids first
            want = sorted(range(len(live)), key=lambda j, q=q: (-exact[q, j], live[j]))[:k]
            assert ids[q].tolist() == [live[j] for j in want] + [-1] * (k - len(want))
            np.testing.assert_allclose(scores[q, : len(want)], exact[q, want], atol=1e-5)
    if held:
        # the graph stores each distinct vector once (a compaction starts a new graph)
        distinct = np.unique(POOL[list(held.values())], axis=0).shape[0]
        assert distinct <= hnsw.buffer.ntotal <= POOL.shape[0]


def test_a_repeated_vector_is_stored_once_and_each_row_reads_it(tmp_path):
    index = DenseIndex(DIM, kind="hnsw")
    index.add(np.arange(6), POOL[[0, 1, 0, 2, 1, 0]])
    index.add(np.arange(6, 9), POOL[[2, 3, 0]])
    assert index.buffer.ntotal == 4
    np.testing.assert_array_equal(index.vectors_of([2, 8, 3]), POOL[[0, 0, 2]])
    np.testing.assert_array_equal(np.asarray(index.rows_view(np.arange(6, 9))), POOL[[2, 3, 0]])
    scores, ids = index.search(POOL[0], 5)
    assert ids[0].tolist()[:4] == [0, 2, 5, 8]  # every row holding it, lower ids first
    np.testing.assert_allclose(scores[0, :4], POOL[0] @ POOL[0], rtol=1e-6)
    index.remove([0, 5])
    assert index.search(POOL[0], 2)[1][0].tolist() == [2, 8]
    index.save(tmp_path)
    back = DenseIndex.load(tmp_path, index.config())
    assert back.buffer.ntotal == 4
    assert back.search(POOL[:4], 4)[1].tolist() == index.search(POOL[:4], 4)[1].tolist()
    back.add([20], POOL[[1]])  # the loaded graph's vectors are known: stored once still
    assert back.buffer.ntotal == 4 and back.search(POOL[1], 3)[1][0].tolist() == [1, 4, 20]


def test_a_dropped_stage_that_stored_nothing_leaves_no_trace():
    index = DenseIndex(DIM, kind="hnsw")
    index.add(np.arange(3), POOL[:3])
    graph = index.buffer
    index.staged([], [3, 4], POOL[[0, 1]])  # repeats only: placed, never published
    index.add([5, 6], POOL[[2, 5]])  # the same rows again, other vectors
    assert index.buffer is graph and graph.ntotal == 4
    assert index.search(POOL[0], 3)[1][0].tolist()[:1] == [0]
    assert index.search(POOL[2], 2)[1][0].tolist() == [2, 5]
    np.testing.assert_array_equal(index.vectors_of([5, 6]), POOL[[2, 5]])


def test_a_version_read_before_repeats_were_added_answers_as_before():
    index = DenseIndex(DIM, kind="hnsw")
    index.add(np.arange(4), POOL[:4])
    before, old = index.search(POOL[:4], 3), index._version
    index.add(np.arange(4, 8), POOL[:4])  # every vector again
    index._version, new = old, index._version
    assert index.search(POOL[:4], 3)[1].tolist() == before[1].tolist()
    index._version = new
    assert index.search(POOL[1], 2)[1][0].tolist() == [1, 5]


def test_a_save_from_before_serials_loads(tmp_path):
    index = DenseIndex(DIM, kind="hnsw")
    index.add(np.arange(5), POOL[:5])
    index.save(tmp_path)
    (tmp_path / "dense_serials.npy").unlink()  # one stored row per row, as saves were
    back = DenseIndex.load(tmp_path, index.config())
    assert back.search(POOL[:5], 1)[1].ravel().tolist() == list(range(5))
    np.save(tmp_path / "dense_serials.npy", np.array([0, 1, 2, 3, 9]))
    with pytest.raises(StoreError, match="fewer than its rows name"):
        DenseIndex.load(tmp_path, index.config())


def test_colliding_hashes_store_both_vectors():
    state = DistinctRows(type("Graph", (), {"ntotal": 0})())
    a, b = POOL[:1], POOL[1:2]
    state._hashes = row_hashes(b)  # stored row 0 holds ``a`` under ``b``'s hash: a collision
    state._serials = np.array([0])
    state.graph.ntotal = 1
    state.first = np.array([0])
    state.rows = 1
    serials, novel = state.place(b, lambda s: np.repeat(a, s.size, axis=0))
    assert novel.tolist() == [0] and serials.tolist() == [1]  # ``b`` is stored too
    assert state._serials.tolist() == [0]  # the hash keeps its first stored row


@given(st.lists(st.integers(0, 5), min_size=1, max_size=40))
def test_equal_rows_hash_alike(picks):
    rows = POOL[picks]
    hashes = row_hashes(rows)
    for i, p in enumerate(picks):
        for j, q in enumerate(picks):
            assert (hashes[i] == hashes[j]) == (p == q)


def test_a_rows_view_keeps_only_its_own_serials():
    """A document's view of its rows must not keep a version's serials of every row alive."""
    index = DenseIndex(DIM, kind="hnsw")
    index.add(np.arange(20), POOL[np.arange(20) % 7])
    view = index.rows_view(np.arange(3, 6))
    assert not np.shares_memory(view.serials, index._version.serials)
    np.testing.assert_array_equal(np.asarray(view), POOL[[3, 4, 5]])
