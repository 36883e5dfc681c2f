"""Serving an index stored by :class:`~semrag.neo4j.Neo4jIndexStore`, with no corpus in process."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from semrag._validation import check_k, check_query
from semrag.chunking.semantic import SemanticChunker
from semrag.embeddings import Embedder, as_embedder
from semrag.errors import ConfigError
from semrag.index.parts.ssg import SSGConfig
from semrag.index.reader import aquery_vector, query_vector
from semrag.neo4j._cypher import as_floats, from_bytes
from semrag.neo4j._index_cypher import (
    CHANNELS,
    CHANNELS_COLUMNS,
    CHUNK_SENTENCES,
    COUNT_DOCS,
    DOC_IDS,
    HAS_DOC,
    READ_STATE,
    SPARSE_AMONG,
    STATE,
    among,
    id_token,
    lucene_query,
)
from semrag.neo4j._index_state import read_state, served_model
from semrag.neo4j._read_context import ReadContext
from semrag.neo4j._remote import (
    ChunkDense,
    RemotePieces,
    RemoteSparse,
    first_hits,
)
from semrag.neo4j._session import Ask, Neo4jSession, Steps, read_pair
from semrag.neo4j._stored import StoredCorpus
from semrag.neo4j.graph_store import Neo4jGraphStore
from semrag.neo4j.remote_passages import RemotePassages
from semrag.neo4j.remote_ssg import RemoteView
from semrag.types import Floats, Ints, ScoredChunk

if TYPE_CHECKING:
    from semrag.index.reader import (
        AsyncReads,
        CorpusReader,
        CorpusSearch,
        KeptParts,
        PieceReads,
        SimilarityGraphReads,
    )
    from semrag.text.tokens import Tokenizer

_CLAUSES = 1000  # words and id tokens in one Lucene query (it allows 1,024 clauses)


def _session(index: Neo4jIndex) -> Neo4jSession:
    """The session an index's reads run on (:func:`~semrag.neo4j._session.read_pair`)."""
    return index.store.session


