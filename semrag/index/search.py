"""The searches of a :class:`~semrag.SemanticIndex` over its corpus and parts.

:class:`IndexSearch` reads one version: dense (plain, filtered, MMR), BM25, both channels
at once, and the vectors and scores retrievers ask for by chunk id. It embeds nothing
(the index turns a query into a vector) and owns no state: it holds the corpus and the
parts it reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import numpy.typing as npt

from semrag._validation import check_k
from semrag.errors import ConfigError
from semrag.index._top_k import top_k
from semrag.index.corpus import Corpus
from semrag.index.parts.part_set import PartSet
from semrag.types import Chunk, Floats, MetadataFilter, ScoredChunk, as_filter


class IndexSearch:
    """Searches and scored reads of one corpus and its parts, each under one read."""

    def __init__(self, corpus: Corpus, parts: PartSet) -> None:
        self._corpus = corpus
        self._parts = parts

    def dense(self, vector: Floats, k: int) -> tuple[Floats, npt.NDArray[np.int64]]:
        """Dense top-``k`` as arrays: cosine similarities and chunk ids, best first."""
        k = check_k("SemanticIndex.search", k, 10)
        with self._corpus.read():
            scores, ids = self._parts.dense.search(vector, k)
        keep = ids[0] >= 0
        return scores[0][keep], ids[0][keep].astype(np.int64)

    def vector(
        self,
        vector: Floats,
        k: int,
        *,
        filter: MetadataFilter | None = None,
        doc_ids: Iterable[str] | None = None,
    ) -> list[ScoredChunk]:
        """Dense top-``k`` chunks for a query vector; a filtered search is exact."""
        with self._corpus.read():
            if filter is None and doc_ids is None:
                scores, ids = self.dense(vector, k)
            else:
                scores, ids = self._filtered(vector, k, filter, doc_ids)
            return [
                ScoredChunk(
                    self._corpus.chunk(int(i)),
                    float(s),
                    {"dense": float(s)},
                    ({"channel": "dense", "rank": r},),
                )
                for r, (s, i) in enumerate(zip(scores, ids, strict=True))
            ]

    def _filtered(
        self,
        vector: Floats,
        k: int,
        filter: MetadataFilter | None,
        doc_ids: Iterable[str] | None,
    ) -> tuple[Floats, npt.NDArray[np.int64]]:
        k = check_k("SemanticIndex.search", k, 10)
        pool: Iterator[tuple[int, Chunk]]
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
        cols, scores = top_k(q @ self._parts.dense.vectors_of(ids).T, min(k, ids.size))
        return scores[0], ids[cols[0]]

    def mmr(
        self,
        vector: Floats,
        k: int,
        *,
        fetch_k: int,
        lambda_mult: float,
        filter: MetadataFilter | None = None,
        doc_ids: Iterable[str] | None = None,
    ) -> list[ScoredChunk]:
        """Maximal marginal relevance (see :meth:`SemanticIndex.search_mmr`)."""
        if not 0 <= lambda_mult <= 1:
            raise ConfigError(f"lambda_mult must be in [0, 1], got {lambda_mult}")
        k = check_k("SemanticIndex.search_mmr", k, 4)
        with self._corpus.read():
            pool = self.vector(vector, max(k, fetch_k), filter=filter, doc_ids=doc_ids)
            if not pool:
                return []
            ids = [self._corpus.entry(h.chunk.doc_id).chunk_ids[h.chunk.index] for h in pool]
            vecs = self._parts.dense.vectors_of(ids)
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

    def sparse(self, query: str, k: int) -> list[ScoredChunk]:
        """BM25 top-``k`` chunks for ``query`` (positive scores only)."""
        k = check_k("SemanticIndex.search_sparse", k, 10)
        with self._corpus.read():
            found = self._parts.sparse.search(query, k)
            return [
                ScoredChunk(
                    self._corpus.chunk(i), s, {"sparse": s}, ({"channel": "sparse", "rank": r},)
                )
                for r, (i, s) in enumerate(found)
            ]

    def channels(
        self, vectors: npt.ArrayLike, queries: Sequence[str], k: int
    ) -> tuple[npt.NDArray[np.int64], list[list[tuple[int, float]]]]:
        """Dense top-``k`` ids of each vector (``-1`` pads) and BM25 top ``k`` of each query."""
        with self._corpus.read():
            _, ids = self._parts.dense.search(vectors, k)
            return ids, self._parts.sparse.search_many(list(queries), k)

    def sparse_scores(self, query: str, chunk_ids: Sequence[int]) -> npt.NDArray[np.float64]:
        """BM25 scores of ``query`` for the given chunks (0 where no term matches)."""
        with self._corpus.read():
            return self._parts.sparse.scores_of(query, chunk_ids)

    def sparse_scores_many(
        self, queries: Sequence[str], chunk_ids: Sequence[int]
    ) -> npt.NDArray[np.float64]:
        """:meth:`sparse_scores` of each query: shape ``(len(queries), len(chunk_ids))``."""
        with self._corpus.read():
            rows = [self._parts.sparse.scores_of(q, chunk_ids) for q in queries]
        return np.array(rows, np.float64).reshape(len(queries), len(chunk_ids))

    def vectors_of(self, chunk_ids: Sequence[int]) -> Floats:
        """Stored unit vectors of the given chunks, shape ``(len(chunk_ids), dim)``."""
        with self._corpus.read():
            return self._parts.dense.vectors_of(chunk_ids)

    def sentence_vectors_of(self, chunk_ids: Sequence[int]) -> list[Floats]:
        """The vectors of each chunk's sentences (``sentence_start .. sentence_end``)."""
        with self._corpus.read():
            out = []
            for i in chunk_ids:
                c = self._corpus.chunk(int(i))
                vectors = self._corpus.entry(c.doc_id).sentence_vectors
                out.append(vectors[c.sentence_start : c.sentence_end])
            return out
