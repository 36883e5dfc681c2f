"""The PPR passage graph of an index stored in Neo4j, read by a serving process.

:class:`~semrag.neo4j.Neo4jIndexStore` writes the index's ``passages`` part (when the writing
index keeps one: ``SemanticIndex(passages=True)``, ``index.enable("passages")``, or any
``GraphRetriever()`` over it) as mention edges, ``(:SemragChunk)-[:MENTIONS {i, name,
title}]->(:SemragPhrase {key})``, with each change: only the changed documents' mentions.

:class:`RemotePassages` is the part as a :class:`~semrag.neo4j.Neo4jIndex` offers it
(``reader.parts["passages"]``): the first PPR query of a version reads the mentions, page by
page in the index's order, embeds the new spellings they use (the packaged static model,
:data:`~semrag.index.parts.passages.NAMES`: a name's vector depends on the name alone) and
assembles the same arrays the embedded part does
(:func:`~semrag.index.parts._passage_graph.assemble`: no phrase is found). The walk then
runs in process over them, so its ranking is the embedded one's; the chunks of a query's
hits are fetched in one round trip. A later version reads only the documents written or
removed since (a serving process follows a writer by delta, not by reading the graph
again). What a serving process holds is therefore the graph's arrays (passage and phrase
numbers, the transition matrix, one vector per phrase spelling), not the corpus.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from semrag.errors import StoreError
from semrag.index.parts._passage_graph import TITLE_WEIGHT, PassageGraph, graph_for
from semrag.index.parts.passages import DocPhrases, NameRegistry
from semrag.neo4j._index_cypher import FINGERPRINTS, PASSAGE_ROWS
from semrag.types import Chunk

__all__ = ["RemoteChunks", "RemotePassages"]

_RETRIES = 5


class RemoteChunks(Sequence[Chunk]):
    """The chunks of a graph's passage nodes, fetched from the reader when asked.

    :meth:`take` fetches many in one round trip (what :func:`chunks_at` uses).
    """

    def __init__(self, reader: Any, chunk_ids: np.ndarray) -> None:
        self._reader = reader
        self._ids = chunk_ids

    def _ids_of(self, nodes: Sequence[int]) -> list[int]:
        return [int(self._ids[n]) for n in nodes]

    def take(self, nodes: Sequence[int]) -> list[Chunk]:
        """The chunks of these passage nodes (one round trip)."""
        return self._reader.chunks_of(self._ids_of(nodes))

    async def atake(self, nodes: Sequence[int]) -> list[Chunk]:
        """Async twin of :meth:`take` (awaits the async driver)."""
        return await self._reader.achunks_of(self._ids_of(nodes))

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return self.take(range(*i.indices(len(self))))
        return self.take([i])[0]

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[Chunk]:
        return iter(self.take(range(len(self))))


class RemotePassages:
    """The passage phrases stored by :class:`~semrag.neo4j.Neo4jIndexStore` (see the module).

    Read once per stored version (:attr:`reads` counts the reads), then assembled into a
    :class:`~semrag.index.parts._passage_graph.PassageGraph` shared by the process's retrievers.

    Args:
        reader: the :class:`~semrag.neo4j.Neo4jIndex`.
        titles: the writer's ``titles`` setting (a document's title is a phrase of each of
            its passages).
        page: documents read per round trip.
    """

    def __init__(self, reader: Any, *, titles: bool, page: int = 2_000) -> None:
        self.reader = reader
        self.titles = bool(titles)
        self.page = int(page)
        self.registry = NameRegistry()
        self.version: int | None = None
        """The stored version the phrases were read at."""
        self.reads = 0
        """How many times the stored phrases were read (once per version a query met)."""
        self.documents_read = 0
        """How many documents' phrases were read in all (a new version reads its changes)."""
        self._docs: dict[str, DocPhrases] = {}
        self._seqs: dict[str, int] = {}
        self._graph: PassageGraph | None = None
        self._lock = threading.Lock()

    # -- reading --------------------------------------------------------------------------
    def _fetch(self) -> None:
        """Follow the stored index to its current version, reading only what changed.

        A writer gives every document it writes the next ``seq``; so the documents above
        the last ``seq`` read are the new and replaced ones, and the stored ids tell the
        removed ones. Everything else is kept from the last read. A read that races a
        change (a row deleted under it) is read again.

        Raises:
            StoreError: if the database kept changing under five reads in a row, or a
                mention names a spelling with no stored vector.
        """
        for _ in range(_RETRIES):
            before = self.reader.current_version()
            try:
                docs, seqs = self._read_changes()
            except (TypeError, KeyError, ValueError) as exc:  # a row a change removed
                if self.reader.current_version() == before:
                    raise StoreError(f"the stored passage graph is damaged ({exc})") from exc
                continue
            if self.reader.current_version() == before:
                self._docs, self._seqs, self.version = docs, seqs, before
                self.reads += 1
                return
        raise StoreError("the stored index changed during each of 5 reads of its passage graph")

    def _read_changes(self) -> tuple[dict[str, DocPhrases], dict[str, int]]:
        session = self.reader.store.session
        docs, seqs = dict(self._docs), dict(self._seqs)
        last = max(seqs.values(), default=-1)
        if docs:
            stored = {r["id"]: int(r["seq"]) for r in session.read_rows(FINGERPRINTS)}
            if any(seq <= last and seqs.get(i) != seq for i, seq in stored.items()):
                docs, seqs, last = {}, {}, -1  # rewritten from scratch: read it all
            for gone in [d for d in docs if d not in stored]:
                del docs[gone], seqs[gone]
        fresh, fresh_seqs = self._read_rows(last)
        for doc_id, phrases in fresh.items():
            docs.pop(doc_id, None)  # a replaced document moves to the end, as in the index
            docs[doc_id] = phrases
        seqs.update(fresh_seqs)
        self.registry.embed_new()
        return docs, seqs

    def _read_rows(self, after: int) -> tuple[dict[str, DocPhrases], dict[str, int]]:
        """The phrases of the documents written after ``after``, and their ``seq``."""
        reg = self.registry  # it only grows: names of an abandoned read stay unused
        docs: dict[str, DocPhrases] = {}
        seqs: dict[str, int] = {}
        while True:
            rows = self.reader.store.session.read_rows(PASSAGE_ROWS, after=after, n=self.page)
            if not rows:
                break
            by_doc: dict[str, list[tuple[int, int, list[Any]]]] = {}
            for r in rows:
                chunks = by_doc.setdefault(r["doc"], [])
                if r["id"] is not None:
                    chunks.append((int(r["id"]), int(r["start"]), sorted(r["found"])))
                seqs[r["doc"]] = int(r["seq"])
                after = max(after, int(r["seq"]))
            for doc_id, chunks in by_doc.items():
                slots = [reg.slot(key) for *_, found in chunks for _, key, _, _ in found]
                names = [reg.name(name) for *_, found in chunks for _, _, name, _ in found]
                title = [reg.slot(k) for *_, found in chunks for _, k, _, t in found if t]
                docs[doc_id] = DocPhrases(
                    None,
                    np.asarray([c for c, _, _ in chunks], np.int64),
                    [],
                    np.asarray([start for _, start, _ in chunks], np.int64),
                    np.asarray([len(found) for *_, found in chunks], np.int64),
                    np.asarray(slots, np.int64),
                    np.asarray(names, np.int64),
                    title[0] if title else -1,
                )
            if len(by_doc) < self.page:
                break
        self.documents_read += len(docs)
        return docs, seqs

    # -- the part, as PPRRetriever reads it -----------------------------------------------
    def graph(
        self,
        doc_ids: Sequence[str] = (),
        *,
        synonym_k: int = 0,
        synonym_threshold: float = 0.8,
        title_weight: float = TITLE_WEIGHT,
    ) -> PassageGraph:
        """The passage graph of the stored version (read and assembled on its first use).

        Passages are in the stored index's order (its writer's), whatever ``doc_ids``
        lists; synonym edges (``synonym_k > 0``) are computed here, per call.
        """
        with self._lock:
            version = self.reader.current_version()
            if self.version != version:
                self._fetch()
            docs = list(self._docs.values())
            assert self.version is not None
            chunk_ids = np.concatenate([np.zeros(0, np.int64), *(d.chunk_ids for d in docs)])
            g, self._graph = graph_for(
                self._graph,
                self.version,
                docs,
                self.registry,
                synonym_k=synonym_k,
                synonym_threshold=synonym_threshold,
                title_weight=title_weight,
                chunks=RemoteChunks(self.reader, chunk_ids),
            )
            return g

    def of(self, doc_id: str) -> DocPhrases:
        """The phrases of a stored document (as last read)."""
        return self._docs[doc_id]

    def __len__(self) -> int:
        return len(self._docs)

    def __repr__(self) -> str:
        return f"RemotePassages(documents={len(self._docs)}, version={self.version})"
