"""What the reads of one :class:`~semrag.neo4j.Neo4jIndex` share, and its parts with it.

A :class:`ReadContext` holds the store's session, the stored index's name and dimension,
the candidate policy of its vector searches, the rows one ``read()`` keeps, and the PCA
last read. The index and the parts it serves (``dense``, ``sparse``, ``piece_index``, the
similarity graph's view) each hold the context, not the index: no part reaches back into
the reader.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from semrag.errors import ConfigError, NotIndexedError
from semrag.neo4j._cypher import as_floats, from_bytes
from semrag.neo4j._index_cypher import (
    CHUNKS,
    DENSE,
    DENSE_COLUMNS,
    DENSE_IDS,
    DENSE_IDS_COLUMNS,
    SPARSE,
    lucene_query,
)
from semrag.neo4j._session import Ask, Steps
from semrag.types import Chunk, Floats, Ints

if TYPE_CHECKING:
    from semrag.neo4j.graph_store import Neo4jGraphStore
    from semrag.text.tokens import Tokenizer

_Result = TypeVar("_Result")
# what each context's read() keeps, by id(context): see ReadContext.read
_READS: contextvars.ContextVar[dict[int, dict[str, dict[Any, Any]]] | None] = (
    contextvars.ContextVar("semrag_neo4j_index_reads", default=None)
)


class ReadContext:
    """The session, settings and per-read cache the reads of one stored index share.

    Args:
        store: the store whose session runs the reads.
        name: the stored index's name.
        dim: its vectors' dimension.
        tokenizer: counts the tokens of chunks made from its sentences.
        oversample: candidates asked of a vector index per result (see
            :meth:`candidates`).
        min_candidates: the fewest candidates asked.
    """

    def __init__(
        self,
        store: Neo4jGraphStore,
        name: str,
        dim: int,
        tokenizer: Tokenizer,
        *,
        oversample: int,
        min_candidates: int,
    ) -> None:
        self.store = store
        self.name = name
        self.dim = int(dim)
        self.tokenizer = tokenizer
        self.oversample, self.min_candidates = int(oversample), int(min_candidates)
        self.pca_read: tuple[str, tuple[Floats, Floats]] | None = None
        """The similarity graph's PCA as last read, with its digest (see ``RemoteView``)."""

    # -- running reads ------------------------------------------------------------------------
    def read_rows(self, query: str, **params: Any) -> list[dict[str, Any]]:
        """One read statement (one round trip)."""
        return self.store.session.read_rows(query, **params)

    async def aread_rows(self, query: str, **params: Any) -> list[dict[str, Any]]:
        """Async twin of :meth:`read_rows`, on the async driver."""
        return await self.store.session.aread_rows(query, **params)

    def run(self, steps: Steps[_Result]) -> _Result:
        """Drive read steps with blocking reads."""
        return self.store.session.run_steps(steps)

    async def arun(self, steps: Steps[_Result]) -> _Result:
        """Drive read steps with the async driver (the steps run in worker threads)."""
        return await self.store.session.arun_steps(steps)

    # -- what one read keeps ------------------------------------------------------------------
    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        """Keep what one query fetches for the length of the block.

        The kept rows live in a context variable: a thread's own, a task's own, and
        seen by the worker threads a task starts (``asyncio.to_thread`` copies it).
        """
        held = _READS.get()
        if held is not None and id(self) in held:
            yield
            return
        token = _READS.set(
            {**(held or {}), id(self): {"chunks": {}, "docs": {}, "pieces": {}, "rankings": {}}}
        )
        try:
            yield
        finally:
            _READS.reset(token)

    def cache(self, kind: str) -> dict[Any, Any]:
        """What this read keeps of ``kind``: ``chunks``, ``docs``, ``pieces``, ``rankings``."""
        held = _READS.get()
        cache = held.get(id(self)) if held is not None else None
        return cache[kind] if cache is not None else {}  # outside a read: kept for one call

    def remember(self, row: Mapping[str, Any]) -> Floats:
        """Keep a fetched chunk row for the rest of this read; returns its vector."""
        vector = from_bytes(row["vec"])
        self.cache("chunks").setdefault(int(row["id"]), (chunk_from_row(row), vector))
        return vector

    def rows_steps(self, ids: Sequence[int]) -> Steps[list[tuple[Chunk, Floats]]]:
        """``(chunk, vector)`` of each id: one round trip for those not fetched in this read.

        Raises:
            NotIndexedError: for an id the index does not hold.
        """
        known = self.cache("chunks")
        missing = sorted({int(i) for i in ids} - known.keys())
        if missing:
            for r in (yield Ask(CHUNKS, {"ids": missing})):
                if r["id"] is not None and r["start"] is not None:  # else deleted under us
                    known[int(r["id"])] = (chunk_from_row(r), from_bytes(r["vec"]))
        unknown = [int(i) for i in ids if int(i) not in known]
        if unknown:
            raise NotIndexedError(f"chunk ids not in the index: {unknown[:5]}")
        return [known[int(i)] for i in ids]

    def vectors_of(self, chunk_ids: Sequence[int]) -> Floats:
        """Stored unit vectors of the given chunks, shape ``(len(chunk_ids), dim)``."""
        rows = self.run(self.rows_steps(chunk_ids))
        if not rows:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([v for _, v in rows])

    # -- vector and full-text search ----------------------------------------------------------
    def candidates(self, k: int) -> int:
        """Candidates asked of a vector index for ``k`` results.

        ``oversample`` times the first 20 of them (a long ranking, such as
        basic_retrieval's, needs no more candidates per result past its head), and at least
        ``min_candidates``.
        """
        return max(self.min_candidates, k + (self.oversample - 1) * min(k, 20))

    @staticmethod
    def kept(k: int) -> int:
        """Candidates fetched for ``k`` results: the vector index's best ``2 k``.

        Its scores are exact cosines in float32, the embedded index's are float32 dot
        products of unit vectors: they differ in the last bits, far less than ``k`` places
        of rank apart (only more than ``k`` exactly tied vectors could be cut differently).
        """
        return 2 * k

    def check_dim(self, queries: Floats) -> None:
        """Raise unless the query vectors have the index's dimension."""
        if queries.shape[1] != self.dim:
            raise ConfigError(f"query of dimension {queries.shape[1]}; the index has {self.dim}")

    def dense_steps(self, queries: Floats, k: int) -> Steps[tuple[Floats, Ints]]:
        """The exact-rescored top ``k`` chunks of each query vector."""
        self.check_dim(queries)
        rows = yield Ask(
            DENSE,
            {
                "n": self.candidates(int(k)),
                "keep": self.kept(int(k)),
                "vectors": [as_floats(q) for q in queries],
            },
            DENSE_COLUMNS,
        )
        return self.dense_rows(rows, queries, k)

    def ranking_steps(self, queries: Floats, k: int) -> Steps[tuple[Floats, Ints]]:
        """Each query vector's top ``k`` chunk ids, by the vector index's own scores.

        For long rankings (PPR's dense seeds: a thousand chunks and more where documents
        are long): only ids and scores travel, as lists, where :meth:`dense_steps` brings
        every candidate's chunk and vector to score it again. The scores are the index's
        float32 cosines, which differ from the embedded index's dot products in the last
        bits (about 1e-7); ties go to the lower id, as there.
        """
        self.check_dim(queries)
        rows = yield Ask(
            DENSE_IDS,
            {"n": self.candidates(int(k)), "vectors": [as_floats(q) for q in queries]},
            DENSE_IDS_COLUMNS,
        )
        scores = np.full((len(queries), k), -np.inf, np.float32)
        ids = np.full((len(queries), k), -1, np.int64)
        asked = self.candidates(int(k))
        rankings = self.cache("rankings")
        for r in rows:
            got = np.asarray(r["ids"], np.int64)
            cos = 2.0 * np.asarray(r["scores"], np.float64) - 1.0
            order = np.lexsort((got, -cos))
            # a ranking shorter than asked holds every chunk: it serves any count
            reach = asked if got.size >= asked else np.inf
            rankings[queries[r["row"]].tobytes()] = (reach, got[order])
            top = order[:k]
            ids[r["row"], : top.size] = got[top]
            scores[r["row"], : top.size] = cos[top]
        return scores, ids

    def ranked_candidates(self, query: Floats, k: int) -> list[int] | None:
        """The candidates of ``query``'s top ``k`` from this read's ranking of it, or ``None``.

        The candidates are those :meth:`dense_steps` would rescore. A ranking of the same
        vector (:meth:`ranking_steps`: PPR's dense seeds) that asked the vector index for at
        least :meth:`candidates` ``(k)``, or found every chunk, holds them as its head (the
        :meth:`kept` ``(k)`` chunks a dense search would bring): they are fetched by id, not
        searched again.
        """
        found = self.cache("rankings").get(np.asarray(query, np.float32).tobytes())
        if found is None or found[0] < self.candidates(int(k)):
            return None
        return [int(i) for i in found[1][: self.kept(int(k))]]

    def dense_rows(
        self, rows: Sequence[Mapping[str, Any]], queries: Floats, k: int
    ) -> tuple[Floats, Ints]:
        """A dense statement's candidate rows ranked exactly (and kept for the read)."""
        return ranked_rows([(r["row"], int(r["id"]), self.remember(r)) for r in rows], queries, k)

    def sparse_search(self, queries: Sequence[str], k: int) -> list[list[tuple[int, float]]]:
        """The full-text top ``k`` of each query (one round trip)."""
        return self.run(self.sparse_steps(queries, k))

    def sparse_steps(self, queries: Sequence[str], k: int) -> Steps[list[list[tuple[int, float]]]]:
        """:meth:`sparse_search` as a step."""
        rows = yield Ask(SPARSE, {"n": int(k), "queries": [lucene_query(q) for q in queries]})
        return self.sparse_rows(rows, len(queries))

    def sparse_rows(
        self, rows: Sequence[Mapping[str, Any]], n_queries: int
    ) -> list[list[tuple[int, float]]]:
        """A full-text statement's rows as each query's hits (chunks kept for the read)."""
        out: list[list[tuple[int, float]]] = [[] for _ in range(n_queries)]
        for r in rows:
            self.remember(r)
            out[r["row"]].append((int(r["id"]), float(r["score"])))
        for hits in out:
            hits.sort(key=lambda h: (-h[1], h[0]))
        return out


