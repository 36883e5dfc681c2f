"""The corpus of an index in Neo4j: written by the index's changes, read with no state in process.

* :class:`Neo4jIndexStore` follows a :class:`~semrag.SemanticIndex` (the writer process) and
  writes each of its :class:`~semrag.index.change.Change` to Neo4j in **one transaction**
  (batched ``UNWIND``; above ``max_transaction_rows`` rows, in steps marked ``writing``).
* :class:`Neo4jIndex` serves queries from that database alone (native vector index,
  full-text index, the similarity graph node by node), so any number of processes read one
  database with IAR, every SSG algorithm, SKETCH, community search and SPC unchanged.

The schema, crash safety (a store that is behind writes the difference at its next change or
:meth:`Neo4jIndexStore.sync`) and how Lucene's BM25 differs from semrag's are in
``docs/neo4j-operations.md``. ``embedding`` is the float list the vector indexes read;
``vec`` is the same vector as float32 bytes, which reads fetch (exact, cheaper to decode).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from semrag.errors import ConfigError, StoreError
from semrag.fingerprint import EmbedderFingerprint
from semrag.index.change import Change, IndexedDocument
from semrag.index.parts.passages import PassagePhrases
from semrag.index.parts.ssg import SemanticSimilarityGraph

if TYPE_CHECKING:
    from semrag.index.index_reader import IndexReader
    from semrag.index.semantic_index import SemanticIndex
from semrag.neo4j._cypher import as_floats
from semrag.neo4j._index_cypher import (
    ALL_EDGES_DROP,
    CLEAR,
    COUNTS,
    CREATE_BRIDGES,
    CREATE_EDGES,
    CREATE_MENTIONS,
    DELETE_DOCS,
    DROP_BRIDGES,
    DROP_MENTIONS,
    DROP_OUT_EDGES,
    DROP_VECTOR_INDEXES,
    DUMP_BRIDGES,
    DUMP_CHUNKS,
    DUMP_EDGES,
    DUMP_MENTIONS,
    DUMP_PIECES,
    DUMP_WINDOWS,
    FINGERPRINTS,
    MARK_WRITING,
    SCHEMA,
    STATE,
    UPSERT_CHUNKS,
    UPSERT_DOCS,
    UPSERT_PIECES,
    UPSERT_SENTENCES,
    UPSERT_WINDOWS,
    VECTOR_DIMS,
    VECTOR_INDEXES,
    WRITE_STATE,
    part_key,
)
from semrag.neo4j._index_rows import (
    Edges,
    Gone,
    Statement,
    by_document,
    changed_edge_rows,
    changed_sources,
    document_rows,
    run_statements,
)
from semrag.neo4j._index_state import digest_of_pca, entry_fingerprint, read_state
from semrag.neo4j._text_index import ensure_text_index
from semrag.neo4j.graph_store import Neo4jGraphStore


class Neo4jIndexStore:
    """Keeps an index's corpus, vectors and similarity graph in Neo4j, change by change.

    Attach it to the index that writes (``store.attach(index)``, or
    ``Neo4jIndexStore.for_index(index, graph_store)``); every later change of the index is
    written in one transaction, after the index has published it. A database that already
    holds this index (same version and edges) is trusted as it is; any other is brought
    level by writing the difference. Serve queries with :class:`Neo4jIndex`.

    Args:
        store: the :class:`~semrag.neo4j.Neo4jGraphStore` whose connection (and database)
            to use; the knowledge graph may live beside the corpus in the same database.
        name: the name of this index's state node (one database holds one corpus).
        max_transaction_rows: a change of more rows than this (a first build of a large
            corpus, say) is written as a sequence of transactions (whole documents each,
            then the edges in batches, the version last) rather than one; a failure
            halfway is repaired as any failed write is (the next change, or :meth:`sync`,
            writes the difference and rewrites the edges).
        passages: give the index its PPR passage phrases when it attaches
            (``index.enable("passages")``), so the database serves the default
            ``GraphRetriever()`` and IAR's PPR channel; ``False`` writes only the parts the
            index holds.

    Raises:
        ConfigError: if the database holds vectors of another dimension.
        StoreUnavailableError: if the server cannot be reached.
    """

    def __init__(
        self,
        store: Neo4jGraphStore,
        *,
        name: str = STATE,
        max_transaction_rows: int = 50_000,
        passages: bool = True,
    ) -> None:
        if max_transaction_rows < 1:
            raise ConfigError(f"max_transaction_rows must be >= 1, got {max_transaction_rows}")
        self.store = store
        self._session = store.session  # what every statement runs on
        self.name = name
        self.max_transaction_rows = max_transaction_rows
        self.passages = bool(passages)
        self._index: SemanticIndex | None = None
        self._edges: Edges | None = None
        self._version: int | None = None
        self._behind, self._next_seq = False, 0
        self._passages_written: bool | None = None  # the phrases' setting last written
        self._lock = threading.Lock()
        for statement in SCHEMA:
            self._session.write_rows(statement)
        ensure_text_index(self._session)

    # -- attaching ------------------------------------------------------------------------------
    @classmethod
    def for_index(
        cls, index: SemanticIndex, store: Neo4jGraphStore, **kwargs: Any
    ) -> Neo4jIndexStore:
        """A store attached to ``index`` (see :meth:`attach`)."""
        out = cls(store, **kwargs)
        out.attach(index)
        return out

    def attach(self, index: SemanticIndex) -> None:
        """Follow ``index``: bring the database level with it now, then write every change.

        With ``passages`` (the default), an index without its PPR passage phrases is given
        them first (found in its documents and their names embedded, once).

        Raises:
            ConfigError: if the database holds vectors of another dimension, or the store
                already follows another index.
        """
        if self._index is not None and self._index is not index:
            raise ConfigError("this Neo4jIndexStore already follows another index")
        dim = int(index.embedder.dim)
        have = [self._state().get("dim"), *(r["dim"] for r in self._session.read_rows(VECTOR_DIMS))]
        for d in have:
            if d is not None and int(d) != dim:
                raise ConfigError(
                    f"the database holds {d}-dimensional vectors; the index has {dim}: "
                    "use a database of its own for this index (database=...), or clear() it"
                )
        for statement in VECTOR_INDEXES:
            self._session.write_rows(statement, dim=dim)
        self._session.read_rows("CALL db.awaitIndexes(300)")
        if self.passages and "passages" not in index.parts:
            index.enable("passages")  # what the default retriever of a serving process reads
        self._index = index
        state = self._state()
        self._next_seq = int(state.get("next_seq") or 0)
        self._passages_written = state.get("passages")
        index.follow(self, replay=self._catch_up)

    def _catch_up(self, documents: list[IndexedDocument], version: int) -> Change:
        """The change that brings the database level with ``documents`` (at ``version``)."""
        state = self._state()
        edges = self._graph_edges()
        same = state.get("version") == version and state.get("edges") == edges.digest()
        same_parts = (
            state.get("pieces") == self._pieces_split()
            and state.get("passages") == self._passages_titles()
            and self._same_model(state)
        )
        if same and same_parts:
            self._edges, self._version = edges, version
            return Change(version)  # the database holds this index already
        self._edges, self._version = None, None  # unknown: every edge is rewritten
        return self._difference(documents, version, everything=not same_parts)

    def _same_model(self, state: dict[str, Any]) -> bool:
        """Whether the stored vectors come from the model of the index's vectors.

        A database written with another model (or before fingerprints were stored) is
        written again whole: its texts may be current, its vectors are not.
        """
        stored = state.get("fingerprint")
        if not stored:
            return False
        return EmbedderFingerprint.from_dict(json.loads(stored)).matches(self._followed.fingerprint)

    def _difference(
        self, documents: Sequence[IndexedDocument], version: int, *, everything: bool = False
    ) -> Change:
        """The change that makes the database hold ``documents``, in their order.

        A stored document is kept if it is the same version (fingerprint) and comes after
        the documents kept before it; from the first one that is not, every document is
        written again (added documents go to the end), so the database's order is the
        index's. ``everything``: write every document again (the pieces kept changed).
        """
        rows = self._session.read_rows(FINGERPRINTS)
        have = {r["id"]: (r["fingerprint"], r["seq"]) for r in rows}
        added: list[IndexedDocument] = []
        last = -1
        for d in documents:
            fingerprint, seq = have.get(d.id, (None, None))
            stale = fingerprint != entry_fingerprint(d) or seq is None or seq <= last
            if added or everything or stale:
                added.append(d)
            else:
                last = seq
        again = {d.id for d in added}
        keep = {d.id for d in documents}
        removed = tuple(Gone(i) for i in have if i not in keep or i in again)
        return Change(version, added=tuple(added), removed=removed)  # type: ignore[arg-type]

    def sync(self) -> Change:
        """Bring the database level with the attached index now (after a failed write).

        Returns:
            The change that was written (empty if the database was level).

        Raises:
            ConfigError: if the store is not attached.
        """
        if self._index is None:
            raise ConfigError("attach the store to an index first (store.attach(index))")
        return self._level()

    @property
    def _followed(self) -> IndexReader:
        """What this store reads of the index it follows.

        Raises:
            ConfigError: if the store is not attached.
        """
        if self._index is None:
            raise ConfigError("attach the store to an index first (store.attach(index))")
        return self._index.reader()

    def _level(self, *, everything: bool = False) -> Change:
        """Write the difference with the index's published documents (or all of them)."""
        with self._followed.read():
            docs = [self._followed.indexed(d) for d in self._followed.doc_ids]
            version = self._followed.version
        with self._lock:
            change = self._repair(docs, version, everything=everything)
            rows = document_rows(change.added, windows=self._followed.ssg_config is not None)
            self._write(change, rows)
            return change

    def part_enabled(self, part: str) -> None:
        """Write a part the index has just built (``index.enable(part)`` calls this).

        The passage phrases are written for every document; pieces or a similarity graph
        change what every document's rows hold, so every document is written again.
        """
        if self._index is not None:
            self._level(everything=part != "passages")

    # -- a change -------------------------------------------------------------------------------
    def stage(self, change: Change) -> Callable[[], None]:
        """Check and convert ``change``'s rows now; the returned function writes them.

        The index stages its followers before it publishes a change, so rows the database
        cannot take (metadata that is not JSON) fail the change while nothing has changed.
        The write itself runs after the index publishes (it needs the published similarity
        graph): one transaction. A store that missed a change (its last write failed)
        writes the difference with the index instead, so the database ends level either way.

        Raises:
            ConfigError: for metadata that is not JSON.
        """
        rows = document_rows(change.added, windows=self._followed.ssg_config is not None)
        return lambda: self._apply(change, rows)

    def apply(self, change: Change) -> None:
        """Write ``change`` in one transaction (:meth:`stage` and its write in a row).

        Raises:
            StoreUnavailableError: if the server cannot be reached (the database keeps the
                version before; the next change or :meth:`sync` repairs it).
        """
        self.stage(change)()

    def _apply(self, change: Change, rows: tuple[list[dict[str, Any]], ...]) -> None:
        with self._lock:
            if not change and self._version == change.version and not self._behind:
                return  # the catch-up of a database that holds this index already
            if self._behind or (self._version is not None and self._version != change.version - 1):
                docs = [self._followed.indexed(d) for d in self._followed.doc_ids]
                change = self._repair(docs, change.version)
                rows = document_rows(change.added, windows=self._followed.ssg_config is not None)
            self._write(change, rows)

    def _repair(
        self, documents: Sequence[IndexedDocument], version: int, *, everything: bool = False
    ) -> Change:
        """The difference with ``documents``, after the edges written last are checked.

        A write that failed may have committed all the same (the reply was lost); the
        state's digest tells, and edges not known for sure are all rewritten.
        """
        if self._edges is not None and self._state().get("edges") != self._edges.digest():
            self._edges = None
        return self._difference(documents, version, everything=everything)

    def _write(self, change: Change, rows: tuple[list[dict[str, Any]], ...]) -> None:
        graph = self._graph()
        new = Edges(graph)
        gone = set(change.removed_ids) | set(change.added_ids)
        added_ids = set(change.added_ids)
        if self._edges is None:  # nothing known of the database's edges: rewrite them all
            self._session.run_batched(ALL_EDGES_DROP)
            sources = {(a, b) for a, b in np.unique(new.rows[:, :2], axis=0).tolist()}
            bridge_docs = set(new.doc_ids)
            drop_sources: list[str] = []
        else:
            old_rows, sources = self._edges.renumbered(new.doc_ids, gone)
            sources |= changed_sources(old_rows, new.rows, new.doc_ids, added_ids)
            drop_sources = [
                part_key(new.doc_ids[d], n) for d, n in sources if new.doc_ids[d] not in added_ids
            ]
            numbers = [i for i, d in enumerate(new.doc_ids) if d in added_ids]
            of_added = new.rows[np.isin(new.rows[:, 0], numbers), :2]
            sources |= {(d, n) for d, n in np.unique(of_added, axis=0).tolist()}
            old_bridges = self._edges.bridges
            bridge_docs = {
                d
                for d in new.doc_ids
                if d in added_ids
                or new.bridges.get(d) != old_bridges.get(d)
                or any(t in gone for t, _ in old_bridges.get(d, ()))  # left with its target
            }
        edge_rows = changed_edge_rows(new, sources)
        bridge_rows = [
            {"src": d, "dst": t, "score": s} for d in sorted(bridge_docs) for t, s in new.bridges[d]
        ]
        docs, chunks, sentences, windows = rows
        pieces = self._piece_rows(change.added_ids)
        titles = self._passages_titles()
        # phrases of the added documents; of every one when the part is new since the last write
        again = (
            []
            if titles == self._passages_written
            else [d for d in self._followed.doc_ids if d not in gone]
        )
        mentions = self._mention_rows([*change.added_ids, *again])
        # the added documents' mentions go with their documents (a step that lands holds
        # both); those of documents written before go after every document
        mentions_again = [m for m in mentions if m["doc_id"] not in added_ids]
        mentions = [m for m in mentions if m["doc_id"] in added_ids]
        next_seq = self._next_seq
        for row in docs:  # added documents go after every document there (the index's order)
            row["seq"], next_seq = next_seq, next_seq + 1
        if next_seq >= 1 << 31:
            raise StoreError("more than 2**31 documents were written to this database")
        dim = int(self._followed.embedder.dim)
        batch = self._session.batch_size

        def batches(query: str, key: str, rows: Sequence[Any]) -> list[list[Statement]]:
            return [[(query, {key: rows[i : i + batch]})] for i in range(0, len(rows), batch)]

        steps: list[list[Statement]] = batches(DELETE_DOCS, "ids", sorted(gone))
        steps += batches(DROP_MENTIONS, "ids", again)
        parts = (chunks, sentences, windows, pieces, mentions)
        for group in by_document(docs, parts, self.max_transaction_rows):
            steps.append(
                [
                    (query, {"rows": part[i : i + batch]})
                    for query, part in zip(
                        (
                            UPSERT_DOCS,
                            UPSERT_CHUNKS,
                            UPSERT_SENTENCES,
                            UPSERT_WINDOWS,
                            UPSERT_PIECES,
                            CREATE_MENTIONS,
                        ),
                        group,
                        strict=True,
                    )
                    for i in range(0, len(part), batch)
                ]
            )
        steps += batches(CREATE_MENTIONS, "rows", mentions_again)
        steps += batches(DROP_OUT_EDGES, "keys", drop_sources)
        steps += batches(CREATE_EDGES, "rows", edge_rows)
        steps += batches(DROP_BRIDGES, "ids", sorted(bridge_docs - added_ids))
        steps += batches(CREATE_BRIDGES, "rows", bridge_rows)
        state = {
            "name": self.name,
            "version": change.version,
            "dim": dim,
            "embedder": self._followed.fingerprint.name,
            "fingerprint": json.dumps(self._followed.fingerprint.to_dict()),
            "edges": new.digest(),
            "ssg": None if graph is None else json.dumps(graph.config.to_dict()),
            "windows": 0 if graph is None else graph.n_nodes,
            "pca_mean": None if graph is None else as_floats(graph.pca_mean),
            "pca": None if graph is None else as_floats(graph.pca_components),
            "pca_digest": None
            if graph is None
            else digest_of_pca(graph.pca_mean, graph.pca_components),
            "next_seq": next_seq,
            "pieces": self._pieces_split(),
            "passages": titles,
        }
        steps.append([(WRITE_STATE, state)])
        size = sum(_rows_in(p) for g in steps for _, p in g)
        try:
            if size <= self.max_transaction_rows:  # all of it or none of it
                self._session.transact(run_statements(steps), write=True)
            else:  # in steps: a failure halfway is repaired as any failed write is
                self._behind, self._edges = True, None
                mark = (MARK_WRITING, {"name": self.name, "version": change.version})
                for step in [[mark], *steps]:  # readers refuse a half-written change
                    self._session.transact(run_statements([step]), write=True)
        except StoreError:
            self._behind = True  # the next change (or sync) writes the difference
            raise
        self._edges, self._version, self._behind = new, change.version, False
        self._next_seq, self._passages_written = next_seq, titles

    def _pieces_split(self) -> list[int] | None:
        """The split of the index's SKETCH pieces (``SemanticIndex(pieces=...)``), if any."""
        kept = self._followed.piece_index
        return None if kept is None else list(kept.split)

    def _piece_rows(self, doc_ids: Iterable[str]) -> list[dict[str, Any]]:
        """Rows of the published pieces of these documents (none without a piece index)."""
        if (kept := self._followed.piece_index) is None:
            return []
        return [
            {
                "key": part_key(doc_id, j),
                "doc_id": doc_id,
                "j": j,
                "parent": int(parent),
                "start": piece.start,
                "end": piece.end,
                "text": piece.text,
                "token_count": int(piece.token_count),
                "index": int(piece.index),
                "vector": v,
                "vec": v,
            }
            for doc_id in doc_ids
            for j, (piece, parent, v) in enumerate(kept.pieces_of(doc_id))
        ]

    def _passages_titles(self) -> bool | None:
        """The ``titles`` setting of the index's passage phrases (``None`` without them)."""
        part = self._followed.parts.get("passages")
        return bool(part.titles) if isinstance(part, PassagePhrases) else None

    def _mention_rows(self, doc_ids: Sequence[str]) -> list[dict[str, Any]]:
        """The mention rows (per chunk: phrase keys and spellings) of these documents."""
        part = self._followed.parts.get("passages")
        if not isinstance(part, PassagePhrases) or not doc_ids:
            return []
        reg = part.registry
        mentions: list[dict[str, Any]] = []
        for doc_id in doc_ids:
            found = part.of(doc_id)
            at = 0
            for cid, n in zip(found.chunk_ids.tolist(), found.counts.tolist(), strict=True):
                if n:
                    mentions.append(
                        {
                            "id": cid,
                            "doc_id": doc_id,
                            "keys": [reg.keys[j] for j in found.slots[at : at + n].tolist()],
                            "names": [reg.names[j] for j in found.names[at : at + n].tolist()],
                            "titles": [j == found.title for j in found.slots[at : at + n].tolist()],
                        }
                    )
                at += n
        return mentions

    def _graph(self) -> SemanticSimilarityGraph | None:
        return self._followed.ssg_view().graph if self._followed.ssg_config else None

    def _graph_edges(self) -> Edges:
        return Edges(self._graph())

    def _state(self) -> dict[str, Any]:
        return read_state(self.store, self.name)

    # -- the IndexPart protocol -------------------------------------------------------------------
    def save(self, directory: Any) -> list[str]:
        """Nothing to save: the database is the state (the index's own save is enough)."""
        return []

    def clear(self) -> None:
        """Delete the stored corpus (10,000 nodes per transaction) and its vector indexes.

        Resumable: a failure halfway leaves part of the corpus; clearing again finishes.
        """
        self._session.run_batched(CLEAR)
        for statement in DROP_VECTOR_INDEXES:
            self._session.write_rows(statement)
        self._edges, self._version = None, None

    def counts(self) -> dict[str, int]:
        """Documents, chunks, sentences, windows, similarity edges and bridges stored."""
        return dict(self._session.read_rows(COUNTS)[0])

    def dump(self) -> dict[str, Any]:
        """Everything stored, by document id and offsets (ids aside): for comparing builds."""
        read = self._session.read_rows
        return {
            "chunks": sorted(
                (r["doc_id"], r["start"], r["end"], r["text"], tuple(r["embedding"]))
                for r in read(DUMP_CHUNKS)
            ),
            "windows": sorted(tuple(r.values()) for r in read(DUMP_WINDOWS)),
            "pieces": sorted(
                (
                    *(r[k] for k in ("doc_id", "j", "start", "end", "text", "token_count")),
                    tuple(r["embedding"]),
                )
                for r in read(DUMP_PIECES)
            ),
            "edges": sorted(tuple(r.values()) for r in read(DUMP_EDGES)),
            "bridges": sorted(tuple(r.values()) for r in read(DUMP_BRIDGES)),
            "mentions": sorted(tuple(r.values()) for r in read(DUMP_MENTIONS)),
            "counts": self.counts(),
        }

    def __repr__(self) -> str:
        return f"Neo4jIndexStore({self.store!r}, version={self._version})"


def _rows_in(params: Mapping[str, Any]) -> int:
    """The rows a statement writes: its ``rows``, else its ``ids``, else its ``keys``."""
    for key in ("rows", "ids", "keys"):
        if key in params:
            return len(params[key])
    return 0
