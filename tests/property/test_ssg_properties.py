from __future__ import annotations

import functools

from hypothesis import given, settings
from hypothesis import strategies as st

from semrag import Document, SemanticChunker, SemanticIndex, SSGRetriever
from semrag.index import SSGConfig
from semrag.retrieval import ALGORITHMS
from semrag.testing import FakeEmbedder

WORDS = [
    "cat",
    "dog",
    "mat",
    "ball",
    "stock",
    "market",
    "rocket",
    "moon",
    "bread",
    "bee",
    "dance",
    "orbit",
    "price",
    "fell",
    "rose",
    "sun",
    "fire",
    "mouse",
]

sentence = st.lists(st.sampled_from(WORDS), min_size=2, max_size=7).map(
    lambda ws: " ".join(ws).capitalize() + "."
)
document = st.lists(sentence, min_size=1, max_size=8).map(" ".join)


@functools.cache
def build(docs: tuple[str, ...], window: int) -> SemanticIndex:
    emb = FakeEmbedder(dim=64)
    index = SemanticIndex(
        embedder=emb,
        chunker=SemanticChunker(emb),
        ssg=SSGConfig(window=window, top_k=3, top_x=2, min_intra=0.0, min_inter=0.0),
    )
    index.add_documents([Document(f"d{i}", t) for i, t in enumerate(docs)])
    return index


@settings(max_examples=40)
@given(
    docs=st.lists(document, min_size=1, max_size=5).map(tuple),
    window=st.integers(1, 3),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
    algorithm=st.sampled_from([a for a in ALGORITHMS if a != "llm_guided_traversal"]),
    k=st.integers(1, 6),
    early=st.booleans(),
)
def test_results_are_distinct_spans_sorted_and_within_k(docs, window, query, algorithm, k, early):
    index = build(docs, window)
    hits = SSGRetriever(index, strategy=algorithm, k=k, early_stop=early).retrieve(query)
    assert len(hits) <= k
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    nodes = [p["node"] for h in hits for p in h.provenance]
    assert len(nodes) == len(set(nodes)), "a node was returned twice"
    sentences = [
        (h.chunk.doc_id, s["start"]) for h in hits for p in h.provenance for s in p["sentences"]
    ]
    assert len(sentences) == len(set(sentences)), "a sentence was returned twice"
    by_doc: dict[str, list[tuple[int, int]]] = {}
    for h in hits:
        assert index.document(h.chunk.doc_id).text[h.chunk.start : h.chunk.end] == h.chunk.text
        by_doc.setdefault(h.chunk.doc_id, []).append((h.chunk.start, h.chunk.end))
        for s in (s for p in h.provenance for s in p["sentences"]):
            assert h.chunk.start <= s["start"] < s["end"] <= h.chunk.end
    for spans in by_doc.values():
        spans.sort()
        pairs = zip(spans, spans[1:], strict=False)
        assert all(a[1] < b[0] for a, b in pairs), "spans overlap or touch"
