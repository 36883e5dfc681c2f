"""What a change writes: its rows, the edges whose lists changed, and their digests."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag.index.change import IndexedDocument
from semrag.index.parts.ssg import SemanticSimilarityGraph
from semrag.neo4j._cypher import as_floats, to_bytes
from semrag.neo4j._index_cypher import part_key
from semrag.neo4j._index_state import entry_fingerprint, to_json
from semrag.types import Ints


class Edges:
    """A similarity graph's edges and bridges in keys that survive renumbering.

    ``rows`` is an ``(edges, 6)`` int64 array: source document number, source window,
    target document number, target window, kind, and the float32 score's bits; document
    numbers index :attr:`doc_ids`.
    """

    def __init__(self, graph: SemanticSimilarityGraph | None) -> None:
        if graph is None or graph.n_nodes == 0:
            self.doc_ids: list[str] = [] if graph is None else list(graph.doc_ids)
            self.rows = np.zeros((0, 6), np.int64)
            self.bridges: dict[str, list[tuple[str, float]]] = {d: [] for d in self.doc_ids}
            return
        self.doc_ids = list(graph.doc_ids)
        node_doc = graph.node_doc.astype(np.int64)
        local = np.arange(node_doc.size) - np.searchsorted(node_doc, node_doc, side="left")
        indptr, indices, scores, kinds = graph.csr()
        src = np.repeat(np.arange(node_doc.size), np.diff(indptr))
        dst = indices.astype(np.int64)
        bits = np.asarray(scores, np.float32).view(np.int32).astype(np.int64)
        self.rows = np.stack(
            [
                node_doc[src],
                local[src],
                node_doc[dst],
                local[dst],
                kinds.astype(np.int64),
                bits,
            ],
            axis=1,
        )
        self.bridges = {
            self.doc_ids[d]: [(self.doc_ids[j], float(s)) for j, s in row]
            for d, row in enumerate(graph.theme_bridges)
        }

    def digest(self) -> str:
        """A digest of every edge and bridge, by document id."""
        h = hashlib.sha256(json.dumps(self.doc_ids).encode())
        h.update(np.ascontiguousarray(self.rows).tobytes())
        h.update(json.dumps(sorted(self.bridges.items())).encode())
        return h.hexdigest()

    def renumbered(
        self, doc_ids: Sequence[str], gone: set[str]
    ) -> tuple[Ints, set[tuple[int, int]]]:
        """These rows in ``doc_ids``' numbering, and the new numbers of sources to rewrite.

        Rows of documents in ``gone`` are dropped; a kept source that pointed into a gone
        document is to be rewritten (its edge left with the document).
        """
        pos = {d: i for i, d in enumerate(doc_ids)}
        new_of_old = np.array(
            [-1 if d in gone or d not in pos else pos[d] for d in self.doc_ids] or [0], np.int64
        )
        if not self.rows.size:
            return self.rows, set()
        rows = self.rows.copy()
        rows[:, 0] = new_of_old[rows[:, 0]]
        rows[:, 2] = new_of_old[rows[:, 2]]
        lost = (rows[:, 0] >= 0) & (rows[:, 2] < 0)
        dirty = {(int(a), int(b)) for a, b in rows[lost][:, :2]}
        return rows[(rows[:, 0] >= 0) & (rows[:, 2] >= 0)], dirty


class Gone:
    """A removed document known only by its id (what a difference with the database needs)."""

    __slots__ = ("id", "chunk_ids")

    def __init__(self, doc_id: str) -> None:
        self.id = doc_id
        self.chunk_ids: list[int] = []


def changed_sources(
    old: Ints, new: Ints, doc_ids: Sequence[str], added: set[str]
) -> set[tuple[int, int]]:
    """Sources (document number, window) whose edges differ between ``old`` and ``new``.

    Sources of ``added`` documents are left out (they are written whole). Each source's
    edge list is summarised by its length and a 64-bit hash of its edges as a multiset
    (in one pass over the rows, which come grouped by source), and only the summaries
    are compared: linear in the edges, where sorting the edges themselves took seconds
    per change at 100k chunks.
    """
    is_added = np.array([d in added for d in doc_ids] or [False])
    parts = [rows[~is_added[rows[:, 0]]] if rows.size else rows for rows in (old, new)]
    summaries = [_edge_list_summaries(rows) for rows in parts]
    keys, sums, counts = (np.concatenate(pair) for pair in zip(*summaries, strict=True))
    if not keys.size:
        return set()
    order = np.lexsort((counts, sums, keys))
    k, h, n = keys[order], sums[order], counts[order]
    same = (k[1:] == k[:-1]) & (h[1:] == h[:-1]) & (n[1:] == n[:-1])
    alone = np.ones(len(order), bool)
    alone[1:] &= ~same
    alone[:-1] &= ~same
    return {(int(x) >> 32, int(x) & 0xFFFFFFFF) for x in k[alone].tolist()}


_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))


def _mixed(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """SplitMix64's finaliser of each value (wrapping arithmetic)."""
    z = x + _MIX[0]
    z = (z ^ (z >> np.uint64(30))) * _MIX[1]
    z = (z ^ (z >> np.uint64(27))) * _MIX[2]
    return z ^ (z >> np.uint64(31))