def ranked_rows(
    found: Sequence[tuple[int, int, Floats]], queries: Floats, k: int
) -> tuple[Floats, Ints]:
    """``(scores, ids)`` of each query row's top ``k`` of its ``(row, id, vector)`` candidates.

    Scored exactly (the dot product, as the embedded dense index), ties to the lower id.
    """
    scores = np.full((len(queries), k), -np.inf, np.float32)
    ids = np.full((len(queries), k), -1, np.int64)
    by_row: dict[int, list[tuple[float, int]]] = {}
    for row, i, v in found:
        by_row.setdefault(row, []).append((-float(v @ queries[row]), i))
    for row, got in by_row.items():
        got.sort()
        top = got[:k]
        ids[row, : len(top)] = [i for _, i in top]
        scores[row, : len(top)] = [-s for s, _ in top]
    return scores, ids


def chunk_from_row(r: Mapping[str, Any]) -> Chunk:
    """A chunk as a statement returns it."""
    return Chunk(
        doc_id=r["doc_id"],
        start=int(r["start"]),
        end=int(r["end"]),
        text=r["text"],
        token_count=int(r["token_count"]),
        index=int(r["index"]),
        sentence_start=int(r["sentence_start"]),
        sentence_end=int(r["sentence_end"]),
        metadata=json.loads(r["metadata"]),
    )
