"""What each document contributed to a knowledge graph, and the graph that follows from it.

A :class:`~semrag.graph.KnowledgeGraph` that follows an index keeps a :class:`GraphLedger`:
per document, the extraction of its chunks (as columns with an index by entity,
:class:`~semrag.graph._doc_columns.DocColumns`). The stored graph is a function of the ledger
(the documents in index order), so a change is applied by re-deriving only the
entities it touches and writing the difference:

* **resolution**: two names are one entity when their vectors' cosine similarity is at
  least the threshold; entities are the connected components of that relation. A new
  name is compared with the names already there through the name index (an exact range
  search of the changed names against the rest, never all against all); a removed name
  can split its component, which is re-derived;
* **the entity** of a component is keyed by its most mentioned name (ties: the longer
  name, then the smaller key). Its name is that key's spelling in the earliest document
  (index order); its type and description are the first non-empty ones among the
  component's records, documents in index order;
* **relations** between two entities add up the weights of every document's relations
  that map to them; the evidence is the first non-empty one in index order. A delete
  subtracts exactly what the document contributed, and a relation whose evidence is gone
  goes;
* **mentions** add up the counts of the component's names in each chunk.

A fresh build is the same code applied to one change that adds every document, so after
any sequence of changes the store holds what a fresh build over the surviving documents
would write.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semrag.embeddings import Embedder
from semrag.errors import StoreError
from semrag.graph._doc_columns import DocColumns
from semrag.graph._name_index import NameIndex
from semrag.graph._small_sets import SmallSets
from semrag.graph.extract import Extraction
from semrag.graph.types import ChunkRef, Entity, Mention, Relation

__all__ = ["GraphDiff", "GraphLedger"]

RelKey = tuple[str, str, str]
MentionKey = tuple[str, str]


@dataclass(slots=True)
class GraphDiff:
    """What a store must drop and write to follow one change (see ``GraphStore.update``)."""

    drop_entities: list[str] = field(default_factory=list)
    drop_relations: list[RelKey] = field(default_factory=list)
    drop_mentions: list[MentionKey] = field(default_factory=list)
    drop_chunks: list[str] = field(default_factory=list)
    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)

    def as_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``GraphStore.update``."""
        return {
            "drop_entities": self.drop_entities,
            "drop_relations": self.drop_relations,
            "drop_mentions": self.drop_mentions,
            "drop_chunks": self.drop_chunks,
            "entities": self.entities,
            "relations": self.relations,
            "mentions": self.mentions,
        }


