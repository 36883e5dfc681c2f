from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semrag import Document, SemanticChunker, SemanticIndex
from semrag.errors import ConfigError, DocumentConflictError, EmbeddingError, StoreError
from semrag.index import BM25Index, DenseIndex, SSGConfig
from semrag.index.storage import persist
from semrag.index.storage.persist import saved_folder
from semrag.testing import FakeEmbedder, FakeLLM

CATS = "The cat sat on the mat. The cat chased a mouse. The cat slept in the sun."
DOGS = "The dog barked at the mailman. The dog chased a ball. The dog slept by the fire."
STOCKS = "Stock prices fell sharply. Investors sold their shares. The market closed lower."


def make_index(**kw) -> SemanticIndex:
    emb = kw.pop("embedder", FakeEmbedder())
    kw.setdefault("chunker", SemanticChunker(emb, buffer_size=0, threshold=0.9))
    kw.setdefault("ssg", True)
    index = SemanticIndex(embedder=emb, **kw)
    index.add_documents(
        [
            Document("cats", CATS, {"topic": "pets"}),
            Document("dogs", DOGS),
            Document("stocks", STOCKS),
        ]
    )
    return index


def test_dense_index_add_search_remove():
    idx = DenseIndex(3)
    idx.add([10, 11], np.array([[1, 0, 0], [0, 1, 0]], dtype=np.float32))
    scores, ids = idx.search(np.array([1, 0.1, 0], dtype=np.float32), 3)
    assert ids[0].tolist() == [10, 11, -1]
    assert idx.remove([10]) == 1 and len(idx) == 1
    assert idx.search(np.array([1, 0, 0], dtype=np.float32), 1)[1][0].tolist() == [11]
    with pytest.raises(ConfigError, match="duplicate ids in DenseIndex.add"):
        idx.add([11], np.ones((1, 3), np.float32))
    with pytest.raises(EmbeddingError, match="expected vectors of shape"):
        idx.add([12], np.ones((1, 4), np.float32))
    with pytest.raises(EmbeddingError, match="vectors contain NaN or inf"):
        idx.add([12], np.full((1, 3), np.nan, np.float32))
    with pytest.raises(EmbeddingError, match="query dimension 4; index dimension 3"):
        idx.search(np.ones(4, np.float32), 1)


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_a_version_answers_a_repeated_query_once(monkeypatch, kind):
    """The same query of the same version is searched once; a change starts afresh."""
    idx = DenseIndex(4, kind=kind)
    rng = np.random.default_rng(0)
    idx.add(list(range(30)), rng.normal(size=(30, 4)).astype(np.float32))
    searched = []
    # the approximate structure's search (ApproximateRows), or the exact one's
    owner, method = (idx._rows, "search") if kind == "hnsw" else (idx, "_exact_search")
    inner = getattr(owner, method)
    monkeypatch.setattr(owner, method, lambda v, q, k: searched.append(len(q)) or inner(v, q, k))
    q, other = rng.normal(size=(2, 4)).astype(np.float32)
    first = idx.search(q, 5)
    both = idx.search(np.stack([other, q]), 5)  # only the new row is searched
    again = idx.search(q, 5)
    assert searched == [1, 1]
    for got in (both[1][1], again[1][0]):
        assert got.tolist() == first[1][0].tolist()
    assert idx.search(q, 6)[1].shape == (1, 6) and searched == [1, 1, 1]  # another k
    idx.remove([int(first[1][0][0])])
    after = idx.search(q, 5)
    assert searched[-1] == 1 and int(first[1][0][0]) not in after[1][0].tolist()


@settings(max_examples=40, deadline=None)
@given(
    n=st.sampled_from([5, 2047, 2048, 5000]),  # short rows, and long ones cut by a sample first
    k=st.integers(1, 80),
    levels=st.sampled_from([1, 3, 50, 10**6]),  # few values (ties, at the k-th too) or many
    seed=st.integers(0, 2**16),
)
def test_top_k_is_the_best_first_with_ties_to_the_lower_column(n, k, levels, seed):
    from semrag.index._top_k import top_k

    rng = np.random.default_rng(seed)
    sims = rng.integers(0, levels, size=(1, n)).astype(np.float64) / levels
    cols, vals = top_k(sims, k)
    expected = np.lexsort((np.arange(n), -sims[0]))[:k]
    assert cols[0].tolist() == expected.tolist()
    assert vals[0].tolist() == sims[0, expected].tolist()


