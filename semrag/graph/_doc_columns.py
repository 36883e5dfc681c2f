"""One document's extraction in a :class:`~semrag.graph.ledger.GraphLedger`, as columns."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from semrag.graph.extract import Extraction
from semrag.graph.types import ChunkRef, Entity, Mention, Relation

__all__ = ["DocColumns", "csr_by_entity"]


def csr_by_entity(ends: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A CSR index of records by entity: ``at[start[e]:start[e + 1]]`` are ``e``'s records.

    ``ends`` is ``(records, k)``: the entities each record touches (a record is listed
    once under an entity it names twice); each entity's records are in record order.
    """
    records = np.repeat(np.arange(ends.shape[0], dtype=np.int32), ends.shape[1])
    flat = ends.ravel()
    if ends.shape[1] > 1:  # a relation from an entity to itself is one record of it
        keep = np.ones(flat.size, bool)
        keep[1 :: ends.shape[1]] = ends[:, 1] != ends[:, 0]
        records, flat = records[keep], flat[keep]
    order = np.lexsort((records, flat))
    start = np.searchsorted(flat[order], np.arange(n + 1)).astype(np.int32)
    return records[order], start


class DocColumns:
    """One document's extraction, held as columns rather than a Python object a record.

    The document's entities are numbered: the extraction's, then (in key order) the keys
    only a relation or a mention names, as ``Entity(key, key)``. Relations and mentions
    are columns over those numbers, each with a CSR index by entity, so the records that
    touch a key are a slice; evidence strings and types are shared, weights and counts
    are arrays, a mention's chunk is a number into the document's chunks.
    """

    __slots__ = (
        "chunks",
        "ents",
        "given",
        "m_at",
        "m_chunk",
        "m_count",
        "m_ent",
        "m_start",
        "pos",
        "r_at",
        "r_ends",
        "r_evidence",
        "r_start",
        "r_type",
        "r_weight",
        "seq",
    )

    def __init__(self, seq: int, extraction: Extraction) -> None:
        self.seq = seq
        self.ents = list(extraction.entities)
        self.given = len(self.ents)
        self.pos = {e.id: i for i, e in enumerate(self.ents)}  # the last record of a key
        rels, ments = extraction.relations, extraction.mentions
        named = {r.source for r in rels} | {r.target for r in rels} | {m.entity_id for m in ments}
        for key in sorted(named - self.pos.keys()):  # named only by a relation or mention
            self.pos[key] = len(self.ents)
            self.ents.append(Entity(key, key))
        pos = self.pos
        self.r_ends = np.array([(pos[r.source], pos[r.target]) for r in rels], np.int32).reshape(
            -1, 2
        )
        self.r_type = [r.type for r in rels]
        self.r_evidence = [r.evidence for r in rels]
        self.r_weight = np.array([r.weight for r in rels], np.float64)
        self.r_at, self.r_start = csr_by_entity(self.r_ends, len(self.ents))
        chunk_no: dict[ChunkRef, int] = {}
        for m in ments:
            chunk_no.setdefault(m.chunk, len(chunk_no))
        self.chunks = list(chunk_no)
        self.m_ent = np.array([pos[m.entity_id] for m in ments], np.int32)
        self.m_chunk = np.array([chunk_no[m.chunk] for m in ments], np.int32)
        self.m_count = np.array([m.count for m in ments], np.int64)
        self.m_at, self.m_start = csr_by_entity(self.m_ent.reshape(-1, 1), len(self.ents))

    def record(self, key: str) -> tuple[int, Entity]:
        """The position and record of ``key`` in this document."""
        p = self.pos[key]
        return p, self.ents[p]

    def relations_of(self, key: str) -> np.ndarray:
        """Indexes of the relations with ``key`` at an end, in order (a read-only view)."""
        p = self.pos.get(key)
        return self.r_at[:0] if p is None else self.r_at[self.r_start[p] : self.r_start[p + 1]]

    def relation(self, i: int) -> Relation:
        """Relation ``i`` as extracted."""
        a, b = self.r_ends[i].tolist()
        source, target = self.ents[a].id, self.ents[b].id
        return Relation(source, target, self.r_type[i], self.r_evidence[i], float(self.r_weight[i]))

    def mentions_of(self, key: str) -> np.ndarray:
        """Indexes of ``key``'s mentions, in order (a read-only view)."""
        p = self.pos.get(key)
        return self.m_at[:0] if p is None else self.m_at[self.m_start[p] : self.m_start[p + 1]]

    def mention_counts(self) -> Iterator[tuple[str, int]]:
        """``(entity key, count)`` of each mention."""
        for e, n in zip(self.m_ent.tolist(), self.m_count.tolist(), strict=True):
            yield self.ents[e].id, n

    def extraction(self) -> Extraction:
        """The extraction as it was recorded (entities, relations, mentions)."""
        chunks, ents = self.chunks, self.ents
        return Extraction(
            ents[: self.given],
            [self.relation(i) for i in range(len(self.r_type))],
            [
                Mention(ents[e].id, chunks[c], n)
                for e, c, n in zip(
                    self.m_ent.tolist(), self.m_chunk.tolist(), self.m_count.tolist(), strict=True
                )
            ],
        )
