"""One context budget for the retrieved evidence: hits first, then what each extension adds.

:func:`allocate` is SPC's LLM-free repair when the caller says how much context the prompt
gets. It is a greedy choice among two kinds of step, each valued by its cosine with the
query (the numbers dense search ranks by):

* **take the next hit** (in the retriever's order): its own span, valued by its relevance,
  or by the best of the hits ranked below it when that is more (the retriever's order stands);
* **extend a region** already in the context by the sentence just before or after it,
  valued by that sentence's relevance, or by the hit's less ``step`` for each sentence
  between them; completing a sentence the region cuts, or the
  sentence a damaged side asks for (an opening pronoun, a dangling enumeration: what
  :func:`~semrag.postprocess.detect.assess` flags), is valued as the hit itself.

The best step is taken while it fits; a hit is never pushed out by an extension that is
worth less. Regions of one document that touch are merged, so no character is counted
twice, and every region contains the whole span of each hit it holds: an extension grows a
hit, it never moves or trims it. Only the last hit taken may be cut, at the budget.

Everything here is a pure function of spans, sentence boundaries and relevances (numpy
arrays and tuples): no embedder, no index.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["Region", "SentenceMap", "allocate"]

Cost = Callable[[str, int, int], int]
"""``cost(doc_id, start, end)``: what the span ``[start, end)`` of a document spends."""


@dataclass(frozen=True, slots=True)
class SentenceMap:
    """A document's sentences and each one's relevance to the query.

    ``starts`` / ``ends`` are sorted; a relevance of ``-inf`` was not computed (such a
    sentence joins only through a hit's value, less its distance).
    """

    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    relevance: npt.NDArray[np.float64]

    def before(self, offset: int) -> int | None:
        """The sentence holding the last character before ``offset`` (``None``: none)."""
        j = int(np.searchsorted(self.starts, offset, side="left")) - 1
        return j if j >= 0 else None

    def after(self, offset: int) -> int | None:
        """The sentence holding the first character at or after ``offset``."""
        j = int(np.searchsorted(self.ends, offset, side="right"))
        return j if j < self.starts.size else None


@dataclass(frozen=True, slots=True)
class Region:
    """A span of one document in the context, and the hits (by rank) it holds."""

    doc_id: str
    start: int
    end: int
    hits: tuple[int, ...]
    """Ranks of the hits inside it, the first the one that opened it."""


def allocate(
    spans: Sequence[tuple[str, int, int]],
    values: Sequence[float],
    sentences: Callable[[str], SentenceMap | None],
    asks: Sequence[tuple[bool, bool]],
    budget: int,
    cost: Cost,
    *,
    step: float | None = None,
    anytime: bool = False,
) -> list[Region]:
    """The context for ``budget``: regions in the order of the hit that opened each.

    Args:
        spans: each hit's ``(doc_id, start, end)``, in the retriever's order.
        values: each hit's relevance to the query. A hit is worth at least any hit ranked
            below it (its retriever judged it the better one), so a second hop that does
            not resemble the query is not passed over for the first hop's context.
        sentences: a document's :class:`SentenceMap` (``None``: its hits cannot grow).
        asks: per hit, whether a damage signal asks for the sentence before it, after it.
        budget: what the context may spend, in ``cost``'s unit.
        cost: what a span spends (characters or tokens).
        step: a sentence ``n`` sentences beyond a hit is worth at least the hit's value
            less ``n * step`` (the context of a relevant hit holds what its question
            needs more often than its own similarity says; a difference of cosines, so
            it reads the same whatever the embedder's baseline similarity); ``None``:
            its own relevance only.
        anytime: return the steps instead, in the order they were taken: each the
            characters it added (a hit's own span, or an extension; a step that follows
            on the step before it in the text joins it). Every prefix of the list is then
            the context of its size, whatever the budget a reader cuts it to. Growing
            stops once the steps reach ``budget`` (the one that crosses it included);
            every hit is in the list, whole.

    Returns:
        Regions whose costs sum to at most ``budget``; each contains the whole span of
        every hit it lists, except the last hit taken, which may be cut at the budget.
        With ``anytime``: disjoint pieces, each listing the hit it holds or extends.

    Examples:
        >>> import numpy as np
        >>> doc = SentenceMap(np.array([0, 10, 20]), np.array([9, 19, 29]),
        ...                   np.array([0.1, 0.9, 0.2]))
        >>> grow = lambda budget: [(r.start, r.end, r.hits) for r in allocate(
        ...     [("a", 12, 15)], [0.5], lambda d: doc, [(False, False)], budget,
        ...     lambda d, s, e: e - s)]
        >>> grow(12), grow(20)  # the cut sentence first, then what fits
        ([(10, 19, (0,))], [(10, 29, (0,))])
    """

    def spent(regions: list[Region]) -> int:
        return sum(cost(r.doc_id, r.start, r.end) for r in regions)

    values = np.maximum.accumulate(np.asarray(values, dtype=np.float64)[::-1])[::-1].tolist()
    regions: list[Region] = []
    pieces: list[Region] = []  # the anytime order
    taken = 0
    blocked: set[tuple[str, int, int]] = set()
    while True:
        grow = None
        if not (anytime and spent(regions) >= budget):  # anytime: grown enough, hits only
            grow = _best_extension(regions, spans, values, sentences, asks, blocked, step)
        if taken < len(spans) and (grow is None or values[taken] >= grow[0]):
            grown = _merged([*regions, Region(*spans[taken], (taken,))])
            if not anytime and spent(grown) > budget:  # the last hit: cut to what is left
                cut = _cut(spans[taken], budget - spent(regions), cost)
                if cut is not None:
                    regions = _merged([*regions, Region(*cut, (taken,))])
                break
            if anytime:
                pieces = _pieces(pieces, regions, Region(*spans[taken], (taken,)))
            regions, taken = grown, taken + 1
            continue
        if grow is None:
            break
        _, i, lo, hi = grow
        r = regions[i]
        wider = Region(r.doc_id, min(r.start, lo), max(r.end, hi), r.hits)
        trial = _merged([*regions[:i], wider, *regions[i + 1 :]])
        if not anytime and spent(trial) > budget:
            blocked.add((r.doc_id, lo, hi))
            continue
        if anytime:
            pieces = _pieces(pieces, regions, wider)
        regions = trial
    return pieces if anytime else regions


def _pieces(pieces: list[Region], regions: list[Region], step: Region) -> list[Region]:
    """``pieces`` and the characters of ``step`` that no region holds yet.

    They join the last piece where they follow on it in the text (never before it: a
    reader that cuts the last piece keeps its start, which must stay the earlier step).
    """
    at, new = step.start, []
    for r in sorted(regions, key=lambda r: r.start):
        if r.doc_id == step.doc_id and r.start < step.end and step.start < r.end:
            if r.start > at:
                new.append((at, r.start))
            at = max(at, r.end)
    if at < step.end:
        new.append((at, step.end))
    out = list(pieces)
    follows = out[-1].end if out and out[-1].doc_id == step.doc_id else None
    for lo, hi in sorted(new, key=lambda seg: seg[0] != follows):  # what follows on, first
        last = out[-1] if out else None
        if last is not None and last.doc_id == step.doc_id and last.end == lo:
            hits = tuple(dict.fromkeys((*last.hits, *step.hits[:1])))
            out[-1] = Region(step.doc_id, last.start, hi, hits)
        else:
            out.append(Region(step.doc_id, lo, hi, step.hits[:1]))
    return out


def _best_extension(
    regions: list[Region],
    spans: Sequence[tuple[str, int, int]],
    values: Sequence[float],
    sentences: Callable[[str], SentenceMap | None],
    asks: Sequence[tuple[bool, bool]],
    blocked: set[tuple[str, int, int]],
    step: float | None,
) -> tuple[float, int, int, int] | None:
    """The most valuable one-sentence extension: ``(value, region, start, end)`` or ``None``."""
    best: tuple[float, int, int, int] | None = None
    for i, r in enumerate(regions):
        doc = sentences(r.doc_id)
        if doc is None:
            continue
        owner = r.hits[0]
        _, own_start, own_end = spans[owner]
        # on a tie the sentence after wins: it follows on the hit, so an anytime order joins it
        for j, before in ((doc.after(r.end), False), (doc.before(r.start), True)):
            if j is None:
                continue
            lo, hi = int(doc.starts[j]), int(doc.ends[j])
            if (r.doc_id, lo, hi) in blocked:
                continue
            edge = r.start if before else r.end
            cut = lo < edge < hi  # the region ends inside this sentence
            asked = asks[owner][0 if before else 1] and edge == (own_start if before else own_end)
            value = float(doc.relevance[j])
            if cut or asked:
                value = max(value, values[owner])  # the rest of the hit's own thought
            elif step is not None:  # the context of a relevant hit: worth less the farther
                k = doc.after(own_start) if before else doc.before(own_end)
                away = abs((k if k is not None else j) - j)
                value = max(value, values[owner] - step * away)
            if not np.isfinite(value):  # a sentence whose relevance was not computed
                continue
            if best is None or value > best[0]:
                best = (value, i, lo, hi)
    return best


def _merged(regions: list[Region]) -> list[Region]:
    """Regions of one document that overlap or touch, merged into the earlier one."""
    out: list[Region] = []
    for r in regions:
        for k, o in enumerate(out):
            if o.doc_id == r.doc_id and o.start <= r.end and r.start <= o.end:
                hits = tuple(dict.fromkeys((*o.hits, *r.hits)))
                out[k] = Region(o.doc_id, min(o.start, r.start), max(o.end, r.end), hits)
                out = _merged(out)  # the wider region may now touch another
                break
        else:
            out.append(r)
    return out


def _cut(span: tuple[str, int, int], left: int, cost: Cost) -> tuple[str, int, int] | None:
    """The longest start of ``span`` that costs at most ``left`` (``None``: not one char)."""
    doc_id, start, end = span
    lo, hi = start, end
    while lo < hi:  # the largest end whose prefix fits
        mid = (lo + hi + 1) // 2
        if cost(doc_id, start, mid) <= left:
            lo = mid
        else:
            hi = mid - 1
    return (doc_id, start, lo) if lo > start else None
