"""The living index: after any sequence of changes, every part equals a fresh build.

* the neighbour-list primitives agree with brute force (ties: lower row) and merge exactly;
* :class:`LiveSSG` changed step by step equals :meth:`LiveSSG.fresh` over the survivors;
* a hypothesis state machine adds, re-adds, deletes, saves and loads a
  :class:`SemanticIndex`, and after every step compares it with an index built fresh
  from the surviving documents: the same chunks and vectors, the same graph, and the
  same top-10 from every retriever (dense, BM25, IAR and every SSG algorithm).
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import threading
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import semrag.index.parts.dense as dense_module
from semrag import Document, SemanticIndex, SSGRetriever
from semrag.errors import EmbedderMismatchError
from semrag.fingerprint import PROBE_TEXTS
from semrag.graph import KnowledgeGraph
from semrag.index import SSGConfig
from semrag.index.change import Change, IndexedDocument, IndexPart
from semrag.index.parts.knn import merge_top, top_neighbours
from semrag.index.parts.live_ssg import LiveSSG
from semrag.index.parts.ssg import window_ranges
from semrag.index.storage.persist import saved_folder
from semrag.retrieval import (
    ALGORITHMS,
    CommunityRetriever,
    IntentAwareRetriever,
    PPRRetriever,
    SketchRetriever,
)
from semrag.testing import FakeEmbedder
from semrag.types import Span
from tests.counting import CountingEmbedder, OtherFake

DIM = 16


def brute_top(q, qg, b, bg, k, floor):
    """Reference: sort every other-group row by (-similarity, row)."""
    sims = (q.astype(np.float64) @ b.astype(np.float64).T).astype(np.float32)
    out = []
    for i in range(len(q)):
        rows = [j for j in range(len(b)) if bg[j] != qg[i] and sims[i, j] >= floor]
        rows.sort(key=lambda j: (-sims[i, j], j))
        out.append(rows[:k])
    return out


unit_rows = st.integers(1, 40).flatmap(
    lambda n: st.lists(
        st.lists(st.integers(-2, 2), min_size=DIM, max_size=DIM), min_size=n, max_size=n
    )
)


def as_unit(rows):
    v = np.asarray(rows, dtype=np.float32)
    v[:, 0] += 0.5  # never a zero row
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@settings(max_examples=60, deadline=None)
@given(
    rows=unit_rows,
    k=st.integers(1, 6),
    floor=st.sampled_from([-1.0, 0.0, 0.3]),
    seed=st.integers(0, 9),
)
def test_top_neighbours_equals_brute_force_with_ties(rows, k, floor, seed):
    v = as_unit(rows)
    v[1::3] = v[0]  # exact duplicates: ties must go to the lower row
    groups = np.random.default_rng(seed).integers(0, 4, size=len(v))
    cols, vals = top_neighbours(v, groups, v, groups, k, floor)
    want = brute_top(v, groups, v, groups, k, floor)
    for i, w in enumerate(want):
        assert cols[i][cols[i] >= 0].tolist() == w
        assert (vals[i][cols[i] < 0] == -np.inf).all()


@settings(max_examples=40, deadline=None)
@given(rows=unit_rows, k=st.integers(1, 5), split=st.floats(0, 1))
def test_merging_two_partial_lists_equals_the_list_of_the_union(rows, k, split):
    v = as_unit(rows)
    v[2::4] = v[1 % len(v)]
    cut = int(split * len(v))
    q = v[:3]
    g = np.full(3, -1)
    a = top_neighbours(q, g, v[:cut], np.arange(cut), k, -1.0)
    b = top_neighbours(q, g, v[cut:], np.arange(cut, len(v)), k, -1.0)
    b_cols = np.where(b[0] >= 0, b[0] + cut, -1)
    merged = merge_top(a[0], a[1], b_cols, b[1], k)
    whole = top_neighbours(q, g, v, np.arange(len(v)), k, -1.0)
    np.testing.assert_array_equal(merged[0], whole[0])
    np.testing.assert_array_equal(merged[1], whole[1])


def fake_document(doc_id: str, n_sentences: int, seed: int, cfg: SSGConfig) -> IndexedDocument:
    rng = np.random.default_rng(seed)
    sv = rng.integers(-1, 2, size=(n_sentences, DIM)).astype(np.float32) + 0.01
    return indexed_document(doc_id, sv, cfg)


def indexed_document(doc_id: str, sentence_vectors: np.ndarray, cfg: SSGConfig) -> IndexedDocument:
    """A document's record from its sentence vectors (normalised; window nodes averaged)."""
    sv = sentence_vectors / np.linalg.norm(sentence_vectors, axis=1, keepdims=True)
    n_sentences = len(sv)
    ranges = window_ranges(n_sentences, cfg.window, cfg.step)
    nv = np.stack([sv[a:b].mean(axis=0) for a, b in ranges]) if ranges else sv[:0]
    nv = nv / np.linalg.norm(nv, axis=1, keepdims=True) if len(nv) else nv
    theme = sv.sum(axis=0) + 0.01  # a document without sentences still has a theme vector
    return IndexedDocument(
        Document(doc_id, "x" * n_sentences),
        [Span(i, i + 1) for i in range(n_sentences)],
        sv.astype(np.float32),
        [],
        [],
        np.zeros((0, sv.shape[1]), np.float32),
        ranges,
        nv.astype(np.float32),
        [doc_id],
        (theme / np.linalg.norm(theme)).astype(np.float32),
    )


