"""``kind="ivf"`` and the default ``kind="auto"``: an inverted file re-ranked on the stored rows.

Its lists are trained once, on a seeded sample of the rows there are when it is made; a
search scans the ``nprobe`` nearest lists and re-ranks ``refine_factor * k`` candidates on
the float16 (or float32) rows. Scanning every list and re-ranking every candidate makes it
exact search; removals, adds and a save between searches change nothing of that.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import semrag.index.parts.dense as dense_module
from semrag import Document, SemanticIndex
from semrag.errors import ConfigError
from semrag.index import DenseIndex
from semrag.index.parts.dense import MIN_IVF_ROWS
from semrag.testing import FakeEmbedder

DIM = 32


def unit_rows(n: int, seed: int) -> np.ndarray:
    """Rows around 40 topics, as chunk vectors cluster (not uniform on the sphere)."""
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(0).normal(size=(40, DIM))
    v = centres[rng.integers(0, 40, n)] + 0.4 * rng.normal(size=(n, DIM))
    v = v.astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def every_list(**kw) -> DenseIndex:
    """An inverted file that scans every list and re-ranks every candidate: exact."""
    return DenseIndex(
        DIM, kind="ivf", nprobe=4096, refine_factor=10_000, hnsw_dtype="float32", **kw
    )


def test_ivf_is_exact_below_its_training_rows_and_approximate_from_them():
    index = DenseIndex(DIM, kind="ivf")
    index.add(np.arange(MIN_IVF_ROWS - 1), unit_rows(MIN_IVF_ROWS - 1, 1))
    assert not index.approximate and index.breadth == ("exact", MIN_IVF_ROWS - 1)
    index.add(np.arange(MIN_IVF_ROWS - 1, 2000), unit_rows(2001 - MIN_IVF_ROWS, 2))
    assert index.approximate and index.breadth == ("nprobe", 256)
    rows = np.concatenate([unit_rows(MIN_IVF_ROWS - 1, 1), unit_rows(2001 - MIN_IVF_ROWS, 2)])
    _, ids = index.search(rows[::7], k=10)
    found = (ids == np.arange(0, 2000, 7)[:, None]).any(axis=1)
    assert found.mean() >= 0.99  # a row is among its own nearest
    held = index.vectors_of([3, 1500])  # the float16 rows it re-ranks on, as float32
    assert np.array_equal(held, rows[[3, 1500]].astype(np.float16).astype(np.float32))
    assert index.buffer.ntotal == 2000


@settings(max_examples=12, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 400), min_size=1, max_size=4),
    removed=st.lists(st.integers(0, 1500), max_size=60),
    seed=st.integers(0, 2**16),
)
def test_scanning_every_list_and_candidate_is_exact_search(sizes, removed, seed):
    ivf, flat = every_list(), DenseIndex(DIM)
    start = 700  # past the rows it trains on: the first change builds the lists
    for index in (ivf, flat):
        index.add(np.arange(start), unit_rows(start, seed))
    for i, n in enumerate(sizes):
        rows = unit_rows(n, seed + i + 1)
        for index in (ivf, flat):
            index.add(np.arange(start, start + n), rows)
        start += n
    gone = [ivf.remove(removed), flat.remove(removed)]
    assert gone[0] == gone[1] and len(ivf) == len(flat)
    queries = unit_rows(6, seed + 99)
    (s_ivf, i_ivf), (s_flat, i_flat) = ivf.search(queries, 10), flat.search(queries, 10)
    assert ivf.approximate == (len(ivf) >= MIN_IVF_ROWS)
    assert np.allclose(s_ivf, s_flat, atol=1e-5)
    for a, b, sims in zip(i_ivf.tolist(), i_flat.tolist(), s_flat, strict=True):
        # the same ids in the same order; two rows whose scores tie (a few float32 steps
        # apart, summed in another order) may come in either order
        tie_group = np.r_[0, np.cumsum(np.diff(sims) < -1e-5)]
        for g in np.unique(tie_group)[:-1]:  # the last group may be cut by k
            at = np.flatnonzero(tie_group == g)
            assert sorted(a[j] for j in at) == sorted(b[j] for j in at)


def test_a_narrow_search_still_finds_most_of_the_exact_top_ten():
    """Few codes re-ranked: approximate; more of them re-ranked: closer to exact."""
    rows, queries = unit_rows(20_000, 3), unit_rows(100, 4)
    flat = DenseIndex(DIM)
    flat.add(np.arange(rows.shape[0]), rows)
    exact = flat.search(queries, 10)[1]
    shares = []
    for refine in (32, 128):
        ivf = DenseIndex(DIM, kind="ivf", ivf_lists=64, nprobe=16, refine_factor=refine)
        ivf.add(np.arange(rows.shape[0]), rows)
        found = ivf.search(queries, 10)[1]
        pairs = zip(found, exact, strict=True)
        shares.append(np.mean([len(set(a) & set(b)) / 10 for a, b in pairs]))
    assert 0.7 <= shares[0] < 1.0 and shares[1] > shares[0]


def test_removed_rows_are_never_found_and_compaction_retrains(tmp_path):
    index = every_list()
    rows = unit_rows(1200, 5)
    index.add(np.arange(1200), rows)
    first = index.buffer
    index.remove(np.arange(0, 1200, 5))  # a fifth: masked, the lists kept
    assert index.buffer is first
    _, ids = index.search(rows[:50], k=3)
    assert not (np.isin(ids, np.arange(0, 1200, 5))).any()
    index.remove(np.arange(1, 1200, 5))  # two fifths: compacted into new lists
    assert index.buffer is not first and index.buffer.ntotal == len(index) == 720


@pytest.mark.parametrize("kind", ["ivf", "auto"])
def test_an_inverted_file_is_saved_and_loaded_as_it_is(tmp_path, kind):
    index = DenseIndex(DIM, kind=kind, approximate_from=MIN_IVF_ROWS, ivf_lists=16)
    rows = unit_rows(1500, 6)
    index.add(np.arange(1500), rows)
    index.remove([4, 9])
    files = index.save(tmp_path)
    assert "dense.faiss" in files and "dense_dead.npy" in files
    again = DenseIndex.load(tmp_path, index.config())
    assert again.approximate and again.breadth == index.breadth
    q = unit_rows(9, 7)
    assert again.search(q, 5)[1].tolist() == index.search(q, 5)[1].tolist()
    again.add(np.arange(1500, 1600), unit_rows(100, 8))  # grows in the loaded lists
    assert again.buffer.ntotal == 1600 and again.search(unit_rows(100, 8)[:1], 1)[1][0, 0] == 1500


def test_an_inverted_file_below_its_training_rows_is_refused():
    with pytest.raises(ConfigError, match="approximate_from must be >= 624"):
        DenseIndex(DIM, kind="auto", approximate_from=100)
    with pytest.raises(ConfigError, match="nprobe"):
        DenseIndex(DIM, kind="ivf", nprobe=0)
    odd = DenseIndex(30, kind="ivf")
    with pytest.raises(ConfigError, match="4 values a sub-vector"):
        odd.add(np.arange(700), np.eye(30, dtype=np.float32)[np.arange(700) % 30])


def test_the_default_index_turns_into_an_inverted_file_at_the_threshold(tmp_path, monkeypatch):
    monkeypatch.setattr(dense_module, "AUTO_APPROXIMATE_ROWS", MIN_IVF_ROWS)
    words = "bees rivers engines castles bread forests comets tides glass salt wool maps"
    docs = [
        Document(f"d{i}", f"The {w} of region {i} were studied. Records of {w} {i} fill a book.")
        for i, w in enumerate(words.split() * 60)
    ]
    index = SemanticIndex(embedder=FakeEmbedder())
    exact = SemanticIndex(embedder=FakeEmbedder(), dense="flat")
    for ix in (index, exact):
        ix.add_documents(docs[:300])
    assert not index.reader().dense.approximate
    for ix in (index, exact):
        ix.add_documents(docs[300:])
    assert index.reader().dense.approximate and len(index.chunks()) >= MIN_IVF_ROWS
    assert index.reader().dense.breadth[0] == "nprobe"
    hits = index.search("bees records 12", k=5)
    expected = exact.search("bees records 12", k=5)
    assert hits[0].chunk == expected[0].chunk and "bees" in hits[0].chunk.text
    index.reader().dense.nprobe = 300  # a tuned search is saved with the index
    index.save(tmp_path / "ix")
    loaded = SemanticIndex.load(tmp_path / "ix", embedder=FakeEmbedder())
    assert loaded.reader().dense.approximate and loaded.reader().dense.breadth == ("nprobe", 300)
    assert [h.chunk for h in loaded.search("bees records 12", k=5)] == [h.chunk for h in hits]


def test_a_search_for_many_hits_reranks_a_bounded_pool_and_keeps_its_order(monkeypatch):
    """Past MOST_RERANKED candidates the pool stops growing with k; hits stay best first."""
    import semrag.index.parts._approximate as approximate

    rows = unit_rows(3000, 9)
    index = DenseIndex(DIM, kind="ivf", ivf_lists=32, nprobe=32)
    index.add(np.arange(3000), rows)
    monkeypatch.setattr(approximate, "MOST_RERANKED", 400)
    scores, ids = index.search(rows[:3], 200)  # 200 hits: a pool of 400, not 32 * 200
    assert (ids >= 0).all() and (np.diff(scores, axis=1) <= 1e-6).all()
    assert ids[:, 0].tolist() == [0, 1, 2]
    bitmap = np.packbits(np.ones(8, bool))
    assert approximate.ListsLayout(32, 32, 32, "float16").params(bitmap, 200).k_factor == 2.0
    assert approximate.ListsLayout(32, 32, 32, "float16").params(bitmap, 10).k_factor == 32.0
