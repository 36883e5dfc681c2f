"""``SSGConfig(knn="hnsw")``: the graph kept with a persistent node index (approximate).

The approximate mode does not equal a fresh build (the HNSW graph depends on the order
of the changes), so these tests check what it promises instead:

* every part except the inter-document lists equals the exact fresh build;
* every inter-document list is well formed (other documents only, live nodes, exact
  values at or above the floor, best first, no repeats);
* its lists find at least 90% of the exact lists' neighbours on clustered vectors;
* it survives a dropped stage, compaction, and a save and load (also through
  :class:`SemanticIndex`), and a damaged save is a typed error.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semrag import Document, SemanticIndex
from semrag.errors import StoreError
from semrag.graph import SSGConfig
from semrag.graph.live_ssg import LiveSSG
from semrag.index.change import Change, IndexedDocument
from semrag.testing import FakeEmbedder
from tests.unit.test_living_index import indexed_document

DIM = 24
CENTRES = np.random.default_rng(7).normal(size=(12, DIM))


def clustered_document(doc_id: str, n_sentences: int, seed: int, cfg: SSGConfig) -> IndexedDocument:
    """Sentences scattered around one of a few topic centres (so neighbours mean something)."""
    rng = np.random.default_rng(seed)
    centre = CENTRES[rng.integers(len(CENTRES))]
    sv = (centre + 1.2 * rng.normal(size=(n_sentences, DIM))).astype(np.float32)
    return indexed_document(doc_id, sv, cfg)


def exact_twin(cfg: SSGConfig) -> SSGConfig:
    return SSGConfig(**{**cfg.to_dict(), "knn": "flat"})


def assert_well_formed(ssg: LiveSSG) -> None:
    """Inter lists point at live nodes of other documents, with exact values, best first."""
    n = ssg.node_doc.size
    v = ssg.node_vectors.astype(np.float64)
    for i in range(n):
        cols, vals = ssg.inter_cols[i], ssg.inter_vals[i]
        filled = cols >= 0
        assert not (filled[1:] & ~filled[:-1]).any(), "an empty slot before a filled one"
        c, w = cols[filled], vals[filled]
        assert (c < n).all() and len(set(c.tolist())) == c.size
        assert (ssg.node_doc[c] != ssg.node_doc[i]).all(), "a neighbour in its own document"
        np.testing.assert_array_equal(w, (v[c] @ v[i]).astype(np.float32))
        assert (w >= ssg.config.min_inter).all()
        keys = list(zip((-w).tolist(), c.tolist(), strict=True))
        assert keys == sorted(keys), "not best first (ties: lower node)"
        assert (vals[~filled] == -np.inf).all()


def assert_same_except_inter(ann: LiveSSG, exact: LiveSSG) -> None:
    assert ann.doc_ids == exact.doc_ids
    for name in ("node_doc", "node_sentences", "intra_cols", "intra_vals", "bridge_cols"):
        np.testing.assert_array_equal(getattr(ann, name), getattr(exact, name), err_msg=name)
    np.testing.assert_array_equal(ann.node_vectors, exact.node_vectors)


def recall(ann: LiveSSG, exact: LiveSSG) -> float:
    found = wanted = 0
    for got, want in zip(ann.inter_cols, exact.inter_cols, strict=True):
        w = set(want[want >= 0].tolist())
        found += len(w & set(got[got >= 0].tolist()))
        wanted += len(w)
    return found / max(wanted, 1)


steps = st.lists(
    st.tuples(st.sampled_from(["add", "add", "delete"]), st.integers(0, 9), st.integers(0, 12)),
    min_size=1,
    max_size=16,
)


@settings(max_examples=30, deadline=None)
@given(ops=steps, top_x=st.integers(0, 4), floor=st.sampled_from([-1.0, 0.0, 0.3]))
def test_every_change_keeps_the_lists_well_formed(ops, top_x, floor):
    cfg = SSGConfig(window=2, top_k=3, top_x=top_x, top_t=2, min_inter=floor, knn="hnsw")
    live = LiveSSG(cfg, DIM)
    docs: dict[str, IndexedDocument] = {}
    for version, (op, d, n) in enumerate(ops, start=1):
        doc_id = f"d{d}"
        if op == "add":
            new = clustered_document(doc_id, n, seed=version, cfg=cfg)
            old = (docs.pop(doc_id),) if doc_id in docs else ()
            live.apply(Change(version, (new,), old))
            docs[doc_id] = new
        elif doc_id in docs:
            live.apply(Change(version, (), (docs.pop(doc_id),)))
        assert_well_formed(live)
        assert_same_except_inter(live, LiveSSG.fresh(exact_twin(cfg), DIM, list(docs.values())))


def grown(cfg: SSGConfig, n_docs: int) -> tuple[LiveSSG, list[IndexedDocument]]:
    """A graph built from half the documents, then changed one document at a time."""
    rng = np.random.default_rng(3)
    docs = [
        clustered_document(f"d{i}", int(rng.integers(2, 25)), seed=i, cfg=cfg)
        for i in range(n_docs)
    ]
    live = LiveSSG.fresh(cfg, DIM, docs[: n_docs // 2])
    version = 2
    for doc in docs[n_docs // 2 :]:
        live.apply(Change(version, (doc,)))
        version += 1
    for doc in docs[::5]:
        live.apply(Change(version, (), (doc,)))
        version += 1
    return live, [d for i, d in enumerate(docs) if i % 5]


def test_the_lists_find_most_of_the_exact_neighbours():
    cfg = SSGConfig(knn="hnsw")
    live, survivors = grown(cfg, 240)
    exact = LiveSSG.fresh(exact_twin(cfg), DIM, survivors)
    assert_well_formed(live)
    assert_same_except_inter(live, exact)
    assert recall(live, exact) >= 0.9


def test_a_dropped_stage_and_compaction_leave_the_index_consistent():
    cfg = SSGConfig(window=2, top_x=3, knn="hnsw")
    docs = [clustered_document(f"d{i}", 8, seed=i, cfg=cfg) for i in range(30)]
    live = LiveSSG.fresh(cfg, DIM, docs[:20])
    live.stage(Change(2, tuple(docs[20:25])))  # computed, never published
    live.apply(Change(3, tuple(docs[25:])))  # the dropped stage's rows are masked
    assert_well_formed(live)
    survivors = docs[:20] + docs[25:]
    assert_same_except_inter(live, LiveSSG.fresh(exact_twin(cfg), DIM, survivors))
    assert live.node_serial.size == live.node_doc.size
    live.apply(Change(4, (), tuple(docs[:12])))  # over a quarter removed: rebuilt
    np.testing.assert_array_equal(live.node_serial, np.arange(live.node_doc.size))
    assert_well_formed(live)
    assert recall(live, LiveSSG.fresh(exact_twin(cfg), DIM, docs[12:20] + docs[25:])) >= 0.9


def test_save_and_load_keep_the_node_index(tmp_path):
    cfg = SSGConfig(window=2, top_x=3, knn="hnsw")
    live, _ = grown(cfg, 40)
    live.save(tmp_path)
    assert (tmp_path / "ssg_ann.faiss").exists()
    back = LiveSSG.load(
        tmp_path, cfg, node_vectors=live.node_vectors, sentence_matrix=live.sentence_matrix
    )
    for name in ("inter_cols", "inter_vals", "node_serial"):
        np.testing.assert_array_equal(getattr(back, name), getattr(live, name), err_msg=name)
    extra = clustered_document("extra", 10, seed=999, cfg=cfg)
    back.apply(Change(100, (extra,)))
    assert_well_formed(back)
    np.save(tmp_path / "ssg_ann_dead.npy", np.zeros(3, bool))
    with pytest.raises(ValueError, match="does not match"):
        LiveSSG.load(
            tmp_path, cfg, node_vectors=live.node_vectors, sentence_matrix=live.sentence_matrix
        )


TEXTS = [
    "Bees pollinate flowers. Honey is made by bees. A hive holds thousands of bees.",
    "Rockets need fuel. Engines burn the fuel. A launch pad holds the rocket.",
    "Flowers need bees to make seeds. Some flowers smell sweet to attract bees.",
    "The fuel tank of a rocket is large. Rockets carry satellites to orbit.",
]


def test_semantic_index_keeps_the_approximate_graph_through_changes_and_saves(tmp_path):
    cfg = SSGConfig(window=2, top_x=2, min_inter=0.0, knn="hnsw")
    index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=cfg)
    index.add_documents([Document(f"t{i}", t) for i, t in enumerate(TEXTS[:3])])
    index.save(tmp_path / "idx")
    back = SemanticIndex.load(tmp_path / "idx", embedder=FakeEmbedder(dim=32))
    assert back.ssg_config.knn == "hnsw"
    back.add_documents([Document("t3", TEXTS[3])])
    back.delete("t0")
    graph = back.ssg
    assert graph.doc_ids == ["t1", "t2", "t3"]
    assert any(kind == 1 for kind in graph.kinds.tolist())  # inter-document edges exist
    (tmp_path / "idx" / "ssg_ann_dead.npy").write_bytes(b"\x93NUMPY broken")
    with pytest.raises(StoreError):
        SemanticIndex.load(tmp_path / "idx", embedder=FakeEmbedder(dim=32))


def test_the_anchor_search_uses_the_node_index_of_its_version():
    """knn="hnsw": a view's node search is the HNSW's, masked to that version's nodes."""
    import threading

    from semrag.index.semantic_index import _NodeANNSearch, _NodeSearch

    cfg = SSGConfig(window=2, top_x=3, knn="hnsw")
    live, _ = grown(cfg, 240)
    g = live.graph
    approximate = _NodeANNSearch(g.node_ann, g.node_serial, g.node_vectors)
    exact = _NodeSearch(g.node_vectors)
    queries = np.random.default_rng(5).normal(size=(40, DIM)).astype(np.float32)
    found = total = 0
    for q in queries:
        scores, ids = approximate.search(q, 10)
        want = set(exact.search(q, 10)[1][0].tolist())
        got = ids[0][ids[0] >= 0]
        np.testing.assert_allclose(scores[0][: got.size], g.node_vectors[got] @ q, rtol=1e-5)
        assert (np.diff(scores[0][: got.size]) <= 0).all()  # best first
        found += len(want & set(got.tolist()))
        total += len(want)
    assert found / total >= 0.9

    # a published version is searched while the next changes insert into the same HNSW
    errors: list[BaseException] = []
    done = threading.Event()

    def read() -> None:
        try:
            while not done.is_set():
                for q in queries[:5]:
                    ids = approximate.search(q, 10)[1][0]
                    assert ((ids >= -1) & (ids < g.n_nodes)).all()  # only this version's nodes
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(30):
            live.apply(Change(1000 + i, (clustered_document(f"n{i}", 12, seed=500 + i, cfg=cfg),)))
    finally:
        done.set()
        reader.join(60)
    assert not errors, errors
    assert live.graph.n_nodes > g.n_nodes
    index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=cfg)
    index.add_documents([Document(f"t{i}", t) for i, t in enumerate(TEXTS)])
    assert isinstance(index.ssg_view().node_index, _NodeANNSearch)
    assert isinstance(
        SemanticIndex(embedder=FakeEmbedder(dim=32)).ssg_view().node_index, _NodeSearch
    )
