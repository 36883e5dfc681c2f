"""The knowledge graph's compact records answer as the plain structures they replace.

:class:`SmallSets` (a dict of sets held as tuples while small) against a dict of sets,
under any sequence of adds and discards, across the size where a tuple becomes a set;
the ledger's per-document columns against the extraction they were made from (the
records round-trip, and each key's relations and mentions are what a scan finds).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from semrag.graph._doc_columns import DocColumns
from semrag.graph._small_sets import SmallSets
from semrag.graph.extract import Extraction
from semrag.graph.types import ChunkRef, Entity, Mention, Relation

KEYS = ["a", "b", "c"]
ops = st.lists(
    st.tuples(st.sampled_from(["add", "discard"]), st.sampled_from(KEYS), st.integers(0, 20)),
    max_size=200,
)


@settings(max_examples=150, deadline=None)
@given(ops)
def test_small_sets_hold_what_a_dict_of_sets_holds(steps):
    small: SmallSets[str, int] = SmallSets()
    plain: dict[str, set[int]] = {}
    for op, key, value in steps:
        if op == "add":
            small.add(key, value)
            plain.setdefault(key, set()).add(value)
        else:
            small.discard(key, value)
            plain.get(key, set()).discard(value)
            if not plain.get(key, True):
                del plain[key]
        assert len(small) == len(plain)
        for k in KEYS:
            got = small.get(k)
            assert sorted(got) == sorted(plain.get(k, ())), k
            assert len(got) == len(set(got))  # no value twice
            assert (k in small) == (k in plain)
            if len(got) <= SmallSets.SMALL and isinstance(got, tuple):
                continue
            assert isinstance(got, set) and len(got) >= SmallSets.SMALL  # only large sets
    assert {k: sorted(v) for k, v in small.items()} == {k: sorted(v) for k, v in plain.items()}


def test_small_sets_keep_insertion_order_and_pop():
    s: SmallSets[str, str] = SmallSets()
    for v in ["z", "a", "m", "a"]:
        s.add("k", v)
    assert s.get("k") == ("z", "a", "m")
    s.update("k", [f"v{i}" for i in range(10)])
    assert isinstance(s.get("k"), set) and len(s.get("k")) == 13
    assert sorted(s.pop("k")) == sorted(["z", "a", "m", *(f"v{i}" for i in range(10))])
    assert "k" not in s and s.pop("k", None) is None


names = st.sampled_from(["ada", "bob", "cyd", "dee", "eve"])
extractions = st.builds(
    lambda ents, rels, ments: Extraction(
        [Entity(k, k.title(), "PROPER", f"about {k}") for k in dict.fromkeys(ents)],
        [Relation(a, b, t, ev, w) for a, b, t, ev, w in rels],
        [Mention(e, ChunkRef("d", 10 * c, 10 * c + 7), n) for e, c, n in ments],
    ),
    st.lists(names, max_size=4),
    st.lists(
        st.tuples(
            names,
            names,
            st.sampled_from(["CO_OCCURS", "KNOWS"]),
            st.sampled_from(["", "Ada met Bob."]),
            st.floats(0.5, 3.0),
        ),
        max_size=8,
    ),
    st.lists(st.tuples(names, st.integers(0, 3), st.integers(1, 4)), max_size=8),
)


@settings(max_examples=150, deadline=None)
@given(extractions)
def test_document_columns_round_trip_and_index_by_entity(extraction):
    doc = DocColumns(7, extraction)
    again = doc.extraction()
    assert again.entities == extraction.entities
    assert again.relations == extraction.relations
    assert again.mentions == extraction.mentions
    named = {e.id for e in extraction.entities}
    named |= {k for r in extraction.relations for k in (r.source, r.target)}
    named |= {m.entity_id for m in extraction.mentions}
    assert set(doc.pos) == named
    for key in named:
        expect = [i for i, r in enumerate(extraction.relations) if key in (r.source, r.target)]
        assert doc.relations_of(key).tolist() == expect
        assert doc.mentions_of(key).tolist() == [
            i for i, m in enumerate(extraction.mentions) if m.entity_id == key
        ]
        position, record = doc.record(key)
        given_ = [i for i, e in enumerate(extraction.entities) if e.id == key]
        if given_:  # the extraction's own record, else one named by its key
            assert (position, record) == (given_[-1], extraction.entities[given_[-1]])
        else:
            assert record == Entity(key, key) and position >= len(extraction.entities)
    assert sorted(c.key for c in doc.chunks) == sorted({m.chunk.key for m in extraction.mentions})
    assert doc.relations_of("nobody").size == 0 and doc.mentions_of("nobody").size == 0
