"""The passage graph PPR walks: passages and phrases as arrays (CSR edges, interned names).

:func:`assemble` builds one version's graph from the documents' phrase records (array
operations only); the ``passages`` part keeps the graph of its current version and saves
it (:func:`save_graph`, :func:`load_graph`), so a process that loads the index walks it
without assembling anything.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from semrag._steps import Call, acall
from semrag.errors import NotIndexedError, StoreError
from semrag.index._top_k import top_k
from semrag.types import Chunk

if TYPE_CHECKING:
    from semrag.index.passages import DocPhrases, NameRegistry

Floats = npt.NDArray[np.float32]
Ints = npt.NDArray[np.int64]


class Lookup(Mapping[Any, int]):
    """A read-only mapping ``key -> number`` through a shared registry and this version's numbers.

    Nothing per version is copied: ``slot_of`` is the registry (it only grows) and
    ``number_of_slot[slot]`` is the key's number in this version (``-1``: absent).
    """

    def __init__(self, slot_of: Mapping[Any, int], number_of_slot: Ints, size: int) -> None:
        self._slot_of = slot_of
        self._numbers = number_of_slot
        self._size = size

    def __getitem__(self, key: Any) -> int:
        slot = self._slot_of.get(key)
        if slot is None or slot >= self._numbers.size or self._numbers[slot] < 0:
            raise NotIndexedError(key)
        return int(self._numbers[slot])

    def __iter__(self) -> Iterator[Any]:
        return (
            k for k, s in self._slot_of.items() if s < self._numbers.size and self._numbers[s] >= 0
        )

    def __len__(self) -> int:
        return self._size


class NodeOf(Mapping[int, int]):
    """Chunk id -> passage node, by binary search over the version's sorted chunk ids."""

    def __init__(self, chunk_ids: Ints) -> None:
        self._ids = chunk_ids
        self._by_id = np.argsort(chunk_ids, kind="stable")
        self._sorted = chunk_ids[self._by_id]

    def nodes(self, chunk_ids: Ints) -> Ints:
        """The passage node of each chunk id, ``-1`` for one not in this version."""
        chunk_ids = np.asarray(chunk_ids, np.int64)
        if not self._sorted.size:
            return np.full(chunk_ids.size, -1, np.int64)
        pos = np.minimum(np.searchsorted(self._sorted, chunk_ids), self._sorted.size - 1)
        return np.where(self._sorted[pos] == chunk_ids, self._by_id[pos], -1)

    def __getitem__(self, chunk_id: int) -> int:
        node = int(self.nodes(np.array([chunk_id]))[0])
        if node < 0:
            raise NotIndexedError(chunk_id)
        return node

    def __iter__(self) -> Iterator[int]:
        return iter(self._ids.tolist())

    def __len__(self) -> int:
        return self._ids.size


class Ragged(Sequence[npt.NDArray[np.int64]]):
    """Row ``i`` is ``values[ptr[i]:ptr[i + 1]]`` (one array for every row)."""

    def __init__(self, ptr: Ints, values: Ints) -> None:
        self.ptr, self.values = ptr, values

    def __getitem__(self, i: Any) -> Any:
        return self.values[self.ptr[i] : self.ptr[i + 1]]

    def __len__(self) -> int:
        return self.ptr.size - 1


class Names(Sequence[str]):
    """Phrase ``i``'s display name, read from the registry of every name seen."""

    def __init__(self, names: list[str], ids: Ints) -> None:
        self._names, self._ids = names, ids

    def __getitem__(self, i: Any) -> Any:
        return self._names[int(self._ids[i])]

    def __len__(self) -> int:
        return self._ids.size


@dataclass(frozen=True, slots=True)
class PassageGraph:
    """Passages (chunks) and entity phrases of one index version, as one sparse graph.

    Nodes ``0 .. n_passages - 1`` are passages (in index order), the rest phrases (in the
    order the passages first mention them). Built per version from per-document pieces
    that are computed once, so a change costs the changed documents plus a few array
    operations over the whole graph.
    """

    version: int
    """The index version the graph was built from."""
    chunk_ids: npt.NDArray[np.int64]
    """The index's chunk id of each passage node."""
    chunks: Sequence[Chunk]
    """The chunk of each passage node (of this version: hits never look up a later one);
    read many at once with :func:`chunks_at`."""
    names: Sequence[str]
    """Display name of each phrase node (node ``n_passages + i``)."""
    keys: Mapping[str, int]
    """Lower-cased name (or entity id) -> phrase number."""
    passage_phrases: Sequence[npt.NDArray[np.int64]]
    """Phrase numbers each passage mentions."""
    df: npt.NDArray[np.float64]
    """Passages mentioning each phrase (at least 1)."""
    transition: Any
    """Column-stochastic transition matrix over all nodes (scipy CSR, for fast products)."""
    degree: npt.NDArray[np.float64]
    """Weighted degree of each node (the undirected adjacency's column sums)."""
    node_of: NodeOf
    """Chunk id -> passage node (a mapping; :meth:`NodeOf.nodes` looks up many at once)."""
    name_vectors: Floats
    """Unit vectors of every display name seen (rows: the registry's name ids)."""
    phrase_name_ids: Ints
    """The registry's name id of each phrase (a row of :attr:`name_vectors`)."""
    synonym_edges: int
    """How many synonym edges were added."""
    phrase_slots: Ints
    """The registry's key slot of each phrase (what :attr:`keys` numbers)."""

    @property
    def n_passages(self) -> int:
        """Number of passage nodes."""
        return len(self.chunk_ids)

    def nearest_phrases(self, vector: Floats, k: int) -> tuple[Floats, Ints]:
        """The ``k`` phrases whose names are most similar to ``vector``, best first.

        Exact, ties to the lower phrase number. Returns ``(similarities, phrase numbers)``.
        """
        sims = (self.name_vectors @ np.asarray(vector, np.float32))[self.phrase_name_ids]
        k = min(k, sims.size)
        if not k:
            return np.zeros(0, np.float32), np.zeros(0, np.int64)
        numbers, top = top_k(sims[None, :], k)
        return top[0], numbers[0]