def test_dense_hnsw_matches_flat_on_small_data(tmp_path):
    rng = np.random.default_rng(0)
    v = rng.normal(size=(300, 16)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    flat, hnsw = DenseIndex(16), DenseIndex(16, kind="hnsw")
    flat.add(np.arange(300), v)
    hnsw.add(np.arange(300), v)
    q = v[:20]
    assert (flat.search(q, 1)[1] == hnsw.search(q, 1)[1]).mean() >= 0.95
    hnsw.remove([0])
    assert 0 not in hnsw.search(v[0], 5)[1][0]


def test_bm25_differs_from_nothing_and_handles_empty():
    bm = BM25Index()
    assert bm.search("anything", 3) == []
    bm.add([1, 2, 3], ["the cat sat", "dogs bark loudly", "cat and dog"])
    hits = bm.search("cat", 3)
    assert [i for i, _ in hits] in ([1, 3], [3, 1])
    assert all(s > 0 for _, s in hits)
    bm.remove([1])
    assert [i for i, _ in bm.search("cat", 3)] == [3]
    assert bm.search("", 3) == []


def test_bm25_agrees_with_rank_bm25():
    from rank_bm25 import BM25Okapi

    from semrag.index import bm25_tokenize

    docs = [CATS, DOGS, STOCKS, "cat dog stock"]
    bm = BM25Index()
    bm.add(list(range(4)), docs)
    ref = BM25Okapi([bm25_tokenize(d) for d in docs])
    ids, scores = bm.scores("cat chased the ball")
    np.testing.assert_allclose(scores, ref.get_scores(bm25_tokenize("cat chased the ball")))


def test_bm25_keeps_a_query_answer_until_the_next_change():
    bm = BM25Index(idf="lucene")
    bm.add([0, 1, 2], ["ant bee", "bee cat", "cat dog"])
    first = bm.matches("bee cat")
    again = bm.matches("Bee, cat!")  # the same tokens: answered from the kept arrays
    assert again[0] is first[0] and again[1] is first[1]
    with pytest.raises(ValueError, match="assignment destination is read-only"):
        first[1][0] = 0.0  # shared answers are read-only
    bm.add([3], [""])  # a text without terms changes n, so every idf
    grown = bm.matches("bee cat")
    assert grown[1] is not first[1] and not np.allclose(grown[1], first[1])
    bm.remove([1])
    assert bm.matches("bee cat")[0].tolist() == [0, 2]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from("ant bee cat dog elk fox gnu".split()), max_size=6),
        min_size=1,
        max_size=6,
    ),
    st.lists(st.sampled_from("ant bee cat dog elk fox gnu yak".split()), min_size=1, max_size=4),
)
def test_bm25_lucene_idf_is_the_formula_and_every_match_scores_above_zero(texts, query):
    bm = BM25Index(idf="lucene")
    bm.add(list(range(len(texts))), [" ".join(t) for t in texts])
    ids, scores = bm.scores(" ".join(query))
    n = len(texts)
    avgdl = sum(map(len, texts)) / n
    for i, tokens in zip(ids, (texts[i] for i in ids), strict=True):
        expected = 0.0
        for term in query:
            tf = tokens.count(term)
            if not tf:
                continue
            df = sum(term in t for t in texts)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            expected += idf * tf * 2.5 / (tf + 1.5 * (0.25 + 0.75 * len(tokens) / avgdl))
        assert scores[i] == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert (scores[i] > 0) == any(term in tokens for term in query)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from("ant bee cat dog elk".split()), max_size=5),
        min_size=1,
        max_size=12,
    ),
    st.lists(st.sampled_from("ant bee cat yak".split()), min_size=1, max_size=3),
    st.integers(1, 13),
)
def test_bm25_sums_and_ranks_alike_whatever_the_ids(texts, query, k):
    q = " ".join(query)
    docs = [" ".join(t) for t in texts]
    answers = []
    for first, step in ((0, 1), (-3, 1), (-7, 10_000)):  # dense, shifted and spread ids
        bm = BM25Index()
        ids = [first + step * i for i in range(len(docs))]
        bm.add(ids, docs)
        found, scores = bm.matches(q)
        answers.append(((found - first) // step, scores))
        expected = np.argsort(-scores, kind="stable")[:k]  # best first, ties to the lower id
        assert bm.search(q, k) == [(int(found[i]), float(scores[i])) for i in expected]
    for found, scores in answers[1:]:
        np.testing.assert_array_equal(found, answers[0][0])
        np.testing.assert_array_equal(scores, answers[0][1])  # the same sums, to the bit


def assert_same_answers(bm: BM25Index, fresh: BM25Index, queries: list[str]) -> None:
    for q in queries:  # the same ids and the same sums, to the bit
        for got, want in zip(bm.matches(q), fresh.matches(q), strict=True):
            np.testing.assert_array_equal(got, want)


def _added_one_at_a_time(
    rng: np.random.Generator, words: int, texts: int, lengths: tuple[int, int]
) -> tuple[list[str], BM25Index]:
    """Random texts of ``words`` words, and a BM25 index they were added to one at a time."""
    vocabulary = [f"w{i}" for i in range(words)]
    made = [" ".join(rng.choice(vocabulary, size=rng.integers(*lengths))) for _ in range(texts)]
    bm = BM25Index()
    for i, text in enumerate(made):
        bm.add([i], [text])
    return made, bm


def test_bm25_segments_stay_few_and_answer_as_one_build():
    """Texts added one at a time, then removed: segments merge by size, scores as if built once."""
    rng = np.random.default_rng(0)
    texts, bm = _added_one_at_a_time(rng, 60, 700, (0, 12))
    levels = [s.level for s in bm._segments]
    assert max(levels.count(level) for level in levels) < 8  # eight of a size are merged
    assert len(levels) > 1  # and no sooner: an add does not rewrite the index
    queries = ["w1 w2", "w3", "w4 w4 w5 w6 w7", "w59 w0", "nothing"]
    assert_same_answers(bm, _built(dict(enumerate(texts))), queries)
    gone = set(rng.choice(700, size=300, replace=False).tolist())
    for start in range(0, 300, 7):  # removed a few at a time
        assert bm.remove(sorted(gone)[start : start + 7]) == len(sorted(gone)[start : start + 7])
    assert all(2 * s.dead <= s.size for s in bm._segments)  # half-dead segments are rebuilt
    survivors = {i: t for i, t in enumerate(texts) if i not in gone}
    assert_same_answers(bm, _built(survivors), queries)


def test_bm25_no_merge_makes_a_segment_past_the_cap(monkeypatch):
    """Past ``_MERGE_CAP`` postings segments are not merged (a posting is copied a bounded
    number of times); the answers are those of one build all the same."""
    from semrag.index.parts import sparse

    monkeypatch.setattr(sparse, "_MERGE_CAP", 40)
    texts, bm = _added_one_at_a_time(np.random.default_rng(3), 30, 400, (1, 6))
    sizes = [s.doc_terms.size for s in bm._segments]
    assert max(sizes) <= 40 < sum(sizes)  # merged up to the cap, never past it
    assert len(sizes) > 8 and max(sizes) > 8  # many segments, some of them merged
    assert_same_answers(bm, _built(dict(enumerate(texts))), ["w1 w2", "w3", "w29 w0 w7"])


def test_bm25_merged_segments_equal_segments_sorted_from_scratch():
    """A merge places each posting by counting; the arrays equal a sort of the postings."""
    from semrag.index.parts._postings import Segment

    rng = np.random.default_rng(1)
    words = [f"w{i}" for i in range(40)]
    bm = BM25Index()
    for i in range(600):
        bm.add([i], [" ".join(rng.choice(words, size=rng.integers(0, 9)))])
        if i % 37 == 36:  # some dead texts inside the segments that merge later
            bm.remove([i - 3])
    merged = [s for s in bm._segments if s.stop - s.start > 1]
    assert merged  # merges happened
    for seg in merged:
        sorted_ = Segment(seg.start, np.diff(seg.doc_ptr), seg.doc_terms, seg.doc_tf, seg.size)
        for name in ("terms", "ptr", "slots", "tf"):
            np.testing.assert_array_equal(getattr(seg, name), getattr(sorted_, name), name)
        assert seg.slots.dtype == sorted_.slots.dtype and seg.terms.dtype == sorted_.terms.dtype


def test_bm25_compaction_renumbers_slots_and_terms(monkeypatch, tmp_path):
    from semrag.index.parts import sparse

    monkeypatch.setattr(sparse, "_SPARE", 0)
    bm = BM25Index()
    bm.add([5, 6], ["ant bee cat", "dog"])
    bm.add([7], ["dog elk ant"])
    bm.remove([7])  # one dead slot of two: kept
    assert bm._next == 3
    bm.remove([5])  # two dead slots against one live, four dead terms against one
    assert bm._names == ["dog"] and bm._next == 1 and len(bm._segments) == 1
    bm.add([8, 5], ["elk dog dog", "bee"])  # new slots and terms after the renumbering
    survivors = {6: "dog", 8: "elk dog dog", 5: "bee"}
    assert_same_answers(bm, _built(survivors), ["dog", "elk bee", "ant", "cat dog"])
    bm.save(tmp_path)
    assert_same_answers(BM25Index.load(tmp_path), _built(survivors), ["dog bee elk"])


def _built(texts: dict[int, str]) -> BM25Index:
    fresh = BM25Index()
    fresh.add(sorted(texts), [texts[i] for i in sorted(texts)])
    return fresh


def test_bm25_idf_variant_is_saved_and_checked(tmp_path):
    bm = BM25Index(idf="lucene")
    bm.add([0, 1], ["bees find flowers", "rockets reach orbit"])
    bm.save(tmp_path)
    again = BM25Index.load(tmp_path)
    assert again.idf == "lucene"
    assert again.search("bees", 2) == bm.search("bees", 2)
    with pytest.raises(ConfigError, match="idf must be one of"):
        BM25Index(idf="bm25+")
    index = SemanticIndex(embedder=FakeEmbedder(), sparse="lucene", ssg=False)
    index.add_documents([Document("a", "Bees find flowers."), Document("b", "Rockets fly.")])
    assert index.search_sparse("bees", k=2)[0].score > 0
    index.save(tmp_path / "index")
    assert (
        SemanticIndex.load(tmp_path / "index", embedder=FakeEmbedder()).reader().sparse.idf
        == "lucene"
    )


def test_index_holds_everything():
    index = make_index()
    assert index.doc_ids == ["cats", "dogs", "stocks"]
    assert len(index.reader().sentences("cats")) == 3
    assert all(index.document(c.doc_id).text[c.start : c.end] == c.text for c in index.chunks())
    assert index.chunks("cats")[0].metadata == {"topic": "pets"}
    assert index.search("stock market shares", k=1)[0].chunk.doc_id == "stocks"
    assert index.search_sparse("mailman", k=1)[0].chunk.doc_id == "dogs"
    assert index.reader().themes("cats") and "cat" in " ".join(index.reader().themes("cats"))


def test_embeddings_are_computed_once_and_batched():
    emb = FakeEmbedder()
    index = SemanticIndex(embedder=emb, chunker=SemanticChunker(emb, buffer_size=0), ssg=True)
    index.add_documents([Document(str(i), CATS + f" Extra{i}.") for i in range(10)])
    # One call for all sentences, one for chunk/theme texts; the chunker hit the cache.
    assert emb.calls == 2


def test_ssg_edges_and_nodes():
    index = make_index(ssg=SSGConfig(window=2, top_k=3, top_x=2, min_intra=0.0, min_inter=0.0))
    g = index.reader().ssg_view().graph
    assert g.n_nodes == 6  # 3 documents x 2 windows of 2 sentences
    for node in range(g.n_nodes):
        ids, scores, kinds = g.neighbours(node)
        assert node not in ids
        same = g.node_doc[ids] == g.node_doc[node]
        assert np.array_equal(same, kinds == 0)
        assert (kinds == 1).sum() <= 2
    assert len(g.theme_bridges) == 3 and all(len(b) == 2 for b in g.theme_bridges)
    chunk = index.reader().ssg_view().node_chunk(0)
    assert chunk.text == "The cat sat on the mat. The cat chased a mouse."


def test_add_and_delete_update_the_graph():
    index = make_index()
    n_before = index.reader().ssg_view().graph.n_nodes
    index.add_documents([Document("birds", "Birds sing at dawn. Birds fly south.")])
    assert index.reader().ssg_view().graph.n_nodes == n_before + 1
    assert index.delete("cats") is True and index.delete("cats") is False
    assert "cats" not in index.reader().ssg_view().graph.doc_ids
    assert all(h.chunk.doc_id != "cats" for h in index.search("cat mat mouse", k=10))
    assert all(h.chunk.doc_id != "cats" for h in index.search_sparse("cat", k=10))


def test_readding_a_document_replaces_it():
    index = make_index()
    index.add_documents(
        [Document("cats", "Cats are now about something else entirely.")], on_conflict="replace"
    )
    assert len(index) == 3
    assert [c.text for c in index.chunks("cats")] == ["Cats are now about something else entirely."]
    assert len(index.search("cat", k=50)) == len(index.chunks())


def test_bad_input():
    index = make_index()
    with pytest.raises(DocumentConflictError, match=r"more than once: \['x'\]") as caught:
        index.add_documents([Document("x", "a."), Document("x", "b.")])
    assert caught.value.ids == ["x"] and "x" not in index
    with pytest.raises(ConfigError, match="JSON"):
        index.add_documents([Document("y", "a.", {"bad": object()})])
    with pytest.raises(TypeError, match="documents must be semrag Documents, str, or"):
        index.add_documents([42])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="SemanticIndex.search: query must be a str,"):
        index.search(b"bytes")  # type: ignore[arg-type]
    assert "y" not in index


def test_empty_and_whitespace_documents():
    index = make_index()
    index.add_documents([Document("empty", ""), Document("blank", "   \n")])
    assert index.chunks("empty") == [] and index.reader().sentences("blank") == []
    assert (
        index.reader().ssg_view().graph.n_nodes == 3
    )  # one 3-sentence window per non-empty document


def test_save_load_round_trip(tmp_path, monkeypatch):
    from semrag.index.parts.live_ssg import LiveSSG

    index = make_index()
    before = [(h.chunk, round(h.score, 5)) for h in index.search("dog ball", k=3)]
    _ = index.reader().ssg_view().graph
    index.save(tmp_path / "idx")

    def no_rebuild(*args, **kwargs):
        raise AssertionError("the graph was rebuilt instead of loaded")

    monkeypatch.setattr(LiveSSG, "fresh", no_rebuild)
    loaded = SemanticIndex.load(tmp_path / "idx", embedder=FakeEmbedder())
    assert loaded.doc_ids == index.doc_ids
    assert [(h.chunk, round(h.score, 5)) for h in loaded.search("dog ball", k=3)] == before
    assert loaded.search_sparse("mailman", 1)[0].chunk.doc_id == "dogs"
    for a, b in zip(
        loaded.reader().ssg_view().graph.csr(), index.reader().ssg_view().graph.csr(), strict=True
    ):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(
        loaded.reader().ssg_view().graph.pca_components,
        index.reader().ssg_view().graph.pca_components,
    )
    assert loaded.reader().themes("cats") == index.reader().themes("cats")
    loaded.add_documents([Document("birds", "Birds sing at dawn.")], on_conflict="replace")
    ids = [c for d in loaded.doc_ids for c in loaded.reader().chunk_ids(d)]
    assert len(ids) == len(set(ids))


def test_load_checks_dimension_and_format(tmp_path):
    make_index().save(tmp_path / "idx")
    with pytest.raises(ConfigError, match="256-dimensional"):
        SemanticIndex.load(tmp_path / "idx", embedder=FakeEmbedder(dim=32))
    m = json.loads((saved_folder(tmp_path / "idx") / "manifest.json").read_text())
    m["format_version"] = 99
    (saved_folder(tmp_path / "idx") / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ConfigError, match="upgrade"):
        SemanticIndex.load(tmp_path / "idx", embedder=FakeEmbedder())
    with pytest.raises(ConfigError, match="no saved"):
        SemanticIndex.load(tmp_path / "missing", embedder=FakeEmbedder())


def test_corrupt_file_is_detected(tmp_path):
    make_index().save(tmp_path / "idx")
    with open(saved_folder(tmp_path / "idx") / "documents.jsonl", "a") as f:
        f.write("garbage\n")
    with pytest.raises(StoreError, match="corrupt"):
        SemanticIndex.load(tmp_path / "idx", embedder=FakeEmbedder())


def test_crash_during_save_leaves_the_previous_save(tmp_path, monkeypatch):
    index = make_index()
    index.save(tmp_path / "idx")
    index.add_documents([Document("birds", "Birds sing at dawn.")])

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(BM25Index, "save", boom)
    with pytest.raises(OSError, match="disk full"):
        index.save(tmp_path / "idx")
    monkeypatch.undo()
    loaded = SemanticIndex.load(tmp_path / "idx", embedder=FakeEmbedder())
    assert loaded.doc_ids == ["cats", "dogs", "stocks"]
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".idx")], "temp dirs left behind"


