from __future__ import annotations

import numpy as np
import pytest

from semrag import Document, SemanticChunker, SemanticIndex, SSGRetriever
from semrag.errors import ConfigError
from semrag.index import DenseIndex, SSGConfig
from semrag.index.parts.ssg import SemanticSimilarityGraph, fit_pca3
from semrag.retrieval import ALGORITHMS
from semrag.testing import FakeEmbedder, FakeLLM
from semrag.types import Chunk, Span


def padded(rows):
    """Fixed-width ``(cols, values)`` lists from each node's ``(node, score)`` edges."""
    width = max((len(r) for r in rows), default=0)
    cols = np.full((len(rows), width), -1, np.int64)
    vals = np.full((len(rows), width), -np.inf, np.float32)
    for i, row in enumerate(rows):
        for j, (node, score) in enumerate(row):
            cols[i, j], vals[i, j] = node, score
    return cols, vals


class QueryEmbedder(FakeEmbedder):
    """Every text is the hand-built query: the direction of the first axis."""

    def _embed_batch(self, texts):
        out = np.zeros((len(texts), self.dim), np.float32)
        out[:, 0] = 1.0
        return out


class HandIndex:
    """A hand-built SSG: node i is sentence i; edges are given explicitly."""

    def __init__(self, sims_to_q, edges, node_doc=None, dim=8, seed=0):
        n = len(sims_to_q)
        rng = np.random.default_rng(seed)
        self.embedder = QueryEmbedder(dim=dim)  # the query's model: q for every query
        self.q = self.embedder.embed(["q"])[0]
        vecs = []
        for s in sims_to_q:  # unit vectors with the requested cosine to q
            noise = rng.normal(size=dim - 1)
            noise /= np.linalg.norm(noise)
            vecs.append(np.concatenate([[s], np.sqrt(1 - s * s) * noise]))
        vectors = np.array(vecs, dtype=np.float32)
        node_doc = np.zeros(n, np.int64) if node_doc is None else np.asarray(node_doc)
        rows = [([], []) for _ in range(n)]  # each node's intra and inter edges
        for a, b, score in edges:
            kind = 0 if node_doc[a] == node_doc[b] else 1
            rows[a][kind].append((b, score))
            rows[b][kind].append((a, score))
        mean, comps = fit_pca3(vectors)
        self.ssg_config = SSGConfig(window=1)
        self.ssg = SemanticSimilarityGraph(
            config=self.ssg_config,
            doc_ids=[f"d{i}" for i in range(int(node_doc.max()) + 1)],
            node_doc=node_doc,
            node_sentences=np.stack([np.arange(n), np.arange(n) + 1], axis=1),
            node_vectors=vectors,
            intra=padded([r[0] for r in rows]),
            inter=padded([r[1] for r in rows]),
            themes=[],
            theme_bridges=[],
            pca_mean=mean,
            pca_components=comps,
        )
        self.node_index = DenseIndex(dim)
        self.node_index.add(np.arange(n), vectors)
        self.sentence_matrix = vectors
        self.text = " ".join(f"s{i}." for i in range(n))

    def sentence_location(self, s):
        start = self.text.index(f"s{s}.")
        return f"d{self.ssg.node_doc[s]}", Span(start, start + len(f"s{s}."))

    def document(self, doc_id):
        return Document(doc_id, self.text)

    def node_chunk(self, node):
        return self.sentences_chunk(node, node + 1, index=node)

    def sentences_chunk(self, first, end, *, index=0):
        doc, a = self.sentence_location(first)
        _, b = self.sentence_location(end - 1)
        text = self.text[a.start : b.end]
        return Chunk(doc, a.start, b.end, text, end - first, index, first, end)

    # The hand-built index is its own (only) consistent version.
    version = 0

    @property
    def graph(self):
        return self.ssg

    def ssg_view(self):
        return self

    def sentence_text(self, s):
        return self.sentence_location(s)[1].of(self.text)


def path(retriever, query="q"):
    return [s.node for s in retriever.traverse(query).steps]


def test_query_traversal_uses_a_global_frontier():
    # 0 -> {1, 2}; 1 -> {3, 4}. A local greedy walk would go 0, 1, 3; the frontier picks 2.
    idx = HandIndex(
        [0.95, 0.8, 0.7, 0.1, 0.05], [(0, 1, 0.5), (0, 2, 0.5), (1, 3, 0.5), (1, 4, 0.5)]
    )
    r = SSGRetriever(idx, strategy="query_traversal", max_sentences=10, early_stop=False)
    assert path(r) == [0, 1, 2, 3, 4]


def test_ssg_traversal_stops_when_the_next_hop_is_no_better():
    idx = HandIndex([0.9, 0.2, 0.2, 0.2, 0.2], [(0, 1, 0.5), (1, 2, 0.7), (2, 3, 0.6), (3, 4, 0.9)])
    r = SSGRetriever(idx, strategy="ssg_traversal", max_sentences=10)
    t = r.traverse("q")
    assert [s.node for s in t.steps] == [0, 1, 2]
    assert t.stop_reason == "next hop no better than the last"


