"""``SSGConfig(knn="hnsw")``: the graph kept with a persistent node index (approximate).

The approximate mode does not equal a fresh build (the HNSW graph depends on the order
of the changes), so these tests check what it promises instead:

* every part except the inter-document lists equals the exact fresh build;
* every inter-document list is well formed (other documents only, live nodes, exact
  values at or above the floor, best first, no repeats);
* its lists find at least 90% of the exact lists' neighbours on clustered vectors;
* it survives a dropped stage, compaction, and a save and load (also through
  :class:`SemanticIndex`), and a damaged save is a typed error;
* with ``vector_dtype="float16"`` it holds its rows (and its node index) in half the
  bytes, and keeps every promise above, against an exact twin built from the same
  rounded rows.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semrag import Document, SemanticIndex
from semrag._buffers import StoredRows
from semrag.errors import StoreError
from semrag.index import SSGConfig
from semrag.index.change import Change, IndexedDocument
from semrag.index.parts.live_ssg import LiveSSG
from semrag.index.storage.persist import saved_folder
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
    return SSGConfig(**{**cfg.to_dict(), "knn": "flat", "vector_dtype": "float32"})


def rounded(docs: list[IndexedDocument], cfg: SSGConfig) -> list[IndexedDocument]:
    """The documents with the rows the graph holds (float16 rounded, as float32 values)."""
    if cfg.vector_dtype == "float32":
        return docs
    return [
        d.with_windows(
            d.node_ranges,
            d.sentence_vectors.astype(np.float16).astype(np.float32),
            d.node_vectors.astype(np.float16).astype(np.float32),
        )
        for d in docs
    ]


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
@given(
    ops=steps,
    top_x=st.integers(0, 4),
    floor=st.sampled_from([-1.0, 0.0, 0.3]),
    dtype=st.sampled_from(["float32", "float16"]),
)
def test_every_change_keeps_the_lists_well_formed(ops, top_x, floor, dtype):
    cfg = SSGConfig(
        window=2, top_k=3, top_x=top_x, top_t=2, min_inter=floor, knn="hnsw", vector_dtype=dtype
    )
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
        twin = LiveSSG.fresh(exact_twin(cfg), DIM, rounded(list(docs.values()), cfg))
        assert_same_except_inter(live, twin)
        assert live.node_vectors.dtype == live.sentence_matrix.dtype == np.dtype(dtype)


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


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_the_lists_find_most_of_the_exact_neighbours(dtype):
    cfg = SSGConfig(knn="hnsw", vector_dtype=dtype)
    live, survivors = grown(cfg, 240)
    assert_well_formed(live)
    assert_same_except_inter(live, LiveSSG.fresh(exact_twin(cfg), DIM, rounded(survivors, cfg)))
    # against the exact lists of the unrounded rows: what the rounding and the HNSW miss
    assert recall(live, LiveSSG.fresh(exact_twin(cfg), DIM, survivors)) >= 0.9


def test_float16_rows_and_their_node_index_take_half_the_bytes():
    half, full = (
        grown(SSGConfig(window=2, top_x=3, knn="hnsw", vector_dtype=dtype), 60)[0]
        for dtype in ("float16", "float32")
    )
    assert half.node_vectors.dtype == half.sentence_matrix.dtype == np.float16
    assert half.node_vectors.nbytes * 2 == full.node_vectors.nbytes
    assert half.sentence_matrix.nbytes * 2 == full.sentence_matrix.nbytes
    # the node index holds the same float16 values (FAISS's fp16 codes: 2 bytes a value)
    import faiss

    graph = half.graph.node_ann._graph
    storage = faiss.downcast_index(graph.storage)
    assert type(graph).__name__ == "IndexHNSWSQ" and storage.code_size == 2 * DIM
    codes = half.graph.node_ann.nbytes - full.graph.node_ann.nbytes  # same links, half codes
    assert codes == -2 * DIM * graph.ntotal
    live = half.node_serial
    np.testing.assert_array_equal(
        graph.reconstruct_n(0, graph.ntotal)[live], half.node_vectors.astype(np.float32)
    )
    # the 3-d projection is the PCA of the rounded rows
    from semrag.index.parts.ssg import fit_pca3

    mean, comps = fit_pca3(half.node_vectors)
    np.testing.assert_allclose(half.graph.pca_mean, mean, atol=1e-6)
    np.testing.assert_allclose(np.abs(half.graph.pca_components), np.abs(comps), atol=1e-4)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_the_node_index_holds_the_node_rows_once(dtype):
    import faiss

    cfg = SSGConfig(window=2, top_x=3, knn="hnsw", vector_dtype=dtype)
    docs = [clustered_document(f"d{i}", 6 + i % 5, seed=i, cfg=cfg) for i in range(40)]
    live = LiveSSG.fresh(cfg, DIM, docs[:10])
    graph = live.graph.node_ann.holder
    assert live.buffers() == (live.buffers()[0], graph)  # no node buffer of its own
    rows = live.node_vectors
    assert isinstance(rows, StoredRows) and rows.index is graph
    held = graph.reconstruct_n(0, graph.ntotal)[live.node_serial]
    copy = np.asarray(rows)
    assert copy.dtype == np.dtype(dtype) and rows.shape == copy.shape == held.shape
    np.testing.assert_array_equal(copy.astype(np.float32), held)
    # reads like a read-only array: slices are views (StoredRows), the rest copies
    part = rows[3:9]
    assert isinstance(part, StoredRows) and len(part) == 6
    np.testing.assert_array_equal(np.asarray(part), copy[3:9])
    np.testing.assert_array_equal(rows[5], copy[5])
    np.testing.assert_array_equal(rows[-1], copy[-1])
    pick = np.array([[4, 0], [2, 2]])
    np.testing.assert_array_equal(rows[pick], copy[pick])
    mask = np.arange(len(rows)) % 3 == 0
    np.testing.assert_array_equal(rows[mask], copy[mask])
    np.testing.assert_array_equal(rows[:, 1], copy[:, 1])
    assert rows[np.zeros(0, np.int64)].shape == (0, DIM)
    with pytest.raises(IndexError, match="index 70 is out of bounds for axis 0 with"):
        rows[len(rows)]
    # a published version's rows stay as they were while later changes grow the storage
    storage = faiss.downcast_index(graph.storage)
    first = int(storage.codes.data())
    for i, doc in enumerate(docs[10:], start=2):
        live.apply(Change(i, (doc,)))
    assert int(storage.codes.data()) != first  # FAISS moved its storage
    np.testing.assert_array_equal(np.asarray(rows), copy)
    assert_well_formed(live)
    # rows of another layout are a typed error, not garbage
    wrong = StoredRows(graph, live.graph.node_ann._lock, live.node_serial[:2], np.int8, DIM)
    with pytest.raises(TypeError, match="bytes a row"):
        np.asarray(wrong)


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
    with pytest.raises(StoreError, match="does not match"):
        LiveSSG.load(
            tmp_path, cfg, node_vectors=live.node_vectors, sentence_matrix=live.sentence_matrix
        )


TEXTS = [
    "Bees pollinate flowers. Honey is made by bees. A hive holds thousands of bees.",
    "Rockets need fuel. Engines burn the fuel. A launch pad holds the rocket.",
    "Flowers need bees to make seeds. Some flowers smell sweet to attract bees.",
    "The fuel tank of a rocket is large. Rockets carry satellites to orbit.",
]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_semantic_index_keeps_the_approximate_graph_through_changes_and_saves(tmp_path, dtype):
    cfg = SSGConfig(window=2, top_x=2, min_inter=0.0, knn="hnsw", vector_dtype=dtype)
    index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=cfg)
    index.add_documents([Document(f"t{i}", t) for i, t in enumerate(TEXTS[:3])])
    index.save(tmp_path / "idx")
    back = SemanticIndex.load(tmp_path / "idx", embedder=FakeEmbedder(dim=32))
    assert back.reader().ssg_config == cfg
    # the documents' vectors are views of the graph's rows, held once, in its dtype
    assert (
        back.reader().sentence_vectors("t1").dtype
        == back.reader().ssg_view().sentence_matrix.dtype
        == dtype
    )
    np.testing.assert_array_equal(
        back.reader().ssg_view().graph.node_vectors, index.reader().ssg_view().graph.node_vectors
    )
    holder = back.reader().part_set.ssg.buffers()[1]  # the node index's graph holds the node rows
    assert all(back.reader().indexed(d).node_vectors.index is holder for d in back.doc_ids)
    back.add_documents([Document("t3", TEXTS[3])])
    back.delete("t0")
    graph = back.reader().ssg_view().graph
    assert graph.doc_ids == ["t1", "t2", "t3"]
    assert (graph.csr()[3] == 1).any()  # inter-document edges exist
    (saved_folder(tmp_path / "idx") / "ssg_ann_dead.npy").write_bytes(b"\x93NUMPY broken")
    with pytest.raises(
        StoreError, match=r"ssg_ann_dead.npy is missing or corrupt \(checksum mismatch\)"
    ):
        SemanticIndex.load(tmp_path / "idx", embedder=FakeEmbedder(dim=32))


def test_the_anchor_search_uses_the_node_index_of_its_version():
    """knn="hnsw": a view's node search is the HNSW's, masked to that version's nodes."""
    import threading

    from semrag.index.parts._ssg_view import NodeANNSearch as _NodeANNSearch
    from semrag.index.parts._ssg_view import NodeSearch as _NodeSearch

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
    assert isinstance(index.reader().ssg_view().node_index, _NodeANNSearch)
    assert isinstance(
        SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=True).reader().ssg_view().node_index,
        _NodeSearch,
    )