class Neo4jIndex:
    """Serves an index stored by :class:`Neo4jIndexStore`, holding no corpus in process.

    Every read is a query to the database (counted in ``store.reads``); within
    ``with index.read():`` the chunks, documents and vectors a query has fetched are kept
    for the rest of the block, so one retrieval asks for each at most once. It is a
    reader (:class:`~semrag.index.reader.CorpusReader`, :class:`~semrag.index.reader.CorpusSearch`
    and the async twins): every retriever and :class:`~semrag.postprocess.SPC` run over it
    (IAR with PPR as its extended channel when the writer kept the passage phrases: see
    :attr:`parts`); ``search`` and ``search_sparse`` are its users' own.

    Each round trip reads one committed version (a change is one transaction); a change
    that lands between two round trips of one query can be seen by the second only.

    The async twins (:meth:`asearch`, :meth:`asearch_channels`, ...) await the store's
    async driver (see :mod:`semrag.neo4j._session`): no worker thread waits on the network,
    and what they decode runs in a worker thread. Each read method is written once, as
    steps that ask for statements; the sync and the async method drive the same steps.
    ``read()`` is a context, not a lock, so a coroutine holds it across its awaits
    (it offers :class:`~semrag.index.reader.AsyncReads`), which IAR's async path does.
    The reads of the stored documents (``documents``) and chunks (``chunks_of``,
    ``vectors_of``, ``overlapping_chunks_many`` and the async twins) are those of the
    object it is composed of (:class:`~semrag.neo4j._stored.StoredCorpus`).

    Args:
        store: the :class:`~semrag.neo4j.Neo4jGraphStore` (connection and database).
        embedder: embeds queries; ``None`` for the packaged MiniLM. It must be the model
            that embedded the stored index (checked by its fingerprint, see
            :mod:`semrag.fingerprint`).
        tokenizer: counts the tokens of chunks made here (SSG windows) and for SPC's
            budgets; default: what ``SemanticIndex()``'s default chunker counts with (MiniLM's
            word pieces, through the static boundary model).
        oversample: candidates asked of the (approximate) vector indexes per result, for
            the first 20 results (chunks for dense search, windows for an SSG anchor);
            semrag scores them exactly, so the top ``k`` equal an exact search's unless the
            vector index misses one of them (on the 2Wiki benchmark's 5,060 chunks, 4 and
            40 changed the top 20 of 3 of 40 queries, 10 and 100 of none; over all 500
            questions full@10 still moves by 0.002).
        min_candidates: the fewest candidates asked.
        name: the stored index's name (as given to :class:`Neo4jIndexStore`).
        allow_embedder_mismatch: serve with another model anyway (one you know shares the
            stored model's vector space).

    Raises:
        EmbedderMismatchError: if the embedder is not the stored index's model.
        ConfigError: if the database holds no index of that name.
        StoreError: if it holds a change written in steps and interrupted (a mix).
    """

    def __init__(
        self,
        store: Neo4jGraphStore,
        *,
        embedder: Embedder | None = None,
        tokenizer: Tokenizer | None = None,
        oversample: int = 10,
        min_candidates: int = 100,
        name: str = STATE,
        allow_embedder_mismatch: bool = False,
    ) -> None:
        if oversample < 1 or min_candidates < 1:
            raise ConfigError(
                f"oversample and min_candidates must be >= 1, got {oversample}, {min_candidates}"
            )
        self.store = store
        self.name = name
        self.embedder = as_embedder(embedder)
        self.tokenizer = tokenizer or SemanticChunker().tokenizer
        self.oversample, self.min_candidates = int(oversample), int(min_candidates)
        state = read_state(store, name)
        if state.get("version") is None:
            raise ConfigError(
                f"the database holds no semrag index named {name!r}: "
                "write one with Neo4jIndexStore.for_index(index, store)"
            )
        self.fingerprint, self.note = served_model(
            state, self.embedder, f"the index {name!r} in {store!r}", allow_embedder_mismatch
        )
        """The stored vectors' model (``note``: another was allowed, see below)."""
        self.ssg_config = SSGConfig(**json.loads(state["ssg"])) if state.get("ssg") else None
        """The stored similarity graph's config (``None`` without one)."""
        pieces = state.get("pieces")
        self._context = ReadContext(
            store,
            name,
            self.embedder.dim,
            self.tokenizer,
            oversample=oversample,
            min_candidates=min_candidates,
        )
        split = (int(pieces[0]), int(pieces[1])) if pieces else None
        self.piece_index = RemotePieces(self._context, split) if split else None
        """SKETCH's small pieces as stored (``SemanticIndex(pieces=...)`` in the writer), or
        ``None``: then SKETCH searches the chunks here (``split=None``)."""
        self._passages = self._passages_of(state)
        self.dense = ChunkDense(self._context)
        self.sparse = RemoteSparse(self._context)
        # the stored documents and chunks: their reads are the index's own
        stored = StoredCorpus(self._context, self.embedder.dim)
        self.documents, self.adocuments = stored.documents, stored.adocuments
        self.chunks_of, self.achunks_of = stored.chunks_of, stored.achunks_of
        self.vectors_of = stored.vectors_of
        self.overlapping_chunks_many = stored.overlapping_chunks_many
        self.aoverlapping_chunks_many = stored.aoverlapping_chunks_many

    @property
    def parts(self) -> dict[str, Any]:
        """``{"passages": RemotePassages}`` when the writer keeps the phrases, else ``{}``."""
        if self._passages is None:  # the writer may keep them since (one round trip)
            self._passages = self._passages_of(read_state(self.store, self.name))
        return {} if self._passages is None else {"passages": self._passages}

    def _passages_of(self, state: Mapping[str, Any]) -> RemotePassages | None:
        titles = state.get("passages")
        return None if titles is None else RemotePassages(self, titles=bool(titles))

    @property
    def extended(self) -> str | None:
        """IAR's default extended channel: ``"ppr"`` with the stored phrases, else none."""
        return "ppr" if "passages" in self.parts else None

    # -- plumbing -------------------------------------------------------------------------------
    def read(self, *, followers: bool = False) -> contextlib.AbstractContextManager[None]:
        """Keep what one query fetches for the length of the block (see the class doc).

        The kept rows live in a context variable: a thread's own, a task's own, and
        seen by the worker threads a task starts (``asyncio.to_thread`` copies it).
        """
        return self._context.read()

    def read_steps(
        self, method: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> tuple[Any, Steps[Any]] | None:
        """The session and steps of :meth:`search_channels` (``None`` for another method).

        For :class:`semrag._steps.Together`: it and ``overlapping_chunks_many`` (whose
        steps :class:`~semrag.neo4j._stored.StoredCorpus` gives), which do not depend on
        each other, run as one statement.
        """
        if method != self.search_channels:
            return None
        return self.store.session, self._search_channels_steps(*args, **kwargs)

    @property
    def version(self) -> int:
        """The index version the database holds (a round trip)."""
        return self.current_version()

    def _current_version_steps(self) -> Steps[int]:
        """:attr:`version` as a method, for callers that also await :meth:`acurrent_version`."""
        rows = yield Ask(READ_STATE, {"name": self.name})
        return int((rows[0]["state"] or {})["version"])

    current_version, acurrent_version = read_pair(_current_version_steps, _session)

    # -- searches -------------------------------------------------------------------------------
    def _search_channels_steps(
        self, vectors: npt.ArrayLike, queries: Sequence[str], k: int
    ) -> Steps[tuple[Ints, list[list[tuple[int, float]]]]]:
        """Dense top-``k`` ids of each vector and full-text top ``k`` of each query, at once.

        One round trip (the chunks come with them), as the embedded reader's
        ``search_channels`` is one read. A vector this read has already ranked
        (:meth:`dense_search`: PPR's dense seeds, which IAR's walk asks first) is not
        searched again: the head of its ranking is fetched by id.
        """
        v = np.atleast_2d(np.asarray(vectors, np.float32))
        self._context.check_dim(v)
        ranked = [self._context.ranked_candidates(q, int(k)) for q in v]
        if not queries and all(r is None for r in ranked):
            return (yield from self._context.dense_steps(v, k))[1], []
        todo = [row for row, r in enumerate(ranked) if r is None]  # searched by vector
        rows = yield Ask(
            CHANNELS,
            {
                "dense_n": self._context.candidates(int(k)),
                "dense_keep": self._context.kept(int(k)),
                "vectors": [as_floats(v[row]) for row in todo],
                "ranked": [{"row": row, "ids": r} for row, r in enumerate(ranked) if r is not None],
                "sparse_n": int(k),
                "queries": [lucene_query(q) for q in queries],
            },
            CHANNELS_COLUMNS,
        )
        dense = [{**r, "row": todo[r["row"]]} for r in rows if r["channel"] == "dense"]
        dense += [r for r in rows if r["channel"] == "ranked"]
        sparse = [r for r in rows if r["channel"] == "sparse"]
        return self._context.dense_rows(dense, v, k)[1], self._context.sparse_rows(
            sparse, len(queries)
        )

    search_channels, asearch_channels = read_pair(_search_channels_steps, _session)

    def _dense_search_steps(self, vector: Floats, k: int) -> Steps[tuple[Floats, Ints]]:
        """Dense top-``k`` as arrays: cosine similarities and chunk ids, best first.

        The vector index's own ranking: ids and scores only (a long ranking such as PPR's
        seeds would otherwise bring every chunk's text and vector to be scored again), so
        a score may differ from the embedded index's in its last bits (about 1e-7).
        """
        k = check_k("Neo4jIndex.dense_search", k, 10)
        vectors = np.asarray(vector, np.float32)[None, :]
        return first_hits((yield from self._context.ranking_steps(vectors, k)))

    dense_search, adense_search = read_pair(_dense_search_steps, _session)

    def _search_vector_steps(self, vector: Floats, k: int) -> Steps[list[ScoredChunk]]:
        k = check_k("Neo4jIndex.search", k, 10)
        scores, ids = yield from self._context.dense_steps(
            np.asarray(vector, np.float32)[None, :], k
        )
        keep = ids[0] >= 0
        rows = yield from self._context.rows_steps([int(i) for i in ids[0][keep]])
        return [
            ScoredChunk(c, float(s), {"dense": float(s)}, ({"channel": "dense", "rank": r},))
            for r, ((c, _), s) in enumerate(zip(rows, scores[0][keep], strict=True))
        ]

    def search(self, query: str, k: int = 10) -> list[ScoredChunk]:
        """Dense top-``k`` chunks for ``query``, scored exactly as the embedded index scores them.

        One round trip: the chunks come with them.
        """
        vector = query_vector(self, check_query("Neo4jIndex.search", query))
        with self.read():
            return self._context.run(self._search_vector_steps(vector, k))

    async def asearch(self, query: str, k: int = 10) -> list[ScoredChunk]:
        """Async twin of :meth:`search` (on the async driver)."""
        vector = await aquery_vector(self, check_query("Neo4jIndex.search", query))
        with self.read():
            return await self._context.arun(self._search_vector_steps(vector, k))

    def search_sparse(self, query: str, k: int = 10) -> list[ScoredChunk]:
        """Full-text (Lucene BM25) top-``k`` chunks for ``query``."""
        with self.read():
            return self._context.run(self._search_sparse_steps(query, k))

    async def asearch_sparse(self, query: str, k: int = 10) -> list[ScoredChunk]:
        """Async twin of :meth:`search_sparse` (on the async driver)."""
        with self.read():
            return await self._context.arun(self._search_sparse_steps(query, k))

    def _search_sparse_steps(self, query: str, k: int) -> Steps[list[ScoredChunk]]:
        check_query("Neo4jIndex.search_sparse", query)
        k = check_k("Neo4jIndex.search_sparse", k, 10)
        hits = (yield from self._context.sparse_steps([query], k))[0]
        rows = yield from self._context.rows_steps([i for i, _ in hits])
        return [
            ScoredChunk(c, s, {"sparse": s}, ({"channel": "sparse", "rank": r},))
            for r, ((c, _), (_, s)) in enumerate(zip(rows, hits, strict=True))
        ]

    def _sparse_scores_many_steps(
        self, queries: Sequence[str], chunk_ids: Sequence[int]
    ) -> Steps[npt.NDArray[np.float64]]:
        """Full-text scores of each query for the given chunks (0 where no term matches).

        One round trip; shape ``(len(queries), len(chunk_ids))``.
        """
        ids = [int(i) for i in chunk_ids]
        out = np.zeros((len(queries), len(ids)), np.float64)
        if not ids or not queries:
            return out
        texts = [lucene_query(q) for q in queries]
        tokens = [id_token(i) for i in ids]
        keyed = [  # (or the ids in Cypher, for a database written before the id tokens)
            {"row": row, "text": among(text, tokens[a : a + step])}
            for row, (query, text) in enumerate(zip(queries, texts, strict=True))
            for step in [max(64, _CLAUSES - len(query.split()))]
            for a in range(0, len(tokens), step)
        ]
        params = {"name": self.name, "keyed": keyed, "texts": texts, "ids": ids}
        column = {i: j for j, i in enumerate(ids)}
        for r in (yield Ask(SPARSE_AMONG, params)):
            out[r["row"], column[int(r["id"])]] = float(r["score"])
        return out

    sparse_scores_many, asparse_scores_many = read_pair(_sparse_scores_many_steps, _session)

    def _sentence_vectors_of_steps(self, chunk_ids: Sequence[int]) -> Steps[list[Floats]]:
        """The vectors of each chunk's sentences, in one round trip."""
        chunks = [c for c, _ in (yield from self._context.rows_steps(chunk_ids))]
        rows = [
            {"doc_id": c.doc_id, "first": c.sentence_start, "end": c.sentence_end} for c in chunks
        ]
        out: list[Floats] = [np.zeros((0, self.embedder.dim), np.float32) for _ in chunks]
        for r in (yield Ask(CHUNK_SENTENCES, {"rows": rows})) if rows else []:
            if r["vecs"]:
                out[r["row"]] = np.stack([from_bytes(b) for b in r["vecs"]])
        return out

    sentence_vectors_of, asentence_vectors_of = read_pair(_sentence_vectors_of_steps, _session)

    def ssg_view(self) -> RemoteView:
        """The similarity graph as :class:`~semrag.retrieval.SSGRetriever` reads it.

        Fetched as the traversal goes: the anchor search (with the version, and the first
        nodes' sentences and edges) is one round trip, and more nodes are loaded in
        batches: the node asked for, the met nodes closest to the query, and the asked
        node's out-neighbours the traversal most likely visits next (see ``RemoteView``).
        A node's number holds for one query only.

        Raises:
            ConfigError: if the stored index has no similarity graph.
        """
        if self.ssg_config is None:
            raise ConfigError("the stored index was built with ssg=False")
        return RemoteView(self._context)

    @property
    def doc_ids(self) -> list[str]:
        """Ids of the stored documents (sorted; the database keeps no insertion order)."""
        return [r["id"] for r in self._context.read_rows(DOC_IDS)]

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and self._context.read_rows(HAS_DOC, id=doc_id)[0]["n"] > 0

    def __len__(self) -> int:
        return int(self._context.read_rows(COUNT_DOCS)[0]["n"])

    def __repr__(self) -> str:
        return f"Neo4jIndex({self.store!r}, embedder={self.embedder!r})"


if TYPE_CHECKING:  # mypy checks that the reader keeps the contract it offers

    def _keeps_the_contract(
        r: Neo4jIndex,
    ) -> tuple[CorpusReader, CorpusSearch, SimilarityGraphReads, AsyncReads, PieceReads, KeptParts]:
        return r, r, r, r, r, r
