"""Pure functions behind the chunkers: windows, distances, thresholds, merging, token cap.

Nothing here takes an embedder or a framework object; inputs are numpy arrays, spans and
plain callables, so each step can be tested on its own.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag.errors import ConfigError, SemragError
from semrag.types import Floats, Span

__all__ = [
    "THRESHOLD_KINDS",
    "Threshold",
    "cosine_distances",
    "mean_windows",
    "merge_small_segments",
    "resolve_threshold",
    "segments_from_breaks",
    "split_with_overlap",
    "window_bounds",
]


THRESHOLD_KINDS = ("absolute", "percentile", "std", "interquartile", "gradient", "target_chunks")
# std and interquartile defaults were chosen on boundary quality (benchmarks/RESULTS.md);
# LangChain uses k = 3 and 1.5, which break far too rarely on real paragraphs.
_DEFAULT_AMOUNT = {"percentile": 95.0, "std": 1.0, "interquartile": 0.5, "gradient": 95.0}


def window_bounds(n: int, buffer_size: int, window: str) -> tuple[np.ndarray, np.ndarray]:
    """Sentence ranges compared across each of the ``n - 1`` gaps of ``n`` sentences.

    Args:
        n: number of sentences.
        buffer_size: neighbours on each side (SemRAG's ``b``).
        window: ``"centered"``: gap ``i`` compares ``s[i-b..i+b]`` with ``s[i+1-b..i+1+b]``
            (LangChain / SemRAG); ``"split"``: ``s[i-b..i]`` with ``s[i+1..i+1+b]``, so
            the two sides never share a sentence, near the document's start included.

    Returns:
        ``(left, right)``, each an ``(n - 1, 2)`` int array of half-open sentence ranges.
    """
    gaps = np.arange(max(n - 1, 0))
    b = buffer_size
    if window == "centered":
        left = np.stack([np.maximum(gaps - b, 0), np.minimum(gaps + b + 1, n)], axis=1)
        right = np.stack([np.maximum(gaps + 1 - b, 0), np.minimum(gaps + b + 2, n)], axis=1)
    elif window == "split":
        left = np.stack([np.maximum(gaps - b, 0), gaps + 1], axis=1)
        right = np.stack([gaps + 1, np.minimum(gaps + b + 2, n)], axis=1)
    else:
        raise ConfigError(f"window must be 'centered' or 'split', got {window!r}")
    return left.reshape(-1, 2), right.reshape(-1, 2)


def mean_windows(vectors: Floats, ranges: np.ndarray) -> Floats:
    """Mean of ``vectors[a:b]`` for each ``(a, b)`` in ``ranges``, via prefix sums.

    Cost is one pass over the sentence vectors whatever the window size.
    """
    return _means(prefix_sums(vectors), ranges)


def prefix_sums(vectors: Floats) -> np.ndarray:
    """``P`` with ``P[i] = vectors[:i].sum(axis=0)`` (float64, ``n + 1`` rows)."""
    prefix = np.zeros((vectors.shape[0] + 1, vectors.shape[1]), dtype=np.float64)
    np.cumsum(vectors, axis=0, out=prefix[1:])
    return prefix


def _means(prefix: np.ndarray, ranges: np.ndarray) -> Floats:
    sums = prefix[ranges[:, 1]] - prefix[ranges[:, 0]]
    counts = (ranges[:, 1] - ranges[:, 0]).astype(np.float64)[:, None]
    return (sums / np.maximum(counts, 1)).astype(np.float32)


def edge_corrected_distances(vectors: Floats, buffer_size: int) -> Floats:
    """Split-window distances with the document edges put on the interior's scale.

    A split window near either end of a document holds fewer sentences than ``buffer_size
    + 1`` on one side, and the distance between short windows runs higher (a mean of fewer
    sentences is noisier), so uncorrected curves break too often on the first and last
    gaps. Each such gap is measured with equal windows of the shorter side's size ``k``
    and scaled by ``median(d_full) / median(d_k)`` over the interior gaps (where both sizes
    can be measured). With fewer than three interior gaps the scale is 1.

    Returns:
        One distance per gap (``n - 1`` for ``n`` sentence vectors).
    """
    return edge_corrected_distances_many(vectors, [(0, vectors.shape[0])], buffer_size)[0]


def edge_corrected_distances_many(
    vectors: Floats, rows: Sequence[tuple[int, int]], buffer_size: int
) -> list[Floats]:
    """:func:`edge_corrected_distances` of many documents at once, in one numpy pass.

    Args:
        vectors: every document's sentence vectors, one document's after another.
        rows: each document's rows ``[a, b)`` of ``vectors``.
        buffer_size: sentences on each side beyond the one next to the gap.

    Returns:
        Each document's distances (``b - a - 1`` of them; none for fewer than two rows).
    """
    if not rows:
        return []
    starts = np.asarray([a for a, _ in rows], dtype=np.int64)
    n = np.asarray([b - a for a, b in rows], dtype=np.int64)
    per_doc = np.maximum(n - 1, 0)
    owner = np.repeat(np.arange(len(rows)), per_doc)
    first_gap = np.cumsum(per_doc) - per_doc
    local = np.arange(int(per_doc.sum())) - first_gap[owner]  # each gap's index in its document
    at, size = starts[owner] + local, n[owner]  # the row before each gap; its document's size
    runs = _Runs(vectors)
    b, full = buffer_size, buffer_size + 1
    # the shorter side's rows: up to b + 1 before each gap and after it, inside its document
    sizes = np.minimum(np.minimum(local, b) + 1, np.minimum(b + 1, size - local - 1))
    interior = np.flatnonzero(sizes == full)
    edges = np.flatnonzero(sizes < full)
    distances = np.empty(at.size, dtype=np.float32)  # (edges exist only when b > 0)
    distances[interior] = runs.adjacent(full)[at[interior] - b]
    if edges.size:
        enough = np.bincount(owner[interior], minlength=len(rows)) >= 3
        med_full = _grouped_medians(distances[interior], owner[interior], len(rows))
        for k in np.unique(sizes[edges]).tolist():
            d_k = runs.adjacent(k)  # equal windows of k rows on either side
            med_k = _grouped_medians(d_k[at[interior] - k + 1], owner[interior], len(rows))
            usable = enough & (med_k > 0)
            scale = np.ones(len(rows), dtype=np.float32)
            scale[usable] = (
                med_full[usable].astype(np.float64) / med_k[usable].astype(np.float64)
            ).astype(np.float32)
            gaps = np.flatnonzero(sizes == k)
            distances[gaps] = np.minimum(
                d_k[at[gaps] - k + 1] * scale[owner[gaps]], np.float32(2.0)
            )
    return np.split(distances, np.cumsum(per_doc)[:-1])


class _Runs:
    """Distances between short runs of consecutive rows (windows are short), once per width.

    The sums of every run of ``w`` rows take one pass over contiguous rows, summed row by
    row in float32: for runs of one or two rows the mean is the one the exact sum rounds to
    (what a float64 prefix sum gives), and it reads a quarter of the memory.
    """

    def __init__(self, vectors: Floats) -> None:
        self._means: dict[int, Floats] = {1: vectors}
        self._sums: dict[int, Floats] = {1: vectors}
        self._adjacent: dict[int, Floats] = {}

    def adjacent(self, w: int) -> Floats:
        """``d[i]``: the cosine distance between the runs ``[i, i + w)`` and ``[i + w, i + 2w)``.

        Over every row at once, documents' borders included (a caller reads the runs inside
        one document): contiguous passes, no gather.
        """
        if w not in self._adjacent:
            m = self._run_means(w)
            self._adjacent[w] = cosine_distances(m[:-w], m[w:])
        return self._adjacent[w]

    def _run_means(self, w: int) -> Floats:
        if w not in self._means:
            self._means[w] = self._run_sums(w) / np.float32(w)
        return self._means[w]

    def _run_sums(self, w: int) -> Floats:
        if w not in self._sums:
            self._sums[w] = self._run_sums(w - 1)[:-1] + self._sums[1][w - 1 :]
        return self._sums[w]


def _grouped_medians(values: Floats, groups: np.ndarray, n_groups: int) -> Floats:
    """The median of ``values`` in each group (``groups`` sorted; an empty group gets 0)."""
    out = np.zeros(n_groups, dtype=np.float32)
    if values.size == 0:
        return out
    ordered = values[np.lexsort((values, groups))]
    counts = np.bincount(groups, minlength=n_groups)
    first = np.cumsum(counts) - counts
    has = np.flatnonzero(counts)
    low = ordered[first[has] + (counts[has] - 1) // 2]
    high = ordered[first[has] + counts[has] // 2]
    out[has] = (low + high) / np.float32(2)
    return out


def cosine_distances(left: Floats, right: Floats) -> Floats:
    """Row-wise cosine distance ``1 - cos(left[i], right[i])``; zero vectors give 1."""
    ln = np.linalg.norm(left, axis=1)
    rn = np.linalg.norm(right, axis=1)
    dots = np.einsum("ij,ij->i", left, right)
    denom = ln * rn
    cos = np.divide(dots, denom, out=np.zeros_like(dots), where=denom > 0)
    return (1.0 - np.clip(cos, -1.0, 1.0)).astype(np.float32)


@dataclass(frozen=True, slots=True)
class Threshold:
    """How a chunker turns the distance curve into breaks."""

    kind: str
    """One of :data:`THRESHOLD_KINDS`."""
    amount: float
    """Absolute distance, percentile, k of mean+k*std or of mean+k*IQR, or chunk count."""

    @classmethod
    def of(cls, threshold: str | float, amount: float | None = None) -> Threshold:
        """Build from the chunker's ``threshold`` / ``threshold_amount`` arguments.

        A number means an absolute cosine distance; a name selects a statistic of the
        document's own distances (with a default amount when ``amount`` is ``None``).

        Raises:
            ConfigError: on an unknown kind or an amount out of range.
        """
        if isinstance(threshold, bool):
            raise ConfigError("threshold must be a number or a name, not a bool")
        if isinstance(threshold, (int, float)):
            if amount is not None:
                raise ConfigError("give either a numeric threshold or threshold_amount, not both")
            kind, value = "absolute", float(threshold)
        elif threshold in THRESHOLD_KINDS:
            kind = threshold
            if amount is None:
                if kind in ("absolute", "target_chunks"):
                    raise ConfigError(f"threshold={kind!r} needs threshold_amount")
                amount = _DEFAULT_AMOUNT[kind]
            value = float(amount)
        else:
            raise ConfigError(
                f"threshold must be a number or one of {THRESHOLD_KINDS}, got {threshold!r}"
            )
        if not np.isfinite(value):
            raise ConfigError(f"threshold amount must be finite, got {value}")
        if kind in ("percentile", "gradient") and not 0 <= value <= 100:
            raise ConfigError(f"{kind} must be within [0, 100], got {value}")
        if kind == "target_chunks" and (value < 1 or value != int(value)):
            raise ConfigError(f"target_chunks must be a positive integer, got {value}")
        return cls(kind, value)

    def describe(self) -> str:
        """A short human description, e.g. ``"percentile 95"``."""
        return f"{self.kind} {self.amount:g}"


def resolve_threshold(distances: Floats, threshold: Threshold) -> tuple[float, np.ndarray]:
    """Apply ``threshold`` to one document's gap distances.

    Returns:
        ``(value, breaks)``: the cut-off actually used (for ``gradient`` it applies to the
        gradient of the curve) and a boolean mask over the gaps, true where to break.
    """
    d = np.asarray(distances, dtype=np.float64)
    n = d.size
    if n == 0:
        return float("nan"), np.zeros(0, dtype=bool)
    kind, amount = threshold.kind, threshold.amount
    if kind == "absolute":
        return amount, d > amount
    if kind == "percentile":
        value = float(np.percentile(d, amount))
        return value, d > value
    if kind == "std":
        value = float(d.mean() + amount * d.std())
        return value, d > value
    if kind == "interquartile":
        q1, q3 = np.percentile(d, [25, 75])
        value = float(d.mean() + amount * (q3 - q1))
        return value, d > value
    if kind == "gradient":
        g = np.gradient(d) if n > 1 else np.zeros(1)
        value = float(np.percentile(g, amount))
        return value, g > value
    # target_chunks: break at the (k - 1) largest distances; ties go to the earlier gap.
    k = min(int(amount) - 1, n)
    mask = np.zeros(n, dtype=bool)
    if k <= 0:
        return float("inf"), mask
    order = np.argsort(-d, kind="stable")[:k]
    mask[order] = True
    return float(d[order].min()), mask


def sized_breaks(
    sentence_tokens: Sequence[int],
    rewards: npt.NDArray[np.floating[Any]],
    *,
    target: float,
    max_tokens: int,
    weight: float,
    forced: np.ndarray | None = None,
    blocked: np.ndarray | None = None,
) -> np.ndarray:
    """The breaks that best trade a good place to break against a chunk's size.

    Chooses the break mask over the gaps that maximises the rewards of the gaps broken
    minus ``weight * ((tokens - target) / target) ** 2`` for every chunk, by dynamic
    programming over the sentences (exact, ``O(n * w)`` for ``w`` sentences per chunk).
    No chunk of two or more sentences passes ``max_tokens``; a ``forced`` gap always breaks;
    a ``blocked`` gap never does, unless a single sentence over the cap leaves no other
    choice.

    Args:
        sentence_tokens: tokens of each sentence.
        rewards: one value per gap, higher where a break is better (e.g. the cosine
            distance across it, plus a bonus at a paragraph or a heading).
        target: the chunk size aimed at, in tokens.
        max_tokens: the hard cap on a chunk of several sentences.
        weight: how much a chunk's distance from ``target`` costs against the rewards.
        forced: gaps that must break (``None``: none).
        blocked: gaps that must not break (``None``: none).

    Examples:
        >>> sized_breaks([5, 5, 5, 5], np.array([0.1, 0.9, 0.1]), target=10, max_tokens=20,
        ...              weight=1.0).tolist()
        [False, True, False]
    """
    n = len(sentence_tokens)
    if n < 2:
        return np.zeros(max(n - 1, 0), dtype=bool)
    prefix = [0, *itertools.accumulate(int(t) for t in sentence_tokens)]
    reward = np.asarray(rewards, dtype=np.float64).tolist()
    force = [False] * (n - 1) if forced is None else np.asarray(forced, dtype=bool).tolist()
    block = [False] * (n - 1) if blocked is None else np.asarray(blocked, dtype=bool).tolist()
    best = [0.0] + [-math.inf] * n
    start = [0] * (n + 1)
    # ceiling[j]: the most any start at or before j brings before its size's cost. Past
    # the target a chunk's cost only grows further back, so the scan stops where no
    # earlier start can beat the best found (exact: it skips only losers)
    ceiling = [0.0] + [-math.inf] * n

    def value(j: int, i: int) -> float:
        """Best value of sentences [0, i) whose last chunk is [j, i)."""
        gain = reward[j - 1] if j else 0.0
        return best[j] + gain - weight * ((prefix[i] - prefix[j] - target) / target) ** 2

    for i in range(1, n + 1):
        top, arg = -math.inf, -1
        j = i - 1
        end = prefix[i]
        while j >= 0:  # value(j, i), inlined: this loop is the chunker's hottest
            size = end - prefix[j]
            if size > max_tokens and j < i - 1:
                break
            over = weight * ((size - target) / target) ** 2
            if size > target and ceiling[j] - over <= top:
                break
            if j == 0 or not block[j - 1]:
                v = best[j] + (reward[j - 1] if j else 0.0) - over
                if v > top:
                    top, arg = v, j
            if j and force[j - 1]:
                break
            j -= 1
        if arg < 0:  # every start blocked within the cap: break before the last sentence
            arg = i - 1
            top = value(arg, i)
        best[i], start[i] = top, arg
        ceiling[i] = max(ceiling[i - 1], top + reward[i - 1]) if i < n else 0.0
    mask = np.zeros(n - 1, dtype=bool)
    i = n
    while i > 0:
        j = start[i]
        if j:
            mask[j - 1] = True
        i = j
    return mask


def segments_from_breaks(n_sentences: int, breaks: np.ndarray) -> list[tuple[int, int]]:
    """Turn a break mask over the gaps into half-open sentence ranges."""
    if n_sentences == 0:
        return []
    cuts = (np.flatnonzero(breaks) + 1).tolist()
    bounds = [0, *cuts, n_sentences]
    return [(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def merge_small_segments(
    segments: Sequence[tuple[int, int]],
    sentence_tokens: Sequence[int],
    distances: Floats,
    *,
    min_tokens: int,
    max_tokens: int,
) -> tuple[list[tuple[int, int]], list[int]]:
    """Merge segments under ``min_tokens`` into their more similar neighbour.

    A small segment joins the neighbour across the gap with the smaller distance, unless
    the result would pass ``max_tokens``; then it tries the other neighbour; if both
    would, it stays alone.

    Returns:
        ``(segments, removed_gaps)``: the merged ranges and the gaps whose breaks were
        removed.
    """
    segs = [(int(a), int(b)) for a, b in segments]
    if min_tokens <= 0 or len(segs) < 2:
        return segs, []
    prefix = np.concatenate([[0], np.cumsum(sentence_tokens)])
    first = [a for a, _ in segs]
    last = [b for _, b in segs]
    n = len(segs)
    after = list(range(1, n)) + [-1]  # a linked list: a merge unlinks in O(1)
    before = [-1, *range(n - 1)]
    removed: list[int] = []
    # One pass, left to right. A merged segment is looked at again (it may still be
    # small); a small segment that cannot merge never can later, since merges only
    # grow its neighbours. Linear in the number of segments.
    i = 0
    while i != -1:
        if int(prefix[last[i]] - prefix[first[i]]) >= min_tokens:
            i = after[i]
            continue
        options = []
        if before[i] != -1:
            options.append((float(distances[first[i] - 1]), 0, before[i]))
        if after[i] != -1:
            options.append((float(distances[last[i] - 1]), 1, after[i]))
        for _, _, j in sorted(options):
            a, b = (j, i) if j == before[i] else (i, j)
            if int(prefix[last[b]] - prefix[first[a]]) <= max_tokens:
                removed.append(last[a] - 1)
                last[a] = last[b]
                after[a] = after[b]
                if after[b] != -1:
                    before[after[b]] = a
                i = a
                break
        else:
            i = after[i]
    out, k = [], 0
    while k != -1:
        out.append((first[k], last[k]))
        k = after[k]
    return out, sorted(removed)


def split_with_overlap(
    text: str,
    span: Span,
    token_spans: Sequence[tuple[int, int]],
    *,
    max_tokens: int,
    overlap_tokens: int,
    count: Callable[[str], int],
    preferred_starts: Sequence[int] = (),
) -> list[Span]:
    """Split ``text[span]`` into pieces of at most ``max_tokens`` tokens.

    Consecutive pieces share about ``overlap_tokens`` tokens (SemRAG eq. 2). Each piece is
    the longest run of units (``token_spans``) whose text, counted alone with ``count``,
    fits the cap; it then ends, when it can, at a sentence start (``preferred_starts``) in
    the second half of its window, so most pieces end at a sentence boundary. The next
    piece starts at the earliest unit whose text up to the piece's end counts at most
    ``overlap_tokens``. When the units are the counter's own tokens the first guesses are
    exact and each search costs one or two extra counts; when they are finer (characters
    measured by a user's length function) the searches gallop, then bisect. ``count`` must
    not shrink when text is added.

    Args:
        text: the whole document.
        span: the range to split.
        token_spans: absolute ``[start, end)`` of the range's units (tokens or
            characters), in order.
        max_tokens: the cap.
        overlap_tokens: tokens shared by consecutive pieces; ``< max_tokens``.
        count: token counter for one text.
        preferred_starts: character offsets where a cut is preferred (sentence starts).

    Returns:
        Spans in order, trimmed of whitespace, covering every non-whitespace character of
        ``span``; consecutive spans overlap only by the token overlap.

    Raises:
        ConfigError: if ``overlap_tokens >= max_tokens``.
        SemragError: if a single unit counts more than ``max_tokens``.
    """
    if overlap_tokens >= max_tokens:
        raise ConfigError("overlap_tokens must be smaller than max_tokens")
    n = len(token_spans)
    starts = [s for s, _ in token_spans]
    preferred = set(preferred_starts)

    def trimmed(a: int, b: int) -> Span:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        return Span(a, b)

    def end_of(j: int) -> int:
        return starts[j] if j < n else span.end

    pieces: list[Span] = []
    i = 0
    while True:
        # The first piece starts at the span (characters a tokenizer skips stay in it).
        piece_start = span.start if i == 0 else starts[i]

        def fits(j: int, a: int = piece_start) -> bool:
            return count(trimmed(a, end_of(j)).of(text)) <= max_tokens

        j = _largest(fits, i + 1, min(i + max_tokens, n), n)
        if j is None:
            a, b = token_spans[i]
            raise SemragError(
                f"cannot cut text at [{a}, {b}) under {max_tokens} tokens: "
                "one unit counts more than the cap"
            )
        if j < n:
            floor = i + max(1, (j - i) // 2)
            done = pieces[-1].end if pieces else span.start  # a piece must end past it
            for k in range(j, floor, -1):
                if starts[k] in preferred and trimmed(piece_start, starts[k]).end > done:
                    j = k
                    break
        piece = trimmed(piece_start, end_of(j))
        if piece.end > piece.start:
            pieces.append(piece)
        if j >= n:
            return pieces
        end = piece.end

        def small(k: int, end: int = end) -> bool:
            return starts[k] >= end or count(trimmed(starts[k], end).of(text)) <= overlap_tokens

        i = max(_smallest(small, i + 1, max(j - overlap_tokens, i + 1), j), i + 1)


def _largest(ok: Callable[[int], bool], lo: int, guess: int, hi: int) -> int | None:
    """Largest ``j`` in ``[lo, hi]`` with ``ok(j)`` (monotone: true, then false), or None.

    Starts at ``guess``: gallops up from it while ``ok`` holds, bisects below it otherwise.
    """
    guess = min(max(guess, lo), hi)
    if ok(guess):
        good, step = guess, 1
        while good < hi:
            probe = min(good + step, hi)
            if not ok(probe):
                bad = probe
                break
            good, step = probe, step * 2
        else:
            return good
    else:
        if guess == lo:
            return None
        good, bad = lo - 1, guess
    while bad - good > 1:
        mid = (good + bad) // 2
        if mid >= lo and ok(mid):
            good = mid
        else:
            bad = mid
    return good if good >= lo else None


def _smallest(ok: Callable[[int], bool], lo: int, guess: int, hi: int) -> int:
    """Smallest ``k`` in ``[lo, hi]`` with ``ok(k)`` (monotone: false, then true), or ``hi``.

    The mirror image of :func:`_largest` (search ``-k``), starting at ``guess``.
    """
    j = _largest(lambda neg: ok(-neg), -hi, -guess, -lo)
    return hi if j is None else -j
