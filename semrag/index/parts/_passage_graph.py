"""The passage graph PPR walks: passages and phrases as arrays (CSR edges, interned names).

A *passage* node is a document, or a section of a long one (consecutive chunks starting
within :data:`SECTION_CHARS` characters of the section's first), never a single chunk: how
finely a chunker cuts changes what a hit holds, not what the walk finds. The graph keeps
each chunk's phrases too, so a retriever picks the chunk of a passage it returns.

:func:`assemble` builds one version's graph from the documents' phrase records (array
operations only); the ``passages`` part keeps the graph of its current version and saves
it (:func:`save_graph`, :func:`load_graph`), so a process that loads the index walks it
without assembling anything.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from semrag.errors import NotIndexedError, StoreError
from semrag.index._top_k import top_k
from semrag.types import Chunk, Floats, Ints

if TYPE_CHECKING:
    import scipy.sparse as sp

    from semrag.index.parts.passages import DocPhrases, NameRegistry


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


TITLE_WEIGHT = 6.0
"""The weight of an edge between a passage and a document's title phrase (other edges: 1).

A passage that names another document's title is joined to it through that title: of the
edge families ``benchmarks/edge_families.py`` measures, the most precise (0.44 of 2Wiki's
title-mention edges join two gold passages of one question, against 0.013 of shared
phrases). Weighted 6, the walk follows them more: on 2Wiki R@5 0.856 -> 0.885 and
full@10 0.836 -> 0.884, MuSiQue's mean of R@1/2/5/10 and full@10 the same or higher, and
the single-hop check not below dense search (``benchmarks/multihop.py``)."""

SECTION_CHARS = 2000
"""A passage node is a document, or in a long one a run of consecutive chunks that start
within this many characters of the run's first (about 400 words: a few paragraphs)."""


def section_starts(starts: Ints) -> Ints:
    """The positions of the chunks that open a section, given a document's chunk starts."""
    if not starts.size or int(starts[-1]) - int(starts[0]) < SECTION_CHARS:
        return np.zeros(min(1, starts.size), np.int64)
    opens, first = [0], int(starts[0])
    for i, start in enumerate(starts.tolist()):
        if start - first >= SECTION_CHARS:
            opens.append(i)
            first = start
    return np.asarray(opens, np.int64)


