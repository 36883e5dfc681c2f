"""The embedded default graph store: records and indexes in memory, saved atomically."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag.errors import ConfigError
from semrag.graph._small_sets import SmallSets
from semrag.graph.names import best_matches, lookup_tokens, name_tokens, per_name, rank_matches
from semrag.graph.types import (
    ChunkRef,
    Community,
    Entity,
    Mention,
    Relation,
    Subgraph,
    entity_key,
)
from semrag.index.storage.persist import Saved, atomic_directory, load_saved

__all__ = ["InMemoryGraphStore"]

_FORMAT = 1


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
    """A :class:`~semrag.graph.GraphStore` in memory: records in dictionaries, with indexes.

    Entities, relations (keyed by source, type and target), mentions and chunks sit in
    dictionaries (a mention as its count). Adjacency indexes (an entity's relations, a
    chunk's entities, a document's chunks; each a tuple while it holds few values, see
    :class:`~semrag.graph._small_sets.SmallSets`) make ``neighbourhood`` and every write
    cost the records they touch, not the store's size; the relations are held once, by
    these (:meth:`to_networkx` makes a networkx graph of them on demand). Thread-safe
    (one lock). Fuzzy name lookup follows a token index (stop words skipped) and scores
    candidates by token Jaccard or character ratio (``fuzzy_cutoff``).

    Examples:
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
        self._entities: dict[str, Entity] = {}
        self._relations: dict[tuple[str, str, str], Relation] = {}
        self._mentions: dict[tuple[str, str], int] = {}  # (entity, chunk key) -> count
        self._chunks: dict[str, ChunkRef] = {}
        self._by_entity: SmallSets[str, str] = SmallSets()  # entity -> chunk keys
        self._by_chunk: SmallSets[str, str] = SmallSets()  # chunk key -> entity ids
        self._by_doc: SmallSets[str, str] = SmallSets()  # doc id -> chunk keys
        self._rels_of: SmallSets[str, tuple[str, str, str]] = SmallSets()  # entity -> keys
        self._by_token: SmallSets[str, str] = SmallSets()  # name token -> entity ids
        self._communities: list[Community] = []
        self._report_vectors: np.ndarray | None = None  # one row per community, if given

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
                for t in name_tokens(e.id):
                    self._by_token.add(t, e.id)
            for r in relations:
                key = (r.source, r.type, r.target)
                self._relations[key] = r
                self._rels_of.add(r.source, key)
                self._rels_of.add(r.target, key)
            for m in mentions:
                self._chunks[m.chunk.key] = m.chunk
                self._by_doc.add(m.chunk.doc_id, m.chunk.key)
                self._mentions[(m.entity_id, m.chunk.key)] = m.count
                self._by_entity.add(m.entity_id, m.chunk.key)
                self._by_chunk.add(m.chunk.key, m.entity_id)

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
        <semrag.neo4j.Neo4jGraphStore.update>`: dropped entities leave their relations,
        mentions and communities; dropped chunks leave their mentions.
        """
        with self._lock:
            known = (set(self._entities) - set(drop_entities)) | {e.id for e in entities}
            _check_known(known, relations, mentions)  # before any drop: all or nothing
            gone_chunks = set(drop_chunks)
            stale = [(e, k) for k in gone_chunks for e in self._by_chunk.get(k, ())]
            for key in gone_chunks:
                self._forget_chunk(key)
            for pair in stale + list(drop_mentions):
                self._forget_mention(pair)
            for rkey in drop_relations:
                self._forget_relation(rkey)
            if drop_entities:
                gone = set(drop_entities)
                for pair in [(e, k) for e in gone for k in self._by_entity.get(e, ())]:
                    self._forget_mention(pair)
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
            keys = set(self._by_doc.get(doc_id, ()))
            touched: set[str] = set()
            for key in keys:
                for ent in list(self._by_chunk.get(key, ())):
                    self._forget_mention((ent, key))
                    touched.add(ent)
                self._forget_chunk(key)
            orphans = sorted(e for e in touched if not self._by_entity.get(e))
            self._delete_entities(orphans)
            return len(keys)

    def _forget_chunk(self, key: str) -> None:
        chunk = self._chunks.pop(key, None)
        if chunk is not None:
            self._by_doc.discard(chunk.doc_id, key)

    def _forget_mention(self, pair: tuple[str, str]) -> None:
        if self._mentions.pop(pair, None) is None:
            return
        entity, chunk = pair
        self._by_entity.discard(entity, chunk)
        self._by_chunk.discard(chunk, entity)

    def _forget_relation(self, key: tuple[str, str, str]) -> None:
        if self._relations.pop(key, None) is None:
            return
        self._rels_of.discard(key[0], key)
        self._rels_of.discard(key[2], key)

    def _delete_entities(self, ids: Sequence[str]) -> None:
        for eid in ids:
            for rkey in list(self._rels_of.get(eid, ())):
                self._forget_relation(rkey)
            self._rels_of.pop(eid)
            self._entities.pop(eid, None)
            for chunk in self._by_entity.pop(eid, ()):
                self._mentions.pop((eid, chunk), None)
                self._by_chunk.discard(chunk, eid)
            for t in name_tokens(eid):
                self._by_token.discard(t, eid)

    def write_communities(
        self, communities: Sequence[Community], *, report_vectors: npt.ArrayLike | None = None
    ) -> None:
        """Replace the stored communities (and their reports' vectors, one row each, if given).

        Kept vectors are saved with the store, so global search over a loaded store embeds
        no report again.

        Raises:
            ConfigError: if ``report_vectors`` is not one finite row per community.
        """
        vectors = None
        if report_vectors is not None:
            vectors = np.array(report_vectors, dtype=np.float32)
            if vectors.ndim != 2 or len(vectors) != len(communities):
                raise ConfigError(
                    f"report_vectors must hold one row per community ({len(communities)}), "
                    f"got shape {vectors.shape}"
                )
            if not np.isfinite(vectors).all():
                raise ConfigError("report_vectors hold NaN or infinite values")
        with self._lock:
            self._communities = list(communities)
            self._report_vectors = vectors

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

        A fuzzy match needs a token Jaccard or character ratio of at least ``fuzzy_cutoff``
        (:mod:`semrag.graph.names`: the same meaning as on every store).
        """
        with self._lock:
            ids = rank_matches(
                names,
                exists=lambda keys: {k for k in keys if k in self._entities},
                candidates=lambda tokens: set().union(*(self._by_token.get(t, ()) for t in tokens)),
                fuzzy=fuzzy,
                cutoff=self.fuzzy_cutoff,
                limit=limit,
            )
            return [self._entities[e] for e in ids]

    def lookup(
        self, names: Sequence[str], *, fuzzy_limit: int | Sequence[int] = 0
    ) -> list[list[str]]:
        """Each name's entity ids: its exact match alone, else its best fuzzy matches.

        ``fuzzy_limit``: one limit for every name or one per name (0: exact only); the
        meaning of :func:`semrag.graph.names.best_matches`, as on every store.
        """
        limits = per_name(names, fuzzy_limit)
        with self._lock:
            out = []
            for name, limit in zip(names, limits, strict=True):
                key = entity_key(name)
                exact = key in self._entities
                tokens = lookup_tokens(key) if key and limit and not exact else set()
                near = set().union(*(self._by_token.get(t, ()) for t in tokens))
                out.append(
                    best_matches(
                        key, exact=exact, candidates=near, cutoff=self.fuzzy_cutoff, limit=limit
                    )
                    if key
                    else []
                )
            return out

    def expand(
        self,
        entity_ids: Sequence[str],
        *,
        depth: int = 1,
        limit: int = 200,
        max_chunks: int | None = None,
    ) -> tuple[Subgraph, dict[str, list[ChunkRef]]]:
        """:meth:`neighbourhood` and :meth:`chunks_for` of its entities, at once.

        Entities mentioned in more than ``max_chunks`` chunks are left out of the second
        dict (see :meth:`GraphStore.expand <semrag.graph.GraphStore.expand>`).
        """
        with self._lock:
            sub = self.neighbourhood(entity_ids, depth=depth, limit=limit)
            ids = list(sub.hops)
            if max_chunks is not None:
                ids = [e for e in ids if len(self._by_entity.get(e, ())) <= max_chunks]
            return sub, self.chunks_for(ids)

    def neighbourhood(
        self, entity_ids: Sequence[str], *, depth: int = 1, limit: int = 200
    ) -> Subgraph:
        """Entities up to ``depth`` hops away (both directions) and the relations among them.

        Breadth-first; at most ``limit`` entities. Each hop takes the neighbours of the
        whole frontier in id order, as every store does (Neo4j's query sorts them so).
        """
        with self._lock:
            hops = {e: 0 for e in entity_ids if e in self._entities}
            frontier = list(hops)
            for hop in range(1, depth + 1):
                around: set[str] = set()
                for node in frontier:  # both ends of its relations (itself among them)
                    for source, _, target in self._rels_of.get(node, ()):
                        around.add(source)
                        around.add(target)
                nxt = []
                for n in sorted(around):
                    if n not in hops and len(hops) < limit:
                        hops[n] = hop
                        nxt.append(n)
                frontier = nxt
            inside = set(hops)
            keys = {
                k
                for e in hops
                for k in self._rels_of.get(e, ())
                if k[0] in inside and k[2] in inside
            }
            rels = [self._relations[k] for k in sorted(keys)]
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

    def to_networkx(self) -> Any:
        """The entities and relations as a new networkx ``MultiDiGraph``.

        Entities are nodes (with their records as ``entity``), relations are edges keyed
        by their type (with ``weight`` and ``evidence``). A copy: later writes do not
        reach it.
        """
        import networkx as nx

        with self._lock:
            graph = nx.MultiDiGraph()
            graph.add_nodes_from((eid, {"entity": e}) for eid, e in self._entities.items())
            graph.add_edges_from(
                (r.source, r.target, r.type, {"weight": r.weight, "evidence": r.evidence})
                for r in self._relations.values()
            )
            return graph

    def read_communities(self, level: int | None = None) -> list[Community]:
        """Stored communities (of one level)."""
        with self._lock:
            return [c for c in self._communities if level is None or c.level == level]

    def read_reports(self, level: int | None = None) -> tuple[list[Community], np.ndarray | None]:
        """Stored communities (of one level) and their reports' vectors (``None``: not kept)."""
        with self._lock:
            rows = [i for i, c in enumerate(self._communities) if level is None or c.level == level]
            vectors = self._report_vectors
            comms = [self._communities[i] for i in rows]
        return comms, None if vectors is None else vectors[rows]

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
        from semrag._version import __version__

        with self._lock:
            data = {
                "entities": [asdict(e) for e in self._entities.values()],
                "relations": [asdict(r) for r in self._relations.values()],
                "mentions": [
                    {"entity_id": entity, "count": count, **asdict(self._chunks[chunk])}
                    for (entity, chunk), count in self._mentions.items()
                ],
                "communities": [asdict(c) for c in self._communities],
            }
            report_vectors = self._report_vectors
        manifest = {
            "kind": "graph_store",
            "format_version": _FORMAT,
            "library_version": __version__,
        }
        with atomic_directory(directory, manifest) as draft:
            tmp = draft.folder
            for name, rows in data.items():
                (tmp / f"{name}.json").write_text(json.dumps(rows, ensure_ascii=False), "utf-8")
            if report_vectors is not None:
                np.save(tmp / "report_vectors.npy", report_vectors, allow_pickle=False)
        return Path(directory)

    @classmethod
    def load(cls, directory: str | Path) -> InMemoryGraphStore:
        """Load a store written by :meth:`save` (checksums verified)."""
        from semrag._version import __version__

        return load_saved(
            directory,
            cls._read,
            kind="graph_store",
            format_version=_FORMAT,
            library_version=__version__,
        )

    @classmethod
    def _read(cls, saved: Saved) -> InMemoryGraphStore:
        def rows(name: str) -> list[dict]:
            return json.loads((saved.folder / f"{name}.json").read_text("utf-8"))

        store = cls()
        store.upsert(
            [Entity(**r) for r in rows("entities")],
            [Relation(**r) for r in rows("relations")],
            [
                Mention(r["entity_id"], ChunkRef(r["doc_id"], r["start"], r["end"]), r["count"])
                for r in rows("mentions")
            ],
        )
        vectors = saved.folder / "report_vectors.npy"
        store.write_communities(
            [Community(**{**r, "entity_ids": tuple(r["entity_ids"])}) for r in rows("communities")],
            report_vectors=np.load(vectors, allow_pickle=False) if vectors.exists() else None,
        )
        return store

    def __repr__(self) -> str:
        c = self.counts()
        return f"InMemoryGraphStore(entities={c['entities']}, relations={c['relations']})"
