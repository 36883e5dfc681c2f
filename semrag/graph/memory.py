"""The embedded default graph store: networkx in memory, saved atomically to a directory."""

from __future__ import annotations

import difflib
import json
import threading
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, replace
from pathlib import Path

import networkx as nx

from semrag.errors import ConfigError
from semrag.graph.types import ChunkRef, Community, Entity, Mention, Relation, Subgraph, entity_key
from semrag.index.persist import atomic_directory, read_manifest

__all__ = ["InMemoryGraphStore"]

_FORMAT = 1


def _tokens(key: str) -> set[str]:
    """Name tokens, plus the name without spaces ("sexy back" also finds "sexyback")."""
    words = {t for t in key.replace("-", " ").split() if t}
    if len(words) > 1:
        words.add("".join(key.replace("-", " ").split()))
    return words


def _check_known(
    known: set[str], relations: Sequence[Relation], mentions: Sequence[Mention]
) -> None:
    """Raise unless every relation and mention names an entity in ``known``."""
    for r in relations:
        if r.source not in known or r.target not in known:
            raise ConfigError(f"relation {r.source!r} -> {r.target!r}: unknown entity")
    for m in mentions:
        if m.entity_id not in known:
            raise ConfigError(f"mention of unknown entity {m.entity_id!r}")


