"""Entity-name search for resolution: exact, or from an HNSW index (``name_search="hnsw"``).

The HNSW search must find what the exact range search finds: a cluster of names larger
than its first search depth (it searches deeper while every hit is near), names that come
and go (masked, then compacted), and a knowledge graph that follows an index with it
equals a fresh exact build on a small corpus.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from semrag import Document, SemanticIndex
from semrag.errors import ConfigError, StoreError
from semrag.graph import KnowledgeGraph
from semrag.graph._name_index import NameIndex
from semrag.index.storage.persist import saved_folder
from semrag.testing import FakeEmbedder

DIM = 32


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def names_and_vectors(seed: int = 0) -> tuple[list[str], np.ndarray]:
    """1,500 scattered names and a tight cluster of 80 (more than the first search depth)."""
    rng = np.random.default_rng(seed)
    scattered = unit(rng.normal(size=(1500, DIM)))
    centre = unit(rng.normal(size=(1, DIM)))
    cluster = unit(centre + 0.02 * rng.normal(size=(80, DIM)))
    keys = [f"n{i}" for i in range(1500)] + [f"c{i}" for i in range(80)]
    return keys, np.concatenate([scattered, cluster])


def both(keys: list[str], vectors: np.ndarray) -> tuple[NameIndex, NameIndex]:
    exact, approx = NameIndex(mode="exact"), NameIndex(mode="hnsw")
    for index in (exact, approx):
        for a in range(0, len(keys), 300):  # added change by change
            index.add(keys[a : a + 300], vectors[a : a + 300])
    return exact, approx


def test_the_hnsw_search_finds_what_the_exact_search_finds():
    keys, vectors = names_and_vectors()
    exact, approx = both(keys, vectors)
    want, got = exact.within(keys, 0.9), approx.within(keys, 0.9)
    assert len(want["c0"]) == 79  # the whole cluster, deeper than the first search
    assert got["c0"] == want["c0"]
    found = sum(len(set(got[k]) & set(want[k])) for k in keys)
    assert found / sum(len(want[k]) for k in keys) >= 0.99
    assert all(set(got[k]) <= set(want[k]) for k in keys)  # never a name below the threshold


def test_removed_names_are_never_found_and_compaction_keeps_the_search():
    keys, vectors = names_and_vectors(1)
    exact, approx = both(keys, vectors)
    for k in keys[::2] + keys[1::4]:  # three quarters removed: compacted on the way
        exact.remove(k)
        approx.remove(k)
    left = [k for k in keys if k in exact]
    assert left and all(k in approx for k in left)
    want, got = exact.within(left, 0.9), approx.within(left, 0.9)
    assert got["c3"] == want["c3"]
    assert all(set(got[k]) <= set(left) for k in left)


def test_auto_searches_exactly_until_a_search_is_too_large(monkeypatch):
    monkeypatch.setattr(NameIndex, "BUDGET", 50_000)
    keys, vectors = names_and_vectors(2)
    exact, auto = NameIndex(mode="exact"), NameIndex(mode="auto")
    for index in (exact, auto):
        index.add(keys, vectors)
    assert auto.within(keys[:20], 0.9) == exact.within(keys[:20], 0.9)  # 20 x 1,580 pairs
    assert not auto.approximate
    assert auto.within(keys[-80:], 0.9) == exact.within(keys[-80:], 0.9)  # over the budget
    assert auto.approximate  # built, and kept from now on
    auto.add(["late"], vectors[-1:])
    exact.add(["late"], vectors[-1:])
    assert auto.within(["late"], 0.9) == exact.within(["late"], 0.9)


STORIES = [
    "Barack Obama met Angela Merkel in Berlin. Obama spoke about trade.",
    "Angela Merkel visited Paris. Merkel met Emmanuel Macron there.",
    "Barack Obama flew to Paris. Obama and Macron discussed climate.",
    "Emmanuel Macron spoke in Berlin. Macron praised Angela Merkel.",
]


def test_a_graph_with_hnsw_name_search_follows_the_index_like_an_exact_one():
    from tests.unit.test_living_index import graph_table

    index = SemanticIndex(embedder=FakeEmbedder(dim=DIM), ssg=False)
    index.add_documents([Document(f"s{i}", t) for i, t in enumerate(STORIES[:2])])
    kg = KnowledgeGraph.build(index, communities=False, name_search="hnsw")
    for op, doc_id, text in [
        ("add", "s2", STORIES[2]),
        ("delete", "s0", None),
        ("add", "s3", STORIES[3]),
        ("add", "s0", STORIES[0]),
    ]:
        if op == "add":
            index.add_documents([Document(doc_id, text)])
        else:
            index.delete(doc_id)
        fresh_index = SemanticIndex(embedder=FakeEmbedder(dim=DIM), ssg=False)
        fresh_index.add_documents([Document(d, index.document(d).text) for d in index.doc_ids])
        fresh = KnowledgeGraph.build(fresh_index, communities=False)
        assert graph_table(kg) == graph_table(fresh), (op, doc_id)


def test_the_name_search_is_saved_with_the_ledger_and_checked(tmp_path):
    index = SemanticIndex(embedder=FakeEmbedder(dim=DIM), ssg=False)
    index.add_documents([Document("s0", STORIES[0])])
    kg = KnowledgeGraph.build(index, communities=False, name_search="hnsw")
    kg.save_ledger(tmp_path / "ledger")
    data = json.loads(
        (saved_folder(tmp_path / "ledger") / "ledger.json").read_text(encoding="utf-8")
    )
    assert data["name_search"] == "hnsw"
    kg.detach()
    back = KnowledgeGraph.resume(index, kg.store, tmp_path / "ledger")
    assert back.held_bytes()["their HNSW index"] > 0
    back.detach()
    data["name_search"] = "fuzzy"
    (saved_folder(tmp_path / "ledger") / "ledger.json").write_text(
        json.dumps(data), encoding="utf-8"
    )
    with pytest.raises(
        StoreError, match=r"ledger.json is missing or corrupt \(checksum mismatch\)"
    ):
        KnowledgeGraph.resume(index, kg.store, tmp_path / "ledger")
    with pytest.raises(ConfigError, match="name_search"):
        KnowledgeGraph.build(index, name_search="fuzzy")


@pytest.mark.parametrize("mode", ["hnsw", "auto"])
def test_the_hnsw_index_holds_the_rows_once(monkeypatch, mode):
    monkeypatch.setattr(NameIndex, "BUDGET", 50_000)
    keys, vectors = names_and_vectors(3)
    index = NameIndex(mode=mode)
    for a in range(0, len(keys), 300):
        index.add(keys[a : a + 300], vectors[a : a + 300])
    index.within(keys, 0.9)  # "auto": over the budget, so the HNSW index is built
    assert index.approximate
    assert index._vectors is None  # no second copy of the rows
    rounded = vectors.astype(np.float32).astype(np.float64)
    for i in (0, 777, len(keys) - 1):
        got = index.vector(keys[i])
        assert got.dtype == np.float64 and np.array_equal(got, rounded[i])
    index.add(["late"], vectors[:1])  # rows added later go to the index too
    assert index._vectors is None and np.array_equal(index.vector("late"), rounded[0])
    for k in keys[::2] + keys[1::4]:  # compacted from the index's own rows
        index.remove(k)
    left, rows = index.rows()
    want = [i for i, k in enumerate(keys) if k in index]
    assert left == [keys[i] for i in want] + ["late"]
    assert np.array_equal(rows, np.concatenate([rounded[want], rounded[:1]]))


def test_a_dropped_stage_in_the_shared_hnsw_graph_is_rebuilt_around():
    keys, vectors = names_and_vectors(4)
    exact, approx = both(keys[:900], vectors[:900])
    approx._ann.added(np.ones((5, DIM), np.float32))  # a staged change that was dropped
    for index in (exact, approx):
        index.add(keys[900:], vectors[900:])
    rounded = vectors.astype(np.float32).astype(np.float64)
    assert all(np.array_equal(approx.vector(k), rounded[i]) for i, k in enumerate(keys))
    want, got = exact.within(keys, 0.9), approx.within(keys, 0.9)
    assert got["c0"] == want["c0"]
    assert all(set(got[k]) <= set(want[k]) for k in keys)


def test_held_bytes_name_each_holder_of_the_graphs_vectors():
    index = SemanticIndex(embedder=FakeEmbedder(dim=DIM), ssg=False)
    index.add_documents([Document(f"s{i}", s) for i, s in enumerate(STORIES)])
    exact = KnowledgeGraph.build(index, communities=False, name_search="exact").held_bytes()
    hnsw = KnowledgeGraph.build(index, communities=False, name_search="hnsw").held_bytes()
    n = len(KnowledgeGraph.build(index, communities=False).store.entities())
    assert exact["entity name vectors"] >= n * DIM * 4  # one float32 row per entity at least
    assert exact["name vectors for resolution"] > 0 and exact["their HNSW index"] == 0
    assert hnsw["their HNSW index"] > 0 and hnsw["name vectors for resolution"] == 0
    assert KnowledgeGraph(index=index).held_bytes() == dict.fromkeys(exact, 0)  # follows nothing