def assert_same_ssg(live: LiveSSG, fresh: LiveSSG) -> None:
    assert live.doc_ids == fresh.doc_ids
    for name in ("node_doc", "node_sentences", "doc_sentences", "doc_nodes"):
        np.testing.assert_array_equal(getattr(live, name), getattr(fresh, name), err_msg=name)
    for name in ("intra", "inter", "bridge"):
        np.testing.assert_array_equal(
            getattr(live, f"{name}_cols"), getattr(fresh, f"{name}_cols"), err_msg=name
        )
        np.testing.assert_array_equal(
            getattr(live, f"{name}_vals"), getattr(fresh, f"{name}_vals"), err_msg=name
        )
    np.testing.assert_array_equal(live.node_vectors, fresh.node_vectors)
    np.testing.assert_array_equal(live.sentence_matrix, fresh.sentence_matrix)
    np.testing.assert_allclose(live.graph.pca_mean, fresh.graph.pca_mean, atol=1e-5)
    g, f = live.graph, fresh.graph
    for name, a, b in zip(("indptr", "indices", "scores", "kinds"), g.csr(), f.csr(), strict=True):
        np.testing.assert_array_equal(a, b, err_msg=name)
    indptr, indices, scores, kinds = g.csr()
    for node in range(g.n_nodes):  # a node's edges read from the lists are its CSR row
        got, at = g.neighbours(node), slice(indptr[node], indptr[node + 1])
        for part, want in zip(got, (indices[at], scores[at], kinds[at]), strict=True):
            np.testing.assert_array_equal(part, want)
            assert part.dtype == want.dtype
    assert g.theme_bridges == f.theme_bridges


steps = st.lists(
    st.tuples(st.sampled_from(["add", "add", "delete"]), st.integers(0, 7), st.integers(0, 9)),
    min_size=1,
    max_size=14,
)


@settings(max_examples=40, deadline=None)
@given(
    ops=steps,
    top_k=st.integers(0, 4),
    top_x=st.integers(0, 3),
    top_t=st.integers(0, 3),
    floor=st.sampled_from([-1.0, 0.0, 0.4]),
)
def test_live_ssg_equals_a_fresh_build_after_every_change(ops, top_k, top_x, top_t, floor):
    cfg = SSGConfig(
        window=2, top_k=top_k, top_x=top_x, top_t=top_t, min_intra=floor, min_inter=floor
    )
    live = LiveSSG(cfg, DIM)
    docs: dict[str, IndexedDocument] = {}
    published = []  # each version's graph and a copy of its edges when it was current
    for version, (op, d, n) in enumerate(ops, start=1):
        doc_id = f"d{d}"
        if op == "add":
            new = fake_document(doc_id, n, seed=version, cfg=cfg)
            old = (docs.pop(doc_id),) if doc_id in docs else ()
            live.apply(Change(version, (new,), old))
            docs[doc_id] = new
        elif doc_id in docs:
            live.apply(Change(version, (), (docs.pop(doc_id),)))
        assert_same_ssg(live, LiveSSG.fresh(cfg, DIM, list(docs.values())))
        published.append((live.graph, [a.copy() for a in live.graph.csr()]))
    assert isinstance(live, IndexPart)
    for graph, edges in published:  # later changes never wrote into a published graph's lists
        for a, b in zip(graph.csr(), edges, strict=True):
            np.testing.assert_array_equal(a, b)


def test_a_change_touches_only_what_it_must():
    """A new document far from every other leaves the other nodes' lists as they were."""
    cfg = SSGConfig(window=2, top_k=2, top_x=2, min_intra=0.0, min_inter=0.5)
    live = LiveSSG.fresh(cfg, DIM, [fake_document(f"d{i}", 6, seed=i, cfg=cfg) for i in range(5)])
    before = live.graph
    lonely = fake_document("far", 4, seed=99, cfg=cfg)
    far = np.zeros((4, DIM), np.float32)
    far[:, -1] = 1.0  # one direction, below min_inter from every other node
    lonely = IndexedDocument(
        lonely.doc,
        lonely.sentences,
        far,
        [],
        [],
        lonely.chunk_vectors,
        lonely.node_ranges,
        far[: len(lonely.node_ranges)],
        [],
        far[0],
    )
    live.apply(Change(2, (lonely,)))
    after = live.graph
    n = before.n_nodes
    assert before.node_vectors is not after.node_vectors  # a new version; the old is intact
    assert before.n_nodes == n and after.n_nodes == n + len(lonely.node_ranges)
    assert all((after.neighbours(i)[0] < n).all() for i in range(n))  # no edge to the new doc
    (after_ptr, after_ix, *_), (before_ptr, before_ix, *_) = after.csr(), before.csr()
    np.testing.assert_array_equal(after_ptr[: n + 1], before_ptr)  # same lists
    np.testing.assert_array_equal(after_ix[: before_ix.size], before_ix)


# -- the index as a whole: a state machine against fresh builds ------------------------------
WORDS = "bees hive honey rockets orbit fuel bread dough oven rivers delta flood the a".split()
texts = st.lists(
    st.lists(st.sampled_from(WORDS), min_size=2, max_size=6).map(
        lambda w: " ".join(w).capitalize() + "."
    ),
    min_size=1,
    max_size=6,
).map(" ".join)
QUERIES = ["bees and honey", "rockets in orbit", "bread in the oven", "river delta floods"]
SSG_CONFIG = SSGConfig(window=2, top_k=3, top_x=2, top_t=2, min_intra=0.0, min_inter=0.0)
SSG_ALGORITHMS = [a for a in ALGORITHMS if a != "llm_guided_traversal"]


MODELS = (FakeEmbedder, OtherFake)  # two 32-d models: a reembed step moves between them


def new_index(dense: object = "flat", model: int = 0) -> SemanticIndex:
    return SemanticIndex(embedder=MODELS[model](dim=32), ssg=SSG_CONFIG, dense=dense)


def hit_key(h) -> tuple:
    return (h.chunk.doc_id, h.chunk.start, h.chunk.end, round(h.score, 4))


def projection_is_unique(index: SemanticIndex) -> bool:
    """Whether the 3-d PCA is unique (distinct top eigenvalues); else geometric_3d may differ."""
    g = index.reader().ssg_view().graph
    if g.n_nodes < 5:
        return False
    v = g.node_vectors.astype(np.float64)
    values = np.sort(np.linalg.eigvalsh(np.cov(v.T, bias=True)))[::-1][:4]
    return bool((np.diff(values) < -1e-4).all())


