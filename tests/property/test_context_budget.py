"""SPC's context budget: the invariants of :func:`semrag.postprocess.budget.allocate` and of
``SPC(context=...)`` over random documents and hits.

* the context never exceeds the budget;
* every region is an exact span of its source, and regions of one document never overlap
  or touch (no character counted twice);
* a repair grows a hit, never moves or trims it: every hit listed in a region lies inside
  it, except the last hit taken, which may be cut at the budget;
* a hit worth more is never left out for a sentence worth less.
"""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from semrag import Chunk, Document, ScoredChunk, SemanticIndex
from semrag.postprocess import SPC
from semrag.postprocess.budget import SentenceMap, allocate
from semrag.testing import FakeEmbedder
from semrag.text.sentences import split_sentences

WORDS = ["bees", "dance", "rockets", "orbit", "honey", "the", "hive", "fuel", "stage", "a"]


@st.composite
def documents(draw: st.DrawFn) -> str:
    sentences = draw(
        st.lists(
            st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(
                lambda w: " ".join(w).capitalize() + "."
            ),
            min_size=1,
            max_size=12,
        )
    )
    return " ".join(sentences)


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, str], list[tuple[str, int, int]], list[float], int]:
    docs = {f"d{i}": draw(documents()) for i in range(draw(st.integers(1, 3)))}
    spans = []
    for _ in range(draw(st.integers(1, 8))):
        doc_id = draw(st.sampled_from(sorted(docs)))
        text = docs[doc_id]
        start = draw(st.integers(0, len(text) - 1))
        end = draw(st.integers(start + 1, len(text)))
        piece = text[start:end]
        if not piece.strip():
            continue
        start += len(piece) - len(piece.lstrip())  # a chunk never starts or ends in spaces
        end -= len(piece) - len(piece.rstrip())
        spans.append((doc_id, start, end))
    values = sorted(
        (draw(st.floats(0, 1)) for _ in spans),
        reverse=True,
    )
    return docs, spans, values, draw(st.integers(1, 400))


def _maps(docs: dict[str, str], seed: int) -> dict[str, SentenceMap]:
    rng = np.random.default_rng(seed)
    out = {}
    for doc_id, text in docs.items():
        sentences = split_sentences(text)
        out[doc_id] = SentenceMap(
            np.asarray([s.start for s in sentences], np.int64),
            np.asarray([s.end for s in sentences], np.int64),
            rng.uniform(-0.2, 1.0, len(sentences)),
        )
    return out


@settings(max_examples=200, deadline=None)
@given(cases(), st.booleans(), st.integers(0, 3), st.sampled_from([None, 0.0, 0.07, 0.2]))
def test_allocate_fills_the_budget_with_whole_hits_and_never_counts_a_character_twice(
    case, ask, seed, step
):
    docs, spans, values, budget = case
    maps = _maps(docs, seed)
    asks = [(ask, not ask)] * len(spans)
    regions = allocate(spans, values, maps.get, asks, budget, lambda d, s, e: e - s, step=step)
    assert sum(r.end - r.start for r in regions) <= budget
    listed = [rank for r in regions for rank in r.hits]
    assert len(listed) == len(set(listed))
    last = max(listed, default=-1)
    for r in regions:
        assert 0 <= r.start < r.end <= len(docs[r.doc_id])
        for o in regions:  # one document's regions never overlap or touch
            if o is not r and o.doc_id == r.doc_id:
                assert o.end < r.start or r.end < o.start
        for rank in r.hits:
            doc_id, start, end = spans[rank]
            assert doc_id == r.doc_id and r.start <= start
            assert end <= r.end or rank == last  # only the last hit taken may be cut
    # hits are taken in order: a later hit is never in the context while an earlier is not
    taken = sorted(listed)
    assert taken == list(range(len(taken)))


