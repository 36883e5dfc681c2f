"""Knowledge-graph records and the :class:`GraphStore` protocol.

Entities are keyed by a normalised form of their name (:func:`entity_key`), so the same
name written twice is one node. Relations are keyed by ``(source, type, target)``;
mentions link an entity to the chunk (:class:`ChunkRef`, a document span) it occurs in.
Every write is an idempotent upsert: writing the same records again changes nothing.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = [
    "ChunkRef",
    "Community",
    "Entity",
    "ChangeStamped",
    "EntityNameSearch",
    "GraphReads",
    "GraphStore",
    "GraphWrites",
    "ReportReads",
    "Mention",
    "Relation",
    "Subgraph",
    "entity_key",
]

_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = "\"'“”‘’.,;:!?()[]{}"


def entity_key(name: str) -> str:
    """The normalised key of an entity name.

    NFKC, case-folded, single spaces, no edge punctuation, no leading article.

    Examples:
        >>> entity_key("  The  Beatles. ")
        'beatles'
        >>> entity_key("x'}) DETACH DELETE n //")
        "x'}) detach delete n //"
    """
    text = _SPACE.sub(" ", unicodedata.normalize("NFKC", name)).strip().casefold()
    stripped = text.strip(_EDGE_PUNCT + " ")
    text = stripped or text
    for article in ("the ", "a ", "an "):
        if text.startswith(article) and len(text) > len(article):
            text = text[len(article) :]
            break
    return text


@dataclass(frozen=True, slots=True)
class ChunkRef:
    """A chunk of a document, by offsets. Invariant: ``0 <= start <= end``."""

    doc_id: str
    """The document."""
    start: int
    """First character, inclusive."""
    end: int
    """Last character, exclusive."""

    @property
    def key(self) -> str:
        """A stable string key: ``doc_id:start-end``.

        Interned: the stores and the ledger keep it in several indexes for every mention,
        and each call would otherwise make another copy of the same string.
        """
        return sys.intern(f"{self.doc_id}:{self.start}-{self.end}")


@dataclass(frozen=True, slots=True)
class Entity:
    """A node of the knowledge graph."""

    id: str
    """The key: :func:`entity_key` of the name."""
    name: str
    """The name as first written."""
    type: str = ""
    """Entity type (``PERSON``, ``PLACE`` ...; empty when unknown)."""
    description: str = ""
    """A short description (LLM extraction) or the first evidence sentence."""

    @classmethod
    def of(cls, name: str, type: str = "", description: str = "") -> Entity:
        """An entity keyed by its normalised name."""
        return cls(entity_key(name), name, type, description)


@dataclass(frozen=True, slots=True)
class Relation:
    """A directed, typed edge between two entities (keyed by source, type, target)."""

    source: str
    """Source entity id."""
    target: str
    """Target entity id."""
    type: str = "RELATED_TO"
    """Relation type; stored as data, never as a Cypher label."""
    evidence: str = ""
    """The sentence that states it."""
    weight: float = 1.0
    """Strength (e.g. co-occurrence count)."""


@dataclass(frozen=True, slots=True)
class Mention:
    """An entity occurring in a chunk."""

    entity_id: str
    """The entity."""
    chunk: ChunkRef
    """Where it occurs."""
    count: int = 1
    """How many times."""


@dataclass(slots=True)
class Subgraph:
    """Entities around some seeds, the relations among them, and each entity's hop distance."""

    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    hops: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Community:
    """A community of entities at one level of the hierarchy."""

    id: str
    """Unique id, e.g. ``"L0-3"``."""
    level: int
    """0 = the finest level."""
    entity_ids: tuple[str, ...]
    """Members."""
    parent: str | None = None
    """Id of the community one level up."""
    summary: str = ""
    """The community report (LLM, or extractive)."""
    title: str = ""
    """A short title."""
    rank: float = 0.0
    """Centrality / importance used by global search."""