def graph_table(kg: KnowledgeGraph) -> dict[str, list]:
    """Everything the store holds, in a canonical order."""
    store = kg.store
    entities = sorted((e.id, e.name, e.type, e.description) for e in store.entities())
    relations = sorted(
        (r.source, r.type, r.target, r.evidence, round(r.weight, 6)) for r in store.relations()
    )
    chunks = store.chunks_for([e[0] for e in entities])
    mentions = sorted((e, c.doc_id, c.start, c.end) for e, cs in chunks.items() for c in cs)
    return {"entities": entities, "relations": relations, "mentions": mentions}


def make_retrievers(index: SemanticIndex, kg: KnowledgeGraph) -> dict[str, object]:
    """One instance of every retriever: kept across changes, so their caches are tested."""
    out: dict[str, object] = {
        "dense": lambda q: index.search(q, k=10),
        "bm25": lambda q: index.search_sparse(q, k=10),
        "iar": IntentAwareRetriever(index, k=10).retrieve,
        "sketch": SketchRetriever(index, kg, k=10).retrieve,
        "local": CommunityRetriever(index, kg, strategy="local", k=10).retrieve,
        "global": CommunityRetriever(index, kg, strategy="global", k=10).retrieve,
        "ppr": PPRRetriever(index, k=10).retrieve,
        "ppr+graph": PPRRetriever(index, kg, k=10).retrieve,
    }
    for algorithm in SSG_ALGORITHMS:
        out[algorithm] = SSGRetriever(index, strategy=algorithm, k=10).retrieve
    return out


def results(index: SemanticIndex, retrievers: dict[str, object]) -> dict[str, list]:
    out: dict[str, list] = {}
    geometric = projection_is_unique(index)
    for q in QUERIES:
        for name, retrieve in retrievers.items():
            if name == "triangulation_geometric_3d" and not geometric:
                continue
            out[f"{name} {q}"] = ties_in_order([hit_key(h) for h in retrieve(q)])
    return out


def ties_in_order(hits: list[tuple]) -> list[tuple]:
    """The hits, each run of equal (rounded) scores in doc and offset order.

    Two chunks whose scores agree to the 4th decimal are ranked by the last bits of the
    float sums, which the order of rows in the dense part may change: a fresh build
    promises the same hits and scores, not the order within such a tie.
    """
    out: list[tuple] = []
    for _, run in itertools.groupby(hits, key=lambda h: h[3]):
        out += sorted(run)
    return out


def chunk_table(index: SemanticIndex) -> list[tuple]:
    rows = []
    for doc_id in index.doc_ids:
        vectors = index.reader().vectors_of(index.reader().chunk_ids(doc_id))
        for c, v in zip(index.chunks(doc_id), vectors, strict=True):
            rows.append((doc_id, c.start, c.end, c.text, tuple(np.round(v, 5))))
    return rows