@settings(max_examples=60, deadline=None)
@given(cases(), st.sampled_from(["chars", "tokens"]), st.booleans())
# a later hit cut at the budget inside an earlier hit's region is cut, not merged
@example(({"d0": "Bees."}, [("d0", 0, 1), ("d0", 0, 3)], [0.0, 0.0], 2), "chars", False)
def test_spc_with_a_context_budget_returns_exact_spans_that_contain_their_hits(case, unit, unknown):
    docs, spans, _, budget = case
    emb = FakeEmbedder()
    index = SemanticIndex(embedder=emb)
    index.add_documents([Document(d, t) for d, t in docs.items()])
    hits = [
        ScoredChunk(Chunk(d, s, e, docs[d][s:e], len(docs[d][s:e].split())), 1.0 - i / 10)
        for i, (d, s, e) in enumerate(spans)
    ]
    if unknown:  # a hit whose document the index does not hold: kept, never grown
        hits.insert(1, ScoredChunk(Chunk("elsewhere", 0, 23, "Bees dance in the hive.", 5), 0.9))
    spc = SPC(index, context=budget, unit=unit, audit=False, refine=False)
    result = spc.process("bees dance in the hive", hits)
    spent = sum(spc._cost_of(c.chunk.text) for c in result.chunks)
    assert spent <= budget
    for c in result.chunks:
        source = docs.get(c.chunk.doc_id, "Bees dance in the hive.")
        assert source[c.chunk.start : c.chunk.end] == c.chunk.text
        assert c.chunk.text == c.chunk.text.strip()
    assert len(result.chunk_actions) == len(result.chunks)
    for a in result.actions:  # every hit placed whole, except one cut at the budget
        if a.action in ("intact", "expanded", "repaired", "merged"):
            assert a.after[0] <= a.before[0] and a.before[1] <= a.after[1]
    assert sum(a.action == "cut_at_budget" for a in result.actions) <= 1


def test_a_hit_is_worth_what_the_hits_ranked_below_it_are():
    # hit 0 in doc "a" (a relevant sentence after it); hit 1, a second hop in doc "b" that
    # does not resemble the query, ranked above hit 2, which does
    a = SentenceMap(np.array([0, 10]), np.array([9, 19]), np.array([0.9, 0.6]))
    spans = [("a", 0, 9), ("b", 0, 9), ("c", 0, 9)]
    regions = allocate(
        spans,
        [0.9, 0.1, 0.7],
        {"a": a}.get,
        [(False, False)] * 3,
        27,
        lambda d, s, e: e - s,
    )
    # the second hop is worth the 0.7 of the hit below it: taken before a's 0.6 sentence
    assert [(r.doc_id, r.start, r.end) for r in regions] == [("a", 0, 9), ("b", 0, 9), ("c", 0, 9)]


def test_a_sentence_n_away_from_a_hit_is_worth_its_value_less_n_steps():
    # doc "a": a hit (0.8) and three sentences after it that do not resemble the query;
    # doc "b": a second hit worth 0.65
    a = SentenceMap(
        np.array([0, 10, 20, 30]), np.array([9, 19, 29, 39]), np.array([0.8, 0.0, 0.0, 0.0])
    )
    spans = [("a", 0, 9), ("b", 0, 9)]

    def context(step: float | None, budget: int) -> list[tuple[str, int, int]]:
        regions = allocate(
            spans, [0.8, 0.65], {"a": a}.get, [(False, False)] * 2, budget,
            lambda d, s, e: e - s, step=step,
        )  # fmt: skip
        return [(r.doc_id, r.start, r.end) for r in regions]

    # 0.8 - 0.07 and 0.8 - 0.14 are worth more than the second hit; 0.8 - 0.21 is not
    assert context(0.07, 29) == [("a", 0, 29)]
    assert context(0.07, 47) == [("a", 0, 29), ("b", 0, 9)]
    assert context(0.07, 48) == [("a", 0, 39), ("b", 0, 9)]
    # without a step, the sentences are worth their own 0.0: the second hit first
    assert context(None, 18) == [("a", 0, 9), ("b", 0, 9)]