class NodeOf(Mapping[int, int]):
    """Chunk id -> passage node, by binary search over the version's sorted chunk ids."""

    def __init__(self, chunk_ids: Ints, passage_of: Ints) -> None:
        self._ids = chunk_ids
        self._by_id = np.argsort(chunk_ids, kind="stable")
        self._sorted = chunk_ids[self._by_id]
        self._passage_of = passage_of

    def positions(self, chunk_ids: Ints) -> Ints:
        """The position of each chunk id in the graph's chunks, ``-1`` for one not in it."""
        chunk_ids = np.asarray(chunk_ids, np.int64)
        if not self._sorted.size:
            return np.full(chunk_ids.size, -1, np.int64)
        pos = np.minimum(np.searchsorted(self._sorted, chunk_ids), self._sorted.size - 1)
        return np.where(self._sorted[pos] == chunk_ids, self._by_id[pos], -1)

    def passages(self, positions: Ints) -> Ints:
        """The passage node of each chunk position."""
        return self._passage_of[np.asarray(positions, np.int64)]

    def nodes(self, chunk_ids: Ints) -> Ints:
        """The passage node of each chunk id, ``-1`` for one not in this version."""
        pos = self.positions(chunk_ids)
        return np.where(pos >= 0, self.passages(np.maximum(pos, 0)), -1)

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
    """Passages (documents or sections) and entity phrases of one index version, as one graph.

    Nodes ``0 .. n_passages - 1`` are passages (in index order), the rest phrases (in the
    order the chunks first mention them). Built per version from per-document pieces
    that are computed once, so a change costs the changed documents plus a few array
    operations over the whole graph.
    """

    version: int
    """The index version the graph was built from."""
    chunk_ids: npt.NDArray[np.int64]
    """The index's chunk ids, in index order (a chunk's *position* is its place here)."""
    chunks: Sequence[Chunk]
    """The chunk at each position (of this version: hits never look up a later one);
    read many at once with :func:`chunks_at`."""
    passage_ptr: npt.NDArray[np.int64]
    """Passage ``i`` holds the chunks at positions ``passage_ptr[i]:passage_ptr[i + 1]``."""
    chunk_phrases: Ragged
    """Phrase numbers each chunk mentions (by position)."""
    names: Sequence[str]
    """Display name of each phrase node (node ``n_passages + i``)."""
    keys: Mapping[str, int]
    """Lower-cased name (or entity id) -> phrase number."""
    passage_phrases: Ragged
    """Phrase numbers each passage mentions (those of its chunks, each once, ascending)."""
    df: npt.NDArray[np.float64]
    """Passages mentioning each phrase (at least 1)."""
    transition: sp.csr_matrix
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
    passage_title: Ints
    """The phrase number of each passage's document title (``-1``: none, or a title other
    documents carry too)."""

    def title_links(self, node: int, among: Sequence[int], text: str = "") -> list[int]:
        """The passages of ``among`` whose document title passage ``node`` names, in order.

        Named: the title is one of the passage's phrases, or a title of several words
        occurs in ``text`` as spelled (the passage's text, where the caller has it: it
        finds titles no phrase rule picks out; a one-word title is too often a common word
        there, and on the single-hop check it displaced answers). A passage of the same
        title (another section of the document) is no link.
        """
        titles = self.passage_title[np.asarray(among, np.int64)]
        own = self.passage_title[node]
        hit = (titles >= 0) & (titles != own) & np.isin(titles, self.passage_phrases[node])
        if text:
            for i in np.flatnonzero((titles >= 0) & (titles != own) & ~hit).tolist():
                name = self.names[int(titles[i])]
                hit[i] = " " in name and name in text
        return [m for m, h in zip(among, hit.tolist(), strict=True) if h]

    @property
    def n_passages(self) -> int:
        """Number of passage nodes."""
        return self.passage_ptr.size - 1

    def positions_of(self, node: int) -> range:
        """The positions of passage ``node``'s chunks."""
        return range(int(self.passage_ptr[node]), int(self.passage_ptr[node + 1]))

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
    title_weight: float = TITLE_WEIGHT,
    chunks: Sequence[Chunk] | None = None,
) -> PassageGraph:
    """One version's graph from its documents' pieces: array operations only.

    ``phrases`` (slots and name ids, in order) are the phrase nodes; by default the
    phrases the passages mention, in the order they first do, each spelled as there.
    ``relations`` (entity id pairs with weights) join phrases; ``synonym_k`` links each
    phrase to its nearest names at or above ``synonym_threshold`` (see
    :func:`synonym_edges`). An edge between a passage and a phrase that is some
    document's title weighs ``title_weight`` (every other passage edge 1). ``chunks``: the
    passages' chunks when the documents' pieces do not hold them (a reader that fetches
    them on demand, see :func:`chunks_at`).
    """
    import scipy.sparse as sp

    empty = np.zeros(0, np.int64)
    chunk_ids = np.concatenate([empty, *(d.chunk_ids for d in docs)])
    if chunks is None:
        chunks = [c for d in docs for c in d.chunks]
    counts = np.concatenate([empty, *(d.counts for d in docs)])
    slots = np.concatenate([empty, *(d.slots for d in docs)])
    spelled = np.concatenate([empty, *(d.names for d in docs)])
    if phrases is None:
        uniq, first = np.unique(slots, return_index=True)
        by_first = np.argsort(first, kind="stable")
        order, name_ids = uniq[by_first], spelled[first[by_first]]
    else:
        order, name_ids = phrases
    passage_ptr = _passage_ptr(docs)
    n_p, n_e = passage_ptr.size - 1, order.size
    number_of_slot = np.full(len(reg.slot_of), -1, np.int64)
    number_of_slot[order] = np.arange(n_e)
    numbers = number_of_slot[slots]
    chunk_ptr = np.r_[0, np.cumsum(counts)].astype(np.int64)
    passage_of = np.repeat(np.arange(n_p), np.diff(passage_ptr))
    pairs_at = np.unique(np.repeat(passage_of, counts) * max(n_e, 1) + numbers)
    passage, phrase = pairs_at // max(n_e, 1), pairs_at % max(n_e, 1)  # each pair once
    df = np.maximum(np.bincount(phrase, minlength=n_e), 1).astype(np.float64)
    is_title = np.zeros(n_e, bool)
    title_slots = np.asarray([d.title for d in docs if d.title >= 0], np.int64)
    is_title[number_of_slot[title_slots][number_of_slot[title_slots] >= 0]] = True
    weights = np.where(is_title[phrase], float(title_weight), 1.0)
    rows, cols, vals = [passage], [phrase + n_p], [weights]
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
        passage_ptr=passage_ptr,
        chunk_phrases=Ragged(chunk_ptr, numbers),
        names=Names(reg.names, name_ids),
        keys=keys,
        passage_phrases=Ragged(np.searchsorted(passage, np.arange(n_p + 1)), phrase),
        df=df,
        transition=adj,
        degree=degree,
        node_of=NodeOf(chunk_ids, passage_of),
        name_vectors=reg.vectors.view,
        phrase_name_ids=name_ids,
        synonym_edges=n_syn,
        phrase_slots=order,
        passage_title=_passage_titles(docs, number_of_slot),
    )