class LivingIndex(RuleBasedStateMachine):
    """Random adds, re-adds, deletes, saves, loads and model changes; always a fresh build."""

    store_factory = None  # None: the embedded store; else a callable giving an empty store
    dense_factory = None  # None: the embedded dense part; else a callable giving a client

    def _build_graph(self) -> KnowledgeGraph:
        store = self.store_factory() if self.store_factory else None
        return KnowledgeGraph.build(self.index, store=store)

    def __init__(self) -> None:
        super().__init__()
        self.dense = self.dense_factory() if self.dense_factory else None
        self.index = new_index(self.dense or "flat")
        self.kg = self._build_graph()  # follows the index
        self.retrievers = make_retrievers(self.index, self.kg)
        self.docs: dict[str, str] = {}
        self.model = 0  # which of MODELS embedded the index
        self.stale: set[str] = set()
        """Documents chunked by a model the index has since left (a reembed keeps chunks)."""
        self.tmp = Path(tempfile.mkdtemp(prefix="semrag-living-"))

    @rule(doc=st.integers(0, 5), text=texts)
    def add(self, doc, text):
        doc_id = f"d{doc}"
        self.index.add_documents([Document(doc_id, text)], on_conflict="replace")
        self.docs.pop(doc_id, None)
        self.docs[doc_id] = text  # a re-added document moves to the end
        self.stale.discard(doc_id)

    @rule(
        docs=st.lists(
            st.tuples(st.integers(0, 5), texts), min_size=2, max_size=3, unique_by=lambda t: t[0]
        )
    )
    def add_several(self, docs):
        self.index.add_documents([Document(f"d{d}", t) for d, t in docs], on_conflict="replace")
        for d, t in docs:
            self.docs.pop(f"d{d}", None)
            self.docs[f"d{d}"] = t
            self.stale.discard(f"d{d}")

    @precondition(lambda self: self.docs)
    @rule(pick=st.integers(0, 100))
    def delete(self, pick):
        doc_id = sorted(self.docs)[pick % len(self.docs)]
        assert self.index.delete(doc_id)
        del self.docs[doc_id]
        self.stale.discard(doc_id)

    @rule(doc=st.integers(0, 5), text=texts)
    def change_while_reading(self, doc, text):
        """Two readers query every retriever while a writer makes one change.

        Every result must be the one of the version before or of the version after: a
        query never mixes the two, and SKETCH and local search read the knowledge graph
        at the version of the index they read.
        """
        names = list(self.retrievers)
        only = self.retrievers
        before = results(self.index, only)
        seen: list[tuple[str, list]] = []
        done = threading.Event()
        errors: list[BaseException] = []

        def read() -> None:
            try:
                rounds = 0
                while not done.is_set() or rounds < 1:
                    for q in QUERIES:
                        for name in names:
                            if name == "triangulation_geometric_3d":
                                continue  # its projection may have ties (see results())
                            seen.append(
                                (f"{name} {q}", ties_in_order([hit_key(h) for h in only[name](q)]))
                            )
                    rounds += 1
            except BaseException as exc:  # reported below
                errors.append(exc)

        readers = [threading.Thread(target=read) for _ in range(2)]
        for t in readers:
            t.start()
        try:
            self.add(doc, text)
        finally:
            done.set()
            for t in readers:
                t.join(60)
        assert not errors, errors
        after = results(self.index, only)
        for key, got in seen:
            assert got in (before.get(key), after.get(key)), key

    @rule()
    def save_and_load(self):
        from semrag.graph import InMemoryGraphStore

        self.index.save(self.tmp / "index")
        self.kg.save_ledger(self.tmp / "ledger")
        if self.store_factory is None:
            self.kg.store.save(self.tmp / "store")
            store = InMemoryGraphStore.load(self.tmp / "store")
        else:
            store = self.kg.store  # Neo4j keeps its data
        self.kg.detach()
        self.index = SemanticIndex.load(
            self.tmp / "index", embedder=MODELS[self.model](dim=32), dense=self.dense
        )
        self.kg = KnowledgeGraph.resume(self.index, store, self.tmp / "ledger")
        self.retrievers = make_retrievers(self.index, self.kg)

    @precondition(lambda self: self.dense is None)  # a vector store embeds by itself
    @rule()
    def reembed(self):
        """Move to the other model: the graph, which embeds names, is built again after."""
        self.kg.detach()
        with pytest.raises(
            EmbedderMismatchError, match="the index saved in"
        ):  # its save names the old model
            self.index.save(self.tmp / "before", overwrite=True)
            SemanticIndex.load(self.tmp / "before", embedder=MODELS[1 - self.model](dim=32))
        self.model = 1 - self.model
        self.index.reembed(MODELS[self.model](dim=32))
        self.stale = set(self.docs)
        assert self.index.fingerprint.name == MODELS[self.model](dim=32).model_name
        self.kg = self._build_graph()
        self.retrievers = make_retrievers(self.index, self.kg)

    @invariant()
    def equals_a_fresh_build(self):
        fresh = new_index(model=self.model)
        if self.stale:  # a fresh build over the same chunks: what a reembed promises
            docs = [self.index.reader().indexed(d).doc for d in self.index.doc_ids]
            fresh.add_chunks(
                [c for d in self.index.doc_ids for c in self.index.chunks(d)], documents=docs
            )
            chunker = new_index(model=self.model).chunker
            for d in set(self.docs) - self.stale:  # chunked by the current model
                got = [(c.start, c.end) for c in self.index.chunks(d)]
                assert got == [(c.start, c.end) for c in chunker.chunk(self.docs[d], doc_id=d)]
        else:
            fresh.add_documents([Document(d, t) for d, t in self.docs.items()])
        assert self.index.doc_ids == fresh.doc_ids
        assert chunk_table(self.index) == chunk_table(fresh)
        assert_same_ssg(self.index.reader().part_set.ssg, fresh.reader().part_set.ssg)
        # every vector held once: the graph's and the dense part's
        sentences, nodes = self.index.reader().part_set.ssg.buffers()
        chunk_rows = self.index.reader().dense.buffer
        for doc_id in self.index.doc_ids:
            e = self.index.reader().indexed(doc_id)
            assert not e.sentence_vectors.size or np.shares_memory(e.sentence_vectors, sentences)
            assert not e.node_vectors.size or np.shares_memory(e.node_vectors, nodes)
            assert not e.chunk_vectors.size or np.shares_memory(e.chunk_vectors, chunk_rows)
            np.testing.assert_array_equal(
                e.chunk_vectors, self.index.reader().dense.vectors_of(e.chunk_ids)
            )
        fresh_kg = KnowledgeGraph.build(fresh)  # in the embedded store
        assert graph_table(self.kg) == graph_table(fresh_kg)
        ents, vectors = self.kg.entity_vectors()  # kept per change, or read from a save
        assert sorted(e.id for e in ents) == [e[0] for e in graph_table(self.kg)["entities"]]
        names = [e.name for e in ents]
        np.testing.assert_allclose(vectors, MODELS[self.model](dim=32).embed(names), atol=1e-6)
        # every store looks names up with one meaning: the same results on Neo4j
        assert results(self.index, self.retrievers) == results(
            fresh, make_retrievers(fresh, fresh_kg)
        )

    def teardown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


TestLivingIndex = LivingIndex.TestCase
TestLivingIndex.settings = settings(
    max_examples=12,
    stateful_step_count=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


class LivingIndexInSmallBatches(LivingIndex):
    """The same, with the dense part storing a change two rows at a time.

    Each stored batch's records read their chunk vectors from the staged rows at once
    (``PartSet.stage``); every change, save, load and model swap must still equal a fresh
    build.
    """

    def __init__(self) -> None:
        self._block = dense_module._BLOCK
        dense_module._BLOCK = 2
        super().__init__()

    def teardown(self):
        dense_module._BLOCK = self._block
        super().teardown()


TestLivingIndexInSmallBatches = LivingIndexInSmallBatches.TestCase
TestLivingIndexInSmallBatches.settings = settings(TestLivingIndex.settings, max_examples=6)


@pytest.mark.parametrize("delete_first", [True, False])
def test_a_commit_hands_one_change_to_every_part_and_follower(delete_first):
    index = new_index()
    seen: list[Change] = []

    class Recorder:
        def apply(self, change):
            seen.append(change)

        def save(self, directory):
            return []

    recorder = Recorder()
    index.follow(recorder)
    index.add_documents([Document("a", "Bees make honey."), Document("b", "Rockets fly.")])
    if delete_first:
        index.delete("a")
    index.add_documents([Document("b", "Rockets reach orbit. Fuel burns.")], on_conflict="replace")
    assert [c.version for c in seen] == list(range(1, len(seen) + 1))
    last = seen[-1]
    assert last.added_ids == ["b"] and last.replaced_ids == {"b"}
    assert [d.id for d in last.removed] == ["b"]
    assert index.unfollow(recorder) and not index.unfollow(recorder)
    index.delete("b")
    assert seen[-1] is last  # no longer following
    assert set(index.parts) == {"dense", "sparse", "ssg"}
    assert all(isinstance(p, IndexPart) for p in index.parts.values())


bm25_texts = st.lists(st.sampled_from(WORDS + ["İstanbul", "ﬁne", "9"]), max_size=8).map(" ".join)


@settings(max_examples=80, deadline=None)
@given(
    ops=st.lists(st.tuples(st.booleans(), st.integers(0, 9), bm25_texts), min_size=1, max_size=25),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join),
    stride=st.sampled_from([1, 997, -3]),  # dense ids, spread ones, or ids falling
    spare=st.sampled_from([1024, 0]),  # slots and terms renumbered rarely, or at every chance
)
def test_bm25_changed_in_place_scores_like_rank_bm25_on_the_survivors(ops, query, stride, spare):
    from semrag.index import BM25Index
    from semrag.index.parts import sparse

    bm = BM25Index()
    alive: dict[int, str] = {}
    gone: list[int] = []
    next_id = 0
    with mock.patch.object(sparse, "_SPARE", spare):
        for add, pick, text in ops:
            if add:
                i = gone.pop() if gone and pick % 4 == 0 else next_id  # a removed id comes back
                bm.add([i], [text])
                alive[i] = text
                next_id += stride if i == next_id else 0
            elif alive:  # one or (as a re-added document's chunks) several at once
                victims = sorted(alive)[pick % len(alive) :][: 1 + pick % 3]
                assert bm.remove(victims) == len(victims)
                for victim in victims:
                    del alive[victim]
                gone.extend(victims)
            check_bm25(bm, alive, query)  # after every change: the caches must follow it
            assert len(bm) == len(alive)
    assert bm._next - len(alive) <= spare + len(alive)  # the dead slots are reclaimed


