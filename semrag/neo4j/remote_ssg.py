"""The semantic similarity graph of an index in Neo4j, read node by node."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag.errors import (
    ConfigError,
    NotIndexedError,
    StoreError,
)
from semrag.neo4j._cypher import as_floats, from_bytes
from semrag.neo4j._index_cypher import ANCHORS, LOAD, LOAD_AHEAD, PCA, VIEW_STATE
from semrag.neo4j._read_context import ReadContext
from semrag.neo4j._session import Ask, Steps
from semrag.types import Chunk, Floats, Ints, Span


class _Rows:
    """Rows fetched so far, indexed like an array (an int, or a list of ints)."""

    def __init__(self, get: Callable[[int], Any], dim: int) -> None:
        self._get, self._dim = get, dim

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, (int, np.integer)):
            return self._get(int(idx))
        rows = [self._get(int(i)) for i in idx]
        return np.stack(rows) if rows else np.zeros((0, self._dim), np.float32)


class _RemoteGraph:
    """:class:`~semrag.index.parts.ssg.SemanticSimilarityGraph`'s read side, fetched as needed."""

    def __init__(self, view: RemoteView) -> None:
        self._view = view
        self.pca: tuple[Floats, Floats] | None = None
        """The stored graph's PCA ``(mean, components)``, once read in this query."""
        self.node_vectors = _Rows(view.node_vector, view.dim)
        self.node_sentences = _Rows(view.node_range, 2)

    @property
    def n_nodes(self) -> int:
        """Window nodes in the stored graph (read with the anchor search, or now)."""
        return int(self._view.state()["windows"] or 0)

    def neighbours(self, node: int) -> tuple[Ints, Floats, npt.NDArray[np.int8]]:
        """``(nodes, scores, kinds)`` of the edges leaving ``node`` (fetched in a batch)."""
        return self._view.edges(node)

    def project_3d(self, vectors: Floats) -> Floats:
        """Project vectors with the stored graph's PCA.

        Read with the anchor search when it asked for it, else once per query.
        """
        pca = self.pca
        if pca is None:
            r = self._view.read_pca()
            pca = self.keep_pca(r["mean"], r["components"])
        mean, components = pca
        v = np.asarray(vectors, dtype=np.float32)
        return ((v - mean) @ components.T).astype(np.float32)

    def keep_pca(
        self, mean: Sequence[float] | None, components: Sequence[float] | None
    ) -> tuple[Floats, Floats]:
        """Hold the PCA as a statement returned it (no PCA: an empty projection)."""
        dim = self._view.dim
        self.pca = (
            np.asarray(mean or np.zeros(dim), np.float32),
            np.asarray(components or [], np.float32).reshape(-1, dim),
        )
        return self.pca


class _RemoteNodeIndex:
    """The anchor search: the window vector index, candidates scored exactly."""

    def __init__(self, view: RemoteView) -> None:
        self._view = view

    def search(self, query: Floats, k: int) -> tuple[Floats, Ints]:
        """``(scores, ids)`` of shape ``(1, k)``, best first (ties to the lower node)."""
        return self._view.run(self._view.search_steps(query, k))