class GraphLedger:
    """Per-document extractions and the entities, relations and mentions derived from them.

    Args:
        embedder: embeds entity names for resolution (``None`` with ``resolve=False``).
        resolve: merge names whose vectors are at least ``threshold`` similar.
        threshold: cosine similarity needed to merge two names.
        name_search: ``"auto"``, ``"exact"`` or ``"hnsw"`` (see
            :class:`~semrag.graph._name_index.NameIndex`).
    """

    def __init__(
        self,
        embedder: Embedder | None,
        *,
        resolve: bool,
        threshold: float,
        name_search: str = "auto",
    ) -> None:
        self.embedder = embedder
        self.resolve = resolve and embedder is not None
        self.threshold = threshold
        self.name_search = name_search
        self._docs: dict[str, DocColumns] = {}
        self._seq = 0
        self._name_docs: SmallSets[str, str] = SmallSets()  # name key -> its documents
        self._mention_total: dict[str, int] = {}
        self._comp_of: dict[str, str] = {}
        self._members: dict[str, tuple[str, ...]] = {}
        self._names = NameIndex(mode=name_search)
        self._embedded: dict[str, str] = {}  # key -> the spelling its vector was made from
        self._saved: dict[str, tuple[str, np.ndarray]] = {}  # vectors read from a save
        # The keys of the derived relations and mentions, by entity (the records themselves
        # live in the store; repair() derives them again).
        self._rels_of: SmallSets[str, RelKey] = SmallSets()
        self._ments_of: SmallSets[str, MentionKey] = SmallSets()
        self.fingerprints: dict[str, str] = {}
        """A fingerprint of each document's version (see ``KnowledgeGraph``)."""

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._docs

    @property
    def doc_ids(self) -> list[str]:
        """The documents recorded, in index order."""
        return list(self._docs)

    # -- persistence ------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """Every document's extraction and fingerprint (JSON-ready; vectors are not kept)."""
        return {
            "resolve": self.resolve,
            "threshold": self.threshold,
            "name_search": self.name_search,
            "seq": self._seq,
            "documents": [
                self._doc_json(doc_id, d.seq, self.fingerprints.get(doc_id, ""), d.extraction())
                for doc_id, d in self._docs.items()
            ],
        }

    @staticmethod
    def _doc_json(doc_id: str, seq: int, print_: str, extraction: Extraction) -> dict[str, Any]:
        return {
            "id": doc_id,
            "seq": seq,
            "fingerprint": print_,
            "entities": [[e.id, e.name, e.type, e.description] for e in extraction.entities],
            "relations": [
                [r.source, r.target, r.type, r.evidence, r.weight] for r in extraction.relations
            ],
            "mentions": [
                [m.entity_id, m.chunk.doc_id, m.chunk.start, m.chunk.end, m.count]
                for m in extraction.mentions
            ],
        }

    @classmethod
    def from_json(
        cls,
        data: dict[str, Any],
        embedder: Embedder | None,
        names: tuple[list[list[str]], np.ndarray] | None = None,
    ) -> GraphLedger:
        """Rebuild a ledger written by :meth:`to_json`.

        ``names`` are the name vectors :meth:`name_vectors` gave when it was saved; a
        name without one is embedded again.

        Raises:
            StoreError: on a name search or name vectors that do not fit.
            KeyError, TypeError, ValueError: on a malformed record (callers report a
                :class:`~semrag.errors.StoreError`).
        """
        name_search = str(data.get("name_search", "exact"))  # older ledgers were exact
        if name_search not in ("auto", "exact", "hnsw"):
            raise StoreError(f"name_search {name_search!r} is not 'auto', 'exact' or 'hnsw'")
        ledger = cls(
            embedder,
            resolve=bool(data["resolve"]),
            threshold=float(data["threshold"]),
            name_search=name_search,
        )
        if names is not None:
            spelled, vectors = names
            if len(spelled) != len(vectors):
                raise StoreError(f"{len(spelled)} names but {len(vectors)} name vectors")
            ledger._saved = {
                str(k): (str(n), v) for (k, n), v in zip(spelled, vectors, strict=True)
            }
        added = []
        for r in data["documents"]:
            extraction = Extraction(
                [Entity(*map(str, e)) for e in r["entities"]],
                [
                    Relation(str(a), str(b), str(t), str(ev), float(w))
                    for a, b, t, ev, w in r["relations"]
                ],
                [
                    Mention(str(e), ChunkRef(str(d), int(a), int(b)), int(n))
                    for e, d, a, b, n in r["mentions"]
                ],
            )
            added.append((str(r["id"]), extraction))
            ledger.fingerprints[str(r["id"])] = str(r["fingerprint"])
        ledger.apply(added, [])
        ledger._saved = {}
        for r in data["documents"]:  # keep the saved order numbers
            ledger._docs[str(r["id"])].seq = int(r["seq"])
        ledger._seq = int(data["seq"])
        return ledger

    # -- applying a change ------------------------------------------------------------------
    def apply(
        self, added: Sequence[tuple[str, Extraction | DocColumns]], removed: Sequence[str]
    ) -> GraphDiff:
        """Record the change and return what the store must do to follow it.

        ``added`` gives each added document's extraction, or its columns made ahead
        (:class:`DocColumns`; a large change then never holds its records as objects).
        """
        touched: set[str] = set()
        drop_chunks: set[str] = set()
        for doc_id in removed:
            doc = self._docs.pop(doc_id, None)
            self.fingerprints.pop(doc_id, None)
            if doc is None:
                continue
            drop_chunks.update(c.key for c in doc.chunks)
            for key in doc.pos:
                touched.add(key)
                self._name_docs.discard(key, doc_id)
            for key, n in doc.mention_counts():
                self._mention_total[key] -= n
        for doc_id, extraction in added:
            self._seq += 1
            if isinstance(extraction, DocColumns):
                doc = extraction
                doc.seq = self._seq
            else:
                doc = DocColumns(self._seq, extraction)
            self._docs[doc_id] = doc
            for key in doc.pos:
                touched.add(key)
                self._name_docs.add(key, doc_id)
            for key, n in doc.mention_counts():
                self._mention_total[key] = self._mention_total.get(key, 0) + n
        gone = [k for k in touched if not self._name_docs.get(k)]
        for key in gone:
            self._name_docs.pop(key)
            self._mention_total.pop(key, None)
            self._names.remove(key)
            self._embedded.pop(key, None)
        self._embed_new([k for k in touched if k in self._name_docs])
        diff = self._rederive(touched)
        diff.drop_chunks = sorted(drop_chunks)
        return diff

    def _embed_new(self, keys: list[str]) -> None:
        embedder = self.embedder
        if not self.resolve or embedder is None:
            return
        new = sorted(k for k in keys if k not in self._names)
        if not new:
            return
        names = [self._spelling(k).name for k in new]
        vectors = np.empty((len(new), embedder.dim))
        todo = []
        for i, (key, name) in enumerate(zip(new, names, strict=True)):
            saved = self._saved.get(key)
            if saved is not None and saved[0] == name:
                vectors[i] = saved[1]  # read from a save (a wrong dimension is a ValueError)
            else:
                todo.append(i)
        if todo:
            made = np.asarray(embedder.embed([names[i] for i in todo]), dtype=np.float64)
            norms = np.linalg.norm(made, axis=1, keepdims=True)
            vectors[todo] = np.divide(made, norms, out=np.zeros_like(made), where=norms > 0)
        self._names.add(new, vectors)
        self._embedded.update(zip(new, names, strict=True))

    def name_vector(self, key: str, name: str) -> np.ndarray | None:
        """The unit vector resolution made for ``key`` if it was made from ``name``."""
        if self._embedded.get(key) != name:
            return None
        return self._names.vector(key)

    def held_bytes(self) -> tuple[int, int]:
        """Bytes of resolution's name vectors, and of their HNSW index (see NameIndex)."""
        return self._names.held_bytes()

    def name_vectors(self) -> tuple[list[list[str]], np.ndarray]:
        """``[key, spelling]`` of every name with a vector, and the vectors (for a save)."""
        keys, vectors = self._names.rows()
        return [[k, self._embedded[k]] for k in keys], vectors

    def everything(self) -> GraphDiff:
        """The whole derived graph as writes (to rewrite a store from scratch).

        Derived again from every component (the same derivation a change runs), so the
        ledger keeps only the derived records' keys.
        """
        relations = self._relations(self._members)
        mentions = self._mentions(self._members)
        return GraphDiff(
            entities=[self._entity(c, m) for c, m in sorted(self._members.items())],
            relations=[relations[k] for k in sorted(relations)],
            mentions=[mentions[k] for k in sorted(mentions)],
        )

    # -- deriving ---------------------------------------------------------------------------
    def _records(self, key: str) -> list[tuple[int, int, Entity]]:
        """``(seq, position, record)`` of every document's record of ``key``."""
        return sorted(
            (self._docs[d].seq, *self._docs[d].record(key)) for d in self._name_docs.get(key, ())
        )

    def _spelling(self, key: str) -> Entity:
        return self._records(key)[0][2]

    def _components(self, touched: set[str]) -> tuple[set[str], dict[str, set[str]]]:
        """Old entity keys the change touches, and the new components around it."""
        seeds = set(touched)
        old = {self._comp_of[k] for k in touched if k in self._comp_of}
        for canon in old:
            seeds.update(self._members[canon])
        todo = [k for k in sorted(seeds) if k in self._name_docs]
        seen = set(todo)
        edges: dict[str, list[str]] = {}
        while todo:  # breadth first, one range search per round
            found = self._names.within(todo, self.threshold) if self.resolve else {}
            frontier, todo = todo, []
            for key in frontier:
                edges[key] = found.get(key, [])
                for other in edges[key]:
                    if other not in seen:
                        joined = self._comp_of.get(other)
                        if joined is not None and joined not in old:
                            old.add(joined)
                            for m in self._members[joined]:
                                if m not in seen and m in self._name_docs:
                                    seen.add(m)
                                    todo.append(m)
                        if other not in seen:
                            seen.add(other)
                            todo.append(other)
        parent = {k: k for k in seen}

        def find(k: str) -> str:
            while parent[k] != k:
                parent[k] = parent[parent[k]]
                k = parent[k]
            return k

        for key, others in edges.items():
            for other in others:
                a, b = find(key), find(other)
                if a != b:
                    parent[max(a, b)] = min(a, b)
        groups: dict[str, set[str]] = {}
        for k in seen:
            groups.setdefault(find(k), set()).add(k)
        named = {self._canonical(members): members for members in groups.values()}
        return old, named

    def _canonical(self, members: set[str]) -> str:
        return min(  # most mentioned, then the longer name, then the smaller key
            members,
            key=lambda k: (-self._mention_total.get(k, 0), -len(self._spelling(k).name), k),
        )

    def _rederive(self, touched: set[str]) -> GraphDiff:
        old, named = self._components(touched)
        for canon in old:
            for k in self._members.pop(canon, ()):
                if self._comp_of.get(k) == canon:
                    del self._comp_of[k]
        for canon, members in named.items():
            self._members[canon] = tuple(members)
            for k in members:
                self._comp_of[k] = canon
        affected = old | set(named)
        old_rels = {key for c in old for key in self._rels_of.get(c, ())}
        old_ments = {key for c in old for key in self._ments_of.get(c, ())}
        entities = [self._entity(c, m) for c, m in sorted(named.items())]
        relations = self._relations(named)
        mentions = self._mentions(named)
        diff = GraphDiff(
            drop_entities=sorted(old - set(named)),
            drop_relations=sorted(old_rels - set(relations)),
            drop_mentions=sorted(old_ments - set(mentions)),
            entities=entities,
            relations=[relations[k] for k in sorted(relations)],
            mentions=[mentions[k] for k in sorted(mentions)],
        )
        for key in diff.drop_relations:  # a key kept stays where it is (add is idempotent)
            self._rels_of.discard(key[0], key)
            self._rels_of.discard(key[2], key)
        for key in relations:
            self._rels_of.add(key[0], key)
            self._rels_of.add(key[2], key)
        for pair in diff.drop_mentions:
            self._ments_of.discard(pair[0], pair)
        for pair in mentions:
            self._ments_of.add(pair[0], pair)
        for c in affected - set(named):
            self._rels_of.pop(c)
            self._ments_of.pop(c)
        return diff

    def _entity(self, canon: str, members: Collection[str]) -> Entity:
        records = sorted(r for k in members for r in self._records(k))
        kind = next((e.type for _, _, e in records if e.type), "")
        description = next((e.description for _, _, e in records if e.description), "")
        return Entity(canon, self._spelling(canon).name, kind, description)

    def _relations(self, named: Mapping[str, Collection[str]]) -> dict[RelKey, Relation]:
        found: dict[str, list[np.ndarray]] = {}  # document -> its relations touching members
        for members in named.values():
            for k in members:
                for d in self._name_docs.get(k, ()):
                    found.setdefault(d, []).append(self._docs[d].relations_of(k))
        # Weights add up and the evidence is the first non-empty one, documents in index
        # order and each document's relations in order: the same sums as a sorted list's.
        totals: dict[RelKey, list[Any]] = {}  # key -> [weight, evidence]
        comp_of = self._comp_of
        for d in sorted(found, key=lambda d: self._docs[d].seq):
            doc = self._docs[d]
            rows = np.unique(np.concatenate(found.pop(d)))
            ends, weights = doc.r_ends[rows].tolist(), doc.r_weight[rows].tolist()
            for i, (a, b), w in zip(rows.tolist(), ends, weights, strict=True):
                ca, cb = comp_of[doc.ents[a].id], comp_of[doc.ents[b].id]
                if ca != cb:
                    key = (ca, doc.r_type[i], cb)
                    got = totals.get(key)
                    if got is None:
                        totals[key] = [w, doc.r_evidence[i]]
                    else:
                        got[0] += w
                        got[1] = got[1] or doc.r_evidence[i]
        return {
            key: Relation(key[0], key[2], key[1], ev, float(w)) for key, (w, ev) in totals.items()
        }

    def _mentions(self, named: Mapping[str, Collection[str]]) -> dict[MentionKey, Mention]:
        counts: dict[MentionKey, int] = {}
        chunks: dict[str, ChunkRef] = {}
        for canon, members in named.items():
            for k in members:
                for d in self._name_docs.get(k, ()):
                    doc = self._docs[d]
                    rows = doc.mentions_of(k)
                    for c, n in zip(
                        doc.m_chunk[rows].tolist(), doc.m_count[rows].tolist(), strict=True
                    ):
                        chunk = doc.chunks[c]
                        chunks[chunk.key] = chunk
                        key = (canon, chunk.key)
                        counts[key] = counts.get(key, 0) + n
        return {key: Mention(key[0], chunks[key[1]], n) for key, n in counts.items()}