class InMemoryGraphStore:
    """A :class:`~semrag.graph.GraphStore` on a networkx ``MultiDiGraph``.

    Entities are nodes, relations are edges keyed by their type; mentions and chunks sit in
    dictionaries beside the graph. Thread-safe (one lock). Fuzzy name lookup uses a token
    index plus a character-similarity ratio (``fuzzy_cutoff``).

    Example:
        >>> store = InMemoryGraphStore()
        >>> a, b = Entity.of("Ada Lovelace"), Entity.of("Charles Babbage")
        >>> store.upsert([a, b], [Relation(a.id, b.id, "WORKED_WITH")])
        >>> [e.name for e in store.find_entities(["lovelace"])]
        ['Ada Lovelace']
        >>> sorted(store.neighbourhood([a.id]).hops.items())
        [('ada lovelace', 0), ('charles babbage', 1)]
    """

    supports_fulltext = False

    def __init__(self, *, fuzzy_cutoff: float = 0.5) -> None:
        self.fuzzy_cutoff = fuzzy_cutoff
        self._lock = threading.RLock()
        self._reset()

    def _reset(self) -> None:
        self.graph = nx.MultiDiGraph()
        self._entities: dict[str, Entity] = {}
        self._relations: dict[tuple[str, str, str], Relation] = {}
        self._mentions: dict[tuple[str, str], Mention] = {}
        self._chunks: dict[str, ChunkRef] = {}
        self._by_entity: dict[str, set[str]] = defaultdict(set)  # entity -> chunk keys
        self._by_token: dict[str, set[str]] = defaultdict(set)  # name token -> entity ids
        self._communities: list[Community] = []

    # -- writes ---------------------------------------------------------------------------------
    def upsert(
        self,
        entities: Iterable[Entity] = (),
        relations: Iterable[Relation] = (),
        mentions: Iterable[Mention] = (),
    ) -> None:
        """Insert or update records; all of them or none (validated before any write)."""
        entities, relations, mentions = list(entities), list(relations), list(mentions)
        with self._lock:
            _check_known(set(self._entities) | {e.id for e in entities}, relations, mentions)
            for e in entities:
                if not e.id:
                    raise ConfigError(f"entity without an id: {e!r}")
            for e in entities:
                self._entities[e.id] = e
                self.graph.add_node(e.id)
                for t in _tokens(e.id):
                    self._by_token[t].add(e.id)
            for r in relations:
                self._relations[(r.source, r.type, r.target)] = r
                self.graph.add_edge(r.source, r.target, key=r.type, weight=r.weight)
            for m in mentions:
                self._chunks[m.chunk.key] = m.chunk
                self._mentions[(m.entity_id, m.chunk.key)] = m
                self._by_entity[m.entity_id].add(m.chunk.key)

    def update(
        self,
        *,
        drop_entities: Sequence[str] = (),
        drop_relations: Sequence[tuple[str, str, str]] = (),
        drop_mentions: Sequence[tuple[str, str]] = (),
        drop_chunks: Sequence[str] = (),
        entities: Sequence[Entity] = (),
        relations: Sequence[Relation] = (),
        mentions: Sequence[Mention] = (),
    ) -> None:
        """Apply one change of the graph at once: the drops, then the upserts.

        The same contract as :meth:`Neo4jGraphStore.update
        <semrag.graph.Neo4jGraphStore.update>`: dropped entities leave their relations,
        mentions and communities; dropped chunks leave their mentions.
        """
        with self._lock:
            known = (set(self._entities) - set(drop_entities)) | {e.id for e in entities}
            _check_known(known, relations, mentions)  # before any drop: all or nothing
            for key in drop_chunks:
                self._chunks.pop(key, None)
            gone_chunks = set(drop_chunks)
            for pair in [p for p in self._mentions if p[1] in gone_chunks] + list(drop_mentions):
                if self._mentions.pop(pair, None) is not None:
                    self._by_entity[pair[0]].discard(pair[1])
            for source, rtype, target in drop_relations:
                if self._relations.pop((source, rtype, target), None) is not None:
                    if self.graph.has_edge(source, target, key=rtype):
                        self.graph.remove_edge(source, target, key=rtype)
            if drop_entities:
                gone = set(drop_entities)
                for pair in [p for e in gone for p in ((e, k) for k in self._by_entity.get(e, ()))]:
                    self._mentions.pop(pair, None)
                self._delete_entities(list(gone))
                self._communities = [
                    replace(c, entity_ids=tuple(e for e in c.entity_ids if e not in gone))
                    for c in self._communities
                ]
            self.upsert(entities, relations, mentions)

    def delete_document(self, doc_id: str) -> int:
        """Remove the document's chunks and mentions, then entities left unmentioned.

        Returns the number of chunks removed.
        """
        with self._lock:
            keys = {k for k, c in self._chunks.items() if c.doc_id == doc_id}
            touched: set[str] = set()
            for key in keys:
                del self._chunks[key]
            for ent, ck in [m for m in self._mentions if m[1] in keys]:
                del self._mentions[(ent, ck)]
                self._by_entity[ent].discard(ck)
                touched.add(ent)
            orphans = [e for e in touched if not self._by_entity.get(e)]
            self._delete_entities(orphans)
            return len(keys)

    def _delete_entities(self, ids: Sequence[str]) -> None:
        for eid in ids:
            self._entities.pop(eid, None)
            self._by_entity.pop(eid, None)
            for t in _tokens(eid):
                self._by_token[t].discard(eid)
            if self.graph.has_node(eid):
                self.graph.remove_node(eid)
        gone = set(ids)
        self._relations = {
            k: r
            for k, r in self._relations.items()
            if r.source not in gone and r.target not in gone
        }

    def write_communities(self, communities: Sequence[Community]) -> None:
        """Replace the stored communities."""
        with self._lock:
            self._communities = list(communities)

    def clear(self) -> None:
        """Delete everything."""
        with self._lock:
            self._reset()

    # -- reads ------------------------------------------------------------------------------------
    def get_entities(self, ids: Sequence[str]) -> list[Entity]:
        """The entities with these ids (absent ids skipped)."""
        with self._lock:
            return [self._entities[i] for i in ids if i in self._entities]

    def entities(self) -> list[Entity]:
        """Every entity, in insertion order."""
        with self._lock:
            return list(self._entities.values())

    def relations(self) -> list[Relation]:
        """Every relation."""
        with self._lock:
            return list(self._relations.values())

    def find_entities(
        self, names: Sequence[str], *, fuzzy: bool = True, limit: int = 10
    ) -> list[Entity]:
        """Exact key matches, then (``fuzzy``) entities sharing a name token, best first.

        A fuzzy match needs a token Jaccard or character ratio of at least ``fuzzy_cutoff``.
        """
        with self._lock:
            scored: dict[str, float] = {}
            for name in names:
                key = entity_key(name)
                if key in self._entities:
                    scored[key] = max(scored.get(key, 0.0), 2.0)
                if not fuzzy or not key:
                    continue
                want = _tokens(key)
                cands = (
                    set().union(*(self._by_token.get(t, set()) for t in want)) if want else set()
                )
                for eid in cands:
                    have = _tokens(eid)
                    jaccard = len(want & have) / len(want | have)
                    ratio = difflib.SequenceMatcher(None, key, eid).ratio()
                    score = max(jaccard, ratio)
                    if score >= self.fuzzy_cutoff:
                        scored[eid] = max(scored.get(eid, 0.0), score)
            best = sorted(scored, key=lambda e: (-scored[e], e))[:limit]
            return [self._entities[e] for e in best]

    def neighbourhood(
        self, entity_ids: Sequence[str], *, depth: int = 1, limit: int = 200
    ) -> Subgraph:
        """Entities up to ``depth`` hops away (both directions) and the relations among them.

        Breadth-first; at most ``limit`` entities.
        """
        with self._lock:
            hops = {e: 0 for e in entity_ids if e in self._entities}
            frontier = list(hops)
            for hop in range(1, depth + 1):
                nxt = []
                for node in frontier:
                    around = sorted(
                        set(self.graph.successors(node)) | set(self.graph.predecessors(node))
                    )
                    for n in around:
                        if n not in hops and len(hops) < limit:
                            hops[n] = hop
                            nxt.append(n)
                frontier = nxt
            inside = set(hops)
            rels = [
                r for r in self._relations.values() if r.source in inside and r.target in inside
            ]
            return Subgraph([self._entities[e] for e in hops], rels, hops)

    def chunks_for(self, entity_ids: Sequence[str]) -> dict[str, list[ChunkRef]]:
        """Chunks mentioning each entity, in document order."""
        with self._lock:
            return {
                e: sorted(
                    (self._chunks[k] for k in self._by_entity.get(e, ())),
                    key=lambda c: (c.doc_id, c.start),
                )
                for e in entity_ids
                if e in self._entities
            }

    def read_communities(self, level: int | None = None) -> list[Community]:
        """Stored communities (of one level)."""
        with self._lock:
            return [c for c in self._communities if level is None or c.level == level]

    def counts(self) -> dict[str, int]:
        """Numbers of entities, relations, chunks, mentions and communities."""
        with self._lock:
            return {
                "entities": len(self._entities),
                "relations": len(self._relations),
                "chunks": len(self._chunks),
                "mentions": len(self._mentions),
                "communities": len(self._communities),
            }

    # -- persistence ------------------------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """Write the store to ``directory`` atomically (JSON files and a checksummed manifest)."""
        from semrag import __version__

        with self._lock:
            data = {
                "entities": [asdict(e) for e in self._entities.values()],
                "relations": [asdict(r) for r in self._relations.values()],
                "mentions": [
                    {"entity_id": m.entity_id, "count": m.count, **asdict(m.chunk)}
                    for m in self._mentions.values()
                ],
                "communities": [asdict(c) for c in self._communities],
            }
        manifest = {
            "kind": "graph_store",
            "format_version": _FORMAT,
            "library_version": __version__,
        }
        with atomic_directory(directory, manifest) as tmp:
            for name, rows in data.items():
                (tmp / f"{name}.json").write_text(json.dumps(rows, ensure_ascii=False), "utf-8")
        return Path(directory)

    @classmethod
    def load(cls, directory: str | Path) -> InMemoryGraphStore:
        """Load a store written by :meth:`save` (checksums verified)."""
        from semrag import __version__

        directory = Path(directory)
        read_manifest(
            directory, kind="graph_store", format_version=_FORMAT, library_version=__version__
        )

        def rows(name: str) -> list[dict]:
            return json.loads((directory / f"{name}.json").read_text("utf-8"))

        store = cls()
        store.upsert(
            [Entity(**r) for r in rows("entities")],
            [Relation(**r) for r in rows("relations")],
            [
                Mention(r["entity_id"], ChunkRef(r["doc_id"], r["start"], r["end"]), r["count"])
                for r in rows("mentions")
            ],
        )
        store.write_communities(
            [Community(**{**r, "entity_ids": tuple(r["entity_ids"])}) for r in rows("communities")]
        )
        return store

    def __repr__(self) -> str:
        c = self.counts()
        return f"InMemoryGraphStore(entities={c['entities']}, relations={c['relations']})"