def test_triangulation_average_balances_query_and_edge():
    # Candidate 1 is closer to the query, candidate 2 much closer to the current node.
    idx = HandIndex([0.9, 0.8, 0.6], [(0, 1, 0.1), (0, 2, 0.9)])
    avg = SSGRetriever(idx, strategy="triangulation_average", max_sentences=2, early_stop=False)
    qt = SSGRetriever(idx, strategy="query_traversal", max_sentences=2, early_stop=False)
    assert path(avg) == [0, 2]
    assert path(qt) == [0, 1]


@pytest.mark.parametrize("seed", range(5))
def test_triangulation_fulldim_is_the_centroid_rule(seed):
    rng = np.random.default_rng(seed)
    sims = rng.uniform(0.1, 0.9, size=8).tolist()
    sims[0] = 0.99
    edges = [(0, j, 0.5) for j in range(1, 8)]
    idx = HandIndex(sims, edges, seed=seed)
    r = SSGRetriever(idx, strategy="triangulation_fulldim", max_sentences=2, early_stop=False)
    q, c, v = idx.q, idx.ssg.node_vectors[0], idx.ssg.node_vectors
    brute = min(range(1, 8), key=lambda j: np.linalg.norm((q + c + v[j]) / 3 - q))
    assert path(r)[1] == brute


def test_geometric_3d_uses_the_pca_fitted_at_build_time():
    idx = HandIndex([0.99, 0.5, 0.4, 0.3, 0.6], [(0, j, 0.5) for j in range(1, 5)])
    comps = idx.ssg.pca_components.copy()
    r = SSGRetriever(idx, strategy="triangulation_geometric_3d", max_sentences=2, early_stop=False)
    nxt = path(r)[1]
    p = idx.ssg.project_3d
    q3, c3, n3 = p(idx.q[None])[0], p(idx.ssg.node_vectors[:1])[0], p(idx.ssg.node_vectors)
    brute = min(range(1, 5), key=lambda j: np.linalg.norm((q3 + c3 + n3[j]) / 3 - q3))
    assert nxt == brute
    np.testing.assert_array_equal(idx.ssg.pca_components, comps)


def test_basic_retrieval_and_early_stop():
    idx = HandIndex([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3], [])
    r = SSGRetriever(idx, strategy="basic_retrieval", max_sentences=7, k=10)
    t = r.traverse("q")
    assert [s.node for s in t.steps] == [0, 1, 2, 3, 4]  # early stop after 5 sentences
    assert "beats" in t.stop_reason
    r2 = SSGRetriever(idx, strategy="basic_retrieval", max_sentences=6, early_stop=False)
    assert path(r2) == [0, 1, 2, 3, 4, 5]


def test_max_sentences_stops_traversal():
    idx = HandIndex([0.9] + [0.5] * 9, [(0, j, 0.5) for j in range(1, 10)])
    r = SSGRetriever(idx, strategy="query_traversal", max_sentences=4, early_stop=False)
    t = r.traverse("q")
    assert len(t.steps) == 4 and t.stop_reason == "max_sentences"


def test_llm_guided_follows_the_llm_and_falls_back():
    idx = HandIndex([0.95, 0.8, 0.7, 0.6], [(0, 1, 0.5), (0, 2, 0.5), (0, 3, 0.5)])
    llm = FakeLLM(
        [
            '{"choice": 3, "reasoning": "least similar but new"}',
            "I think number 1?",
            '{"choice": "stop", "reasoning": "enough"}',
        ]
    )
    r = SSGRetriever(idx, strategy="llm_guided_traversal", llm=llm, max_sentences=10)
    t = r.traverse("q")
    assert [s.node for s in t.steps] == [0, 3, 1]
    assert t.steps[2].note.startswith("LLM reply invalid")
    assert t.stop_reason == "llm chose to stop" and t.llm_calls == 3
    assert "CANDIDATE CHUNKS (pick ONE or STOP)" in llm.prompts[0]
    assert '"choice": <number 1-3 OR "stop">' in llm.prompts[0]


def test_llm_guided_respects_the_call_budget():
    idx = HandIndex([0.95, 0.8, 0.7, 0.6], [(0, 1, 0.5), (0, 2, 0.5), (0, 3, 0.5)])
    llm = FakeLLM(['{"choice": 3}'], cycle=True)
    r = SSGRetriever(
        idx, strategy="llm_guided_traversal", llm=llm, max_llm_calls=1, max_sentences=10
    )
    t = r.traverse("q")
    assert t.llm_calls == 1 and len(llm.prompts) == 1
    assert [s.node for s in t.steps] == [0, 3, 1, 2]
    assert t.steps[-1].note.startswith("LLM budget spent")


async def test_llm_guided_async_equals_sync():
    idx = HandIndex([0.95, 0.8, 0.7, 0.6], [(0, 1, 0.5), (0, 2, 0.5), (0, 3, 0.5)])
    replies = ['{"choice": 2}', '{"choice": 1}', '{"choice": "stop"}']
    sync = SSGRetriever(idx, strategy="llm_guided_traversal", llm=FakeLLM(replies)).retrieve("q")
    asyn = await SSGRetriever(idx, strategy="llm_guided_traversal", llm=FakeLLM(replies)).aretrieve(
        "q"
    )
    assert [h.chunk for h in sync] == [h.chunk for h in asyn]