def _edge_list_summaries(rows: Ints) -> tuple[Ints, npt.NDArray[np.uint64], Ints]:
    """``(source keys, multiset hashes, lengths)`` of each run of rows with one source."""
    if not rows.size:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros(0, np.int64)
    source = (rows[:, 0] << 32) | rows[:, 1]
    starts = np.flatnonzero(np.r_[True, source[1:] != source[:-1]])
    target = ((rows[:, 2] << 32) | rows[:, 3]).astype(np.uint64)
    label = ((rows[:, 4] << 32) | (rows[:, 5] & 0xFFFFFFFF)).astype(np.uint64)
    edge = _mixed(_mixed(target) ^ label)
    return source[starts], np.add.reduceat(edge, starts), np.diff(np.r_[starts, len(source)])


class _EdgeRows(Sequence[dict[str, Any]]):
    """The rows of some edges, made a slice at a time (a first build has millions)."""

    def __init__(self, ids: Sequence[str], rows: Ints) -> None:
        self._ids, self._rows = ids, rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, at: Any) -> Any:
        if isinstance(at, slice):
            return _EdgeRows(self._ids, self._rows[at])
        return self._row(self._rows[at])

    def _row(self, row: Ints) -> dict[str, Any]:
        a, n, b, m, kind, bits = (int(x) for x in row)
        return {
            "src": part_key(self._ids[a], n),
            "dst": part_key(self._ids[b], m),
            "kind": kind,
            "score": float(np.int32(bits).view(np.float32)),
        }


def changed_edge_rows(edges: Edges, sources: set[tuple[int, int]]) -> _EdgeRows:
    if not sources or not edges.rows.size:
        return _EdgeRows(edges.doc_ids, edges.rows[:0])
    want = np.array(sorted(sources), np.int64)
    keys = edges.rows[:, 0] * (1 << 32) + edges.rows[:, 1]
    pick = np.isin(keys, want[:, 0] * (1 << 32) + want[:, 1])
    return _EdgeRows(edges.doc_ids, edges.rows[pick])


Statement = tuple[str, dict[str, Any]]


def run_statements(steps: Sequence[Sequence[Statement]]) -> Callable[[Any], None]:
    """A transaction function running every statement of ``steps`` in order."""

    def work(tx: Any) -> None:
        for step in steps:
            for query, params in step:
                tx.run(query, _wire(params)).consume()

    return work


