"""One contract suite for every GraphStore: the in-memory store and a real Neo4j server."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from semrag.errors import ConfigError, StoreUnavailableError
from semrag.graph import (
    ChunkRef,
    Community,
    Entity,
    GraphReads,
    GraphStore,
    GraphWrites,
    InMemoryGraphStore,
    KnowledgeGraph,
    Mention,
    Relation,
)
from semrag.index.reader import MissingCapabilityError
from semrag.neo4j import Neo4jGraphStore
from semrag.testing import check_store

NEO4J = pytest.param(
    "neo4j", marks=[pytest.mark.neo4j, pytest.mark.integration, pytest.mark.enable_socket]
)
EVIL = "x'}) DETACH DELETE n //"


@pytest.fixture(params=["memory", NEO4J])
def store(request):
    if request.param == "memory":
        yield InMemoryGraphStore()
        return
    server = request.getfixturevalue("neo4j_server")
    s = Neo4jGraphStore(server.uri, server.user, server.password, batch_size=3)
    s.clear()
    yield s
    s.close()


def sample():
    ada, bab, eng = (
        Entity.of("Ada Lovelace", "PERSON"),
        Entity.of("Charles Babbage", "PERSON"),
        Entity.of("Analytical Engine", "MACHINE"),
    )
    rels = [
        Relation(ada.id, bab.id, "WORKED_WITH", "Ada worked with Babbage.", 2.0),
        Relation(bab.id, eng.id, "DESIGNED", "Babbage designed the Engine."),
    ]
    c1, c2 = ChunkRef("d1", 0, 40), ChunkRef("d2", 10, 50)
    mentions = [Mention(ada.id, c1), Mention(bab.id, c1), Mention(bab.id, c2), Mention(eng.id, c2)]
    return [ada, bab, eng], rels, mentions


def test_is_a_graph_store(store):
    assert isinstance(store, GraphStore)


def test_upsert_is_idempotent(store):
    ents, rels, ments = sample()
    store.upsert(ents, rels, ments)
    first = store.counts()
    store.upsert(ents, rels, ments)
    assert store.counts() == first
    assert first == {"entities": 3, "relations": 2, "chunks": 2, "mentions": 4, "communities": 0}
    # an update changes properties, not counts
    store.upsert([Entity(ents[0].id, "Ada Lovelace", "PERSON", "Mathematician")])
    assert store.get_entities([ents[0].id])[0].description == "Mathematician"
    assert store.counts() == first


def test_relations_and_mentions_need_known_entities(store):
    with pytest.raises(ConfigError, match="unknown entit.*'nobody'|'nobody'.*unknown entit"):
        store.upsert(relations=[Relation("nobody", "nothing")])
    with pytest.raises(ConfigError, match="unknown entit.*'nobody'"):
        store.upsert(mentions=[Mention("nobody", ChunkRef("d", 0, 1))])
    assert store.counts()["entities"] == 0


def test_neighbourhood_by_depth(store):
    ents, rels, ments = sample()
    store.upsert(ents, rels, ments)
    one = store.neighbourhood([ents[0].id], depth=1)
    assert one.hops == {"ada lovelace": 0, "charles babbage": 1}
    assert {(r.source, r.type, r.target) for r in one.relations} == {
        ("ada lovelace", "WORKED_WITH", "charles babbage")
    }
    two = store.neighbourhood([ents[0].id], depth=2)
    assert two.hops["analytical engine"] == 2 and len(two.relations) == 2
    assert store.neighbourhood(["missing"], depth=2).hops == {}
    assert len(store.neighbourhood([ents[0].id], depth=2, limit=2).hops) == 2


def test_a_hubs_neighbourhood_is_cut_at_the_limit_by_id(store):
    hub = Entity.of("hub")
    spokes = [Entity.of(f"spoke {i:02d}") for i in range(30)]
    store.upsert([hub, *spokes], [Relation(hub.id, s.id) for s in spokes[::-1]])
    hops = store.neighbourhood([hub.id], depth=1, limit=5).hops
    assert hops == {hub.id: 0, **{s.id: 1 for s in spokes[:4]}}  # the smallest ids


def test_a_frontiers_neighbours_are_taken_together_in_id_order(store):
    a, b = Entity.of("a seed"), Entity.of("b seed")
    zs = [Entity.of(f"z {i}") for i in range(5)]
    ys = [Entity.of(f"y {i}") for i in range(5)]
    rels = [Relation(a.id, z.id) for z in zs] + [Relation(b.id, y.id) for y in ys]
    store.upsert([a, b, *zs, *ys], rels)
    hops = store.neighbourhood([a.id, b.id], depth=1, limit=5).hops
    assert hops == {a.id: 0, b.id: 0, "y 0": 1, "y 1": 1, "y 2": 1}  # not a's first


def test_chunks_for_and_find(store):
    ents, rels, ments = sample()
    store.upsert(ents, rels, ments)
    chunks = store.chunks_for([ents[1].id, "missing"])
    assert chunks == {"charles babbage": [ChunkRef("d1", 0, 40), ChunkRef("d2", 10, 50)]}
    assert [e.id for e in store.find_entities(["Charles Babbage"], fuzzy=False)] == [
        "charles babbage"
    ]
    assert "charles babbage" in [e.id for e in store.find_entities(["Babbage"])]
    assert "ada lovelace" in [e.id for e in store.find_entities(["Ada Lovelac"])]
    assert store.find_entities(["zzzz qqqq"]) == []


def test_lookup_gives_each_name_its_exact_match_else_its_best_fuzzy_ones(store):
    ents, rels, ments = sample()
    store.upsert(ents, rels, ments)
    names = ["Charles Babbage", "Babbage", "Ada Lovelac", "zzzz qqqq", "", "Babbage"]
    got = store.lookup(names, fuzzy_limit=[3, 3, 3, 3, 3, 0])
    assert got[0] == ["charles babbage"]  # exact: that entity alone
    assert got[1] and got[1][0] == "charles babbage"
    assert got[2] == ["ada lovelace"]
    assert got[3] == [] and got[4] == [] and got[5] == []  # limit 0: exact only
    assert store.lookup(names[:2]) == [["charles babbage"], []]  # default: exact only
    with pytest.raises(ConfigError, match="one per name"):
        store.lookup(names, fuzzy_limit=[1, 2])
    with pytest.raises(ConfigError, match=">= 0"):
        store.lookup(names[:1], fuzzy_limit=-1)


def test_expand_is_the_neighbourhood_and_its_chunks(store):
    """``expand`` equals ``neighbourhood`` + ``chunks_for`` at every depth and limit."""
    ents = [Entity.of(f"node {i:02d}") for i in range(24)]
    rels = [
        Relation(ents[i].id, ents[(i * 7 + 3) % 24].id, "NEXT", weight=1.0 + i % 3)
        for i in range(24)
    ]
    rels += [Relation(ents[0].id, ents[i].id, "HUB") for i in range(5, 20)]
    ments = [Mention(e.id, ChunkRef(f"d{i % 4}", 10 * i, 10 * i + 9)) for i, e in enumerate(ents)]
    ments += [Mention(ents[1].id, ChunkRef("d0", 0, 5))]
    store.upsert(ents, rels, ments)
    for seeds in ([ents[0].id], [ents[3].id, ents[1].id, "missing", ents[3].id], [], ["missing"]):
        for depth in (0, 1, 2, 3):
            for limit in (1, 4, 9, 200):
                sub, refs = store.expand(seeds, depth=depth, limit=limit)
                want = store.neighbourhood(seeds, depth=depth, limit=limit)
                assert list(sub.hops.items()) == list(want.hops.items()), (seeds, depth, limit)
                assert [e.id for e in sub.entities] == list(want.hops)
                key = lambda r: (r.source, r.type, r.target)  # noqa: E731
                assert sorted(sub.relations, key=key) == sorted(want.relations, key=key)
                assert refs == store.chunks_for(list(want.hops))


def test_expand_leaves_out_the_chunks_of_entities_mentioned_in_more_than_max_chunks(store):
    """``max_chunks`` drops exactly the entities over it from the chunks, at every depth."""
    ents = [Entity.of(f"node {i:02d}") for i in range(8)]
    rels = [Relation(ents[i].id, ents[i + 1].id, "NEXT") for i in range(7)]
    # entity i is mentioned in i chunks (0 to 7)
    ments = [
        Mention(e.id, ChunkRef(f"d{j}", 10 * i, 10 * i + 5))
        for i, e in enumerate(ents)
        for j in range(i)
    ]
    store.upsert(ents, rels, ments)
    for depth in (1, 2, 3):  # 3: the hop-by-hop path of a server store
        full_sub, full = store.expand([ents[4].id], depth=depth)
        for cap in (0, 3, 4, 7, None):
            sub, refs = store.expand([ents[4].id], depth=depth, max_chunks=cap)
            assert sub == full_sub  # the neighbourhood is the same
            want = {e: r for e, r in full.items() if cap is None or len(r) <= cap}
            assert refs == want, (depth, cap)
            if cap is not None:  # the count is the entity's chunks: it decides who is left out
                kept = {e.id for e in sub.entities if int(e.id.split()[1]) <= cap}
                assert set(refs) == kept


def test_delete_document(store):
    ents, rels, ments = sample()
    store.upsert(ents, rels, ments)
    assert store.delete_document("d2") == 1
    # the engine was only in d2; Babbage is still in d1
    assert {e.id for e in store.entities()} == {"ada lovelace", "charles babbage"}
    assert store.chunks_for(["charles babbage"]) == {"charles babbage": [ChunkRef("d1", 0, 40)]}
    assert store.counts()["relations"] == 1
    assert store.delete_document("d-unknown") == 0


@pytest.mark.parametrize(
    "name",
    [
        EVIL,
        "Ünïcödé Straße 東京",
        'He said "hi"',
        "back`tick`",
        "a\\b",
        "MATCH (n) RETURN n",
        "ÉCOLE",
    ],
)
def test_hostile_and_unicode_names_are_stored_verbatim(store, name):
    keep = Entity.of("Bystander")
    store.upsert([keep])
    odd = Entity.of(name, "THING", description=name)
    store.upsert([odd], [Relation(odd.id, keep.id, name)], [Mention(odd.id, ChunkRef(name, 0, 1))])
    (back,) = store.get_entities([odd.id])
    assert back.name == name and back.description == name
    assert odd.id in [e.id for e in store.find_entities([name])]
    assert store.counts()["entities"] == 2  # nothing deleted
    assert store.relations()[0].type == name
    assert store.chunks_for([odd.id])[odd.id] == [ChunkRef(name, 0, 1)]


def test_communities_round_trip(store):
    ents, rels, ments = sample()
    store.upsert(ents, rels, ments)
    comms = [
        Community("L0-0", 0, ("ada lovelace", "charles babbage"), "L1-0", "People.", "people", 0.7),
        Community("L0-1", 0, ("analytical engine",), "L1-0", "Machines.", "machines", 0.3),
        Community("L1-0", 1, tuple(sorted(e.id for e in ents)), None, "All.", "all", 1.0),
    ]
    store.write_communities(comms)
    assert store.read_communities() == comms
    assert store.read_communities(level=1) == comms[2:]
    store.write_communities(comms[:1])
    assert store.read_communities() == comms[:1]


def test_report_vectors_round_trip_with_their_communities(store, tmp_path):
    ents, rels, ments = sample()
    store.upsert(ents, rels, ments)
    comms = [
        Community("L0-0", 0, ("ada lovelace",), None, "A.", "a", 0.5),
        Community("L1-0", 1, ("ada lovelace", "charles babbage"), None, "B.", "b", 1.0),
    ]
    vectors = np.array([[1, 0, 0], [0, 0.6, 0.8]], np.float32)
    store.write_communities(comms, report_vectors=vectors)
    got, vecs = store.read_reports()
    assert got == comms
    np.testing.assert_allclose(vecs, vectors, atol=1e-7)
    got, vecs = store.read_reports(level=1)
    assert got == comms[1:]
    np.testing.assert_allclose(vecs, vectors[1:], atol=1e-7)
    if isinstance(store, InMemoryGraphStore):  # saved and loaded with the store
        again = InMemoryGraphStore.load(store.save(tmp_path / "store"))
        np.testing.assert_array_equal(again.read_reports()[1], vectors)
        with pytest.raises(ConfigError, match="one row per community"):
            store.write_communities(comms, report_vectors=vectors[:1])
    store.write_communities(comms)  # written without vectors: none are read back
    assert store.read_reports()[1] is None


def test_batches_larger_than_batch_size(store):
    many = [Entity.of(f"entity {i}") for i in range(10)]
    store.upsert(many, [Relation(a.id, b.id) for a, b in zip(many, many[1:], strict=False)])
    assert store.counts()["entities"] == 10 and store.counts()["relations"] == 9


def test_concurrent_upserts(store):
    def work(i):
        ents = [Entity.of(f"thread {i} entity {j}") for j in range(5)]
        store.upsert(ents, mentions=[Mention(e.id, ChunkRef(f"doc{i}", 0, 5)) for e in ents])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.counts()["entities"] == 20


def test_memory_store_saves_and_loads(tmp_path):
    store = InMemoryGraphStore()
    ents, rels, ments = sample()
    store.upsert(ents, rels, ments)
    store.write_communities([Community("c", 0, (ents[0].id,), summary=EVIL)])
    store.save(tmp_path / "kg")
    back = InMemoryGraphStore.load(tmp_path / "kg")
    assert back.counts() == store.counts()
    assert back.read_communities()[0].summary == EVIL
    assert (
        back.neighbourhood([ents[0].id], depth=2).hops
        == store.neighbourhood([ents[0].id], depth=2).hops
    )


def test_a_chunks_key_is_one_string_however_often_it_is_asked():
    store = InMemoryGraphStore()
    ada = Entity.of("Ada")
    store.upsert([ada], [], [Mention(ada.id, ChunkRef("d1", 0, 40))])
    (kept,) = store._chunks  # the store's own copy of the key
    assert ChunkRef("d1", 0, 40).key == "d1:0-40"
    assert ChunkRef("d1", 0, 40).key is kept  # interned: one string for every index


def test_memory_store_neighbours_are_both_ends_of_its_live_relations():
    store = InMemoryGraphStore()
    a, b, c = Entity.of("alpha"), Entity.of("beta"), Entity.of("gamma")
    rels = [
        Relation(a.id, b.id, "KNOWS", weight=2.0),
        Relation(c.id, a.id, "CITES"),  # only in: a reaches c backwards
        Relation(a.id, a.id, "SELF"),
    ]
    store.upsert([a, b, c], rels)
    assert store.neighbourhood([a.id]).hops == {a.id: 0, b.id: 1, c.id: 1}
    assert store.neighbourhood([b.id]).hops == {b.id: 0, a.id: 1}
    store.update(drop_relations=[(a.id, "KNOWS", b.id)])
    assert store.neighbourhood([b.id]).hops == {b.id: 0}
    graph = store.to_networkx()
    assert set(graph.edges(keys=True)) == {(c.id, a.id, "CITES"), (a.id, a.id, "SELF")}
    assert graph.nodes[a.id]["entity"] == a and graph.number_of_nodes() == 3
    store.update(drop_entities=[c.id])
    assert store.neighbourhood([a.id]).hops == {a.id: 0}
    assert graph.has_node(c.id)  # a copy: later writes do not reach it


# -- Neo4j only ----------------------------------------------------------------------------------
@pytest.mark.neo4j
@pytest.mark.integration
@pytest.mark.enable_socket
def test_wrong_credentials_and_down_server_raise_store_unavailable(neo4j_server):
    with pytest.raises(StoreUnavailableError, match="credentials"):
        Neo4jGraphStore(neo4j_server.uri, "neo4j", "wrong-password")
    from tests.neo4j_server.server import free_port

    with pytest.raises(StoreUnavailableError, match="unavailable"):
        Neo4jGraphStore(f"bolt://127.0.0.1:{free_port()}", "neo4j", "x", connection_timeout=2)


@pytest.mark.neo4j
@pytest.mark.integration
@pytest.mark.enable_socket
def test_schema_is_idempotent_and_vector_index_works(neo4j_server):
    store = Neo4jGraphStore(
        neo4j_server.uri, neo4j_server.user, neo4j_server.password, vector_dimensions=3
    )
    store.ensure_schema()
    store.ensure_schema()
    store.clear()
    refs = [ChunkRef("d", 0, 5), ChunkRef("d", 5, 9)]
    store.upsert_chunk_vectors(refs, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    deadline = time.monotonic() + 30
    found: list = []
    while time.monotonic() < deadline and not found:  # the vector index fills asynchronously
        found = store.search_chunk_vectors([0.9, 0.1, 0.0], k=1)
        time.sleep(0.2)
    assert found and found[0][0] == refs[0]
    with pytest.raises(ConfigError, match="vector of dimension 2; the index has 3"):
        store.upsert_chunk_vectors(refs[:1], [[1.0, 0.0]])
    store.clear()
    store.close()


@pytest.mark.neo4j
@pytest.mark.integration
@pytest.mark.enable_socket
def test_dropped_connection_mid_write_is_clear_and_leaves_no_partial_batch(neo4j_server):
    store = Neo4jGraphStore(
        neo4j_server.uri,
        neo4j_server.user,
        neo4j_server.password,
        batch_size=50_000,
        retry_seconds=1,
        connection_timeout=2,
    )
    store.clear()
    many = [Entity.of(f"bulk entity {i}", description="x" * 200) for i in range(40_000)]
    errors: list[BaseException] = []

    def write():
        try:
            store.upsert(many)
        except BaseException as exc:  # noqa: BLE001 - handed to the assertion below
            errors.append(exc)

    t = threading.Thread(target=write)
    t.start()
    time.sleep(0.5)  # the single 40,000-row transaction is under way
    neo4j_server.kill()
    t.join(120)
    try:
        assert errors and isinstance(errors[0], StoreUnavailableError)
        with pytest.raises(StoreUnavailableError):
            store.counts()
    finally:
        store.close()
        neo4j_server.start()  # same data directory and port
    after = Neo4jGraphStore(neo4j_server.uri, neo4j_server.user, neo4j_server.password)
    assert after.counts()["entities"] in (0, len(many))  # the batch is all or nothing
    after.clear()
    after.close()


def test_update_drops_then_writes_in_one_call(store):
    ents, rels, ments = sample()
    ada, bab, eng = ents
    store.upsert(ents, rels, ments)
    store.write_communities([Community("L0-0", 0, (ada.id, bab.id, eng.id))])
    heavier = Relation(bab.id, eng.id, "DESIGNED", "Babbage designed it twice.", 3.0)
    store.update(
        drop_entities=[ada.id],  # with its relation to Babbage and its mention
        drop_mentions=[(eng.id, ChunkRef("d2", 10, 50).key)],
        relations=[heavier],
        mentions=[Mention(eng.id, ChunkRef("d3", 0, 9), 2)],
    )
    assert sorted(e.id for e in store.entities()) == sorted([bab.id, eng.id])
    assert store.relations() == [heavier]  # weight and evidence replaced, not added
    chunks = store.chunks_for([bab.id, eng.id])
    assert [c.doc_id for c in chunks[eng.id]] == ["d3"]
    assert sorted(c.doc_id for c in chunks[bab.id]) == ["d1", "d2"]
    assert set(store.read_communities()[0].entity_ids) == {bab.id, eng.id}  # Ada left it
    store.update(drop_chunks=[ChunkRef("d1", 0, 40).key])
    assert [c.doc_id for c in store.chunks_for([bab.id])[bab.id]] == ["d2"]
    store.update(drop_relations=[(bab.id, "DESIGNED", eng.id)])
    assert store.relations() == []


@pytest.mark.neo4j
@pytest.mark.integration
@pytest.mark.enable_socket
def test_clear_deletes_a_graph_larger_than_one_batch(neo4j_server):
    store = Neo4jGraphStore(neo4j_server.uri, neo4j_server.user, neo4j_server.password)
    try:
        store.clear()
        many = [Entity.of(f"entity {i}") for i in range(10_050)]  # past one 10,000-row batch
        store.upsert(many, [Relation(a.id, b.id) for a, b in zip(many, many[1:], strict=False)])
        assert store.counts()["entities"] == 10_050
        store.clear()
        assert store.counts()["entities"] == 0 and store.counts()["relations"] == 0
    finally:
        store.close()


LOOKUPS = [
    "Babbage",
    "Ada Lovelac",
    "charles",
    "the engine",
    "Analytical",
    "Sexy Back",
    "sexyback",
    "Lord Byron",
    "of the",
    "ada-lovelace",
    "Engine Analytical",
    "zzzz",
    "Babage Charles",
]


@pytest.mark.neo4j
@pytest.mark.integration
@pytest.mark.enable_socket
def test_name_lookup_means_the_same_on_every_store(neo4j_server):
    """Exact and fuzzy lookups: Neo4j returns what the in-memory store returns, in order."""
    names = [
        "Ada Lovelace",
        "Charles Babbage",
        "Analytical Engine",
        "SexyBack",
        "Sexy Back Tour",
        "Lord Byron",
        "Byron",
        "The Engine Room",
        "Ada",
        "Charles Dickens",
        "Babbage Engine",
    ]
    ents = [Entity.of(n) for n in names]
    memory = InMemoryGraphStore()
    memory.upsert(ents)
    neo = Neo4jGraphStore(neo4j_server.uri, neo4j_server.user, neo4j_server.password)
    try:
        neo.clear()
        neo.upsert(ents)
        for query in LOOKUPS:
            for fuzzy in (False, True):
                for limit in (1, 3, 20):
                    want = [e.id for e in memory.find_entities([query], fuzzy=fuzzy, limit=limit)]
                    got = [e.id for e in neo.find_entities([query], fuzzy=fuzzy, limit=limit)]
                    assert got == want, (query, fuzzy, limit)
        both = [e.id for e in neo.find_entities(["Byron", "Babbage"], limit=20)]
        assert both == [e.id for e in memory.find_entities(["Byron", "Babbage"], limit=20)]
        for limit in (0, 1, 3, 20):  # a query's per-name lookup, all names in one statement
            before = neo.reads
            assert neo.lookup(LOOKUPS, fuzzy_limit=limit) == memory.lookup(
                LOOKUPS, fuzzy_limit=limit
            ), limit
            assert neo.reads == before + 1
    finally:
        neo.close()


def test_the_store_keeps_the_contract_check_store_states(store):
    """``semrag.testing.check_store``, what a third party's store proves itself with."""
    rules = check_store(store)
    assert "expand gives the neighbourhood's chunks" in rules and len(rules) == len(set(rules))
    assert not any(store.counts().values())  # it cleans up after itself
    assert isinstance(store, GraphReads) and isinstance(store, GraphWrites)


def test_check_store_names_the_rule_a_store_breaks():
    class ForgetsRelations(InMemoryGraphStore):
        def relations(self):
            return super().relations()[:1]

    with pytest.raises(AssertionError, match="relations\\(\\) are the written ones"):
        check_store(ForgetsRelations())

    with pytest.raises(MissingCapabilityError, match="GraphReads.*expand"):
        check_store(type("Partial", (), {"counts": lambda self: {}})())
    full = InMemoryGraphStore()
    full.upsert([Entity.of("Ada")])
    with pytest.raises(ConfigError, match="give it an empty one"):
        check_store(full)


def test_a_knowledge_graph_refuses_a_store_that_cannot_be_written():
    class ReadOnly:
        supports_fulltext = False

    for name in GraphReads.__dict__:
        if not name.startswith("_") and callable(getattr(GraphReads, name)):
            setattr(ReadOnly, name, getattr(InMemoryGraphStore, name))
    with pytest.raises(
        MissingCapabilityError, match="KnowledgeGraph needs a store with GraphWrites"
    ):
        KnowledgeGraph(ReadOnly())