def _passage_titles(docs: Sequence[DocPhrases], number_of_slot: Ints) -> Ints:
    """Each passage's title phrase number: its document's title, on every section of it.

    ``-1`` where the document has no title, or shares it with another document: a title
    that several documents carry ("Background", an article's paragraphs) labels them; it
    does not name one.
    """
    titles = np.asarray([number_of_slot[d.title] if d.title >= 0 else -1 for d in docs], np.int64)
    values, counts = np.unique(titles[titles >= 0], return_counts=True)
    titles[np.isin(titles, values[counts > 1])] = -1
    sections = [section_starts(d.starts).size for d in docs]
    return np.repeat(titles, np.asarray(sections, np.int64))


def _passage_ptr(docs: Sequence[DocPhrases]) -> Ints:
    """The chunk positions where each passage starts, and the number of chunks at the end."""
    opens, at = [], 0
    for d in docs:
        opens.append(section_starts(d.starts) + at)
        at += d.chunk_ids.size
    return np.concatenate([np.zeros(0, np.int64), *opens, np.asarray([at], np.int64)])


def graph_for(
    kept: PassageGraph | None,
    version: int,
    docs: Sequence[DocPhrases],
    reg: NameRegistry,
    *,
    synonym_k: int = 0,
    synonym_threshold: float = 0.8,
    title_weight: float = TITLE_WEIGHT,
    chunks: Sequence[Chunk] | None = None,
) -> tuple[PassageGraph, PassageGraph | None]:
    """A part's graph of ``version``, and what the part keeps after the call.

    With the default edges, ``kept`` when it is of ``version``, else assembled and kept;
    with others (synonym edges, another title weight), assembled for the caller alone
    (``kept`` stays).
    """
    if synonym_k or title_weight != TITLE_WEIGHT:
        g = assemble(
            version,
            docs,
            reg,
            synonym_k=synonym_k,
            synonym_threshold=synonym_threshold,
            title_weight=title_weight,
            chunks=chunks,
        )
        return g, kept
    if kept is None or kept.version != version:
        kept = assemble(version, docs, reg, chunks=chunks)
    return kept, kept


