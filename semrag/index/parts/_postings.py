"""BM25's postings: the segments a :class:`~semrag.index.parts.sparse.BM25Index` keeps.

A :class:`Segment` holds the postings of a run of slots by text and by term; the
functions sum weights by slot and read values by id, as the index's scoring does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from semrag.types import Ints

Codes = npt.NDArray[np.integer[Any]]  # term numbers, slots, counts: int32 or int64
Floats64 = npt.NDArray[np.float64]

MERGE_BITS = 3  # segments within a factor of 2**3 in postings are merged, eight at a time


class Segment:
    """The postings of the texts in slots ``start .. stop - 1``, by text and by term.

    By text (for removals and :meth:`BM25Index.save`): the text in slot ``start + r`` holds
    the terms ``doc_terms[doc_ptr[r]:doc_ptr[r + 1]]``, ``doc_tf`` times each. By term (for
    queries): term ``terms[j]`` (increasing) is in the slots ``slots[ptr[j]:ptr[j + 1]]``
    (increasing), ``tf`` times in each. The arrays never change after the build; ``dead``
    counts the texts removed since, whose postings a query skips until the segment is
    rebuilt without them.
    """

    __slots__ = (
        "dead",
        "doc_ptr",
        "doc_terms",
        "doc_tf",
        "ptr",
        "size",
        "slots",
        "start",
        "stop",
        "terms",
        "tf",
    )
    slots: Codes
    tf: Codes

    def __init__(
        self,
        start: int,
        counts: Codes,
        doc_terms: Codes,
        doc_tf: Codes,
        size: int,
        by_term: tuple[Codes, Codes, Codes] | None = None,
    ) -> None:
        """Build from the postings by text.

        ``by_term``: the same postings as ``(terms, slots, tf)`` sorted by term, then slot,
        when the caller has them (a merge); else they are sorted here.
        """
        self.start, self.stop = start, start + counts.size
        self.size, self.dead = size, 0  # live texts when built, texts removed since
        self.doc_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.doc_terms, self.doc_tf = doc_terms, doc_tf
        wide: type[np.integer[Any]] = np.int32 if self.stop < 2**31 else np.int64
        if by_term is None:
            order = np.argsort(doc_terms, kind="stable")  # by term, then by slot
            term_of = doc_terms[order]
            numbers: Codes = np.arange(start, self.stop, dtype=wide)
            self.slots = np.repeat(numbers, counts)[order]
            self.tf = doc_tf[order]
        else:
            term_of, slots, self.tf = by_term
            self.slots = slots.astype(wide, copy=False)
        cuts = np.flatnonzero(term_of[1:] != term_of[:-1]) + 1
        self.terms = term_of[np.concatenate([[0], cuts])] if term_of.size else term_of
        self.ptr = np.concatenate([[0], cuts, [term_of.size]]).astype(np.int64)

    @property
    def level(self) -> int:
        """The size class: postings within a factor of ``2**MERGE_BITS`` share it."""
        return int(self.doc_terms.size).bit_length() // MERGE_BITS

    def row(self, slot: int) -> slice:
        """Where the text in ``slot`` has its terms in ``doc_terms`` and ``doc_tf``."""
        r = slot - self.start
        return slice(int(self.doc_ptr[r]), int(self.doc_ptr[r + 1]))


def room(array: npt.NDArray[Any], size: int) -> npt.NDArray[Any]:
    """``array``, or a copy with room for at least ``size`` items (doubling)."""
    if array.size >= size:
        return array
    grown = np.zeros(max(size, 2 * array.size), array.dtype)
    grown[: array.size] = array
    return grown


def sum_by_slot(slots: Codes, weights: Floats64, count: int) -> tuple[Codes, Floats64]:
    """The distinct ``slots`` (increasing) and the sum of the ``weights`` of each.

    Every slot lies in ``0 .. count - 1``. Where that range is small next to the number of
    slots given (a query of common terms), one tally over it costs less than sorting them;
    both sum each slot's weights in the order given, so the results are the same to the bit.
    """
    if count > 8 * slots.size:
        uniq, inverse = np.unique(slots, return_inverse=True)
        return uniq, np.bincount(inverse, weights=weights, minlength=uniq.size).astype(
            np.float64, copy=False
        )
    seen = np.zeros(count, bool)
    seen[slots] = True
    places = np.flatnonzero(seen)
    sums = np.bincount(slots, weights=weights, minlength=count).astype(np.float64, copy=False)
    return places, sums[places]


def values_at(hit: Ints, values: Floats64, want: Ints) -> Floats64:
    """``values`` of each of ``want`` by its place in ``hit`` (increasing ids), 0 if absent."""
    if not hit.size or not want.size:
        return np.zeros(want.size)
    pos = np.minimum(np.searchsorted(hit, want), hit.size - 1)
    return np.where(hit[pos] == want, values[pos], 0.0)
