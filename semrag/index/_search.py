"""The searches of a :class:`~semrag.SemanticIndex`: dense, filtered, MMR, BM25."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from semrag._validation import check_k, check_query
from semrag.errors import ConfigError
from semrag.index._top_k import top_k
from semrag.index.change import Floats
from semrag.types import MetadataFilter, ScoredChunk, as_filter


class Search:
    """Searches of a :class:`~semrag.SemanticIndex`."""

    # -- search -------------------------------------------------------------------------------
    def embed_query(self, query: str) -> Floats:
        """The query's vector."""
        if not isinstance(query, str):
            raise ConfigError(f"query must be str, got {type(query).__name__}")
        return self.embedder.embed([query])[0]

    async def aembed_query(self, query: str) -> Floats:
        """Async twin of :meth:`embed_query`."""
        if not isinstance(query, str):
            raise ConfigError(f"query must be str, got {type(query).__name__}")
        return (await self.embedder.aembed([query]))[0]

    def dense_search(self, vector: Floats, k: int) -> tuple[Floats, npt.NDArray[np.int64]]:
        """Dense top-``k`` as arrays: cosine similarities and chunk ids, best first."""
        k = check_k("SemanticIndex.search", k, 10)
        with self._corpus.lock.read():
            scores, ids = self.dense.search(vector, k)
        keep = ids[0] >= 0
        return scores[0][keep], ids[0][keep].astype(np.int64)

    def search_vector(
        self,
        vector: Floats,
        k: int,
        *,
        filter: MetadataFilter | None = None,
        doc_ids: Iterable[str] | None = None,
    ) -> list[ScoredChunk]:
        """Dense top-``k`` chunks for a query vector.

        Args:
            vector: the query vector.
            k: how many chunks.
            filter: only chunks whose metadata it accepts (a callable on the metadata,
                or a mapping every item of which the metadata must hold).
            doc_ids: only chunks of these documents.

        A filtered search is exact: it scores every accepted chunk.
        """
        with self._corpus.lock.read():
            if filter is None and doc_ids is None:
                scores, ids = self.dense_search(vector, k)
            else:
                scores, ids = self._filtered_search(vector, k, filter, doc_ids)
            return [
                ScoredChunk(
                    self._corpus.chunk(int(i)),
                    float(s),
                    {"dense": float(s)},
                    ({"channel": "dense", "rank": r},),
                )
                for r, (s, i) in enumerate(zip(scores, ids, strict=True))
            ]

    def _filtered_search(
        self,
        vector: Floats,
        k: int,
        filter: MetadataFilter | None,
        doc_ids: Iterable[str] | None,
    ) -> tuple[Floats, npt.NDArray[np.int64]]:
        k = check_k("SemanticIndex.search", k, 10)
        if doc_ids is not None:
            if isinstance(doc_ids, str):
                raise ConfigError("doc_ids must be a list of document ids")
            entries = [e for d in set(doc_ids) if (e := self._corpus.get(d)) is not None]
            pool = ((i, c) for e in entries for i, c in zip(e.chunk_ids, e.chunks, strict=True))
        else:
            pool = iter(self._corpus.chunk_items())
        accept = as_filter(filter) if filter is not None else None
        ids = np.fromiter(
            (i for i, c in pool if accept is None or accept(c.metadata)), dtype=np.int64
        )
        if not ids.size:
            return np.zeros(0, np.float32), ids
        ids.sort()
        q = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        cols, scores = top_k(q @ self.dense.vectors_of(ids).T, min(k, ids.size))
        return scores[0], ids[cols[0]]

    def search_mmr(
        self,
        vector: Floats,
        k: int = 4,
        *,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: MetadataFilter | None = None,
        doc_ids: Iterable[str] | None = None,
    ) -> list[ScoredChunk]:
        """Maximal marginal relevance: ``k`` of the ``fetch_k`` nearest chunks, diverse.

        Each step takes the candidate with the best ``lambda_mult * sim(query) -
        (1 - lambda_mult) * max sim(chosen)`` (Carbonell & Goldstein, 1998); ``1`` is
        plain similarity search, ``0`` maximal diversity. Scores are the query
        similarities; the order is the order of choice.
        """
        if not 0 <= lambda_mult <= 1:
            raise ConfigError(f"lambda_mult must be in [0, 1], got {lambda_mult}")
        k = check_k("SemanticIndex.search_mmr", k, 4)
        with self._corpus.lock.read():
            pool = self.search_vector(vector, max(k, fetch_k), filter=filter, doc_ids=doc_ids)
            if not pool:
                return []
            ids = [self.chunk_ids(h.chunk.doc_id)[h.chunk.index] for h in pool]
            vecs = self.dense.vectors_of(ids)
        relevance = np.array([h.score for h in pool])
        between = vecs @ vecs.T
        chosen = [0]
        closest = between[0].copy()  # each candidate's similarity to the nearest chosen one
        while len(chosen) < min(k, len(pool)):
            value = lambda_mult * relevance - (1 - lambda_mult) * closest
            value[chosen] = -np.inf
            best = int(np.argmax(value))
            chosen.append(best)
            np.maximum(closest, between[best], out=closest)
        return [pool[i] for i in chosen]

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        doc_ids: Iterable[str] | None = None,
    ) -> list[ScoredChunk]:
        """Dense top-``k`` chunks for ``query`` (cosine similarity); see :meth:`search_vector`."""
        check_query("SemanticIndex.search", query)
        return self.search_vector(self.embed_query(query), k, filter=filter, doc_ids=doc_ids)

    async def asearch(
        self,
        query: str,
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        doc_ids: Iterable[str] | None = None,
    ) -> list[ScoredChunk]:
        """Async twin of :meth:`search`."""
        check_query("SemanticIndex.search", query)
        vector = await self.aembed_query(query)
        return await asyncio.to_thread(
            self.search_vector, vector, k, filter=filter, doc_ids=doc_ids
        )

    def search_sparse(self, query: str, k: int = 10) -> list[ScoredChunk]:
        """BM25 top-``k`` chunks for ``query`` (positive scores only)."""
        check_query("SemanticIndex.search_sparse", query)
        k = check_k("SemanticIndex.search_sparse", k, 10)
        with self._corpus.lock.read():
            found = self.sparse.search(query, k)
            return [
                ScoredChunk(
                    self._corpus.chunk(i), s, {"sparse": s}, ({"channel": "sparse", "rank": r},)
                )
                for r, (i, s) in enumerate(found)
            ]