def test_crash_before_manifest_is_not_loadable(tmp_path, monkeypatch):
    monkeypatch.setattr(persist, "_fsync_dir", lambda p: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        make_index().save(tmp_path / "idx")
    assert [p.name for p in (tmp_path / "idx").iterdir()] == []  # nothing published or left
    with pytest.raises(ConfigError, match="no saved"):
        SemanticIndex.load(tmp_path / "idx", embedder=FakeEmbedder())


async def test_async_add_and_search_equal_sync():
    sync = make_index()
    emb = FakeEmbedder()
    asyn = SemanticIndex(
        embedder=emb, chunker=SemanticChunker(emb, buffer_size=0, threshold=0.9), ssg=True
    )
    await asyn.aadd_documents(
        [
            Document("cats", CATS, {"topic": "pets"}),
            Document("dogs", DOGS),
            Document("stocks", STOCKS),
        ]
    )
    assert asyn.chunks() == sync.chunks()
    assert [h.chunk for h in await asyn.asearch("dog", 2)] == [
        h.chunk for h in sync.search("dog", 2)
    ]


def test_llm_themes_and_malformed_reply():
    emb = FakeEmbedder()
    llm = FakeLLM(['{"themes": ["felines", "rest"]}'])
    index = SemanticIndex(embedder=emb, theme_llm=llm, ssg=True)
    index.add_documents([Document("cats", CATS)])
    assert index.reader().themes("cats") == ["felines", "rest"]
    bad = SemanticIndex(
        embedder=emb, theme_llm=FakeLLM(["no", "still no"]), on_llm_error="raise", ssg=True
    )
    from semrag.errors import LLMOutputError

    with pytest.raises(LLMOutputError, match="LLM reply failed validation after 2"):
        bad.add_documents([Document("cats", CATS)])
    assert "cats" not in bad
    # The default falls back to the keyword themes and says so.
    fallback = SemanticIndex(embedder=emb, theme_llm=FakeLLM(["no", "still no"]), ssg=True)
    fallback.add_documents([Document("cats", CATS)])
    keywords = SemanticIndex(embedder=emb, ssg=True)
    keywords.add_documents([Document("cats", CATS)])
    assert fallback.reader().themes("cats") == keywords.reader().themes("cats")
    (note,) = fallback.notes
    assert note.startswith("cats: themes: LLM reply invalid")


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_theme_llm_that_raises_takes_the_same_fallback(mode):
    class Down:
        def complete(self, prompt):
            raise ConnectionError("model server down")

        async def acomplete(self, prompt):
            raise ConnectionError("model server down")

    index = SemanticIndex(embedder=FakeEmbedder(), theme_llm=Down(), ssg=True)
    docs = [Document("cats", CATS)]
    if mode == "sync":
        index.add_documents(docs)
    else:
        await index.aadd_documents(docs)
    assert index.notes == [
        "cats: themes: LLM call failed (ConnectionError: model server down); keyword themes used"
    ]


def test_failed_replacement_keeps_the_old_version():
    class Breaks(FakeEmbedder):
        broken = False

        def _embed_batch(self, texts):
            if self.broken:
                return np.full((len(texts), self.dim), np.nan)
            return super()._embed_batch(texts)

    embedder = Breaks()
    index = make_index(embedder=embedder)
    old = index.chunks("cats")
    embedder.broken = True
    with pytest.raises(EmbeddingError, match="FakeEmbedder returned NaN or inf in 1 of 1"):
        index.add_documents(
            [Document("cats", "A brand new text about cats.")], on_conflict="replace"
        )
    assert index.chunks("cats") == old
    assert index.search_sparse("mat", 1)[0].chunk.doc_id == "cats"


def test_chunk_vectors_mean_option():
    index = make_index(chunk_vectors="mean")
    assert index.search("stock shares", k=1)[0].chunk.doc_id == "stocks"
    with pytest.raises(ConfigError, match="SemanticIndex: chunk_vectors='max' is not"):
        SemanticIndex(embedder=FakeEmbedder(), chunk_vectors="max", ssg=True)


def test_build_edges_matches_brute_force():
    from semrag.index.parts.ssg import build_edges

    rng = np.random.default_rng(3)
    v = rng.normal(size=(60, 12)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    offsets = [0, 20, 45, 60]
    cfg = SSGConfig(top_k=4, top_x=3, min_intra=-1.0, min_inter=-1.0)
    indptr, indices, scores, kinds = build_edges(v, offsets, cfg)
    doc = np.repeat(np.arange(3), np.diff(offsets))
    sims = v @ v.T
    for i in range(60):
        got = indices[indptr[i] : indptr[i + 1]]
        k = kinds[indptr[i] : indptr[i + 1]]
        same = np.flatnonzero((doc == doc[i]) & (np.arange(60) != i))
        other = np.flatnonzero(doc != doc[i])
        want_intra = same[np.argsort(-sims[i, same])][:4]
        want_inter = other[np.argsort(-sims[i, other])][:3]
        assert got[k == 0].tolist() == want_intra.tolist()
        assert got[k == 1].tolist() == want_inter.tolist()
    np.testing.assert_allclose(
        scores, sims[np.repeat(np.arange(60), np.diff(indptr)), indices], rtol=1e-5
    )


def test_build_edges_thresholds():
    from semrag.index.parts.ssg import build_edges

    v = np.eye(4, dtype=np.float32)  # all pairs orthogonal: similarity 0
    indptr, indices, _, _ = build_edges(v, [0, 2, 4], SSGConfig(min_intra=0.4, min_inter=0.3))
    assert indices.size == 0 and indptr.tolist() == [0, 0, 0, 0, 0]


def test_build_edges_fallback_for_documents_larger_than_the_search_depth():
    from semrag.index.parts.ssg import build_edges

    rng = np.random.default_rng(4)
    base = rng.normal(size=12)
    big = base + 0.05 * rng.normal(size=(100, 12))  # 100 near-identical nodes: one document
    small = rng.normal(size=(10, 12))
    v = np.concatenate([big, small]).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    indptr, indices, _, kinds = build_edges(v, [0, 100, 110], SSGConfig(top_x=3, min_inter=-1.0))
    sims = v @ v.T
    for i in range(100):
        got = indices[indptr[i] : indptr[i + 1]][kinds[indptr[i] : indptr[i + 1]] == 1]
        want = 100 + np.argsort(-sims[i, 100:])[:3]
        assert got.tolist() == want.tolist()


def test_concurrent_adds_and_searches():
    import threading

    index = make_index()
    errors: list[BaseException] = []

    def writer(n):
        try:
            for i in range(5):
                index.add_documents(
                    [Document(f"w{n}-{i}", f"Writer {n} wrote note {i}. It is short.")]
                )
                index.delete(f"w{n}-{i - 1}")
        except BaseException as exc:  # noqa: BLE001 - collected and re-raised below
            errors.append(exc)

    def reader():
        try:
            for _ in range(30):
                index.search("writer note", k=5)
                index.search_sparse("note", k=5)
                _ = index.reader().ssg_view().graph.n_nodes
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sorted(d for d in index.doc_ids if d.startswith("w")) == ["w0-4", "w1-4", "w2-4"]
    assert len(index.search("writer", k=100)) == len(index.chunks())


def test_dense_index_appends_in_place_and_keeps_ids_sorted():
    idx = DenseIndex(2)
    rows = np.eye(2, dtype=np.float32)
    for i in range(100):  # appends reuse the buffer: no copy of the index per call
        idx.add([i], rows[i % 2][None, :])
    assert idx.ids.tolist() == list(range(100)) and len(idx) == 100
    idx.add([-5, 500], rows)  # out of order: still sorted, vectors follow their ids
    assert idx.ids[0] == -5 and idx.ids[-1] == 500
    np.testing.assert_array_equal(idx.vectors_of([-5, 500]), rows)
    with pytest.raises(ConfigError, match="duplicate"):
        idx.add([7], rows[:1])
    with pytest.raises(ValueError, match="assignment destination is read-only"):
        idx.vectors[0, 0] = 3.0  # views are read-only
    assert idx.remove([0, 1, 500]) == 3 and 0 not in idx.ids.tolist()
    assert idx.search(rows[1], 1)[1][0][0] in idx.ids


def test_dense_rows_view_is_the_stored_rows_without_a_copy():
    idx = DenseIndex(2)
    rows = np.random.default_rng(0).normal(size=(6, 2)).astype(np.float32)
    idx.add(range(6), rows)
    view = idx.rows_view([2, 3, 4])
    np.testing.assert_array_equal(view, rows[2:5])
    assert np.shares_memory(view, idx.buffer) and not view.flags.writeable
    gaps = idx.rows_view([1, 3])  # not consecutive rows: a copy
    np.testing.assert_array_equal(gaps, rows[[1, 3]])
    assert not np.shares_memory(gaps, idx.buffer)
    with pytest.raises(KeyError, match="ids not in the index:"):
        idx.rows_view([5, 6])
    before = idx.buffer
    idx.add(range(6, 200), np.ones((194, 2), np.float32))  # outgrows the buffer: it moves
    assert idx.buffer is not before and not np.shares_memory(view, idx.buffer)
    idx.remove(range(100))  # compacted: it moves again
    np.testing.assert_array_equal(idx.rows_view([100, 101]), np.ones((2, 2)))


def test_every_vector_is_held_once_without_an_ssg_too(tmp_path):
    index = make_index(ssg=False)
    assert index.reader().part_set.ssg is None
    for doc_id in index.doc_ids:
        e = index.reader().indexed(doc_id)
        assert np.shares_memory(e.chunk_vectors, index.reader().dense.buffer)
    index.save(tmp_path / "i")
    loaded = SemanticIndex.load(tmp_path / "i", embedder=FakeEmbedder())
    for doc_id in loaded.doc_ids:
        e, old = loaded.reader().indexed(doc_id), index.reader().indexed(doc_id)
        assert np.shares_memory(e.chunk_vectors, loaded.reader().dense.buffer)
        np.testing.assert_array_equal(e.chunk_vectors, old.chunk_vectors)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from("ant bee cat dog elk fox gnu".split()), min_size=1, max_size=8),
        min_size=1,
        max_size=6,
    ),
    st.lists(st.sampled_from("ant bee cat dog yak".split()), min_size=1, max_size=3),
)
def test_bm25_keeps_each_term_once_and_a_save_keeps_the_scores(tmp_path_factory, texts, query):
    from rank_bm25 import BM25Okapi

    bm = BM25Index()
    bm.add(list(range(len(texts))), [" ".join(t) for t in texts])
    # one string per term, and one posting per distinct term of a text, in arrays
    assert sorted(bm._names) == sorted({term for t in texts for term in t})
    assert sum(s.doc_terms.size for s in bm._segments) == sum(len(set(t)) for t in texts)
    directory = tmp_path_factory.mktemp("bm25")
    bm.save(directory)
    again = BM25Index.load(directory)
    ref = BM25Okapi(texts).get_scores(query)
    for index in (bm, again):  # term frequencies and lengths survive the save
        np.testing.assert_allclose(index.scores(" ".join(query))[1], ref, rtol=1e-9, atol=1e-12)
        asked = list(range(len(texts)))[::-1]  # any order, from the query's postings alone
        np.testing.assert_allclose(
            index.scores_of(" ".join(query), asked), ref[asked], rtol=1e-9, atol=1e-12
        )
    with pytest.raises(KeyError, match="not in the BM25 index"):
        bm.scores_of("ant", [0, len(texts)])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 58), st.integers(1, 20)), min_size=1, max_size=12),
    st.lists(st.tuples(st.integers(0, 70), st.integers(0, 15)), min_size=1, max_size=10),
)
def test_overlapping_chunks_equals_a_scan_for_any_chunk_layout(spans, queries):
    from semrag.types import Chunk

    text = "".join(chr(ord("a") + i % 26) for i in range(80))
    cuts = sorted({(a, min(80, a + n)) for a, n in spans}, key=lambda s: (s[1], -s[0]))
    chunks = [Chunk("d", a, b, text[a:b], 1) for a, b in cuts]  # any order, overlapping
    index = SemanticIndex(embedder=FakeEmbedder(dim=16), ssg=False)
    index.add_chunks(chunks, documents=[Document("d", text)])
    stored = list(zip(index.reader().chunk_ids("d"), index.chunks("d"), strict=True))
    for start, n in queries:
        end = start + n
        want = [i for i, c in stored if c.start < end and start < c.end]
        assert index.reader().overlapping_chunks("d", start, end) == want
    assert index.reader().overlapping_chunks("missing", 0, 5) == []