class RemoteView:
    """:class:`~semrag.index.semantic_index.SSGView` over the database, for one query.

    A node's number is ``seq << 32 | n`` (window ``n`` of the document placed ``seq`` in
    the index's order) and a sentence's ``seq << 32 | i``: both sort as the embedded
    index's global numbers do, so every tie a traversal breaks by number breaks alike,
    and a run of sentence numbers is a run of one document's sentences.

    Nodes arrive with their vectors (from the anchor search, or as a loaded node's
    neighbours). A node's sentences and out-edges are loaded when first needed, in one
    round trip with those of the ``batch - 1`` other met nodes closest to the query that
    are not loaded yet and of the node's ``ahead`` out-neighbours that the traversal's own
    next-hop rule ranks first (the server ranks them, :meth:`ahead_rank`). A greedy
    traversal (one next hop per node) then most likely walks a chain: the best of those,
    that node's best hop, and so on; the server follows that chain for ``LEVELS - 1``
    more nodes and loads the ``follow`` best hops of each too. So a traversal mostly goes
    to loaded nodes, and most steps need no round trip. The anchor search loads its first
    candidates the same way, in its own round trip.

    A traversal asks for its reads as steps (:meth:`search_steps`, :meth:`load_steps`)
    that yield statements, answered by :meth:`fetch` or, on the async path, awaited on the
    store's async driver (:meth:`afetch`). Read through the graph's methods instead, the
    view loads what they need with blocking reads.
    """

    batch = 8
    ahead = 16
    follow = 2

    def __init__(self, context: ReadContext) -> None:
        self._context = context
        self.dim = dim = context.dim
        self._state: Mapping[str, Any] | None = None
        self._q: Floats | None = None
        self._keys: dict[int, str] = {}
        self._numbers: dict[str, int] = {}  # node number by key
        self._vectors: dict[int, Floats] = {}
        self._ranges: dict[int, tuple[int, int]] = {}
        self._adjacent: dict[int, tuple[Ints, Floats, npt.NDArray[np.int8]]] = {}
        self._docs: dict[int, str] = {}  # by seq
        self._metadata: dict[str, Any] = {}
        self._sentences: dict[int, tuple[Span, str, Floats]] = {}
        self.graph = _RemoteGraph(self)
        self.node_index = _RemoteNodeIndex(self)
        self.sentence_matrix = _Rows(self._sentence_vector, dim)

    def state(self) -> Mapping[str, Any]:
        """The stored graph's state as this query read it (with its anchor search, or now)."""
        if self._state is None:
            name = self._context.name
            rows = self._context.read_rows(VIEW_STATE, name=name)
            if not rows:
                raise ConfigError(f"the database holds no semrag index named {name!r}")
            self._state = rows[0]
        return self._state

    @property
    def version(self) -> int:
        """The index version this query read (with its anchor search)."""
        return int(self.state()["version"])

    def node_vector(self, node: int) -> Floats:
        """The vector of a node met in this query."""
        return self._vectors[node]

    def node_range(self, node: int) -> tuple[int, int]:
        """The global sentence range of a node met in this query."""
        return self._ranges[node]

    def edges(self, node: int) -> tuple[Ints, Floats, npt.NDArray[np.int8]]:
        """``(nodes, scores, kinds)`` of the edges leaving ``node`` (loaded in a batch)."""
        if node not in self._adjacent:
            self.run(self.load_steps([node]))
        return self._adjacent[node]

    def read_pca(self) -> Mapping[str, Any]:
        """The stored graph's PCA (``mean``, ``components``): one round trip."""
        return self._context.read_rows(PCA, name=self._context.name)[0]

    def run(self, steps: Steps[Any]) -> Any:
        """Drive read steps with blocking reads."""
        return self._context.run(steps)

    def _add(self, row: Mapping[str, Any]) -> int:
        """The number of the node in ``row`` (kept when first met)."""
        seq = int(row["seq"]) << 32
        node = seq | int(row["n"])
        if node in self._keys:
            return node
        doc_id = row["doc_id"]
        if int(row["seq"]) not in self._docs:
            self._docs[int(row["seq"])] = doc_id
            self._metadata[doc_id] = json.loads(row["metadata"])
        self._keys[node] = row["key"]
        self._numbers[row["key"]] = node
        self._vectors[node] = from_bytes(row["vec"])
        self._ranges[node] = (seq | int(row["first"]), seq | int(row["end"]))
        return node

    def fetch(self, ask: Ask) -> list[dict[str, Any]]:
        """Answer one read a step asked for (blocking)."""
        return self._context.read_rows(ask.query, **ask.params)

    async def afetch(self, ask: Ask) -> list[dict[str, Any]]:
        """Async twin of :meth:`fetch`, on the store's async driver."""
        return await self._context.aread_rows(ask.query, **ask.params)

    def search_steps(
        self, query: Floats, k: int, *, pca: bool = False, load: int = 0, rank: str = "query"
    ) -> Steps[tuple[Floats, Ints]]:
        """The anchor search as a step: ``(scores, ids)`` of shape ``(1, k)``, best first.

        Ties go to the lower node. The index version comes in the same round trip, with
        ``pca`` the graph's PCA, which ``triangulation_geometric_3d`` projects with, and
        with ``load`` the first ``min(load, batch)`` candidates in the vector index's order
        loaded as :meth:`load_steps` loads them (with the look-ahead of the first, ranked
        by ``rank``): what a traversal loads next, unless exact scores reorder the
        candidates. The PCA is sent only when it differs from the one this index last read
        (:func:`digest_of_pca`): that one, if any, ranks this search's look-ahead (by the
        geometric rule) before the search says whether it is current.
        """
        context = self._context
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        self._q = q
        seen = context.pca_read if pca else None
        if seen is not None:  # until the search says it is current, it only ranks the look-ahead
            self.graph.pca = seen[1]
        found = yield Ask(
            ANCHORS,
            {
                "name": context.name,
                "n": context.candidates(int(k)),
                "vector": as_floats(q),
                "pca": bool(pca),
                "pca_digest": None if seen is None else seen[0],
                "load": min(int(load), self.batch),
                "ahead": int(self.ahead),
                "follow": self._follow(rank),
                "rank": self.ahead_rank(rank),
                "known": [],
                "visited": [],
            },
        )
        if not found:
            raise ConfigError(f"the database holds no semrag index named {context.name!r}")
        self._state = found[0]
        if pca:
            digest = found[0]["pca_digest"]
            if seen is None or digest != seen[0]:  # changed, or no digest stored
                kept = self.graph.keep_pca(*found[0]["pca"])
                context.pca_read = None if digest is None else (digest, kept)
        nodes = sorted({self._add(r) for r in found[0]["nodes"]})
        loaded = found[0]["loaded"]
        first = [r["key"] for r in found[0]["nodes"][: min(int(load), self.batch)]]
        self._take(loaded, [self._numbers[key] for key in first])
        scores = np.full((1, k), -np.inf, np.float32)
        ids = np.full((1, k), -1, np.int64)
        if nodes:
            sims = np.stack([self._vectors[i] for i in nodes]) @ q
            top = np.argsort(-sims, kind="stable")[:k]
            ids[0, : top.size] = np.asarray(nodes, np.int64)[top]
            scores[0, : top.size] = sims[top]
        return scores, ids

    def ahead_rank(self, rank: str) -> dict[str, Any]:
        """How the look-ahead ranks a node's out-neighbours: as a traversal's next hop.

        ``rank`` names the traversal's rule: ``"query"`` (similarity to the query),
        ``"edge"`` (the edge's score: ``ssg_traversal``), ``"average"`` (query similarity
        plus edge score: ``triangulation_average``), ``"fulldim"`` (nearest ``2 q - node``:
        ``triangulation_fulldim``), ``"geometric"`` (the same in the PCA space:
        ``triangulation_geometric_3d``; by query similarity until the PCA is known). The
        ranking only decides what is fetched early; the traversal scores every hop itself.

        Raises:
            ConfigError: for an unknown rule.
        """
        weights = {
            "query": (1.0, 0.0, 0.0),
            "edge": (0.0, 1.0, 0.0),
            "average": (1.0, 1.0, 0.0),
            "fulldim": (2.0, 0.0, -1.0),
            "geometric": (0.0, 0.0, 0.0),
        }
        if rank not in weights:
            raise ConfigError(f"unknown look-ahead rule {rank!r}: one of {sorted(weights)}")
        pca = self.graph.pca
        if rank == "geometric" and (pca is None or self._q is None):
            rank = "query"
        query, edge, source = weights[rank]
        out: dict[str, Any] = {
            "query": query,
            "edge": edge,
            "source": source,
            "axes": [],
            "scale": [],
            "base": [],
        }
        if rank == "geometric":
            assert pca is not None and self._q is not None
            mean, components = pca
            q3 = self.graph.project_3d(self._q[None, :])[0]
            # From node a, hop v scores -|p(v) + p(a) - 2 p(q)| with p(x) = (x - mean) C^T:
            # per axis, |C_i| (v + a) . C_i / |C_i| - 2 (mean . C_i + p_i(q)).
            for axis, t in zip(components, q3, strict=False):
                norm = float(np.linalg.norm(axis))
                if norm > 0:
                    out["axes"].append(as_floats(axis / norm))
                    out["scale"].append(norm)
                    out["base"].append(2 * (float(mean @ axis) + float(t)))
        return out

    def _follow(self, rank: str) -> int:
        """Hops loaded per further level of the predicted chain (for a greedy rule only).

        Every rule but ``"query"`` is greedy (one next hop per node); ``"query"``'s
        traversals go best-first over all met nodes, or down a ranking.
        """
        return 0 if rank == "query" else self.follow

    def load_steps(
        self, nodes: Sequence[int], *, rank: str = "query", visited: Iterable[int] = ()
    ) -> Steps[None]:
        """Load the sentences and out-edges of the ``nodes`` not loaded yet.

        The next likely nodes come with them (see the class doc; ``rank`` as in
        :meth:`ahead_rank`; ``visited``: the nodes the traversal has visited, which it
        never goes to again): one step, or none when all are loaded.
        """
        asked = [int(n) for n in dict.fromkeys(nodes) if int(n) not in self._adjacent]
        if not asked:
            return
        batch = list(asked)
        waiting = [n for n in self._keys if n not in self._adjacent and n not in asked]
        room = self.batch - len(batch)
        if waiting and self._q is not None and room > 0:
            sims = np.stack([self._vectors[n] for n in waiting]) @ self._q
            batch += [waiting[j] for j in np.argsort(-sims, kind="stable")[:room]]
        keys = [self._keys[n] for n in batch]
        if self.ahead and self._q is not None:
            params = {
                "keys": keys,
                "q": as_floats(self._q),
                "ahead": int(self.ahead),
                "follow": self._follow(rank),
                "rank": self.ahead_rank(rank),
                "known": [self._keys[n] for n in self._adjacent],
                "visited": [self._keys[int(n)] for n in visited if int(n) in self._keys],
            }
            ask = Ask(LOAD_AHEAD, params)
        else:
            ask = Ask(LOAD, {"keys": keys})
        rows = yield ask
        self._take(rows, batch)

    def _take(self, rows: list[dict[str, Any]], asked: Sequence[int]) -> None:
        """Keep the sentences and out-edges that a load of the ``asked`` nodes returned."""
        keys = {self._keys[n] for n in asked}
        rows.sort(key=lambda r: r["source"] not in keys)  # the asked nodes meet the others
        for r in rows:
            source = self._numbers[r["source"]]
            seq = source & ~0xFFFFFFFF
            for srow in r["sentences"]:
                self._sentences.setdefault(
                    seq | int(srow["i"]),
                    (
                        Span(int(srow["start"]), int(srow["end"])),
                        srow["text"],
                        from_bytes(srow["vec"]),
                    ),
                )
            edges = sorted((int(e["kind"]), -float(e["score"]), self._add(e)) for e in r["edges"])
            self._adjacent[source] = (
                np.array([n for _, _, n in edges], np.int64),
                np.array([-s for _, s, _ in edges], np.float32),
                np.array([k for k, _, _ in edges], np.int8),
            )
        for n in asked:  # a node the database no longer has: no sentences, no edges
            self._adjacent.setdefault(
                n, (np.zeros(0, np.int64), np.zeros(0, np.float32), np.zeros(0, np.int8))
            )

    def _sentence(self, global_index: int) -> tuple[Span, str, Floats]:
        found = self._sentences.get(global_index)
        if found is None:
            owner = next((n for n, (a, b) in self._ranges.items() if a <= global_index < b), None)
            if owner is None or owner in self._adjacent:
                raise NotIndexedError(f"sentence {global_index} was not met in this query")
            self.run(self.load_steps([owner]))
            found = self._sentences[global_index]
        return found

    def _sentence_vector(self, global_index: int) -> Floats:
        return self._sentence(global_index)[2]

    def sentence_location(self, global_index: int) -> tuple[str, Span]:
        """``(doc_id, span)`` of a sentence met in this query, by its number."""
        return self._docs[global_index >> 32], self._sentence(global_index)[0]

    def sentence_text(self, global_index: int) -> str:
        """The text of a sentence met in this query."""
        span, text, _ = self._sentence(global_index)
        return text[: span.end - span.start]

    def node_chunk(self, node: int) -> Chunk:
        """A window node as a :class:`Chunk` with exact offsets."""
        a, b = self._ranges[node]
        return self.sentences_chunk(a, b, index=node)

    def sentences_chunk(self, first: int, end: int, *, index: int = 0) -> Chunk:
        """Sentences ``first .. end - 1`` (met in this query, all of one document) as a chunk.

        Raises:
            ConfigError: if the range is empty, crosses a document or was not met.
        """
        seq = first >> 32
        if not (first < end and (end - 1) >> 32 == seq):
            raise ConfigError(f"sentences {first}..{end - 1} are not a run of one document")
        try:
            rows = [self._sentence(i) for i in range(first, end)]
        except KeyError as exc:
            raise ConfigError(f"sentences {first}..{end - 1} were not met in this query") from exc
        doc_id = self._docs[seq]
        text = "".join(t for _, t, _ in rows[:-1]) + self.sentence_text(end - 1)
        start, stop = rows[0][0].start, rows[-1][0].end
        if len(text) != stop - start:
            raise StoreError(f"the stored sentences of {doc_id!r} do not tile its text")
        return Chunk(
            doc_id=doc_id,
            start=start,
            end=stop,
            text=text,
            token_count=int(self._context.tokenizer.count([text])[0]),
            index=index,
            sentence_start=first - (seq << 32),
            sentence_end=end - (seq << 32),
            metadata=self._metadata[doc_id],
        )