def _wire(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` as the driver takes them, made as a batch is sent.

    Rows keep their vectors as numpy rows until then (a first build of a large corpus
    would hold every vector again as a list of floats): ``vector`` goes as a float list
    (what the vector indexes read), ``vec`` as float32 bytes.
    """
    rows = params.get("rows")
    if rows is None:
        return params
    wired = []
    for row in rows:
        if isinstance(row.get("vec"), np.ndarray):
            row = dict(row, vec=to_bytes(row["vec"]))
            if "vector" in row:
                row["vector"] = as_floats(row["vector"])
        wired.append(row)
    return {**params, "rows": wired}


def by_document(
    docs: list[dict[str, Any]], parts: Sequence[list[dict[str, Any]]], most: int
) -> Iterator[tuple[list[dict[str, Any]], ...]]:
    """The rows in groups of whole documents, each group at most ``most`` rows (or one doc).

    ``parts`` are row lists keyed by ``doc_id`` (chunks, sentences, ...); a group is the
    documents' rows, then each part's rows of those documents.
    """
    width = 1 + len(parts)
    by_doc: dict[str, list[list[dict[str, Any]]]] = {
        d["id"]: [[d]] + [[] for _ in parts] for d in docs
    }
    for j, rows in enumerate(parts, start=1):
        for row in rows:
            by_doc[row["doc_id"]][j].append(row)
    group: list[list[dict[str, Any]]] = [[] for _ in range(width)]
    size = 0
    for doc in by_doc.values():
        n = sum(map(len, doc))
        if size and size + n > most:
            yield tuple(group)
            group, size = [[] for _ in range(width)], 0
        for g, rows in zip(group, doc, strict=True):
            g.extend(rows)
        size += n
    if size:
        yield tuple(group)


def document_rows(
    added: Iterable[IndexedDocument], *, windows: bool
) -> tuple[list[dict[str, Any]], ...]:
    """Rows of the documents, chunks, sentences and (with ``windows``) window nodes.

    Each document's ``seq`` (its place in the index's order) is set when it is written.
    """
    docs: list[dict[str, Any]] = []
    chunks: list[dict[str, Any]] = []
    sentences: list[dict[str, Any]] = []
    nodes: list[dict[str, Any]] = []
    for e in added:
        doc_id = e.doc.id
        docs.append(
            {
                "id": doc_id,
                "text": e.doc.text,
                "metadata": to_json(e.doc.metadata, "document metadata"),
                "themes": list(e.themes),
                "fingerprint": entry_fingerprint(e),
                "n_sentences": len(e.sentences),
            }
        )
        for cid, c, v in zip(e.chunk_ids, e.chunks, e.chunk_vectors, strict=True):
            chunks.append(
                {
                    "id": int(cid),
                    "doc_id": doc_id,
                    "start": c.start,
                    "end": c.end,
                    "text": c.text,
                    "token_count": int(c.token_count),
                    "index": int(c.index),
                    "sentence_start": int(c.sentence_start),
                    "sentence_end": int(c.sentence_end),
                    "metadata": to_json(c.metadata, "chunk metadata"),
                    "vector": v,
                    "vec": v,
                }
            )
        spans = e.sentences
        for i, (s, v) in enumerate(zip(spans, e.sentence_vectors, strict=True)):
            stop = spans[i + 1].start if i + 1 < len(spans) else s.end
            sentences.append(
                {
                    "key": part_key(doc_id, i),
                    "doc_id": doc_id,
                    "i": i,
                    "start": s.start,
                    "end": s.end,
                    "text": e.doc.text[s.start : max(stop, s.end)],  # up to the next sentence
                    "vec": v,
                }
            )
        if windows:
            for n, ((a, b), v) in enumerate(zip(e.node_ranges, e.node_vectors, strict=True)):
                nodes.append(
                    {
                        "key": part_key(doc_id, n),
                        "doc_id": doc_id,
                        "n": n,
                        "first": int(a),
                        "end": int(b),
                        "vector": v,
                        "vec": v,
                    }
                )
    return docs, chunks, sentences, nodes
