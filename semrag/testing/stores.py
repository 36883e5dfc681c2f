"""The graph store contract as one call: :func:`check_store`.

A knowledge graph reads its store through :class:`~semrag.graph.GraphReads` and writes it
through :class:`~semrag.graph.GraphWrites`. A store of your own (another database) proves
it keeps both::

    from semrag.testing import check_store

    print(check_store(MyStore(...)))  # the rules that held

The check writes a small graph into an empty store, reads it back through every read,
changes it, deletes a document and clears the store again.
"""

from __future__ import annotations

from typing import Any

from semrag.errors import ConfigError
from semrag.graph.types import (
    ChunkRef,
    Community,
    Entity,
    GraphReads,
    GraphWrites,
    Mention,
    Relation,
)
from semrag.index.reader import require
from semrag.testing.readers import Rules

__all__ = ["check_store"]


def check_store(store: Any) -> tuple[str, ...]:
    """Check that ``store`` keeps the graph store contract; return the rules that held.

    Args:
        store: an empty store (it is written and cleared: use a scratch database).

    Raises:
        MissingCapabilityError: a member of :class:`~semrag.graph.GraphReads` or
            :class:`~semrag.graph.GraphWrites` is missing.
        ConfigError: the store is not empty.
        AssertionError: naming the first rule the store breaks.
    """
    require(store, GraphReads, GraphWrites, by="check_store", what="store")
    if any(store.counts().values()):
        raise ConfigError("check_store writes and clears its store: give it an empty one")
    rules = Rules()
    ada, bab, eng = (Entity.of(n, "THING") for n in ("Ada Lovelace", "Charles Babbage", "Engine"))
    d1, d2 = ChunkRef("d1", 0, 40), ChunkRef("d2", 10, 50)
    rels = [Relation(ada.id, bab.id, "MET", weight=2.0), Relation(bab.id, eng.id, "BUILT")]
    ments = [Mention(ada.id, d1), Mention(bab.id, d1), Mention(bab.id, d2), Mention(eng.id, d2)]
    try:
        store.upsert([ada, bab, eng], rels, ments)
        counts = dict(store.counts())
        store.upsert([ada, bab, eng], rels, ments)
        rules.hold("upsert is idempotent", dict(store.counts()) == counts, str(counts))
        want = {"entities": 3, "relations": 2, "chunks": 2, "mentions": 4, "communities": 0}
        rules.hold("counts() counts what was written", counts == want, str(counts))
        _check_reads(store, rules, (ada, bab, eng), rels, (d1, d2))
        _check_writes(store, rules, (ada, bab, eng), d1)
    finally:
        store.clear()
    rules.hold("clear() empties the store", not any(store.counts().values()))
    return tuple(rules.names)


def _check_reads(
    store: Any,
    rules: Rules,
    ents: tuple[Entity, ...],
    rels: list[Relation],
    refs: tuple[ChunkRef, ChunkRef],
) -> None:
    ada, bab, eng = ents
    got = store.get_entities([eng.id, "nobody", ada.id])
    rules.hold("get_entities skips unknown ids", {e.id for e in got} == {ada.id, eng.id})
    rules.hold("entities() are the written ones", set(store.entities()) == set(ents))
    key = lambda r: (r.source, r.type, r.target)  # noqa: E731
    rules.hold(
        "relations() are the written ones",
        sorted(map(key, store.relations())) == sorted(map(key, rels)),
    )
    exact = store.find_entities(["charles babbage"], fuzzy=False)
    rules.hold("find_entities matches a name's key", [e.id for e in exact] == [bab.id])
    rules.hold(
        "lookup gives an exact match alone, else nothing at fuzzy_limit 0",
        store.lookup(["Ada Lovelace", "nobody at all"]) == [[ada.id], []],
    )
    chunks = store.chunks_for([bab.id, "nobody"])
    rules.hold("chunks_for lists each known entity's chunks", chunks == {bab.id: list(refs)})
    sub, found = store.expand([ada.id], depth=1)
    rules.hold("expand reaches depth 1", sub.hops == {ada.id: 0, bab.id: 1}, str(sub.hops))
    rules.hold(
        "expand gives the neighbourhood's chunks",
        found == store.chunks_for([ada.id, bab.id]),
    )
    comms = [Community("c0", 0, (ada.id, bab.id), "c1"), Community("c1", 1, (ada.id, bab.id))]
    store.write_communities(comms)
    rules.hold("communities round-trip", store.read_communities() == comms)
    rules.hold("read_communities(level) filters", store.read_communities(level=1) == comms[1:])
    rules.hold("supports_fulltext is a bool", isinstance(store.supports_fulltext, bool))


def _check_writes(store: Any, rules: Rules, ents: tuple[Entity, ...], d1: ChunkRef) -> None:
    ada, bab, eng = ents
    store.update(drop_entities=[ada.id], relations=[Relation(bab.id, eng.id, "BUILT", "", 3.0)])
    rules.hold(
        "update drops an entity with its relations and mentions",
        {e.id for e in store.entities()} == {bab.id, eng.id}
        and [r.weight for r in store.relations()] == [3.0],
    )
    rules.hold("delete_document counts its chunks", store.delete_document("d2") == 1)
    rules.hold(
        "delete_document drops entities left with no mention",
        {e.id for e in store.entities()} == {bab.id}
        and store.chunks_for([bab.id]) == {bab.id: [d1]},
    )