def check_bm25(bm, alive: dict[int, str], query: str) -> None:
    from rank_bm25 import BM25Okapi

    from semrag.index import bm25_tokenize

    hits = bm.search(query, 10)
    ids, scores = bm.scores(query)
    assert ids.tolist() == sorted(alive)
    tokens = [bm25_tokenize(alive[i]) for i in sorted(alive)]
    if not alive or not any(tokens):
        assert not scores.any() and not hits
        return
    want = BM25Okapi(tokens).get_scores(bm25_tokenize(query))
    np.testing.assert_allclose(scores, want, rtol=1e-6, atol=1e-9)
    terms = set(bm25_tokenize(query))
    matching = [i for i, t in zip(sorted(alive), tokens, strict=True) if terms & set(t)]
    score_of = {i: want[sorted(alive).index(i)] for i in matching}
    expected = sorted(matching, key=lambda i: (-score_of[i], i))[:10]
    # The same ranking by value; equal scores (to rounding) may come in either order.
    assert {i for i, _ in hits} <= set(matching)
    assert [round(s, 9) for _, s in hits] == [round(score_of[i], 9) for i in expected]


# -- the knowledge graph follows the index, on every store ------------------------------------
NEO4J = pytest.param(
    "neo4j", marks=[pytest.mark.neo4j, pytest.mark.integration, pytest.mark.enable_socket]
)
STORIES = [
    "Ada Lovelace worked with Charles Babbage in London. Babbage designed the Analytical Engine.",
    "Charles Babbage lived in London. The Analytical Engine was never finished.",
    "Barack Obama met Angela Merkel in Berlin. Obama spoke about trade.",
    "Angela Merkel led Germany. Berlin is the capital of Germany.",
    "Ada Lovelace wrote notes on the Analytical Engine. Lovelace met Michael Faraday.",
]


@pytest.fixture(params=["memory", NEO4J])
def graph_store(request):
    from semrag.graph import InMemoryGraphStore
    from semrag.neo4j import Neo4jGraphStore

    if request.param == "memory":
        yield lambda: InMemoryGraphStore()
        return
    server = request.getfixturevalue("neo4j_server")
    opened = []

    def make():
        store = Neo4jGraphStore(
            server.uri, server.user, server.password, database="neo4j", batch_size=7
        )
        store.clear()
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


def test_a_following_graph_equals_a_fresh_build_on_every_store(graph_store):
    from semrag.graph import InMemoryGraphStore

    index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=False)
    index.add_documents([Document(f"s{i}", t) for i, t in enumerate(STORIES[:3])])
    kg = KnowledgeGraph.build(index, store=graph_store(), communities=False)
    steps = [
        ("add", "s3", STORIES[3]),
        ("delete", "s0", None),
        ("add", "s1", STORIES[4]),  # replaced: Babbage's London relation loses a document
        ("add", "s0", STORIES[0]),
        ("delete", "s2", None),
    ]
    for op, doc_id, text in steps:
        if op == "add":
            index.add_documents([Document(doc_id, text)], on_conflict="replace")
        else:
            index.delete(doc_id)
        assert kg.following and kg.communities_stale
        fresh_store = InMemoryGraphStore()  # every store must hold what a fresh build holds
        fresh_index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=False)
        fresh_index.add_documents([Document(d, index.document(d).text) for d in index.doc_ids])
        fresh = KnowledgeGraph.build(fresh_index, store=fresh_store, communities=False)
        assert graph_table(kg) == graph_table(fresh), (op, doc_id)
        kg.repair()  # the ledger derives the whole graph again and rewrites the store
        assert graph_table(kg) == graph_table(fresh), ("repair", op, doc_id)
        fresh.detach()
    kg.detach()
    index.delete("s3")
    assert not kg.following
    assert any("angela merkel" == e.id for e in kg.store.entities())  # no longer follows


def test_weights_add_up_and_a_delete_subtracts_exactly_what_a_document_gave():
    index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=False)
    index.add_documents([Document("a", "Ada Lovelace met Charles Babbage.")])
    kg = KnowledgeGraph.build(index, communities=False)

    def weight() -> float:
        rels = [
            r
            for r in kg.store.relations()
            if {r.source, r.target} == {"ada lovelace", "charles babbage"}
        ]
        return sum(r.weight for r in rels)

    one = weight()
    assert one > 0
    index.add_documents([Document("b", "Ada Lovelace met Charles Babbage again.")])
    assert weight() == pytest.approx(2 * one)  # two documents: the weights add up
    index.delete("a")
    assert weight() == pytest.approx(one)
    index.delete("b")
    assert weight() == 0 and not kg.store.entities()  # evidence gone: relation and entities go


