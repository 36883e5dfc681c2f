"""Invariants of SPC repair, the stitching window, damage scores and IAR fusion."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from semrag import Document, SemanticIndex
from semrag.errors import ConfigError
from semrag.index.fusion import fuse_weighted, normalise_scores
from semrag.postprocess import SPC, assess, best_window
from semrag.postprocess.spc import ANYTIME
from semrag.retrieval import IntentAwareRetriever
from semrag.testing import FakeEmbedder
from semrag.text import WhitespaceTokenizer
from semrag.text.phrases import entities, key_phrases
from semrag.types import Chunk, ScoredChunk
from tests.strategies import any_text, sentence_like


@st.composite
def windows(draw):
    n = draw(st.integers(1, 12))
    tokens = draw(st.lists(st.integers(1, 30), min_size=n, max_size=n))
    rel = draw(st.lists(st.floats(-1, 1), min_size=n, max_size=n))
    a = draw(st.integers(0, n - 1))
    b = draw(st.integers(a + 1, n))
    budget = draw(st.integers(1, 120))
    return tokens, rel, (a, b), budget


@given(windows())
def test_best_window_is_contiguous_fits_and_keeps_what_it_must(case):
    tokens, rel, (ra, rb), budget = case
    a, b = best_window(tokens, rel, (ra, rb), budget)
    assert 0 <= a < b <= len(tokens)
    if sum(tokens[ra:rb]) <= budget:
        assert a <= ra and rb <= b  # the required sentences are kept
        assert sum(tokens[a:b]) <= budget
    elif any(t <= budget for t in tokens[ra:rb]):
        assert ra <= a and b <= rb and sum(tokens[a:b]) <= budget
    else:
        assert b - a == 1 and ra <= a < rb


@given(any_text)
def test_completeness_is_a_score(text):
    found = assess(text)
    assert 0.0 <= found.score <= 1.0
    assert found.damaged(0.5) == (found.score < 0.5)


@given(any_text)
def test_phrases_keep_exact_offsets(text):
    for p in entities(text) + key_phrases(text):
        assert text[p.start : p.end] == p.text


@given(
    st.lists(st.one_of(st.floats(-1e6, 1e6), st.just(float("nan"))), max_size=20),
    st.sampled_from(["minmax", "max", "rank"]),
)
def test_normalised_scores_are_in_unit_range(scores, method):
    out = normalise_scores(scores, method)
    assert ((out >= 0) & (out <= 1)).all()


@given(st.lists(st.one_of(st.floats(-1e6, 1e6), st.just(float("nan"))), min_size=1, max_size=30))
def test_rank_normalisation_keeps_the_order_and_only_the_order(scores):
    s = np.array(scores, dtype=np.float64)
    out = normalise_scores(s, "rank")
    known = ~np.isnan(s)
    assert (out[~known] == 0).all()
    if known.any():
        assert out[known].max() == 1.0
        a, b = s[known], out[known]
        for i in range(len(a)):  # higher score -> higher value, ties equal
            assert ((a > a[i]) <= (b > b[i])).all() and ((a == a[i]) == (b == b[i])).all()
        # a monotone (and exact) rescaling of the scores changes nothing
        assert np.array_equal(normalise_scores(s * 2, "rank"), out)


@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 50)), min_size=1, max_size=20))
def test_fused_scores_are_in_unit_range(pairs):
    dense, sparse = zip(*pairs, strict=True)
    out = fuse_weighted({"dense": dense, "sparse": sparse}, {"dense": 0.3, "sparse": 0.7})
    assert ((out >= -1e-12) & (out <= 1 + 1e-12)).all()


@given(
    st.lists(sentence_like.filter(str.strip), min_size=1, max_size=6),
    st.data(),
    st.integers(4, 60),
)
def test_repair_returns_exact_source_spans_within_budget(sentences, data, budget):
    text = ". ".join(s.strip() for s in sentences) + "."
    emb = FakeEmbedder()
    index = SemanticIndex(embedder=emb, ssg=False)
    index.add_documents([Document("d", text)])
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    fragment = text[start:end]
    assume(fragment.strip())
    tok = WhitespaceTokenizer()
    chunk = Chunk("d", start, end, fragment, tok.count([fragment])[0])
    own = tok.count([fragment])[0]
    for context in (None, budget):  # the default's order, and one context of ``budget``
        result = SPC(index, tokenizer=tok, unit="tokens", context=context, audit=False).process(
            "cat", [ScoredChunk(chunk, 1.0)]
        )
        out = result.chunks[0]  # the hit's own chunk first
        spans = sorted((h.chunk.start, h.chunk.end) for h in result.chunks)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))  # disjoint
        for h in result.chunks:
            assert text[h.chunk.start : h.chunk.end] == h.chunk.text
        # one hit grows into one span: what it spends is that span's tokens
        spent = tok.count([text[spans[0][0] : spans[-1][1]]])[0]
        if context is None or own <= context:  # a repair never moves or trims the hit
            assert out.chunk.start <= start and start + len(fragment.rstrip()) <= out.chunk.end
        if context is not None:
            assert spent <= context
        elif spent > ANYTIME * own:  # grown to at most the sentence that crosses the bound
            sentences = index.reader().documents(["d"])["d"].sentences
            longest = max(tok.count([sp.of(text) for sp in sentences]))
            assert spent <= ANYTIME * own + longest


@given(st.lists(sentence_like.filter(str.strip), min_size=1, max_size=5), sentence_like)
def test_iar_hits_are_index_chunks_with_sorted_scores(texts, query):
    index = SemanticIndex(embedder=FakeEmbedder(), ssg=False)
    index.add_documents([Document(f"d{i}", t) for i, t in enumerate(texts)])
    if not query.strip():  # nothing to retrieve for: a clear error, never k arbitrary chunks
        with pytest.raises(ConfigError, match="query is empty"):
            IntentAwareRetriever(index, k=5).retrieve(query)
        return
    hits = IntentAwareRetriever(index, k=5).retrieve(query)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    for h in hits:
        assert index.document(h.chunk.doc_id).text[h.chunk.start : h.chunk.end] == h.chunk.text
        assert all(0 <= h.channel_scores[c] <= 1 for c in ("dense", "sparse", "extended"))
