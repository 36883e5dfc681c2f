"""One published state of a :class:`~semrag.index.parts.dense.DenseIndex`, and its helpers.

A version is the first ``n`` rows of the index's buffers (or, with HNSW, of its graph's
stored rows) minus the rows removed since the last compaction. Versions are frozen: a
change computes the next one beside it, and readers keep the one they started with.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag._buffers import StoredRows
from semrag.errors import NotIndexedError
from semrag.index.parts._distinct import DistinctRows
from semrag.types import Floats, Ints

__all__ = ["DenseVersion", "Placed", "StagedVersion", "live_bitmap", "same_start"]


@dataclass(frozen=True, slots=True)
class DenseVersion:
    """One published state: rows ``[0, n)`` of the buffers, minus the ``dead`` ones."""

    ids: Ints  # row -> id, strictly increasing (dead rows included)
    vectors: Floats | StoredRows  # row -> unit vector (HNSW: the graph's rows, in place)
    dead: npt.NDArray[np.bool_] | None  # rows removed since the last compaction
    live: int
    graph: Any = None  # HNSW: the graph holding these rows' vectors (and maybe later ones)
    bitmap: npt.NDArray[np.uint8] | None = None  # HNSW: the stored rows of live rows, packed
    serials: Ints | None = None  # HNSW: row -> the graph's stored row holding its vector
    stored: int = 0  # HNSW: the graph's stored rows this version reads
    distinct: DistinctRows | None = None  # HNSW: which rows share a stored row
    layout: Any = None  # approximate: the graph's Layout (HNSW graph or inverted file)
    # this version's latest answers: (k, query bytes) -> (rows, scores); see DenseIndex.search
    recent: dict[tuple[int, bytes], tuple[Ints, Floats]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def n(self) -> int:
        return int(self.ids.size)

    def rows_of(self, ids: Ints) -> tuple[Ints, npt.NDArray[np.bool_]]:
        """Row of each id, and whether it is live in this version."""
        pos = np.minimum(np.searchsorted(self.ids, ids), max(self.n - 1, 0))
        found = (self.ids[pos] == ids) if self.n else np.zeros(ids.size, bool)
        if self.dead is not None:
            found &= ~self.dead[pos]
        return pos, found

    def live_rows(self) -> Ints:
        if self.dead is None:
            return np.arange(self.n)
        return np.flatnonzero(~self.dead)

    def rows(self, ids: Sequence[int] | Ints) -> Ints:
        """The row of each id (``NotIndexedError`` if one is not live here)."""
        want = np.asarray(ids, dtype=np.int64).ravel()
        rows, found = self.rows_of(want)
        if not found.all():
            raise NotIndexedError(f"ids not in the index: {want[~found][:5].tolist()}")
        return rows

    def rows_view(self, ids: Sequence[int] | Ints) -> Floats:
        """The stored vectors of ``ids``, a read-only view when their rows are consecutive.

        See :meth:`DenseIndex.rows_view <semrag.index.parts.dense.DenseIndex.rows_view>`.
        """
        rows = self.rows(ids)
        if not rows.size or (np.diff(rows) != 1).any():
            return self.vectors[rows]
        out = self.vectors[rows[0] : rows[-1] + 1]
        if isinstance(out, np.ndarray):
            out.flags.writeable = False
        return out


class StagedVersion:
    """A staged dense version: calling it publishes it; until then no reader sees it.

    Its rows are stored once it is staged, so the records a change adds can read their
    chunk vectors from it (:meth:`rows_view`) before it is published, and let go of the
    arrays ingestion made (:meth:`PartSet.stage <semrag.index.parts.part_set.PartSet.stage>`).
    """

    __slots__ = ("_publish", "_version")

    def __init__(self, version: DenseVersion, publish: Callable[[DenseVersion], None]) -> None:
        self._version, self._publish = version, publish

    def __call__(self) -> None:
        """Make the staged version the one searches read."""
        self._publish(self._version)

    def rows_view(self, ids: Sequence[int] | Ints) -> Floats:
        """The staged vectors of ``ids`` (see :meth:`DenseVersion.rows_view`)."""
        return self._version.rows_view(ids)


def live_bitmap(v: DenseVersion) -> npt.NDArray[np.uint8]:
    """The stored rows of ``v``'s live rows, as FAISS's selector reads them.

    Bit ``i`` of byte ``i >> 3``.
    """
    alive = np.ones(v.n, bool) if v.dead is None else ~v.dead
    if v.serials is not None:
        held = np.zeros(v.stored, bool)
        held[v.serials[alive]] = True
        alive = held
    return np.packbits(alive, bitorder="little")


def same_start(buffer: npt.NDArray[Any], rows: npt.NDArray[Any]) -> bool:
    """Whether ``rows`` are the first rows of ``buffer`` (so appending past them is safe)."""
    return buffer.__array_interface__["data"][0] == rows.__array_interface__["data"][0]


# Called as a change's rows are stored: (the version staged so far, the added rows it holds)
Placed = Callable[[StagedVersion, int], None]
