"""``kind="auto"``: exact search until the index is large, then one structure over every row.

The default ``SemanticIndex()`` answers as an exact index on a small corpus (every number
measured on the development sets is of exact search) and turns approximate once, at
:data:`~semrag.index.parts.dense.AUTO_APPROXIMATE_ROWS` rows, where an exact search would cost
more than a query's latency goal. It is saved and loaded as what it is at that moment. These
tests turn it into an HNSW graph (``approximate="hnsw"``), which works on a few rows; the
inverted file it turns into by default trains on hundreds (tests/unit/test_dense_ivf.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semrag import SemanticIndex
from semrag.errors import ConfigError
from semrag.index import DenseIndex
from semrag.testing import FakeEmbedder

DIM = 16


def unit_rows(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_auto_is_exact_below_the_threshold_and_approximate_from_it():
    index = DenseIndex(DIM, kind="auto", approximate="hnsw", approximate_from=100)
    index.add(np.arange(60), unit_rows(60, 1))
    assert not index.approximate
    index.add(np.arange(60, 120), unit_rows(60, 2))
    assert index.approximate and len(index) == 120
    rows = unit_rows(120, 0)
    rows[:60], rows[60:] = unit_rows(60, 1), unit_rows(60, 2)
    _, ids = index.search(rows, k=1)
    assert ids[:, 0].tolist() == list(range(120))  # every row is its own nearest
    # the graph stores float16 values (the default hnsw_dtype): read back as float32
    held = index.vectors_of([3, 70])
    assert held.dtype == np.float32
    assert np.array_equal(held, rows[[3, 70]].astype(np.float16).astype(np.float32))


@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 60), min_size=1, max_size=5),
    threshold=st.integers(1, 150),
    seed=st.integers(0, 2**16),
)
def test_auto_answers_as_exact_search_on_small_sets(sizes, threshold, seed):
    """On a few hundred rows HNSW (efSearch 128) visits them all: auto equals flat.

    (Its graph storing float32 rows: float16 ones score as the rounded rows do,
    tests/unit/test_hnsw_storage.py.)
    """
    auto = DenseIndex(
        DIM, kind="auto", approximate="hnsw", approximate_from=threshold, hnsw_dtype="float32"
    )
    flat = DenseIndex(DIM)
    start = 0
    for i, n in enumerate(sizes):
        rows = unit_rows(n, seed + i)
        for index in (auto, flat):
            index.add(np.arange(start, start + n), rows)
        start += n
    assert auto.approximate == (start >= threshold)
    queries = unit_rows(5, seed + 99)
    k = min(5, start)
    (s_auto, i_auto), (s_flat, i_flat) = auto.search(queries, k), flat.search(queries, k)
    assert i_auto.tolist() == i_flat.tolist()
    assert np.allclose(s_auto, s_flat, atol=1e-5)


def test_a_dropped_change_that_built_the_graph_leaves_the_exact_index_whole():
    index = DenseIndex(DIM, kind="auto", approximate="hnsw", approximate_from=100)
    index.add(np.arange(60), unit_rows(60, 1))
    index.staged([], np.arange(60, 120), unit_rows(60, 2))  # staged, never published
    assert not index.approximate and len(index) == 60
    index.add(np.arange(60, 70), unit_rows(10, 3))  # a small change: still exact
    assert not index.approximate and len(index) == 70
    _, ids = index.search(unit_rows(10, 3), k=1)
    assert ids[:, 0].tolist() == list(range(60, 70))


def test_compaction_below_the_threshold_is_exact_again():
    index = DenseIndex(DIM, kind="auto", approximate="hnsw", approximate_from=100)
    index.add(np.arange(120), unit_rows(120, 4))
    assert index.approximate
    index.remove(np.arange(60))  # half the rows: the index compacts to 60
    assert not index.approximate and len(index) == 60
    _, ids = index.search(unit_rows(120, 4)[60:], k=1)
    assert ids[:, 0].tolist() == list(range(60, 120))


@pytest.mark.parametrize("rows", [60, 120])
def test_auto_is_saved_and_loaded_as_what_it_is(tmp_path, rows):
    index = DenseIndex(DIM, kind="auto", approximate="hnsw", approximate_from=100)
    index.add(np.arange(rows), unit_rows(rows, 5))
    files = index.save(tmp_path)
    assert ("dense.faiss" in files) == (rows >= 100)
    again = DenseIndex.load(tmp_path, index.config())
    assert again.kind == "auto" and again.approximate == index.approximate
    q = unit_rows(7, 6)
    assert again.search(q, 5)[1].tolist() == index.search(q, 5)[1].tolist()


def test_a_bad_threshold_or_kind_is_refused():
    with pytest.raises(ConfigError, match="approximate_from"):
        DenseIndex(DIM, kind="auto", approximate="hnsw", approximate_from=0)
    with pytest.raises(ConfigError, match="'flat', 'ivf', 'hnsw' or 'auto'"):
        DenseIndex(DIM, kind="annoy")
    with pytest.raises(ConfigError, match="'ivf' or 'hnsw'"):
        DenseIndex(DIM, kind="auto", approximate="annoy")
    with pytest.raises(ConfigError, match="SemanticIndex: dense='annoy' is not allowed;"):
        SemanticIndex(embedder=FakeEmbedder(), dense="annoy")


def test_a_config_saved_with_the_old_threshold_name_turns_into_hnsw(tmp_path):
    """Saves made before the inverted file name ``hnsw_from``: they grow as they did."""
    old = DenseIndex(DIM, kind="auto", approximate="hnsw", approximate_from=100)
    old.add(np.arange(60), unit_rows(60, 7))
    old.save(tmp_path)
    config = {**old.config(), "hnsw_from": 100}
    for key in ("approximate_from", "approximate", "ivf_lists", "nprobe", "refine_factor"):
        config.pop(key)
    again = DenseIndex.load(tmp_path, config)
    assert again.approximate_from == 100 and not again.approximate
    again.add(np.arange(60, 120), unit_rows(60, 8))
    assert again.breadth == ("ef_search", 128)
