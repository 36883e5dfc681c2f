"""The in-memory graph store's adjacency indexes answer as a scan of all its records would."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from semrag.graph import InMemoryGraphStore
from semrag.graph.types import ChunkRef, Entity, Mention, Relation

NAMES = ["ada", "bob", "cyd", "dee", "eve", "the tower of london", "of"]
DOCS = ["d1", "d2", "d3"]

upsert = st.tuples(
    st.just("upsert"),
    st.lists(st.sampled_from(NAMES), min_size=1, max_size=4),
    st.lists(
        st.tuples(
            st.sampled_from(NAMES), st.sampled_from(["KNOWS", "NEAR"]), st.sampled_from(NAMES)
        ),
        max_size=4,
    ),
    st.lists(
        st.tuples(st.sampled_from(NAMES), st.sampled_from(DOCS), st.integers(0, 2)), max_size=4
    ),
)
delete_doc = st.tuples(st.just("delete_document"), st.sampled_from(DOCS))
update = st.tuples(
    st.just("update"),
    st.lists(st.sampled_from(NAMES), max_size=2),
    st.lists(st.tuples(st.sampled_from(DOCS), st.integers(0, 2)), max_size=2),
)


def chunk(doc: str, i: int) -> ChunkRef:
    return ChunkRef(doc, 10 * i, 10 * i + 5)


def apply(store: InMemoryGraphStore, op: tuple) -> None:
    if op[0] == "upsert":
        _, names, rels, ments = op
        new = [Entity.of(n) for n in names]
        known = {e.id for e in store.entities()} | {e.id for e in new}
        key = {n: Entity.of(n).id for n in NAMES}
        store.upsert(
            new,
            [
                Relation(key[a], key[b], t)
                for a, t, b in rels
                if key[a] in known and key[b] in known and key[a] != key[b]
            ],
            [Mention(key[n], chunk(d, i)) for n, d, i in ments if key[n] in known],
        )
    elif op[0] == "delete_document":
        store.delete_document(op[1])
    else:
        _, drop_entities, drop_chunks = op
        store.update(
            drop_entities=[Entity.of(n).id for n in drop_entities],
            drop_chunks=[chunk(d, i).key for d, i in drop_chunks],
        )


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(upsert, delete_doc, update), max_size=12), st.integers(1, 2))
def test_indexes_agree_with_a_scan(ops, depth):
    store = InMemoryGraphStore()
    for op in ops:
        apply(store, op)
    entities = {e.id for e in store.entities()}
    relations = store.relations()
    assert all(r.source in entities and r.target in entities for r in relations)
    chunks = store.chunks_for(sorted(entities))
    for seed in entities:
        sub = store.neighbourhood([seed], depth=depth)
        inside = set(sub.hops)
        # Hops by breadth-first search over every relation, both directions.
        hops, frontier = {seed: 0}, [seed]
        for hop in range(1, depth + 1):
            nxt = []
            for node in frontier:
                around = {r.target for r in relations if r.source == node}
                around |= {r.source for r in relations if r.target == node}
                for n in sorted(around - set(hops)):
                    hops[n] = hop
                    nxt.append(n)
            frontier = nxt
        assert sub.hops == hops
        expected = {
            (r.source, r.type, r.target) for r in relations if {r.source, r.target} <= inside
        }
        assert {(r.source, r.type, r.target) for r in sub.relations} == expected
    # delete_document removes exactly the document's mentions, then the orphans.
    for doc in DOCS:
        copy = InMemoryGraphStore()
        for op in ops:
            apply(copy, op)
        mentioned = {e: {c.key for c in cs} for e, cs in chunks.items()}
        before = copy.counts()["chunks"]
        removed = copy.delete_document(doc)
        assert removed == before - copy.counts()["chunks"]
        assert removed >= len({c.key for cs in chunks.values() for c in cs if c.doc_id == doc})
        left = {
            e for e, keys in mentioned.items() if any(not k.startswith(f"{doc}:") for k in keys)
        }
        orphans = {e for e, keys in mentioned.items() if keys and e not in left}
        assert {e.id for e in copy.entities()} == entities - orphans
        for _e, cs in copy.chunks_for(sorted(entities - orphans)).items():
            assert all(c.doc_id != doc for c in cs)


def test_fuzzy_lookup_skips_stop_words():
    store = InMemoryGraphStore()
    store.upsert([Entity.of(f"Tower of {city}") for city in ("London", "Pisa", "Babel")])
    store.upsert([Entity.of("Bank of England")])
    found = [e.name for e in store.find_entities(["Tower of London"], limit=10)]
    assert found[0] == "Tower of London"
    assert "Bank of England" not in found  # shares only "of"
    assert [e.name for e in store.find_entities(["of"], limit=10)] == []  # not a name