def test_a_node_index_saved_in_another_dtype_is_a_typed_error(tmp_path):
    import json

    cfg = SSGConfig(window=2, top_x=2, min_inter=0.0, knn="hnsw", vector_dtype="float16")
    index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=cfg)
    index.add_documents([Document(f"t{i}", t) for i, t in enumerate(TEXTS)])
    index.save(tmp_path / "idx")
    manifest = saved_folder(tmp_path / "idx") / "manifest.json"
    m = json.loads(manifest.read_text())
    m["ssg"]["vector_dtype"] = "float32"  # the manifest now disagrees with ssg_ann.faiss
    manifest.write_text(json.dumps(m))
    with pytest.raises(StoreError, match="IndexHNSWSQ"):
        SemanticIndex.load(tmp_path / "idx", embedder=FakeEmbedder(dim=32))


def test_float16_rows_score_the_traversals_from_the_rounded_values():
    """A traversal's node scores are the rounded rows times the query, and its answers are
    those of the float32 graph on these texts (rounding moves a cosine by about 1e-3)."""
    from semrag import SSGRetriever

    answers = {}
    for dtype in ("float32", "float16"):
        cfg = SSGConfig(window=2, top_x=2, min_inter=0.0, knn="hnsw", vector_dtype=dtype)
        index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=cfg)
        index.add_documents([Document(f"t{i}", t) for i, t in enumerate(TEXTS)])
        retriever = SSGRetriever(index, strategy="query_traversal", k=3)
        q = index.reader().embed_query("bees and honey").astype(np.float64)
        rows = index.reader().ssg_view().graph.node_vectors
        steps = retriever.traverse("bees and honey").steps
        assert steps and rows.dtype == dtype
        for step in steps:
            assert step.step_score == pytest.approx(float(rows[step.node] @ q), abs=1e-6)
        answers[dtype] = [(h.chunk.doc_id, h.chunk.start) for h in retriever.retrieve("bees")]
    assert answers["float16"] == answers["float32"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"vector_dtype": "float16"}, 'needs knn="hnsw"'),
        ({"vector_dtype": "float16", "knn": "auto"}, 'needs knn="hnsw"'),
        ({"vector_dtype": "int8", "knn": "hnsw"}, "vector_dtype='int8' is not allowed"),
    ],
)
def test_a_float16_graph_without_its_node_index_is_refused(options, message):
    from semrag.errors import ConfigError

    with pytest.raises(ConfigError, match=message):
        SSGConfig(**options)