@runtime_checkable
class TakenAtOnce(Protocol):
    """Chunks kept in a database: many are fetched in one round trip."""

    def take(self, nodes: Sequence[int]) -> list[Chunk]:
        """The chunks of these passage nodes, in order."""
        ...

    async def atake(self, nodes: Sequence[int]) -> list[Chunk]:
        """Async twin of :meth:`take`."""
        ...


def chunks_at(g: PassageGraph, nodes: Sequence[int]) -> list[Chunk]:
    """The chunks of passage ``nodes``: one fetch where the graph's chunks are remote."""
    if isinstance(g.chunks, TakenAtOnce):
        return list(g.chunks.take(nodes))
    return [g.chunks[n] for n in nodes]


async def achunks_at(g: PassageGraph, nodes: Sequence[int]) -> list[Chunk]:
    """Async twin of :func:`chunks_at` (a database's chunks are awaited)."""
    if isinstance(g.chunks, TakenAtOnce):
        return list(await g.chunks.atake(nodes))
    return chunks_at(g, nodes)


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
        passage_ptr=g.passage_ptr,
        phrase_slots=g.phrase_slots,
        phrase_name_ids=g.phrase_name_ids,
        chunk_phrase_ptr=g.chunk_phrases.ptr,
        chunk_phrases=g.chunk_phrases.values,
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


def load_graph(
    directory: Path, docs: Sequence[DocPhrases], reg: NameRegistry
) -> PassageGraph | None:
    """The graph :func:`save_graph` wrote, over the loaded documents' records.

    ``None`` for a graph saved before passages were sections (each chunk its own node):
    the part assembles the current one on first use.

    Raises:
        StoreError: if its arrays do not match the documents.
    """
    import scipy.sparse as sp

    a = np.load(directory / GRAPH_FILE)
    if "passage_ptr" not in a.files:
        return None
    chunk_ids = np.asarray(a["chunk_ids"], np.int64)
    want = np.concatenate([np.zeros(0, np.int64), *(d.chunk_ids for d in docs)])
    if not np.array_equal(chunk_ids, want):
        raise StoreError(f"{directory / GRAPH_FILE}: its chunks are not the index's chunks")
    passage_ptr = np.asarray(a["passage_ptr"], np.int64)
    if not np.array_equal(passage_ptr, _passage_ptr(docs)):
        raise StoreError(f"{directory / GRAPH_FILE}: its passages are not the index's sections")
    slots = np.asarray(a["phrase_slots"], np.int64)
    n_p, n_e = passage_ptr.size - 1, slots.size
    number_of_slot = np.full(len(reg.slot_of), -1, np.int64)
    number_of_slot[slots] = np.arange(n_e)
    name_ids = np.asarray(a["phrase_name_ids"], np.int64)
    n = n_p + n_e
    transition = sp.csr_matrix((a["data"], a["indices"], a["indptr"]), shape=(n, n))
    return PassageGraph(
        version=int(a["version"]),
        chunk_ids=chunk_ids,
        chunks=[c for d in docs for c in d.chunks],
        passage_ptr=passage_ptr,
        chunk_phrases=Ragged(
            np.asarray(a["chunk_phrase_ptr"], np.int64), np.asarray(a["chunk_phrases"], np.int64)
        ),
        names=Names(reg.names, name_ids),
        keys=Lookup(reg.slot_of, number_of_slot, n_e),
        passage_phrases=Ragged(np.asarray(a["ptr"], np.int64), np.asarray(a["numbers"], np.int64)),
        df=np.asarray(a["df"], np.float64),
        transition=transition,
        degree=np.asarray(a["degree"], np.float64),
        node_of=NodeOf(chunk_ids, np.repeat(np.arange(n_p), np.diff(passage_ptr))),
        name_vectors=reg.vectors.view,
        phrase_name_ids=name_ids,
        synonym_edges=int(a["synonym_edges"]),
        phrase_slots=slots,
        passage_title=_passage_titles(docs, number_of_slot),
    )