def assemble(
    version: int,
    docs: Sequence[DocPhrases],
    reg: NameRegistry,
    *,
    phrases: tuple[Ints, Ints] | None = None,
    relations: Sequence[tuple[str, str, float]] = (),
    synonym_k: int = 0,
    synonym_threshold: float = 0.8,
    chunks: Sequence[Chunk] | None = None,
) -> PassageGraph:
    """One version's graph from its documents' pieces: array operations only.

    ``phrases`` (slots and name ids, in order) are the phrase nodes; by default the
    phrases the passages mention, in the order they first do, each spelled as there.
    ``relations`` (entity id pairs with weights) join phrases; ``synonym_k`` links each
    phrase to its nearest names at or above ``synonym_threshold`` (see
    :func:`synonym_edges`). ``chunks``: the passages' chunks when the documents' pieces
    do not hold them (a reader that fetches them on demand, see :func:`chunks_at`).
    """
    import scipy.sparse as sp

    chunk_ids = np.concatenate([np.zeros(0, np.int64), *(d.chunk_ids for d in docs)])
    if chunks is None:
        chunks = [c for d in docs for c in d.chunks]
    counts = np.concatenate([np.zeros(0, np.int64), *(d.counts for d in docs)])
    slots = np.concatenate([np.zeros(0, np.int64), *(d.slots for d in docs)])
    spelled = np.concatenate([np.zeros(0, np.int64), *(d.names for d in docs)])
    if phrases is None:
        uniq, first = np.unique(slots, return_index=True)
        by_first = np.argsort(first, kind="stable")
        order, name_ids = uniq[by_first], spelled[first[by_first]]
    else:
        order, name_ids = phrases
    n_p, n_e = chunk_ids.size, order.size
    number_of_slot = np.full(len(reg.slot_of), -1, np.int64)
    number_of_slot[order] = np.arange(n_e)
    numbers = number_of_slot[slots]
    ptr = np.r_[0, np.cumsum(counts)].astype(np.int64)
    passage = np.repeat(np.arange(n_p), counts)
    df = np.maximum(np.bincount(numbers, minlength=n_e), 1).astype(np.float64)
    rows, cols, vals = [passage], [numbers + n_p], [np.ones(numbers.size)]
    keys = Lookup(reg.slot_of, number_of_slot, n_e)
    pairs = [
        (n_p + keys[a], n_p + keys[b], w)
        for a, b, w in relations
        if a in keys and b in keys and a != b
    ]
    if pairs:
        rel = np.asarray(pairs, dtype=np.float64).reshape(-1, 3)
        rows.append(rel[:, 0].astype(np.int64))
        cols.append(rel[:, 1].astype(np.int64))
        vals.append(rel[:, 2])
    n_syn = 0
    if n_e > 1 and synonym_k:
        a, b, w = synonym_edges(reg.vectors.view[name_ids], synonym_k, synonym_threshold)
        n_syn = a.size
        rows.append(a + n_p)
        cols.append(b + n_p)
        vals.append(w)
    n = n_p + n_e
    r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    adj = sp.csr_matrix(
        (np.r_[v, v], (np.r_[r, c], np.r_[c, r])), shape=(n, n)
    )  # undirected: each edge both ways (duplicates add up)
    degree = np.asarray(adj.sum(axis=0)).ravel()
    inv = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
    adj.data *= inv[adj.indices]  # column j scaled by 1 / degree(j): column-stochastic
    return PassageGraph(
        version=version,
        chunk_ids=chunk_ids,
        chunks=chunks,
        names=Names(reg.names, name_ids),
        keys=keys,
        passage_phrases=Ragged(ptr, numbers),
        df=df,
        transition=adj,
        degree=degree,
        node_of=NodeOf(chunk_ids),
        name_vectors=reg.vectors.view,
        phrase_name_ids=name_ids,
        synonym_edges=n_syn,
        phrase_slots=order,
    )


