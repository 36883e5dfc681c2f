"""The knowledge graph's reads on Neo4j: entities, lookups, neighbourhoods, chunks, communities.

Each read is written once as steps (:data:`~semrag.neo4j._session.Steps`) that the sync and
the async method drive; :class:`~semrag.neo4j.Neo4jGraphStore` adds the schema and writes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag.errors import ConfigError
from semrag.graph.names import best_matches, lookup_tokens, per_name, rank_matches
from semrag.graph.types import (
    ChunkRef,
    Community,
    Entity,
    Relation,
    Subgraph,
    entity_key,
)
from semrag.neo4j._cypher import (
    ALL_ENTITIES,
    ALL_RELATIONS,
    CHUNKS_FOR,
    COUNTS,
    EXPAND,
    EXPAND_HOPS,
    GET,
    LOOKUP,
    LOOKUP_COLUMNS,
    LUCENE_SPECIAL,
    NEIGHBOURS,
    READ_COMMUNITIES,
    RELATIONS_AMONG,
    SEARCH_ENTITIES,
    TOKEN_CANDIDATES,
    as_floats,
    from_bytes,
)
from semrag.neo4j._session import Ask, Neo4jSession, Steps, read_pair

__all__ = ["CypherGraphReads"]


class CypherGraphReads:
    """The reads of :class:`~semrag.neo4j.Neo4jGraphStore`, over the store's session.

    Args:
        session: the connection the reads run on.
        fuzzy_cutoff: the least score of a fuzzy name match.
        fuzzy_candidates: the most entities sharing a token that one fuzzy lookup scores.
    """

    def __init__(
        self, session: Neo4jSession, *, fuzzy_cutoff: float, fuzzy_candidates: int
    ) -> None:
        self._session = session
        self.fuzzy_cutoff = fuzzy_cutoff
        self.fuzzy_candidates = fuzzy_candidates
        self._steps: dict[Callable[..., Any], Callable[..., Steps[Any]]] = {
            self.get_entities: self._get_entities_steps,
            self.lookup: self._lookup_steps,
            self.expand: self._expand_steps,
            self.neighbourhood: self._neighbourhood_steps,
            self.chunks_for: self._chunks_for_steps,
            self.search_entities: self._search_entities_steps,
        }

    def read_steps(
        self, method: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> tuple[Any, Steps[Any]] | None:
        """The session and the steps of the read ``method`` (:meth:`lookup`, ...).

        For :class:`semrag._steps.Together`: reads on one session run at once
        (:meth:`Neo4jSession.run_together`). ``None`` for a method that is not a read.
        """
        steps = self._steps.get(method)
        return None if steps is None else (self._session, steps(*args, **kwargs))

    # -- reads ------------------------------------------------------------------------------------
    @staticmethod
    def _entity(row: dict[str, Any]) -> Entity:
        return Entity(row["id"], row["name"] or "", row["type"] or "", row["description"] or "")

    @staticmethod
    def _relation(row: dict[str, Any]) -> Relation:
        return Relation(
            row["source"], row["target"], row["type"], row["evidence"] or "", float(row["weight"])
        )

    def _get_entities_steps(self, ids: Sequence[str]) -> Steps[list[Entity]]:
        """The entities with these ids (absent ids skipped), in the order given."""
        found = {r["id"]: self._entity(r) for r in (yield Ask(GET, {"ids": list(ids)}))}
        return [found[i] for i in ids if i in found]

    get_entities = read_pair(_get_entities_steps, lambda r: r._session)[0]

    def entities(self) -> list[Entity]:
        """Every entity (by id)."""
        return [self._entity(r) for r in self._session.read_rows(ALL_ENTITIES)]

    def relations(self) -> list[Relation]:
        """Every relation."""
        return [self._relation(r) for r in self._session.read_rows(ALL_RELATIONS)]

    def find_entities(
        self, names: Sequence[str], *, fuzzy: bool = True, limit: int = 10
    ) -> list[Entity]:
        """Exact key matches, then (``fuzzy``) entities sharing a name token, best first.

        The same meaning as the in-memory store (:mod:`semrag.graph.names`): the
        candidates come from the full-text index over each entity's name tokens
        (``semrag_entity_tokens``, whitespace analyser), at most
        :attr:`fuzzy_candidates` of them per name (the one bound the in-memory store does
        not have), and are scored in Python as there.
        """
        ids = rank_matches(
            names,
            exists=lambda keys: {e.id for e in self.get_entities(keys)},
            candidates=self._token_candidates,
            fuzzy=fuzzy,
            cutoff=self.fuzzy_cutoff,
            limit=limit,
        )
        return self.get_entities(ids)

    def _token_candidates(self, tokens: set[str]) -> list[str]:
        q = self._token_query(tokens)
        if not q:
            return []
        rows = self._session.read_rows(TOKEN_CANDIDATES, q=q, limit=int(self.fuzzy_candidates))
        return [r["id"] for r in rows]

    @staticmethod
    def _token_query(tokens: set[str]) -> str:
        """A Lucene query for any of these tokens, each searched as text ("" for none)."""
        escaped = (LUCENE_SPECIAL.sub(r"\\\1", t) for t in sorted(tokens))
        return " OR ".join('"' + t + '"' for t in escaped)

    def _lookup_steps(
        self, names: Sequence[str], *, fuzzy_limit: int | Sequence[int] = 0
    ) -> Steps[list[list[str]]]:
        """Each name's entity ids: its exact match alone, else its best fuzzy matches.

        One statement for all the names (their exact keys and their token candidates,
        at most :attr:`fuzzy_candidates` each), scored in Python as
        :func:`semrag.graph.names.best_matches` says, the meaning on every store.
        ``fuzzy_limit``: one limit for every name or one per name (0: exact only).
        """
        limits = per_name(names, fuzzy_limit)
        keys = [entity_key(n) for n in names]
        rows = [
            {"i": i, "key": key, "q": self._token_query(lookup_tokens(key)) if limit else ""}
            for i, (key, limit) in enumerate(zip(keys, limits, strict=True))
            if key
        ]
        out: list[list[str]] = [[] for _ in names]
        if not rows:
            return out
        params = {"rows": rows, "limit": int(self.fuzzy_candidates)}
        for r in (yield Ask(LOOKUP, params, LOOKUP_COLUMNS)):
            i = r["i"]
            out[i] = best_matches(
                keys[i],
                exact=r["exact"],
                candidates=r["candidates"],
                cutoff=self.fuzzy_cutoff,
                limit=limits[i],
            )
        return out

    lookup, alookup = read_pair(_lookup_steps, lambda r: r._session)

    def _expand_steps(
        self,
        entity_ids: Sequence[str],
        *,
        depth: int = 1,
        limit: int = 200,
        max_chunks: int | None = None,
    ) -> Steps[tuple[Subgraph, dict[str, list[ChunkRef]]]]:
        """:meth:`neighbourhood` and :meth:`chunks_for` of its entities, at once.

        One statement up to depth 2 (the hops, the relations among the entities and
        their chunks); deeper searches go hop by hop. Entities mentioned in more than
        ``max_chunks`` chunks are left out of the second dict (up to depth 2 their
        chunks are counted, not read).
        """
        if depth > EXPAND_HOPS:
            sub = yield from self._neighbourhood_steps(entity_ids, depth=depth, limit=limit)
            found = yield from self._chunks_for_steps(list(sub.hops))
            if max_chunks is not None:
                found = {e: r for e, r in found.items() if len(r) <= max_chunks}
            return sub, found
        ids = list(dict.fromkeys(entity_ids))
        cap = None if max_chunks is None else int(max_chunks)
        params = {"ids": ids, "limit": int(limit), "max_chunks": cap}
        row = (yield Ask(EXPAND[depth], params))[0]
        # lists, not maps: fewer keys to decode in a large neighbourhood
        entities = [
            Entity(i, name or "", kind or "", d or "") for i, name, kind, d in row["entities"]
        ]
        hops: dict[str, int] = {}
        at = 0
        for hop, size in enumerate(row["sizes"]):
            for e in entities[at : at + size]:
                hops[e.id] = hop
            at += size
        crowded = set(row["crowded"])
        refs: dict[str, list[ChunkRef]] = {e.id: [] for e in entities if e.id not in crowded}
        for entity, doc_id, start, end in row["refs"]:
            refs[entity].append(ChunkRef(doc_id, start, end))
        relations = [Relation(a, b, t, ev or "", float(w)) for a, b, t, ev, w in row["relations"]]
        return Subgraph(entities, relations, hops), refs

    expand, aexpand = read_pair(_expand_steps, lambda r: r._session)

    def _neighbourhood_steps(
        self, entity_ids: Sequence[str], *, depth: int = 1, limit: int = 200
    ) -> Steps[Subgraph]:
        """Entities up to ``depth`` hops away (both directions) and the relations among them.

        Breadth-first; at most ``limit`` entities.
        """
        got = yield from self._get_entities_steps(list(dict.fromkeys(entity_ids)))
        seeds = [e.id for e in got]
        hops = {e: 0 for e in seeds}
        frontier = list(seeds)
        for hop in range(1, depth + 1):
            if not frontier or len(hops) >= limit:
                break
            nxt = []
            # a row is a new id or one of the len(hops) seen: limit rows give the same result
            for row in (yield Ask(NEIGHBOURS, {"ids": frontier, "limit": int(limit)})):
                if row["id"] not in hops and len(hops) < limit:
                    hops[row["id"]] = hop
                    nxt.append(row["id"])
            frontier = nxt
        ids = list(hops)
        rels = [self._relation(r) for r in (yield Ask(RELATIONS_AMONG, {"ids": ids}))]
        return Subgraph((yield from self._get_entities_steps(ids)), rels, hops)

    neighbourhood = read_pair(_neighbourhood_steps, lambda r: r._session)[0]

    def _chunks_for_steps(self, entity_ids: Sequence[str]) -> Steps[dict[str, list[ChunkRef]]]:
        """Chunks mentioning each entity, in document order (one statement)."""
        found: dict[str, list[ChunkRef]] = {}
        for r in (yield Ask(CHUNKS_FOR, {"ids": list(dict.fromkeys(entity_ids))})):
            refs = found.setdefault(r["entity"], [])
            if r["doc_id"] is not None:
                refs.append(ChunkRef(r["doc_id"], r["start"], r["end"]))
        return {e: found[e] for e in entity_ids if e in found}

    chunks_for, achunks_for = read_pair(_chunks_for_steps, lambda r: r._session)

    def _search_entities_steps(
        self, vector: npt.ArrayLike, n: int, *, keep: int | None = None, most: int = 1024
    ) -> Steps[tuple[list[Entity], np.ndarray, list[Entity]] | None]:
        """The ``n`` entities whose name vectors are nearest ``vector``, with those vectors.

        One read of the vector index ``semrag_entity_vectors`` (cosine, approximate: the
        caller ranks the candidates exactly). ``keep``: only the best ``keep`` of the ``n``
        (by the index's own exact scores) travel, with their vectors. The vectors are those
        written with the entities (``entity_vectors=`` of ``update`` / ``upsert``;
        :class:`~semrag.graph.KnowledgeGraph` writes them when it has an embedder), so a
        process that serves queries embeds no entity name.

        Returns:
            ``(entities, vectors, bare)``: the candidates, their vectors, and every entity
            with no stored vector (written without one, or whose vector is still being
            written), for the caller to embed; ``None`` when more than ``most`` entities
            have none.
        """
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        params = {
            "n": int(n),
            "keep": int(n if keep is None else min(keep, n)),
            "most": int(most),
            "vector": as_floats(q),
        }
        row = (yield Ask(SEARCH_ENTITIES, params))[0]
        if row["unembedded"] > most:
            return None
        if row["entities"] > row["unembedded"] and row["dim"] is None:
            return None  # vectors whose index is being built
        if row["entities"] > row["unembedded"] and row["dim"] != len(q):
            raise ConfigError(
                f"query of dimension {len(q)}; the entity name vectors have {row['dim']}"
            )
        found = row["found"] or []
        ents = [Entity(i, name or "", kind or "", d or "") for i, name, kind, d, _ in found]
        vecs = from_bytes(b"".join(r[4] for r in found)).reshape(len(found), len(q))
        bare = [Entity(i, name or "", kind or "", d or "") for i, name, kind, d in row["bare"]]
        return ents, vecs, bare

    search_entities, asearch_entities = read_pair(_search_entities_steps, lambda r: r._session)

    def read_communities(self, level: int | None = None) -> list[Community]:
        """Stored communities (of one level)."""
        return self.read_reports(level)[0]

    def read_reports(self, level: int | None = None) -> tuple[list[Community], np.ndarray | None]:
        """Stored communities (of one level) and their reports' vectors, in one read.

        The vectors are those written with them (``report_vectors=`` of
        ``write_communities``); ``None`` when some community has none.
        """
        rows = self._session.read_rows(READ_COMMUNITIES, level=level)
        comms = [
            Community(
                r["id"],
                int(r["level"]),
                tuple(sorted(r["members"])),
                r["parent"],
                r["summary"] or "",
                r["title"] or "",
                float(r["rank"] or 0.0),
            )
            for r in rows
        ]
        if not rows or any(r["vec"] is None for r in rows):
            return comms, None
        return comms, from_bytes(b"".join(r["vec"] for r in rows)).reshape(len(rows), -1)

    def counts(self) -> dict[str, int]:
        """Numbers of entities, relations, chunks, mentions and communities."""
        return {k: int(v) for k, v in self._session.read_rows(COUNTS)[0].items()}