def test_an_add_holds_its_rows_in_the_graphs_dtype_until_its_commit(monkeypatch):
    seen = []
    apply = LiveSSG.apply

    def spy(self, change):
        seen.extend(
            (d.sentence_vectors.dtype, d.node_vectors.dtype, d.chunk_vectors.dtype)
            for d in change.added
        )
        return apply(self, change)

    monkeypatch.setattr(LiveSSG, "apply", spy)
    docs = [Document(f"t{i}", t) for i, t in enumerate(TEXTS)]
    built = {}
    for dtype in ("float16", "float32"):
        cfg = SSGConfig(window=2, knn="hnsw", vector_dtype=dtype)
        built[dtype] = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=cfg, chunk_vectors="mean")
        built[dtype].add_documents(docs)
    half, full = seen[: len(docs)], seen[len(docs) :]
    assert all(s == n == np.float16 and c == np.float32 for s, n, c in half)
    assert all(s == n == c == np.float32 for s, n, c in full)
    # the chunk vectors are means of the sentence vectors before they were rounded
    np.testing.assert_array_equal(
        built["float16"].reader().dense.vectors, built["float32"].reader().dense.vectors
    )


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    width=st.integers(1, 8),
    floor=st.sampled_from([-1.0, 0.0, 0.3, None]),  # None: a value some hits have exactly
    ties=st.booleans(),
    noisy=st.booleans(),
)
def test_only_hits_that_may_rank_get_exact_values_and_none_that_rank_is_missed(
    seed, width, floor, ties, noisy
):
    from semrag.index.parts._live_ssg_rows import exact_where as _exact_where
    from semrag.index.parts._live_ssg_rows import may_rank as _may_rank
    from semrag.index.parts.knn import FLOAT32_TOLERANCE, exact_similarities

    rng = np.random.default_rng(seed)
    rows = rng.normal(size=(40, DIM))
    if ties:  # many rows equal: exact ties at the boundary
        rows[::2] = rows[0]
    rows = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float16)
    queries = rows[rng.integers(0, 40, 6)]
    hit = np.stack([rng.permutation(40)[:12] for _ in range(6)])
    other = rng.random(hit.shape) < 0.8
    # FAISS's float32 scores: the same products, summed in float32
    fast = np.einsum("id,icd->ic", queries.astype(np.float32), rows[hit].astype(np.float32))
    if noisy:  # any error within the bound the pruning relies on
        fast += rng.uniform(-1, 1, fast.shape).astype(np.float32) * 0.99 * FLOAT32_TOLERANCE
    exact = exact_similarities(queries, rows[hit])
    if floor is None:
        floor = float(np.median(exact))
    keep = _may_rank(fast, other, width, floor)
    got = _exact_where(queries, rows, hit, keep)
    np.testing.assert_array_equal(got, np.where(keep, exact, -np.inf))
    for r in range(hit.shape[0]):  # the kept best (ties: lower node) are all computed
        ok = other[r] & (exact[r] >= floor)
        best = np.lexsort((np.where(ok, hit[r], 99), -np.where(ok, exact[r], -np.inf)))[:width]
        assert keep[r][best[ok[best]]].all()
