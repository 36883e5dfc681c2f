"""The parts of an index in Neo4j as a reader sees them: dense, pieces and sparse search.

Each holds the reader's :class:`~semrag.neo4j._read_context.ReadContext` (the session,
the candidate policy, the rows one read keeps), not the reader.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag.errors import (
    NotIndexedError,
)
from semrag.neo4j._cypher import as_floats, from_bytes
from semrag.neo4j._index_cypher import COUNT_CHUNKS, PIECES_COLUMNS, PIECES_SEARCH
from semrag.neo4j._read_context import ReadContext, chunk_from_row, ranked_rows
from semrag.neo4j._session import Ask, Steps
from semrag.types import Chunk, Floats, Ints


# -- serving --------------------------------------------------------------------------------------
class _RemoteDense:
    """Exact-rescored vector search on a stored index (``_search_steps`` says which)."""

    def __init__(self, context: ReadContext) -> None:
        self._context = context

    def search(self, queries: npt.ArrayLike, k: int) -> tuple[Floats, Ints]:
        """``(scores, ids)`` of shape ``(queries, k)``, best first (id -1 where none)."""
        return self._context.run(self._search_steps(queries, k))

    async def asearch(self, queries: npt.ArrayLike, k: int) -> tuple[Floats, Ints]:
        """Async twin of :meth:`search`, on the async driver."""
        return await self._context.arun(self._search_steps(queries, k))

    def read_steps(
        self, method: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> tuple[Any, Steps[Any]] | None:
        """The store and the steps of :meth:`search` (``None`` for other methods).

        For :class:`semrag._steps.Together`: run with other reads on the store at once.
        """
        if method != self.search:
            return None
        return self._context.store.session, self._search_steps(*args, **kwargs)

    def _search_steps(self, queries: npt.ArrayLike, k: int) -> Steps[tuple[Floats, Ints]]:
        raise NotImplementedError


class ChunkDense(_RemoteDense):
    """``index.dense`` of a :class:`~semrag.neo4j.Neo4jIndex`: length and batched search."""

    def __len__(self) -> int:
        return int(self._context.read_rows(COUNT_CHUNKS)[0]["n"])

    def _search_steps(self, queries: npt.ArrayLike, k: int) -> Steps[tuple[Floats, Ints]]:
        return self._context.dense_steps(np.atleast_2d(np.asarray(queries, np.float32)), k)

    def vectors_of(self, ids: Sequence[int]) -> Floats:
        """Stored vectors of these chunks (fetched with them)."""
        return self._context.vectors_of(ids)


class RemotePieces:
    """``index.piece_index`` of a :class:`~semrag.neo4j.Neo4jIndex`: SKETCH's pieces.

    A piece's id is ``seq << 32 | j`` (its document's place, its place in the document);
    ``pieces`` and ``parents`` hold the pieces the searches of the current ``read()`` found.
    """

    def __init__(self, context: ReadContext, split: tuple[int, int]) -> None:
        self.split = split
        self.dense = _PieceDense(context)
        self.pieces: Mapping[int, Chunk] = _Found(context, 0)
        self.parents: Mapping[int, int] = _Found(context, 1)

    def __repr__(self) -> str:
        return f"stored pieces (split={self.split})"


class _Found(Mapping[int, Any]):
    """Field ``at`` of the pieces found in this read (``KeyError`` for others)."""

    def __init__(self, context: ReadContext, at: int) -> None:
        self._context, self._at = context, at

    def __getitem__(self, piece_id: int) -> Any:
        found = self._context.cache("pieces").get(int(piece_id))
        if found is None:
            raise NotIndexedError(f"piece {piece_id} was not found by a search in this read()")
        return found[self._at]

    def __iter__(self) -> Iterator[int]:
        return iter(self._context.cache("pieces"))

    def __len__(self) -> int:
        return len(self._context.cache("pieces"))


class _PieceDense(_RemoteDense):
    """Exact-rescored vector search over the stored pieces (as ``ChunkDense`` over chunks)."""

    def _search_steps(self, queries: npt.ArrayLike, k: int) -> Steps[tuple[Floats, Ints]]:
        context = self._context
        q = np.atleast_2d(np.asarray(queries, np.float32))
        context.check_dim(q)
        rows = yield Ask(
            PIECES_SEARCH,
            {
                "n": context.candidates(int(k)),
                "keep": context.kept(int(k)),
                "vectors": [as_floats(v) for v in q],
            },
            PIECES_COLUMNS,
        )
        pieces = context.cache("pieces")
        found = []
        for r in rows:
            context.remember(r)  # the parent chunk (and its vector), for the rest of the read
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
        pieces = self._context.cache("pieces")
        if not ids:
            return np.zeros((0, self._context.dim), np.float32)
        return np.stack([pieces[int(i)][2] for i in ids])


class RemoteSparse:
    """``index.sparse`` of a :class:`~semrag.neo4j.Neo4jIndex`: the full-text index."""

    def __init__(self, context: ReadContext) -> None:
        self._context = context

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """``(chunk id, Lucene BM25 score)`` of the top ``k`` chunks, best first."""
        return self._context.sparse_search([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int) -> list[list[tuple[int, float]]]:
        """:meth:`search` for each query, in one round trip."""
        return self._context.sparse_search(list(queries), k) if queries else []


def first_hits(found: tuple[Floats, Ints]) -> tuple[Floats, Ints]:
    """The first query's row of a search's ``(scores, ids)``, without its empty slots."""
    scores, ids = found
    keep = ids[0] >= 0
    return scores[0][keep], ids[0][keep]
