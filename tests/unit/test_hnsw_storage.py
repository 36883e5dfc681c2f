"""An HNSW graph stores its rows as float16 by default: half the bytes, the same neighbours."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semrag._buffers import hnsw_graph, stored_dtype
from semrag.errors import ConfigError
from semrag.index.parts.dense import DenseIndex

DIM = 24


def unit_rows(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def rounded(rows: np.ndarray) -> np.ndarray:
    return rows.astype(np.float16).astype(np.float32)


def code_bytes(index: DenseIndex) -> int:
    import faiss

    graph = index.buffer
    return faiss.downcast_index(graph.storage).code_size * graph.ntotal


@pytest.mark.parametrize(("dtype", "width"), [("float16", 2), ("float32", 4)])
def test_a_graph_stores_each_value_in_the_bytes_of_its_dtype(dtype, width):
    graph = hnsw_graph(DIM, 8, 40, dtype)
    graph.add(unit_rows(10, 0))
    assert stored_dtype(graph, DIM) == np.dtype(dtype)
    index = DenseIndex(DIM, kind="hnsw", hnsw_dtype=dtype)
    index.add(np.arange(50), unit_rows(50, 1))
    assert code_bytes(index) == 50 * DIM * width


def test_an_unknown_storage_type_is_refused():
    with pytest.raises(ConfigError, match="hnsw_dtype"):
        DenseIndex(DIM, hnsw_dtype="int8")
    with pytest.raises(ConfigError, match="float16"):
        hnsw_graph(DIM, 8, 40, "bfloat16")


def test_float16_rows_read_back_as_float32_and_score_as_they_are_stored():
    rows = unit_rows(200, 2)
    index = DenseIndex(DIM, kind="hnsw", ef_search=256)
    index.add(np.arange(200), rows)
    held = index.vectors_of(np.arange(200))
    assert held.dtype == np.float32
    assert np.array_equal(held, rounded(rows))
    assert np.array_equal(index.vectors, rounded(rows))
    scores, ids = index.search(rows[:20], k=1)
    assert ids[:, 0].tolist() == list(range(20))  # each row is its own nearest
    expected = np.einsum("ij,ij->i", rows[:20], rounded(rows[:20]))
    assert np.allclose(scores[:, 0], expected, atol=1e-5)


def test_float32_storage_keeps_every_value():
    rows = unit_rows(100, 3)
    index = DenseIndex(DIM, kind="hnsw", hnsw_dtype="float32")
    index.add(np.arange(100), rows)
    assert np.array_equal(index.vectors_of(np.arange(100)), rows)


def test_rows_equal_once_stored_share_one_stored_row():
    rows = rounded(unit_rows(40, 4))
    nudged = rows * np.float32(1 + 2e-5)  # apart by less than float16 tells apart
    assert not np.array_equal(nudged, rows)
    assert np.array_equal(rounded(nudged), rounded(rows))
    index = DenseIndex(DIM, kind="hnsw")
    index.add(np.arange(40), rows)
    index.add(np.arange(40, 80), nudged)
    index.add(np.arange(80, 120), rows)
    assert index.buffer.ntotal == 40  # each distinct stored value once
    _, ids = index.search(rows[:5], k=3)
    for j, found in enumerate(ids):
        assert sorted(found.tolist()) == [j, 40 + j, 80 + j]


def test_a_saved_graph_loads_with_the_type_it_stores(tmp_path):
    rows = unit_rows(120, 5)
    for dtype in ("float16", "float32"):
        index = DenseIndex(DIM, kind="hnsw", hnsw_dtype=dtype)
        index.add(np.arange(120), rows)
        where = tmp_path / dtype
        where.mkdir()
        index.save(where)
        config = index.config()
        assert config["hnsw_dtype"] == dtype
        del config["hnsw_dtype"]  # a save made before the setting existed
        loaded = DenseIndex.load(where, config)
        assert stored_dtype(loaded.buffer, DIM) == np.dtype(dtype)
        assert np.array_equal(loaded.vectors, index.vectors)
        loaded.add(np.arange(120, 130), unit_rows(10, 6))  # grows the graph it loaded
        assert stored_dtype(loaded.buffer, DIM) == np.dtype(dtype)
        assert loaded.search(rows[:10], k=1)[1][:, 0].tolist() == list(range(10))


@settings(max_examples=20, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=4),
    repeat=st.integers(0, 3),
    seed=st.integers(0, 2**16),
)
def test_float16_storage_finds_what_exact_search_of_the_stored_values_finds(sizes, repeat, seed):
    """Whatever the changes, the graph's rows are the rounded rows, each id reads its own."""
    index = DenseIndex(DIM, kind="hnsw", ef_search=256)
    all_rows, at = [], 0
    for j, n in enumerate(sizes):
        rows = unit_rows(n, seed + j)
        if j and repeat:  # some rows repeat an earlier change's
            same = min(repeat, n, len(all_rows[0]))
            rows[:same] = all_rows[0][:same]
        index.add(np.arange(at, at + n), rows)
        all_rows.append(rows)
        at += n
    every = np.concatenate(all_rows)
    assert np.array_equal(index.vectors_of(np.arange(at)), rounded(every))
    assert index.buffer.ntotal == np.unique(rounded(every), axis=0).shape[0]
    q = unit_rows(5, seed + 99)
    scores, ids = index.search(q, k=min(5, at))
    exact = q @ rounded(every).T
    for i in range(5):
        assert np.allclose(scores[i], np.sort(exact[i])[::-1][: ids.shape[1]], atol=1e-5)