def test_new_names_resolve_against_the_entities_already_there():
    class Aliases(FakeEmbedder):
        def _embed_batch(self, texts):
            return super()._embed_batch([t.replace("Barack ", "") for t in texts])

    index = SemanticIndex(embedder=Aliases(dim=32), ssg=False)
    index.add_documents([Document("a", "Obama spoke in Berlin. Obama met Merkel.")])
    kg = KnowledgeGraph.build(index, communities=False)
    index.add_documents([Document("b", "Barack Obama visited Paris.")])  # a later batch
    ids = {e.id for e in kg.store.entities()}
    assert "obama" in ids and "barack obama" not in ids
    assert "b" in {c.doc_id for c in kg.store.chunks_for(["obama"])["obama"]}
    index.delete("a")  # now the longer name is the only one left
    assert {e.id for e in kg.store.entities()} >= {"barack obama"}


@pytest.mark.neo4j
@pytest.mark.integration
@pytest.mark.enable_socket
def test_the_living_index_state_machine_on_neo4j(neo4j_server):
    """The same machine with the graph, the dense channel and the whole index in Neo4j.

    The store always holds a fresh build, and every retriever (dense searches answered by
    Neo4j's vector index) returns what a fresh embedded build returns; so does a
    ``Neo4jIndex`` serving the database that ``Neo4jIndexStore`` keeps level.
    """
    from hypothesis.stateful import run_state_machine_as_test

    from semrag.neo4j import Neo4jGraphStore, Neo4jIndex, Neo4jIndexStore, Neo4jVectorClient

    stores: list[Neo4jGraphStore] = []

    def make_store() -> Neo4jGraphStore:
        store = Neo4jGraphStore(neo4j_server.uri, neo4j_server.user, neo4j_server.password)
        store.clear()
        stores.append(store)
        return store

    def make_client() -> Neo4jVectorClient:
        client = Neo4jVectorClient(make_store(), 32)
        client.clear()
        return client

    class OnNeo4j(LivingIndex):
        store_factory = staticmethod(make_store)
        dense_factory = staticmethod(make_client)

        # ... and the whole index in the same database (Neo4jIndexStore), served by a
        # Neo4jIndex that holds nothing in process: dense and every SSG traversal answer as
        # a fresh embedded build does.
        def __init__(self) -> None:
            super().__init__()
            Neo4jIndexStore(self.kg.store).clear()
            self.writer = Neo4jIndexStore.for_index(self.index, self.kg.store)

        @rule()
        def save_and_load(self):
            super().save_and_load()  # a new index object: a new writer trusts the database
            self.writer = Neo4jIndexStore.for_index(self.index, self.kg.store)

        @invariant()
        def the_database_serves_a_fresh_build(self):
            fresh = new_index()
            fresh.add_documents([Document(d, t) for d, t in self.docs.items()])
            counts = self.writer.counts()
            assert counts["documents"] == len(self.docs)
            assert counts["chunks"] == len(fresh.chunks())
            assert counts["windows"] == fresh.reader().ssg_view().graph.n_nodes
            assert counts["edges"] == fresh.reader().ssg_view().graph.csr()[1].size
            reader = Neo4jIndex(self.kg.store, embedder=FakeEmbedder(dim=32))

            def served(ix):
                out = {"dense": lambda q: ix.search(q, k=10)}
                for algorithm in SSG_ALGORITHMS:
                    out[algorithm] = SSGRetriever(ix, strategy=algorithm, k=10).retrieve
                return out

            assert results(fresh, served(reader)) == results(fresh, served(fresh))

    try:
        run_state_machine_as_test(
            OnNeo4j,
            settings=settings(
                max_examples=4,
                stateful_step_count=6,
                deadline=None,
                suppress_health_check=[HealthCheck.too_slow],
            ),
        )
    finally:
        for store in stores:
            store.close()


def test_a_saved_graph_resumes_following_and_catches_up(tmp_path):
    """Save index, store and ledger; change the loaded index; resume: equal to a fresh build."""
    from semrag.errors import StoreError
    from semrag.graph import InMemoryGraphStore

    index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=False)
    index.add_documents([Document(f"s{i}", t) for i, t in enumerate(STORIES[:4])])
    kg = KnowledgeGraph.build(index, communities=False)
    index.save(tmp_path / "index")
    kg.store.save(tmp_path / "store")
    kg.save_ledger(tmp_path / "ledger")

    loaded = SemanticIndex.load(tmp_path / "index", embedder=FakeEmbedder(dim=32))
    loaded.delete("s1")  # changes the graph has not seen
    loaded.add_documents(
        [Document("s4", STORIES[4]), Document("s0", STORIES[0])], on_conflict="replace"
    )  # s0 moves
    resumed = KnowledgeGraph.resume(
        loaded, InMemoryGraphStore.load(tmp_path / "store"), tmp_path / "ledger"
    )
    assert resumed.following and resumed.communities_stale

    def fresh_table() -> dict:
        fresh = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=False)
        fresh.add_documents([Document(d, loaded.document(d).text) for d in loaded.doc_ids])
        return graph_table(KnowledgeGraph.build(fresh, communities=False))

    assert graph_table(resumed) == fresh_table()
    loaded.delete("s2")  # and it follows from here on
    assert graph_table(resumed) == fresh_table()
    (saved_folder(tmp_path / "ledger") / "ledger.json").write_text("{}", encoding="utf-8")
    with pytest.raises(
        StoreError, match=r"ledger.json is missing or corrupt \(checksum mismatch\)"
    ):  # a damaged ledger is a typed error
        KnowledgeGraph.resume(loaded, InMemoryGraphStore(), tmp_path / "ledger")


