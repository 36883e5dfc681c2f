"""PPRRetriever (multi-hop personalized PageRank) and the multi-hop recall metric."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from semrag import Document, SemanticIndex
from semrag.errors import ConfigError, LLMOutputError
from semrag.eval.metrics import multihop_recall
from semrag.graph import KnowledgeGraph
from semrag.index.parts.passages import NAMES
from semrag.retrieval import GraphRetriever, PPRRetriever, personalized_pagerank
from semrag.retrieval._ppr_hits import Walk, follow_titles
from semrag.retrieval.ppr import local_pagerank
from semrag.testing import FakeEmbedder, FakeLLM

# Two-hop chain: the question names the film; the director's passage never mentions the
# film, only the graph (film passage -> "Marta Quill" -> her own passage) reaches it.
DOCS = [
    Document("film", "The Glass Harbour\n\nThe Glass Harbour is a 1961 drama by Marta Quill."),
    Document("quill", "Marta Quill\n\nMarta Quill was born in Lisbon. She studied in Porto."),
    Document("noise1", "Stock markets\n\nStock prices fell sharply. Investors sold their shares."),
    Document("noise2", "Rockets\n\nRockets launch from Florida. The rocket reached orbit."),
    Document("noise3", "Bees\n\nBees collect nectar. Honey is stored in the hive."),
]
QUESTION = "Where was the director of The Glass Harbour born?"


@pytest.fixture(scope="module")
def index() -> SemanticIndex:
    idx = SemanticIndex(embedder=FakeEmbedder())
    idx.add_documents(DOCS)
    return idx


def _first_hits(g, nodes: list[int]) -> list[tuple[int, int, float]]:
    return [(n, g.positions_of(n)[0], 1.0 - i / 10) for i, n in enumerate(nodes)]


def _follow(g, hits):
    walk = Walk(hits, np.zeros(0), np.zeros(0), {}, {}, {}, {})
    moved, chunks = follow_titles(g, walk, [g.chunks[pos] for _, pos, _ in hits])
    assert chunks == [g.chunks[pos] for _, pos, _ in moved.ranked]  # the chunks move along
    return moved.ranked, moved.followed


def test_a_passage_is_followed_by_the_passage_whose_title_it_names(index):
    g = PPRRetriever(index).passage_graph()
    film, quill, stocks, rockets, bees = range(5)  # passages in index order
    assert g.title_links(film, [stocks, quill, bees]) == [quill]  # "... by Marta Quill."
    assert g.title_links(quill, [film, stocks]) == []  # her passage names no title
    # a title of several words no phrase rule picked out, in the passage's text as spelled
    assert g.title_links(rockets, [bees, stocks]) == []
    assert g.title_links(rockets, [bees, stocks], "Bees shook the Stock markets.") == [stocks]
    assert g.title_links(rockets, [stocks], "the stock markets") == []  # not as spelled
    assert g.title_links(bees, [bees], "Stock markets. Bees") == []  # never its own title
    ranked, followed = _follow(g, _first_hits(g, [film, stocks, rockets, quill, bees]))
    assert [node for node, _, _ in ranked] == [film, quill, stocks, rockets, bees]
    assert followed == {quill: film}


def test_a_title_several_documents_carry_is_a_label_and_no_link():
    idx = SemanticIndex(embedder=FakeEmbedder())
    idx.add_documents(
        [
            Document("a", "Background\n\nAspirin lowers fever. See the Glass Harbour Trial."),
            Document("b", "Background\n\nIbuprofen lowers pain."),
            Document("c", "Glass Harbour Trial\n\nA trial of aspirin in Background cases."),
        ]
    )
    g = PPRRetriever(idx).passage_graph()
    assert g.passage_title[0] == g.passage_title[1] == -1
    assert g.title_links(2, [0, 1], "A trial of aspirin in Background cases.") == []
    assert g.title_links(0, [1, 2], "See the Glass Harbour Trial.") == [2]


@settings(max_examples=40, deadline=None)
@given(order=st.permutations(range(5)), cut=st.integers(1, 5))
def test_following_titles_only_reorders_and_puts_a_link_behind_its_namer(index, order, cut):
    g = PPRRetriever(index).passage_graph()
    hits = _first_hits(g, list(order)[:cut])
    ranked, followed = _follow(g, hits)
    assert sorted(ranked) == sorted(hits)
    nodes = [node for node, _, _ in ranked]
    for moved, namer in followed.items():
        assert nodes.index(moved) == nodes.index(namer) + 1
        assert g.title_links(namer, [moved]) == [moved]
        assert order.index(moved) > order.index(namer)  # it came later, never earlier


def test_a_hit_moved_by_a_title_says_so(index):
    hits = PPRRetriever(index, k=5).retrieve(QUESTION)
    assert [h.chunk.doc_id for h in hits][:2] == ["film", "quill"]
    trail = hits[1].provenance[0]
    assert (trail["hop"], trail["link"], trail["from"], trail["via"]) == (
        1,
        "title",
        "film",
        "Marta Quill",
    )


def test_the_edges_of_a_title_phrase_weigh_title_weight(index):
    weighted = PPRRetriever(index, title_weight=6.0).passage_graph()
    plain = PPRRetriever(index, title_weight=1.0).passage_graph()
    node = {key: weighted.n_passages + weighted.keys[key] for key in ("marta quill", "lisbon")}
    # "Marta Quill" is a title (of "quill", and named by "film"): both its edges weigh 6
    assert plain.degree[node["marta quill"]] == 2
    assert weighted.degree[node["marta quill"]] == 12
    assert weighted.degree[node["lisbon"]] == plain.degree[node["lisbon"]] == 1  # no title
    with pytest.raises(ConfigError, match="title_weight"):
        PPRRetriever(index, title_weight=0)


def test_pagerank_matches_the_linear_solution():
    adj = np.array([[0, 1, 1, 0], [1, 0, 1, 0], [1, 1, 0, 1], [0, 0, 1, 0]], dtype=float)
    t = adj / adj.sum(axis=0)
    seeds = np.array([1.0, 0.0, 0.0, 0.0])
    d = 0.8
    exact = np.linalg.solve(np.eye(4) - d * t, (1 - d) * seeds)
    got = personalized_pagerank(sp.csr_matrix(t), seeds, d, tol=1e-12)
    np.testing.assert_allclose(got, exact, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 12).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=30),
            st.lists(st.floats(0, 1), min_size=n, max_size=n).filter(lambda s: sum(s) > 0),
            st.floats(0.05, 0.95),
        )
    )
)
def test_pagerank_is_a_distribution_reachable_from_the_seeds(case):
    n, edges, seed_w, damping = case
    adj = np.zeros((n, n))
    for a, b in edges:
        if a != b:
            adj[a, b] = adj[b, a] = 1.0
    deg = adj.sum(axis=0)
    t = np.divide(adj, deg, out=np.zeros_like(adj), where=deg > 0)
    seeds = np.asarray(seed_w) / sum(seed_w)
    p = personalized_pagerank(sp.csr_matrix(t), seeds, damping, tol=1e-12)
    assert p.min() >= -1e-12
    assert abs(p.sum() - 1) < 1e-6
    # a node neither seeded nor connected to a seeded node gets nothing
    reach = seeds > 0
    for _ in range(n):
        reach = reach | (adj @ reach > 0)
    assert np.all(p[~reach] < 1e-12)


# small weighted graphs: (nodes, edges (a, b, weight), seed weights, damping)
walks = st.integers(2, 14).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.lists(
            st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.floats(0.1, 3.0)),
            max_size=40,
        ),
        st.lists(st.floats(0, 1), min_size=n, max_size=n).filter(lambda s: sum(s) > 0),
        st.floats(0.05, 0.95),
    )
)


def walk_of(n, edges, seed_w):
    """``(T, degree, seeds)`` of a symmetric graph (self-loops dropped), T dense."""
    adj = np.zeros((n, n))
    for a, b, w in edges:
        if a != b:
            adj[a, b] += w
            adj[b, a] += w
    deg = adj.sum(axis=0)
    t = np.divide(adj, deg, out=np.zeros_like(adj), where=deg > 0)
    return t, deg, np.asarray(seed_w) / sum(seed_w)


@settings(max_examples=80, deadline=None)
@given(walks, st.sampled_from([1e-3, 1e-5, 1e-8]))
def test_push_pagerank_is_a_lower_bound_within_epsilon_times_degree(case, eps):
    """Forward push against the exact solution, isolated nodes and weights included."""
    n, edges, seed_w, damping = case
    t, deg, seeds = walk_of(n, edges, seed_w)
    # the exact walk: a node without edges restarts its mass at the seeds
    d = damping
    walk = t + np.outer(seeds, deg == 0)
    exact = np.linalg.solve(np.eye(n) - d * walk, (1 - d) * seeds)
    got = local_pagerank(sp.csr_matrix(t), deg, seeds, d, epsilon=eps)
    assert np.all(got <= exact + 1e-12)
    short = exact - got
    if np.all(deg > 0):
        assert np.all(short <= eps * deg + 1e-12)
    assert short.sum() <= eps * (deg.sum() + n) + 1e-12
    assert got.sum() <= 1 + 1e-12


@settings(max_examples=60, deadline=None)
@given(walks)
def test_push_rounds_that_reach_few_nodes_add_up_as_rounds_over_every_node(case):
    """The same graph alone (each round a pass over every node) and among many isolated
    nodes (each round adds up the nodes it reached): the same scores, to the bit."""
    n, edges, seed_w, damping = case
    t, deg, seeds = walk_of(n, edges, seed_w)
    alone = local_pagerank(sp.csr_matrix(t), deg, seeds, damping, epsilon=1e-9)
    pad = 16 * (n * n + 1)  # more than 8 x any round's edges: every round is a local one
    among = local_pagerank(
        sp.block_diag([sp.csr_matrix(t), sp.csr_matrix((pad, pad))], format="csr"),
        np.r_[deg, np.zeros(pad)],
        np.r_[seeds, np.zeros(pad)],
        damping,
        epsilon=1e-9,
    )
    assert np.array_equal(among[:n], alone) and not among[n:].any()


def test_push_pagerank_is_exact_on_a_sparse_graph_where_rounds_stay_local():
    """A long chain with a few shortcuts: each round reaches a few nodes of many (the
    push adds up only what it reached), and a hub round reaches most of them."""
    rng = np.random.default_rng(0)
    n = 4000
    a = np.arange(n - 1)
    rows = np.r_[a, rng.integers(0, n, 40), np.zeros(n // 2, np.int64)]
    cols = np.r_[a + 1, rng.integers(0, n, 40), np.arange(n // 2) + n // 2]
    keep = rows != cols
    w = rng.uniform(0.5, 2.0, keep.sum())
    adj = sp.coo_matrix((w, (rows[keep], cols[keep])), shape=(n, n)).tocsr()
    adj = (adj + adj.T).tocsr()
    deg = np.asarray(adj.sum(axis=0)).ravel()
    t = sp.csr_matrix(adj.multiply(1.0 / np.where(deg > 0, deg, 1.0)[None, :]))
    seeds = np.zeros(n)
    seeds[[5, 1500]] = [0.7, 0.3]
    power = personalized_pagerank(t, seeds, 0.8, tol=1e-14, max_iter=5000)
    push = local_pagerank(t, deg, seeds, 0.8, epsilon=1e-13)
    np.testing.assert_allclose(push, power, atol=1e-9)


def test_push_pagerank_equals_power_iteration_on_a_passage_graph(index):
    g = PPRRetriever(index).passage_graph()
    seeds = np.zeros(g.transition.shape[0])
    seeds[[0, g.n_passages]] = 0.5
    power = personalized_pagerank(g.transition, seeds, 0.8, tol=1e-12)
    push = local_pagerank(g.transition, g.degree, seeds, 0.8, epsilon=1e-10)
    np.testing.assert_allclose(push, power, atol=1e-8)


def test_two_hop_passage_is_reached_through_the_entity(index):
    hits = PPRRetriever(index, k=2).retrieve(QUESTION)
    assert [h.chunk.doc_id for h in hits] == ["film", "quill"]
    first, second = (h.provenance[0] for h in hits)
    assert first["hop"] == 0 and first["link"] == "query_entity"
    assert "The Glass Harbour" in first["entities"]
    assert second["hop"] == 1 and second["via"] == "Marta Quill" and second["from"] == "film"
    walk = [h.provenance[0]["walk_score"] for h in hits]
    assert walk[0] >= walk[1] > 0


def test_without_entity_seeds_the_second_hop_is_not_found(index):
    hits = PPRRetriever(index, k=2, entity_seeds=False).retrieve(QUESTION)
    assert "quill" not in [h.chunk.doc_id for h in hits]


def test_results_are_distinct_chunks_with_exact_offsets(index):
    hits = PPRRetriever(index, k=20).retrieve(QUESTION)
    keys = [(h.chunk.doc_id, h.chunk.start) for h in hits]
    assert len(keys) == len(set(keys))
    for h in hits:
        assert index.document(h.chunk.doc_id).text[h.chunk.start : h.chunk.end] == h.chunk.text


def test_graph_follows_index_changes():
    idx = SemanticIndex(embedder=FakeEmbedder())
    idx.add_documents(DOCS[:1] + DOCS[2:])
    r = PPRRetriever(idx, k=5)
    assert "quill" not in [h.chunk.doc_id for h in r.retrieve(QUESTION)]
    idx.add_documents([DOCS[1]])
    assert "quill" in [h.chunk.doc_id for h in r.retrieve(QUESTION)]
    idx.delete("quill")
    assert "quill" not in [h.chunk.doc_id for h in r.retrieve(QUESTION)]
    assert r.passage_graph().version == idx.version


def test_async_twin_matches_sync(index):
    r = PPRRetriever(index, k=3)
    sync = r.retrieve(QUESTION)
    got = asyncio.run(r.aretrieve(QUESTION))
    assert [h.chunk.doc_id for h in got] == [h.chunk.doc_id for h in sync]
    assert [h.score for h in got] == pytest.approx([h.score for h in sync])


def test_llm_names_the_entities_and_bad_json_falls_back(index):
    llm = FakeLLM(['{"entities": ["Lisbon"]}'])
    hits = PPRRetriever(index, k=1, llm=llm).retrieve("Which city was she born in?")
    assert "Which city was she born in?" in llm.prompts[0]
    assert hits[0].chunk.doc_id == "quill"
    assert hits[0].provenance[0]["entity_source"] == "llm"
    bad = FakeLLM(["not json"], cycle=True)
    hits = PPRRetriever(index, k=2, llm=bad).retrieve(QUESTION)
    assert "failed" in hits[0].provenance[0]["entity_source"]
    assert [h.chunk.doc_id for h in hits] == ["film", "quill"]
    with pytest.raises(LLMOutputError, match="invalid|JSON|json"):
        PPRRetriever(index, llm=FakeLLM(["no"], cycle=True), on_llm_error="raise").retrieve(
            QUESTION
        )


def test_knowledge_graph_supplies_the_phrase_layer(index):
    kg = KnowledgeGraph.build(index, communities=False)
    r = PPRRetriever(index, kg, k=2)
    assert len(r.passage_graph().names) == len(kg.store.entities())
    assert [h.chunk.doc_id for h in r.retrieve(QUESTION)] == ["film", "quill"]


def test_graph_retriever_defaults_to_ppr(index):
    g = GraphRetriever(index, k=2)
    assert g.strategy == "ppr" and isinstance(g.retriever, PPRRetriever)
    assert [h.chunk.doc_id for h in g.retrieve(QUESTION)] == ["film", "quill"]


def test_bad_parameters_and_queries_raise(index):
    with pytest.raises(ConfigError, match="PPRRetriever: damping=1.0 is not allowed;"):
        PPRRetriever(index, damping=1.0)
    with pytest.raises(ConfigError, match="PPRRetriever: k=0 is not allowed; expected"):
        PPRRetriever(index, k=0)
    with pytest.raises((ConfigError, ValueError), match="PPRRetriever: query is empty; there is"):
        PPRRetriever(index).retrieve("   ")


def test_empty_index_returns_nothing():
    assert PPRRetriever(SemanticIndex(embedder=FakeEmbedder())).retrieve("Anything?") == []


def test_multihop_recall_counts_distinct_documents():
    assert multihop_recall(["a", "a", "b"], ["a", "b"], 2) == (1.0, 1.0)
    assert multihop_recall(["a", "c", "b"], ["a", "b"], 2) == (0.0, 0.5)
    with pytest.raises(ConfigError, match="a question needs at least one gold document"):
        multihop_recall(["a"], [], 1)
    with pytest.raises(ConfigError, match="k must be >= 1, got 0"):
        multihop_recall(["a"], ["a"], 0)


def _graph_table(g) -> dict:
    t = g.transition.tocsr()
    t.sort_indices()
    return {
        "chunk_ids": g.chunk_ids.tolist(),
        "names": list(g.names),
        "keys": dict(g.keys),
        "phrases": [p.tolist() for p in g.passage_phrases],
        "df": g.df.tolist(),
        "transition": (t.indptr.tolist(), t.indices.tolist(), t.data.tolist()),
        "node_of": {c: g.node_of[c] for c in g.chunk_ids.tolist()},
        "synonyms": g.synonym_edges,
    }


MORE = [
    Document("mq2", "Marta Quill\n\nMarta Quill directed The Glass Harbour in Porto."),
    Document("porto", "Porto\n\nPorto is a city in Portugal. Lisbon is its capital."),
]


@settings(max_examples=25, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["add", "delete"]), st.integers(0, len(DOCS) + len(MORE) - 1)),
        min_size=1,
        max_size=10,
    ),
    synonym_k=st.sampled_from([0, 2]),
)
def test_a_graph_kept_across_changes_equals_one_built_fresh(steps, synonym_k):
    pool = DOCS + MORE
    idx = SemanticIndex(embedder=FakeEmbedder())
    idx.add_documents(pool[:3])
    kept = PPRRetriever(idx, synonym_k=synonym_k, synonym_threshold=0.3)
    assert (kept.passage_graph().synonym_edges > 0) == bool(synonym_k)  # the path is exercised
    for op, i in steps:
        if op == "add":
            idx.add_documents(
                [pool[i]], on_conflict="replace"
            )  # a new document, or a new version of one
        else:
            idx.delete(pool[i].id)
        fresh = PPRRetriever(idx, synonym_k=synonym_k, synonym_threshold=0.3)
        assert _graph_table(kept.passage_graph()) == _graph_table(fresh.passage_graph())
        g = kept.passage_graph()
        for name in ("Marta Quill", "Porto"):
            want = [j for j, n in enumerate(g.names) if n.lower() == name.lower()]
            if want:  # a name is its own nearest phrase
                assert g.nearest_phrases(NAMES.embed([name])[0], 1)[1].tolist() == want
        hits = kept.retrieve(QUESTION, k=5)
        assert [(h.chunk.doc_id, h.score) for h in hits] == [
            (h.chunk.doc_id, h.score) for h in fresh.retrieve(QUESTION, k=5)
        ]


# -- passages are documents (or sections), hits are chunks ------------------------------------
LONG = [
    Document(
        "film",
        "The Glass Harbour\n\nThe Glass Harbour is a 1961 drama. It was directed by Marta Quill. "
        "The film was shot in Porto. Critics praised the harbour scenes. It won a prize in Venice.",
    ),
    Document(
        "quill",
        "Marta Quill\n\nMarta Quill was born in Lisbon. She studied painting in Porto. "
        "Her first film was a short about fishermen. She later taught in Madrid.",
    ),
    *DOCS[2:],
]


def _indexed(target_tokens: int) -> SemanticIndex:
    from semrag.chunking import SemanticChunker

    emb = FakeEmbedder()
    idx = SemanticIndex(embedder=emb, chunker=SemanticChunker(emb, target_tokens=target_tokens))
    idx.add_documents(LONG)
    return idx


def test_the_walk_does_not_depend_on_how_finely_the_chunker_cuts():
    fine, coarse = _indexed(6), _indexed(200)
    assert len(fine.chunks()) > len(coarse.chunks())
    g_fine, g_coarse = PPRRetriever(fine).passage_graph(), PPRRetriever(coarse).passage_graph()
    assert g_fine.n_passages == g_coarse.n_passages == len(LONG)

    def edges(g) -> list[list[str]]:  # passage -> phrase edges are the whole graph here
        return [sorted(g.names[j] for j in g.passage_phrases[p]) for p in range(g.n_passages)]

    assert edges(g_fine) == edges(g_coarse)
    assert g_fine.transition.nnz == g_coarse.transition.nnz
    # entity seeds alone: the graph decides; one hit a passage, so the passages compare
    walk = {"passage_weight": 0.0, "k": 5, "per_passage": 1}
    found = [
        [h.chunk.doc_id for h in PPRRetriever(i, **walk).retrieve(QUESTION)] for i in (fine, coarse)
    ]
    assert found[0] == found[1] and found[0][:2] == ["film", "quill"]


def test_a_passage_gives_as_many_hits_as_per_passage_allows():
    idx = _indexed(6)
    hits = PPRRetriever(idx, k=4, per_passage=1).retrieve(QUESTION)
    assert len({h.chunk.doc_id for h in hits}) == len(hits) == 4
    unlimited = [h.chunk.doc_id for h in PPRRetriever(idx, k=6).retrieve(QUESTION)]  # default
    assert max(unlimited.count(d) for d in unlimited) > 3
    more = PPRRetriever(idx, k=6, per_passage=3).retrieve(QUESTION)
    per_doc = [h.chunk.doc_id for h in more]
    assert max(per_doc.count(d) for d in per_doc) > 1
    assert all(per_doc.count(d) <= 3 for d in per_doc)
    for h in more:
        assert idx.document(h.chunk.doc_id).text[h.chunk.start : h.chunk.end] == h.chunk.text


def test_a_passages_hit_is_its_chunk_closest_to_the_query():
    idx = _indexed(6)
    query = "Where did Marta Quill study painting?"
    hit = next(h for h in PPRRetriever(idx, k=3).retrieve(query) if h.chunk.doc_id == "quill")
    dense = [h for h in idx.search(query, k=50) if h.chunk.doc_id == "quill"]
    assert hit.chunk == dense[0].chunk and hit.channel_scores["dense"] == pytest.approx(
        dense[0].score
    )


@settings(max_examples=30, deadline=None)
@given(
    weight=st.floats(0.0, 12.0),
    per_passage=st.integers(1, 3),
    k=st.integers(1, 12),
    query=st.sampled_from([QUESTION, "Who studied in Porto?", "honey and bees", "launch"]),
)
def test_hits_rank_by_passage_mass_times_the_exponential_of_their_similarity(
    weight, per_passage, k, query
):
    idx = _fine_index()
    hits = PPRRetriever(
        idx, k=k, similarity_weight=weight, per_passage=per_passage, follow_titles=False
    ).retrieve(query)
    assert len(hits) <= k
    scores = [h.provenance[0]["walk_score"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    docs = [h.chunk.doc_id for h in hits]  # each document is one passage here
    assert all(docs.count(d) <= per_passage for d in docs)
    q = idx.embedder.embed([query])[0]
    for h, walk in zip(hits, scores, strict=True):
        mass = h.channel_scores["graph"]
        assert 0 < walk <= mass  # the factor exp(w * (cos - 1)) is at most 1
        sim = float(idx.embedder.embed([h.chunk.text])[0] @ q)
        if "dense" in h.channel_scores:  # a chunk the dense search found: its own similarity
            assert h.channel_scores["dense"] == pytest.approx(sim, abs=1e-5)
            assert walk == pytest.approx(mass * np.exp(weight * (sim - 1.0)))
        # the hit's score is its relevance: its cosine with the query, in [0, 1]
        assert h.score == pytest.approx(min(max(sim, 0.0), 1.0), abs=1e-5)


_FINE: list[SemanticIndex] = []


def _fine_index() -> SemanticIndex:
    if not _FINE:
        _FINE.append(_indexed(6))
    return _FINE[0]


def test_without_the_similarity_weight_hits_rank_by_the_walks_mass_alone():
    idx = _indexed(6)
    hits = PPRRetriever(idx, k=5, similarity_weight=0.0).retrieve(QUESTION)
    assert [h.provenance[0]["walk_score"] for h in hits] == [
        h.channel_scores["graph"] for h in hits
    ]


def test_a_long_document_is_cut_into_sections_of_chunks():
    from semrag.index.parts._passage_graph import SECTION_CHARS, section_starts

    starts = np.array([0, 900, 1800, 2100, 3000, 4500, 4600], np.int64)
    opens = section_starts(starts).tolist()
    assert opens[0] == 0 and opens == sorted(set(opens))
    bounds = [*opens, starts.size]
    for a, b in zip(bounds, bounds[1:], strict=False):
        assert starts[b - 1] - starts[a] < SECTION_CHARS  # a section starts within reach
        if b < starts.size:
            assert starts[b] - starts[a] >= SECTION_CHARS  # and ends only when out of it
    assert section_starts(np.array([0, 10, 500], np.int64)).tolist() == [0]
    assert section_starts(np.zeros(0, np.int64)).tolist() == []


def _long_articles() -> tuple[SemanticIndex, list[tuple[str, str, list[tuple[int, int]]]]]:
    """Three long articles of sections; each question names two sentences of one section."""
    import random

    from semrag.chunking import SemanticChunker

    rng = random.Random(7)
    words = [f"w{i}" for i in range(600)]
    docs, questions = [], []
    for d, topic in enumerate(["harbour", "glacier", "orchard"]):
        parts, pos = [topic.title()], len(topic) + 2
        for p in range(12):
            spans, sentences, at = [], [], pos
            for line in range(4):  # each sentence its own rare words: a question can name them
                sentence = f"The {topic} {' '.join(rng.sample(words, 3))} part {p} line {line}."
                sentences.append(sentence)
                spans.append((at, at + len(sentence), sentence.split()[2:4]))
                at += len(sentence) + 1
            for a, b in ((0, 2), (1, 3)):  # the answer is in two chunks of the section
                query = " ".join([*spans[a][2], *spans[b][2]])
                questions.append((query, f"d{d}", [spans[a][:2], spans[b][:2]]))
            parts.append(" ".join(sentences))
            pos += len(parts[-1]) + 2
        docs.append(Document(f"d{d}", "\n\n".join(parts), {"title": topic.title()}))
    emb = FakeEmbedder()
    idx = SemanticIndex(embedder=emb, chunker=SemanticChunker(emb, target_tokens=12))
    idx.add_documents(docs)
    return idx, questions


def test_on_long_documents_the_default_is_not_below_dense_search_at_any_budget():
    # Long documents are cut into ~2,000-character sections (passages) of many chunks: the
    # default takes as many chunks of a section as the walk ranks, so it keeps the chunks
    # dense search puts in the context; one hit a passage (the earlier default) did not.
    idx, questions = _long_articles()
    default = PPRRetriever(idx, k=40)
    one_each = PPRRetriever(idx, k=40, per_passage=1)

    def recall(hits, doc, refs, budget):
        got, spent = 0, 0
        for h in hits:
            length = min(h.chunk.end - h.chunk.start, budget - spent)
            for start, end in refs if h.chunk.doc_id == doc else ():
                got += max(0, min(end, h.chunk.start + length) - max(start, h.chunk.start))
            spent += length
            if spent >= budget:
                break
        return got / sum(end - start for start, end in refs)

    for budget in (200, 400, 800):
        scores: dict[str, list[float]] = {"dense": [], "default": [], "one": []}
        for q, doc, refs in questions:
            for name, hits in (
                ("dense", idx.search(q, 40)),
                ("default", default.retrieve(q)),
                ("one", one_each.retrieve(q)),
            ):
                scores[name].append(recall(hits, doc, refs, budget))
        mean = {name: float(np.mean(v)) for name, v in scores.items()}
        assert mean["default"] >= mean["dense"] - 0.01, (budget, mean)
        assert mean["one"] < mean["dense"] - 0.05, (budget, mean)  # what the old default lost


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_walk_whose_chunks_a_newer_version_removed_is_walked_again(monkeypatch, asynchronous):
    # What a serving process over a database meets when a writer commits between the walk
    # and the chunk fetch (an index in process cannot change under a query: it is read at
    # one version). The reader's version is moved here as a database's would move.
    from semrag.errors import NotIndexedError, StoreError
    from semrag.retrieval import ppr

    emb = FakeEmbedder()
    index = SemanticIndex(embedder=emb, passages=True)
    index.add_documents([Document(f"d{i}", f"Topic {i}\nBees number {i} dance.") for i in range(4)])
    retriever = PPRRetriever(index, k=2)
    want = [h.chunk for h in retriever.retrieve("bees dance")]
    real, areal = ppr.chunks_at, ppr.achunks_at
    misses = {"left": 1, "moves": True, "newer": 0}
    version = retriever.index.current_version
    monkeypatch.setattr(retriever.index, "current_version", lambda: version() + misses["newer"])

    def missing(g, nodes):
        if misses["left"]:
            misses["left"] -= 1
            misses["newer"] += misses["moves"]  # a writer committed: walk a new version
            raise NotIndexedError("chunk ids not in the index: [0]")
        return real(g, nodes)

    async def amissing(g, nodes):
        missing(g, nodes) if misses["left"] else None
        return await areal(g, nodes)

    monkeypatch.setattr(ppr, "chunks_at", missing)
    monkeypatch.setattr(ppr, "achunks_at", amissing)

    def run():
        q = "bees dance"
        return asyncio.run(retriever.aretrieve(q)) if asynchronous else retriever.retrieve(q)

    assert [h.chunk for h in run()] == want  # walked again on the new version
    misses.update(left=1, moves=False, newer=0)  # one version: the chunk is really not there
    with pytest.raises(NotIndexedError, match="not in the index"):
        run()
    misses.update(left=10, moves=True)  # a new version under every walk
    with pytest.raises(StoreError, match="changed under each of 3 walks"):
        run()
