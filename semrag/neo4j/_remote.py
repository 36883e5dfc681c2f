"""The parts of an index in Neo4j as a reader sees them: dense, pieces and sparse search."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from semrag.errors import (
    NotIndexedError,
)
from semrag.neo4j._cypher import as_floats, from_bytes
from semrag.neo4j._index_cypher import COUNT_CHUNKS, PIECES_COLUMNS, PIECES_SEARCH
from semrag.neo4j._index_state import Floats, Ints
from semrag.neo4j._session import Ask, Steps
from semrag.types import Chunk

if TYPE_CHECKING:
    from semrag.neo4j.index_reader import Neo4jIndex


# -- serving --------------------------------------------------------------------------------------
class _RemoteDense:
    """Exact-rescored vector search on a :class:`Neo4jIndex` (``_search_steps`` says which)."""

    def __init__(self, owner: Neo4jIndex) -> None:
        self._owner = owner

    def search(self, queries: npt.ArrayLike, k: int) -> tuple[Floats, Ints]:
        """``(scores, ids)`` of shape ``(queries, k)``, best first (id -1 where none)."""
        return self._owner.store.run_steps(self._search_steps(queries, k))

    async def asearch(self, queries: npt.ArrayLike, k: int) -> tuple[Floats, Ints]:
        """Async twin of :meth:`search`, on the async driver."""
        return await self._owner.store.arun_steps(self._search_steps(queries, k))

    def read_steps(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, Steps[Any]] | None:
        """The store and the steps of :meth:`search` (``None`` for other methods).

        For :class:`semrag._steps.Together`: run with other reads on the store at once.
        """
        if name != "search":
            return None
        return self._owner.store, self._search_steps(*args, **kwargs)

    def _search_steps(self, queries: npt.ArrayLike, k: int) -> Steps[tuple[Floats, Ints]]:
        raise NotImplementedError


class ChunkDense(_RemoteDense):
    """``index.dense`` of a :class:`Neo4jIndex`: length and batched exact-rescored search."""

    def __len__(self) -> int:
        return int(self._owner.store.read_rows(COUNT_CHUNKS)[0]["n"])

    def _search_steps(self, queries: npt.ArrayLike, k: int) -> Steps[tuple[Floats, Ints]]:
        return self._owner._dense_steps(np.atleast_2d(np.asarray(queries, np.float32)), k)

    def vectors_of(self, ids: Sequence[int]) -> Floats:
        """Stored vectors of these chunks (fetched with them)."""
        return self._owner.vectors_of(ids)


class RemotePieces:
    """``index.piece_index`` of a :class:`Neo4jIndex`: SKETCH's pieces, fetched as searched.

    A piece's id is ``seq << 32 | j`` (its document's place, its place in the document);
    ``pieces`` and ``parents`` hold the pieces the searches of the current ``read()`` found.
    """

    def __init__(self, owner: Neo4jIndex, split: tuple[int, int]) -> None:
        self._owner = owner
        self.split = split
        self.dense = _PieceDense(owner)
        self.pieces: Mapping[int, Chunk] = _Found(owner, 0)
        self.parents: Mapping[int, int] = _Found(owner, 1)

    def __repr__(self) -> str:
        return f"stored pieces (split={self.split})"


class _Found(Mapping[int, Any]):
    """Field ``at`` of the pieces found in this read (``KeyError`` for others)."""

    def __init__(self, owner: Neo4jIndex, at: int) -> None:
        self._owner, self._at = owner, at

    def __getitem__(self, piece_id: int) -> Any:
        found = self._owner._cache("pieces").get(int(piece_id))
        if found is None:
            raise NotIndexedError(f"piece {piece_id} was not found by a search in this read()")
        return found[self._at]

    def __iter__(self) -> Iterator[int]:
        return iter(self._owner._cache("pieces"))

    def __len__(self) -> int:
        return len(self._owner._cache("pieces"))


class _PieceDense(_RemoteDense):
    """Exact-rescored vector search over the stored pieces (as ``ChunkDense`` over chunks)."""

    def _search_steps(self, queries: npt.ArrayLike, k: int) -> Steps[tuple[Floats, Ints]]:
        owner = self._owner
        q = np.atleast_2d(np.asarray(queries, np.float32))
        owner._check_dim(q)
        rows = yield Ask(
            PIECES_SEARCH,
            {
                "n": owner._candidates(int(k)),
                "keep": owner._kept(int(k)),
                "vectors": [as_floats(v) for v in q],
            },
            PIECES_COLUMNS,
        )
        pieces = owner._cache("pieces")
        found = []
        for r in rows:
            owner._remember(r)  # the parent chunk (and its vector), for the rest of the read
            piece_id = int(r["seq"]) << 32 | int(r["j"])
            if piece_id not in pieces:
                piece = replace(
                    chunk_from_row(r),
                    start=r["piece_start"],
                    end=r["piece_end"],
                    text=r["piece_text"],
                    token_count=r["piece_tokens"],
                    index=r["piece_index"],
                )
                pieces[piece_id] = (piece, int(r["id"]), from_bytes(r["piece_vec"]))
            found.append((r["row"], piece_id, pieces[piece_id][2]))
        return ranked_rows(found, q, k)

    def vectors_of(self, ids: Sequence[int]) -> Floats:
        """Vectors of pieces found in this read."""
        pieces = self._owner._cache("pieces")
        if not ids:
            return np.zeros((0, self._owner.embedder.dim), np.float32)
        return np.stack([pieces[int(i)][2] for i in ids])


class RemoteSparse:
    """``index.sparse`` of a :class:`Neo4jIndex`: the full-text index."""

    def __init__(self, owner: Neo4jIndex) -> None:
        self._owner = owner

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """``(chunk id, Lucene BM25 score)`` of the top ``k`` chunks, best first."""
        return self._owner._sparse_search([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int) -> list[list[tuple[int, float]]]:
        """:meth:`search` for each query, in one round trip."""
        return self._owner._sparse_search(list(queries), k) if queries else []


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


def first_hits(found: tuple[Floats, Ints]) -> tuple[Floats, Ints]:
    """The first query's row of a search's ``(scores, ids)``, without its empty slots."""
    scores, ids = found
    keep = ids[0] >= 0
    return scores[0][keep], ids[0][keep]


def chunk_from_row(r: Mapping[str, Any]) -> Chunk:
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
