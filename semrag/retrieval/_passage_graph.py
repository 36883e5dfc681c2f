"""The passage graph PPR walks: passages and phrases as arrays (CSR edges, interned names)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag.errors import NotIndexedError
from semrag.index.dense import top_k
from semrag.types import Chunk

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
        self._ptr, self._values = ptr, values

    def __getitem__(self, i: Any) -> Any:
        return self._values[self._ptr[i] : self._ptr[i + 1]]

    def __len__(self) -> int:
        return self._ptr.size - 1


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
    chunks: list[Chunk]
    """The chunk of each passage node (of this version: hits never look up a later one)."""
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