def graph_for(
    kept: PassageGraph | None,
    version: int,
    docs: Sequence[DocPhrases],
    reg: NameRegistry,
    *,
    synonym_k: int = 0,
    synonym_threshold: float = 0.8,
    chunks: Sequence[Chunk] | None = None,
) -> tuple[PassageGraph, PassageGraph | None]:
    """A part's graph of ``version``, and what the part keeps after the call.

    Without synonym edges, ``kept`` when it is of ``version``, else assembled and kept;
    with them (``synonym_k > 0``), assembled for the caller alone (``kept`` stays).
    """
    if synonym_k:
        g = assemble(
            version,
            docs,
            reg,
            synonym_k=synonym_k,
            synonym_threshold=synonym_threshold,
            chunks=chunks,
        )
        return g, kept
    if kept is None or kept.version != version:
        kept = assemble(version, docs, reg, chunks=chunks)
    return kept, kept


def chunks_at(g: PassageGraph, nodes: Sequence[int]) -> list[Chunk]:
    """The chunks of passage ``nodes``: one fetch where the graph's chunks are remote.

    A sequence with a ``take(nodes)`` method (a database reader's) is asked once.
    """
    take = getattr(g.chunks, "take", None)
    return list(take(nodes)) if callable(take) else [g.chunks[n] for n in nodes]


async def achunks_at(g: PassageGraph, nodes: Sequence[int]) -> list[Chunk]:
    """Async twin of :func:`chunks_at` (a remote sequence's ``atake`` is awaited)."""
    if not callable(getattr(g.chunks, "take", None)):
        return chunks_at(g, nodes)
    return list(await acall(None, Call("take", (nodes,), on=g.chunks)))


def synonym_edges(
    vectors: Floats, k: int, threshold: float
) -> tuple[Ints, Ints, npt.NDArray[np.float64]]:
    """Synonym edges ``(i, j, similarity)`` with ``i < j``.

    ``vectors`` are the phrases' name vectors, in phrase order. Each phrase's ``k``
    nearest names at or above ``threshold``, every phrase against every one (so not
    incremental: off by default).
    """
    n = vectors.shape[0]
    depth = min(n, k + 1)
    a, b, w = [], [], []
    step = max(1, (1 << 22) // n)
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        nbrs, sims = top_k(vectors[lo:hi] @ vectors.T, depth)
        i = np.repeat(np.arange(lo, hi), depth)
        j, s = nbrs.ravel(), sims.ravel()
        keep = (j > i) & (s >= threshold)
        a.append(i[keep])
        b.append(j[keep])
        w.append(s[keep].astype(np.float64))
    return np.concatenate(a), np.concatenate(b), np.concatenate(w)


GRAPH_FILE = "passage_graph.npz"


def save_graph(g: PassageGraph, directory: Path) -> str:
    """Write ``g`` (its arrays; the registry and chunks are saved by their owners)."""
    t = g.transition
    np.savez(
        directory / GRAPH_FILE,
        version=np.int64(g.version),
        chunk_ids=g.chunk_ids,
        phrase_slots=g.phrase_slots,
        phrase_name_ids=g.phrase_name_ids,
        ptr=g.passage_phrases.ptr,
        numbers=g.passage_phrases.values,
        df=g.df,
        degree=g.degree,
        indptr=t.indptr,
        indices=t.indices,
        data=t.data,
        synonym_edges=np.int64(g.synonym_edges),
    )
    return GRAPH_FILE


def load_graph(directory: Path, docs: Sequence[DocPhrases], reg: NameRegistry) -> PassageGraph:
    """The graph :func:`save_graph` wrote, over the loaded documents' records.

    Raises:
        StoreError: if its arrays do not match the documents.
    """
    import scipy.sparse as sp

    a = np.load(directory / GRAPH_FILE)
    chunk_ids = np.asarray(a["chunk_ids"], np.int64)
    want = np.concatenate([np.zeros(0, np.int64), *(d.chunk_ids for d in docs)])
    if not np.array_equal(chunk_ids, want):
        raise StoreError(f"{directory / GRAPH_FILE}: its passages are not the index's chunks")
    slots = np.asarray(a["phrase_slots"], np.int64)
    n_p, n_e = chunk_ids.size, slots.size
    number_of_slot = np.full(len(reg.slot_of), -1, np.int64)
    number_of_slot[slots] = np.arange(n_e)
    name_ids = np.asarray(a["phrase_name_ids"], np.int64)
    n = n_p + n_e
    transition = sp.csr_matrix((a["data"], a["indices"], a["indptr"]), shape=(n, n))
    return PassageGraph(
        version=int(a["version"]),
        chunk_ids=chunk_ids,
        chunks=[c for d in docs for c in d.chunks],
        names=Names(reg.names, name_ids),
        keys=Lookup(reg.slot_of, number_of_slot, n_e),
        passage_phrases=Ragged(np.asarray(a["ptr"], np.int64), np.asarray(a["numbers"], np.int64)),
        df=np.asarray(a["df"], np.float64),
        transition=transition,
        degree=np.asarray(a["degree"], np.float64),
        node_of=NodeOf(chunk_ids),
        name_vectors=reg.vectors.view,
        phrase_name_ids=name_ids,
        synonym_edges=int(a["synonym_edges"]),
        phrase_slots=slots,
    )