@runtime_checkable
class GraphReads(Protocol):
    """What retrievers read of a knowledge graph's store (SKETCH, community search, PPR).

    Ten members. :meth:`expand` is a neighbourhood and its chunks in one round trip; both
    stores also keep ``neighbourhood`` alone. A store that reads over a network may add
    async twins of its query-time reads (:class:`AsyncGraphReads`, as
    :class:`~semrag.neo4j.Neo4jGraphStore` does); the async retrievers await them, and run
    a store's blocking read in a worker thread where it has none.
    """

    supports_fulltext: bool
    """Whether :meth:`find_entities` uses a real full-text index."""

    def get_entities(self, ids: Sequence[str]) -> list[Entity]:
        """The entities with these ids (absent ids are skipped)."""
        ...

    def entities(self) -> list[Entity]:
        """Every entity."""
        ...

    def relations(self) -> list[Relation]:
        """Every relation."""
        ...

    def find_entities(
        self, names: Sequence[str], *, fuzzy: bool = True, limit: int = 10
    ) -> list[Entity]:
        """Entities whose names match ``names`` (exact key first, then fuzzy)."""
        ...

    def lookup(
        self, names: Sequence[str], *, fuzzy_limit: int | Sequence[int] = 0
    ) -> list[list[str]]:
        """Each name's entity ids: its exact match alone, else its best fuzzy matches.

        ``fuzzy_limit`` is one limit for every name or one per name (0: exact only). One
        round trip on a server.
        """
        ...

    def expand(
        self,
        entity_ids: Sequence[str],
        *,
        depth: int = 1,
        limit: int = 200,
        max_chunks: int | None = None,
    ) -> tuple[Subgraph, dict[str, list[ChunkRef]]]:
        """The seeds' neighbourhood within ``depth`` hops and its entities' chunks, at once.

        ``max_chunks``: an entity mentioned in more chunks than this is left out of the
        second dict (its chunks are not read; every other entity of the neighbourhood
        has an entry), so a query near an entity mentioned everywhere costs no pass
        over its mentions.
        """
        ...

    def chunks_for(self, entity_ids: Sequence[str]) -> dict[str, list[ChunkRef]]:
        """Chunks mentioning each entity."""
        ...

    def read_communities(self, level: int | None = None) -> list[Community]:
        """Stored communities (of one level)."""
        ...

    def counts(self) -> Mapping[str, int]:
        """Numbers of entities, relations, chunks, mentions and communities."""
        ...


@runtime_checkable
class GraphWrites(Protocol):
    """How a knowledge graph writes its store (building, following an index, communities)."""

    def upsert(
        self,
        entities: Iterable[Entity] = (),
        relations: Iterable[Relation] = (),
        mentions: Iterable[Mention] = (),
    ) -> None:
        """Insert or update records (idempotent, batched)."""
        ...

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
        """Apply one change at once: the drops, then the upserts (replacing weights and counts).

        A dropped entity leaves its relations, mentions and communities; a dropped chunk
        leaves its mentions. How a knowledge graph follows its index.
        """
        ...

    def delete_document(self, doc_id: str) -> int:
        """Remove a document's chunks and mentions, and entities left with no mention."""
        ...

    def write_communities(self, communities: Sequence[Community]) -> None:
        """Replace the stored communities."""
        ...

    def clear(self) -> None:
        """Delete everything."""
        ...


@runtime_checkable
class GraphStore(GraphReads, GraphWrites, Protocol):
    """Where a knowledge graph lives: its reads and its writes.

    Implemented by :class:`~semrag.graph.InMemoryGraphStore` and
    :class:`~semrag.neo4j.Neo4jGraphStore`, which pass one contract test suite;
    :func:`semrag.testing.check_store` checks a store of your own.
    """


# -- optional capabilities of a store (checked with semrag._validation.offers) ---------------
@runtime_checkable
class ReportReads(Protocol):
    """A store that keeps the community reports' vectors beside them."""

    def read_reports(self, level: int | None = None) -> tuple[list[Community], Any]:
        """Stored communities (of one level) and their reports' vectors (``None``: none kept)."""
        ...

    def write_communities(
        self, communities: Sequence[Community], *, report_vectors: npt.ArrayLike | None = None
    ) -> None:
        """Replace the stored communities, with their reports' vectors (one row each)."""
        ...


@runtime_checkable
class EntityNameSearch(Protocol):
    """A store with a vector index over the entity names (a database's)."""

    def search_entities(
        self, vector: npt.ArrayLike, n: int, *, keep: int | None = None
    ) -> tuple[list[Entity], np.ndarray, list[Entity]] | None:
        """The ``n`` entities whose names are nearest ``vector``, with their vectors."""
        ...


@runtime_checkable
class AsyncGraphReads(Protocol):
    """A store whose reads await a database (the async twins the retrievers await)."""

    async def achunks_for(self, entity_ids: Sequence[str]) -> dict[str, list[ChunkRef]]:
        """Async twin of ``chunks_for``."""
        ...

    async def asearch_entities(
        self, vector: npt.ArrayLike, n: int, *, keep: int | None = None
    ) -> tuple[list[Entity], np.ndarray, list[Entity]] | None:
        """Async twin of :meth:`EntityNameSearch.search_entities`."""
        ...

    async def achange_stamp(self) -> str | None:
        """Async twin of :meth:`ChangeStamped.change_stamp`."""
        ...

    async def alookup(
        self, names: Sequence[str], *, fuzzy_limit: int | Sequence[int] = 0
    ) -> list[list[str]]:
        """Async twin of ``lookup``."""
        ...

    async def aexpand(
        self,
        entity_ids: Sequence[str],
        *,
        depth: int = 1,
        limit: int = 200,
        max_chunks: int | None = None,
    ) -> tuple[Subgraph, dict[str, list[ChunkRef]]]:
        """Async twin of ``expand``."""
        ...


@runtime_checkable
class ChangeStamped(Protocol):
    """A store that others may write: a stamp changes with every write of the graph."""

    def change_stamp(self) -> str | None:
        """A token that changes with every write (``None`` for no graph)."""
        ...