class RecordingEmbedder(FakeEmbedder):
    """A FakeEmbedder with no cache that records every text it embeds."""

    def __init__(self) -> None:
        super().__init__(dim=32, cache_size=0)
        self.texts: list[str] = []

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        self.texts += texts
        return super()._embed_batch(texts)


def assert_entity_vectors(kg: KnowledgeGraph, embedder: RecordingEmbedder, embeds: set[str]):
    """The graph's entity vectors are its entities' names' vectors; only ``embeds`` are made."""
    before = len(embedder.texts)
    ents, vectors = kg.entity_vectors()
    assert set(embedder.texts[before:]) == embeds
    assert sorted(e.id for e in ents) == sorted(e.id for e in kg.store.entities())
    names = [e.name for e in ents]
    np.testing.assert_allclose(vectors, FakeEmbedder(dim=32).embed(names), atol=1e-6)


def test_entity_vectors_are_kept_per_change_and_saved_with_the_ledger(tmp_path):
    from semrag.errors import StoreError
    from semrag.graph import InMemoryGraphStore

    embedder = RecordingEmbedder()
    index = SemanticIndex(embedder=embedder, ssg=False)
    index.add_documents([Document(f"s{i}", t) for i, t in enumerate(STORIES[:3])])
    kg = KnowledgeGraph.build(index, communities=False)
    assert_entity_vectors(kg, embedder, set())  # resolution's vectors: no name embedded again
    index.add_documents([Document("s3", STORIES[3])])
    assert_entity_vectors(kg, embedder, set())
    index.delete("s1")
    index.add_documents([Document("s0", STORIES[4])], on_conflict="replace")  # replaced
    assert_entity_vectors(kg, embedder, set())

    kg.store.save(tmp_path / "store")
    kg.save_ledger(tmp_path / "ledger")
    kg.detach()
    before = len(embedder.texts)
    resumed = KnowledgeGraph.resume(
        index, InMemoryGraphStore.load(tmp_path / "store"), tmp_path / "ledger"
    )
    assert embedder.texts[before:] == []  # the names' vectors were saved
    assert_entity_vectors(resumed, embedder, set())
    resumed.detach()

    # without resolution there are no names' vectors: a change embeds its new entities only
    plain = KnowledgeGraph.build(index, resolve=False, communities=False)
    assert_entity_vectors(plain, embedder, {e.name for e in plain.store.entities()})
    old = {e.name for e in plain.store.entities()}
    index.add_documents([Document("s5", STORIES[1])])
    new = {e.name for e in plain.store.entities()} - old
    assert new
    assert_entity_vectors(plain, embedder, new)
    plain.detach()

    np.save(saved_folder(tmp_path / "ledger") / "names.npy", np.zeros((2, 5)))  # damaged
    with pytest.raises(StoreError, match=r"names.npy is missing or corrupt \(checksum mismatch\)"):
        KnowledgeGraph.resume(index, InMemoryGraphStore(), tmp_path / "ledger")


def test_bm25_added_one_at_a_time_reads_each_length_when_a_term_is_first_asked():
    """Texts added one by one, their terms first asked for afterwards (the lengths by id)."""
    from semrag.index import BM25Index

    words = "ant bee cat dog elk fox gnu hen".split()
    texts = [" ".join([w] * (j + 1) + ["yak"] * (7 - j)) for j, w in enumerate(words)]
    for step in (1, 997):  # the lengths in an array by id, or (spread ids) in _docs alone
        bm = BM25Index()
        alive = {5 + step * j: text for j, text in enumerate(texts)}
        for i, text in alive.items():
            bm.add([i], [text])
        for word in words:
            check_bm25(bm, alive, f"{word} yak")


def test_bm25_removing_every_text_of_a_cached_term_at_once():
    """A delete of several chunks that empties a cached term's postings (a failing case once)."""
    from semrag.index import BM25Index

    bm = BM25Index()
    bm.add([0, 1, 2], ["honey bees", "honey", "rockets"])
    assert [i for i, _ in bm.search("honey", 3)] == [1, 0]  # caches the term
    assert bm.remove([0, 1]) == 2
    assert bm.search("honey", 3) == []
    check_bm25(bm, {2: "rockets"}, "honey rockets")


@settings(max_examples=60, deadline=None)
@given(
    ops=st.lists(
        st.tuples(st.booleans(), st.integers(0, 30), st.integers(0, 3)), min_size=1, max_size=60
    ),
    threshold=st.sampled_from([0.5, 0.99]),
)
def test_the_name_index_range_search_equals_brute_force(ops, threshold):
    from semrag.graph._name_index import NameIndex

    directions = np.eye(4)
    names = NameIndex()
    present: dict[str, np.ndarray] = {}
    for add, i, d in ops:  # adds, removals, and compactions once half the rows are dead
        key = f"n{i}"
        if add and key not in present:
            present[key] = directions[d] * 0.8 + 0.2 * directions[(d + 1) % 4]
            present[key] /= np.linalg.norm(present[key])
            names.add([key], present[key][None, :])
        elif not add:
            names.remove(key)
            present.pop(key, None)
        asked = sorted(present)
        found = names.within(asked + ["absent"], threshold)
        for key in asked:
            want = {k for k, v in present.items() if k != key and v @ present[key] >= threshold}
            assert set(found[key]) == want
        assert "absent" not in found


def test_a_failing_follower_does_not_keep_the_change_from_the_others():
    from semrag.errors import StoreError

    index = new_index()
    seen: list[int] = []

    class Down:
        def apply(self, change):
            raise StoreError("graph store down")

    class Recorder:
        def apply(self, change):
            seen.append(change.version)

    index.follow(Down())
    index.follow(Recorder())
    with pytest.raises(StoreError, match="graph store down"):
        index.add_documents([Document("a", "Bees make honey.")])
    assert seen == [1] and index.version == 1 and index.doc_ids == ["a"]
    index.follow(Down())  # a second failure is a note on the first
    with pytest.raises(StoreError, match="graph store down") as raised:
        index.delete("a")
    assert seen == [1, 2] and "another follower failed too" in " ".join(raised.value.__notes__)