def test_configuration_errors():
    idx = HandIndex([0.9, 0.1], [(0, 1, 0.5)])
    with pytest.raises(ConfigError, match="SSGRetriever: strategy='dfs' is not allowed;"):
        SSGRetriever(idx, strategy="dfs")
    with pytest.raises(ConfigError, match="llm_guided_traversal needs an llm"):
        SSGRetriever(idx, strategy="llm_guided_traversal")
    with pytest.raises(ConfigError, match="SSGRetriever: k=0 is not allowed; expected"):
        SSGRetriever(idx, k=0)
    no_graph = SemanticIndex(embedder=FakeEmbedder(), ssg=False)
    with pytest.raises(ConfigError, match="SSG retrieval needs the semantic similarity"):
        SSGRetriever(no_graph)


TEXTS = {
    "cats": "The cat sat on the mat. The cat chased a mouse. The cat slept in the sun. "
    "A cat purrs when happy. Cats groom their fur.",
    "dogs": "The dog barked at the mailman. The dog chased a ball. The dog slept by the fire. "
    "A dog wags its tail. Dogs love long walks.",
    "pets": "Cats and dogs can live together. A dog may chase a cat. The cat may hiss at the dog.",
}


@pytest.fixture(scope="module")
def real_index():
    emb = FakeEmbedder()
    index = SemanticIndex(
        embedder=emb, chunker=SemanticChunker(emb), ssg=SSGConfig(min_intra=0.0, min_inter=0.0)
    )
    index.add_documents([Document(k, v) for k, v in TEXTS.items()])
    return index


@pytest.mark.parametrize("algorithm", [a for a in ALGORITHMS if a != "llm_guided_traversal"])
def test_real_index_provenance_and_invariants(real_index, algorithm):
    hits = SSGRetriever(real_index, strategy=algorithm, k=4).retrieve("the cat chased the dog")
    assert 0 < len(hits) <= 4
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    seen: set[tuple[str, int]] = set()
    for h in hits:
        doc = real_index.document(h.chunk.doc_id)
        assert doc.text[h.chunk.start : h.chunk.end] == h.chunk.text
        covered = []
        for p in h.provenance:
            assert p["algorithm"] == algorithm and p["channel"] == "ssg"
            assert p["node"] in p["path"]
            for s in p["sentences"]:
                assert h.chunk.start <= s["start"] < s["end"] <= h.chunk.end
                key = (h.chunk.doc_id, s["start"])
                assert key not in seen, "a sentence was returned twice"
                seen.add(key)
                covered.append((s["start"], s["end"]))
        # the span is exactly its sentences: first one's start to last one's end
        assert min(covered)[0] == h.chunk.start and max(covered)[1] == h.chunk.end
        assert h.score == max(p["node_score"] for p in h.provenance)
        assert set(h.channel_scores) == {"dense", "step"}


def test_ssg_traversal_never_reuses_sentences(real_index):
    t = SSGRetriever(real_index, strategy="ssg_traversal", max_sentences=30).traverse("cat")
    nodes = [s.node for s in t.steps]
    assert len(nodes) >= 2  # a walk of several steps, or there is nothing to check
    spans = [set(range(*real_index.reader().ssg_view().graph.node_sentences[n])) for n in nodes]
    for i, a in enumerate(spans):
        for b in spans[i + 1 :]:
            assert not a & b


async def test_real_index_async_equals_sync(real_index):
    r = SSGRetriever(real_index, strategy="query_traversal", k=3)
    assert [h.chunk for h in await r.aretrieve("dog walks")] == [
        h.chunk for h in r.retrieve("dog walks")
    ]


def test_empty_index_returns_nothing():
    index = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
    assert SSGRetriever(index).retrieve("anything") == []


def test_results_merge_windows_into_distinct_spans():
    # nodes 0-2 are adjacent sentences of d0, node 3 is d1, node 4 is d0 but not adjacent
    idx = HandIndex([0.9, 0.8, 0.7, 0.6, 0.5, 0.1], [], node_doc=[0, 0, 0, 1, 0, 0])
    hits = SSGRetriever(idx, strategy="basic_retrieval", k=6, early_stop=False).retrieve("q")
    spans = [(h.chunk.doc_id, h.chunk.sentence_start, h.chunk.sentence_end) for h in hits]
    assert spans[0] == ("d0", 0, 3)  # three windows, one span
    assert [p["node"] for p in hits[0].provenance] == [0, 1, 2]  # one entry per step, in order
    assert hits[0].chunk.text == "s0. s1. s2."
    assert ("d1", 3, 4) in spans and spans.count(("d1", 3, 4)) == 1
    assert not any(
        a[0] == b[0] and a[2] > b[1] and b[2] > a[1]
        for i, a in enumerate(spans)
        for b in spans[i + 1 :]
    )
    assert hits[0].score == pytest.approx(0.9, abs=1e-5)  # a span scores as its best node