def community_table(kg: KnowledgeGraph) -> list[tuple]:
    return sorted(
        (c.id, c.level, c.entity_ids, c.parent, c.title, c.summary, round(c.rank, 6))
        for c in kg.store.read_communities()
    )


def test_communities_that_follow_changes_equal_a_fresh_build(graph_store):
    from semrag.graph import InMemoryGraphStore

    def global_hits(index: SemanticIndex, kg: KnowledgeGraph) -> list:
        retriever = CommunityRetriever(index, kg, strategy="global", k=4)
        return [
            (h.chunk.doc_id, h.chunk.start, h.provenance[0]["community"])
            for q in ("Who designed the engine?", "Where did Obama meet Merkel?")
            for h in retriever.retrieve(q)
        ]

    index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=False)
    index.add_documents([Document(f"s{i}", t) for i, t in enumerate(STORIES[:3])])
    kg = KnowledgeGraph.build(index, store=graph_store())
    steps = [("add", "s3", STORIES[3]), ("delete", "s0", None), ("add", "s1", STORIES[4])]
    for op, doc_id, text in steps:
        if op == "add":
            index.add_documents([Document(doc_id, text)], on_conflict="replace")
        else:
            index.delete(doc_id)
        assert not kg.communities_stale
        fresh_index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=False)
        fresh_index.add_documents([Document(d, index.document(d).text) for d in index.doc_ids])
        fresh = KnowledgeGraph.build(fresh_index, store=InMemoryGraphStore())
        assert community_table(kg) == community_table(fresh), (op, doc_id)
        assert global_hits(index, kg) == global_hits(fresh_index, fresh), (op, doc_id)
        fresh.detach()
    kg.detach()


def test_a_resumed_graph_keeps_its_extractive_communities_following(tmp_path):
    from semrag.graph import InMemoryGraphStore

    index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=False)
    index.add_documents([Document(f"s{i}", t) for i, t in enumerate(STORIES[:3])])
    kg = KnowledgeGraph.build(index, community_levels=1)
    kg.save_ledger(tmp_path / "ledger")
    kg.store.save(tmp_path / "store")
    kg.detach()
    index.add_documents([Document("s3", STORIES[3])])  # while no graph follows
    resumed = KnowledgeGraph.resume(
        index, InMemoryGraphStore.load(tmp_path / "store"), tmp_path / "ledger"
    )
    index.delete("s0")  # and after
    assert resumed.communities_built and not resumed.communities_stale
    fresh = KnowledgeGraph.build(index, community_levels=1, store=InMemoryGraphStore())
    assert community_table(resumed) == community_table(fresh)
    fresh.detach()
    resumed.detach()


def test_a_loaded_graph_answers_its_first_global_query_embedding_only_the_query(tmp_path):
    from semrag.graph import InMemoryGraphStore

    question = "Where did Obama meet Merkel?"
    index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=False)
    index.add_documents([Document(f"s{i}", t) for i, t in enumerate(STORIES)])
    kg = KnowledgeGraph.build(index)
    want = CommunityRetriever(index, kg, strategy="global", k=3).retrieve(question)
    index.save(tmp_path / "index")
    kg.save_ledger(tmp_path / "ledger")
    kg.store.save(tmp_path / "store")

    loaded = SemanticIndex.load(tmp_path / "index", embedder=(counting := CountingEmbedder(dim=32)))
    store = InMemoryGraphStore.load(tmp_path / "store")
    resumed = KnowledgeGraph.resume(loaded, store, tmp_path / "ledger")
    got = CommunityRetriever(loaded, resumed, strategy="global", k=3).retrieve(question)
    # the load checks the model by its probe texts; then no report, name or chunk again
    assert counting.embedded == [*PROBE_TEXTS, question]
    assert [(h.chunk.doc_id, h.chunk.start, round(h.score, 5)) for h in got] == [
        (h.chunk.doc_id, h.chunk.start, round(h.score, 5)) for h in want
    ]
    assert not resumed.communities_stale


def test_llm_reports_are_not_rewritten_per_change_and_search_says_they_are_stale():
    index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=False)
    index.add_documents([Document(f"s{i}", t) for i, t in enumerate(STORIES[:3])])
    from langchain_core.language_models.fake import FakeListLLM

    from langchain_semrag import LangChainLLM

    fake = FakeListLLM(responses=['{"title": "People", "summary": "They met."}'] * 100)
    kg = KnowledgeGraph.build(index, community_llm=LangChainLLM(fake))
    asked = fake.i
    assert asked > 0  # the reports came from the LLM
    index.add_documents([Document("s3", STORIES[3])])
    assert kg.communities_stale and fake.i == asked  # no LLM call per change
    (hit, *_) = CommunityRetriever(index, kg, strategy="global", k=2).retrieve("Who met?")
    assert "refresh_communities" in hit.provenance[0]["note"]
    kg.refresh_communities()
    assert not kg.communities_stale
    (hit, *_) = CommunityRetriever(index, kg, strategy="global", k=2).retrieve("Who met?")
    assert "note" not in hit.provenance[0]


def test_the_async_build_takes_the_sync_builds_arguments_and_builds_the_same_graph(capsys):
    import asyncio

    index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=False)
    index.add_documents([Document(f"s{i}", t) for i, t in enumerate(STORIES)])
    sync = KnowledgeGraph.build(index)
    built = asyncio.run(KnowledgeGraph.abuild(index, show_progress=True))  # it lost this once
    assert "extracting" in capsys.readouterr().err  # the progress bar
    assert graph_table(built) == graph_table(sync)
    assert community_table(built) == community_table(sync)
    with pytest.raises(TypeError, match="KnowledgeGraph.abuild: .*no_such_option"):
        asyncio.run(KnowledgeGraph.abuild(index, no_such_option=1))
    sync.detach()
    built.detach()
