"""BM25 over the same integer ids as the dense index (Okapi BM25, as rank-bm25 scores it).

References:
    Robertson & Zaragoza (2009), "The Probabilistic Relevance Framework: BM25 and Beyond";
    Trotman et al. (2014), the variants implemented by rank-bm25.
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from semrag.errors import ConfigError, NotIndexedError, StoreError
from semrag.index._top_k import top_k
from semrag.index.change import Change
from semrag.index.parts._postings import (
    MERGE_BITS,
    Codes,
    Segment,
    room,
    sum_by_slot,
    values_at,
)
from semrag.types import Ints

__all__ = ["IDF_VARIANTS", "BM25Index", "bm25_tokenize"]

IDF_VARIANTS = ("okapi", "lucene")
_RECENT = 32  # query answers BM25Index.matches keeps until the next change
Floats64 = npt.NDArray[np.float64]

_TOKEN = re.compile(r"\w+", re.UNICODE)
# A short English stop list: BM25's IDF already discounts common words, these only save time.
_STOP = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the to was were will "
    "with".split()
)


def bm25_tokenize(text: str) -> list[str]:
    """Lower-cased word tokens without the commonest English function words."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOP]


@dataclass(frozen=True, slots=True)
class Numbered:
    """The token lists of a block of texts, numbered in a vocabulary of the block's own.

    What a change holds between its tokenizing and its publishing: four bytes a token,
    where lists of token strings would take about sixty.
    """

    lengths: Ints
    """Tokens per text."""
    numbers: npt.NDArray[np.int32]
    """Each token's number in :attr:`vocab`, text after text."""
    vocab: list[str]
    """The block's distinct tokens, in order of appearance."""


_BLOCK_TEXTS = 1 << 16  # texts numbered (and made a segment) at a time


def numbered_blocks(token_lists: Iterable[list[str]]) -> list[Numbered]:
    """``token_lists`` numbered a block of :data:`_BLOCK_TEXTS` texts at a time."""
    out = []
    lists = iter(token_lists)
    while block := list(itertools.islice(lists, _BLOCK_TEXTS)):
        vocab: dict[str, int] = {}
        lengths = np.fromiter(map(len, block), np.int64, len(block))
        numbered = (vocab.setdefault(t, len(vocab)) for tokens in block for t in tokens)
        numbers = np.fromiter(numbered, np.int32, int(lengths.sum()))
        out.append(Numbered(lengths, numbers, list(vocab)))
    return out


_MERGE_CAP = 1 << 24  # postings no merge goes past (~240k texts): a build is linear
_SPARE = 1024  # dead slots (or terms) kept beyond the live ones before a compaction


class BM25Index:
    """BM25 kept in postings arrays, changed in place by add and delete.

    Two idf variants:

    - ``"okapi"`` (default): scores equal :class:`rank_bm25.BM25Okapi` on the same tokens
      (to float rounding; a test keeps rank-bm25 as the reference):
      ``idf = log((N - df + 0.5) / (df + 0.5))``, and a term in more than half the texts
      gets ``epsilon`` times the corpus's average idf instead. On a tiny corpus that
      floor is often 0: in two texts a term found in one of them scores 0.
    - ``"lucene"``: ``idf = log(1 + (N - df + 0.5) / (df + 0.5))``, the idf of Lucene,
      Elasticsearch and Neo4j's full-text indexes. It is positive for every term in every
      corpus, so a text that contains a query word always scores above 0; ranks differ
      from Okapi's only where Okapi floors common terms.

    The postings live in segments of numpy arrays, as in Lucene: each :meth:`add` writes a
    segment per 65,536 texts (a change holds its texts' tokens as numbers until then:
    :class:`Numbered`), and segments of one size class are merged eight at a time up to
    2**24 postings (as Lucene caps a merged segment): a build costs what its postings do, a
    query visits a segment per ~240k texts (1M chunks added 50k at a time: 20 segments;
    p50 +12%). Each text has a slot, a dense number given in order of addition; a removal
    marks the slot dead (queries skip it) and the segment drops it when rebuilt (once half
    its texts are dead). Slots and terms are renumbered once the dead outnumber the live. A
    posting costs about ten bytes: a slot and a term number (four bytes each) and two small
    term frequencies.

    A query reads only the postings of its terms; a change touches only the postings of
    the changed texts' terms. Okapi's average idf comes from a histogram of document
    frequencies, so it costs as many steps as there are distinct frequencies.

    Args:
        k1: term-frequency saturation.
        b: length normalisation.
        epsilon: Okapi's floor factor for common terms (rank-bm25's default).
        idf: ``"okapi"`` or ``"lucene"``.

    Examples:
        >>> bm = BM25Index(idf="lucene")
        >>> bm.add([0, 1], ["bees find flowers", "rockets reach orbit"])
        >>> [(i, round(s, 3)) for i, s in bm.search("bees", k=2)]
        [(0, 0.693)]
        >>> okapi = BM25Index()
        >>> okapi.add([0, 1], ["bees find flowers", "rockets reach orbit"])
        >>> okapi.search("bees", k=2)
        [(0, 0.0)]
    """

    def __init__(
        self, *, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25, idf: str = "okapi"
    ) -> None:
        if k1 < 0 or not 0 <= b <= 1:
            raise ConfigError(f"need k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        if idf not in IDF_VARIANTS:
            raise ConfigError(f"idf must be one of {IDF_VARIANTS}, got {idf!r}")
        self.k1 = k1
        self.b = b
        self.epsilon = epsilon
        self.idf = idf
        self._terms: dict[str, int] = {}  # term -> its number
        self._names: list[str] = []  # number -> term
        self._df = np.zeros(0, np.int64)  # document frequency by term number
        self._df_hist: dict[int, int] = {}  # document frequency -> number of terms
        self._slot: dict[int, int] = {}  # id -> slot, for the live texts
        self._slot_id = np.zeros(0, np.int64)  # by slot (the first _next are in use)
        self._slot_len = np.zeros(0, np.int64)  # each text's length in tokens, by slot
        self._live, self._next = np.zeros(0, bool), 0  # in use by slot; the next free slot
        self._segments: list[Segment] = []  # covering slots 0 .. _next - 1 in order
        self._total_len = 0
        self._generation = 0  # counts changes: the caches below hold for one generation
        self._average: tuple[int, float] | None = None  # (generation, Okapi's average idf)
        self._recent: dict[str, tuple[int, Ints, Floats64]] = {}  # tokens -> matches
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._slot)

    @property
    def ids(self) -> list[int]:
        """The chunk ids it holds."""
        return list(self._slot)

    def add(self, ids: Sequence[int], texts: Sequence[str]) -> None:
        """Index ``texts`` under ``ids``.

        Raises:
            ConfigError: if the lengths differ or an id is already indexed.
        """
        if len(ids) != len(texts):
            raise ConfigError("ids and texts differ in length")
        self.add_tokens(ids, map(bm25_tokenize, texts))

    def add_tokens(self, ids: Sequence[int], token_lists: Iterable[list[str]]) -> None:
        """Index texts already tokenized (one token list per id, in order).

        Raises:
            ConfigError: if an id is already indexed, or the counts differ.
        """
        blocks = numbered_blocks(token_lists)
        if sum(b.lengths.size for b in blocks) != len(ids):
            raise ConfigError("ids and token lists differ in length")
        self._add_numbered(ids, blocks)

    def _add_numbered(self, ids: Sequence[int], blocks: Sequence[Numbered]) -> None:
        new = [int(i) for i in ids]
        if len(set(new)) != len(new) or any(i in self._slot for i in new):
            raise ConfigError("duplicate ids in BM25Index.add")
        with self._lock:
            self._generation += 1
            at = 0
            for block in blocks:
                self._add_block(new[at : at + block.lengths.size], block)
                at += block.lengths.size

    def _add_block(self, new: list[int], block: Numbered) -> None:
        """One segment of ``block``'s texts under ids ``new`` (under the lock)."""
        terms, names = self._terms, self._names
        for term in block.vocab:  # number the new terms in order of appearance
            if term not in terms:
                terms[term] = len(names)
                names.append(term)
        numbers = np.fromiter(map(terms.__getitem__, block.vocab), np.int64, len(block.vocab))
        lengths = block.lengths
        # one (text, term) pair per posting, counted: sorted by text, then by term
        width = len(names)
        pairs, tf = np.unique(
            np.repeat(np.arange(len(new)), lengths) * width + numbers[block.numbers],
            return_counts=True,
        )
        doc_terms = (pairs % width).astype(np.int32)
        counts = np.bincount(pairs // width, minlength=len(new))
        self._df = room(self._df, width)
        self._shift_df(*np.unique(doc_terms, return_counts=True))
        start = self._next
        self._next += len(new)
        self._slot_id = room(self._slot_id, self._next)
        self._slot_len = room(self._slot_len, self._next)
        self._live = room(self._live, self._next)
        self._slot_id[start : self._next] = new
        self._slot_len[start : self._next] = lengths
        self._live[start : self._next] = True
        self._slot.update(zip(new, range(start, self._next), strict=True))
        self._total_len += int(lengths.sum())
        small = np.min_scalar_type(int(tf.max()) if tf.size else 0)
        self._segments.append(Segment(start, counts, doc_terms, tf.astype(small), len(new)))
        self._settle()

    def _shift_df(self, terms: Ints, by: Ints) -> None:
        """Add ``by`` to the document frequencies of ``terms`` (distinct), and to the histogram."""
        before = self._df[terms]
        after = before + by
        self._df[terms] = after
        hist = self._df_hist
        for frequencies, sign in ((before, -1), (after, 1)):
            values, counts = np.unique(frequencies[frequencies > 0], return_counts=True)
            for df, count in zip(values.tolist(), counts.tolist(), strict=True):
                hist[df] = hist.get(df, 0) + sign * count
                if not hist[df]:
                    del hist[df]

    def _gathered(self, group: list[Segment]) -> tuple[Ints, Ints, Ints, int]:
        """The live texts' postings of adjacent segments, by text: counts, terms, tf, texts."""
        start, stop = group[0].start, group[-1].stop
        live = self._live[start:stop]
        counts = np.concatenate([np.diff(s.doc_ptr) for s in group])
        keep = np.repeat(live, counts)
        doc_terms = np.concatenate([s.doc_terms for s in group])[keep]
        doc_tf = np.concatenate([s.doc_tf for s in group])[keep]
        return np.where(live, counts, 0), doc_terms, doc_tf, int(live.sum())

    def _merged(self, group: list[Segment]) -> Segment:
        """One segment of adjacent segments' live postings.

        Each segment's postings by term are sorted by term, then slot, and the segments
        hold increasing slots, so in the merged order a posting of segment ``i`` goes after
        every posting of a smaller term and after segment ``j < i``'s postings of its own
        term: its place is computed, not sorted for (a counting merge, linear in the
        postings; sorting them again cost six times building the segments).
        """
        width = len(self._names)
        parts = []
        for seg in group:
            term_of = np.repeat(seg.terms, np.diff(seg.ptr))
            slots, tf = seg.slots, seg.tf
            if seg.dead:
                keep = self._live[slots]
                term_of, slots, tf = term_of[keep], slots[keep], tf[keep]
            parts.append((term_of, slots, tf, np.bincount(term_of, minlength=width)))
        total = np.zeros(width, np.int64)
        for *_, counts in parts:
            total += counts
        base = np.cumsum(total) - total  # where each term's postings begin
        n = int(total.sum())
        out_terms = np.empty(n, np.result_type(*(seg.terms.dtype for seg in group)))
        out_slots = np.empty(n, np.int64)
        out_tf = np.empty(n, np.result_type(*(p[2].dtype for p in parts)))
        for term_of, slots, tf, counts in parts:
            first = np.cumsum(counts) - counts  # this segment's first posting of each term
            at = base[term_of] + (np.arange(term_of.size) - first[term_of])
            out_terms[at], out_slots[at], out_tf[at] = term_of, slots, tf
            base += counts  # the next segment's postings of a term go after these
        by_term = (out_terms, out_slots, out_tf)
        return Segment(group[0].start, *self._gathered(group), by_term=by_term)

    def _settle(self) -> None:
        """Merge the newest segments while eight share its size class, up to ``_MERGE_CAP``."""
        segments = self._segments
        while len(segments) > 1:
            top = segments[-1].level
            run = 1
            while run < len(segments) and segments[-run - 1].level <= top:
                run += 1
            if run < 2**MERGE_BITS or sum(s.doc_terms.size for s in segments[-run:]) > _MERGE_CAP:
                return
            segments[-run:] = [self._merged(segments[-run:])]

    def remove(self, ids: Sequence[int]) -> int:
        """Remove ids; returns how many were present."""
        with self._lock:
            self._generation += 1
            popped = (self._slot.pop(i, None) for i in {int(i) for i in ids})
            slots = sorted(s for s in popped if s is not None)
            if not slots:
                return 0
            self._live[slots] = False
            self._total_len -= int(self._slot_len[slots].sum())
            starts = [s.start for s in self._segments]
            touched, gone = set(), []
            for slot in slots:
                j = bisect.bisect_right(starts, slot) - 1
                segment = self._segments[j]
                segment.dead += 1
                touched.add(j)
                gone.append(segment.doc_terms[segment.row(slot)])
            terms, counts = np.unique(np.concatenate(gone), return_counts=True)
            self._shift_df(terms, -counts)
            for j in touched:  # drop the postings of a segment half dead
                if 2 * self._segments[j].dead > self._segments[j].size:
                    self._segments[j] = self._merged([self._segments[j]])
            dead_terms = len(self._names) - sum(self._df_hist.values())
            if self._next - len(self._slot) > len(self._slot) + _SPARE or (
                dead_terms > len(self._names) - dead_terms + _SPARE
            ):
                self._compact()
        return len(slots)

    def _compact(self) -> None:
        """Renumber the live texts' slots ``0 .. n - 1`` and the live terms, in one segment."""
        counts, doc_terms, doc_tf, n = self._gathered(self._segments)
        live = self._live[: self._next]
        kept = np.flatnonzero(self._df[: len(self._names)] > 0)
        number = np.zeros(len(self._names), np.int32)
        number[kept] = np.arange(kept.size)
        self._names = [self._names[t] for t in kept.tolist()]
        self._terms = {term: j for j, term in enumerate(self._names)}
        self._df = self._df[kept]
        self._slot_id = self._slot_id[: self._next][live]
        self._slot_len = self._slot_len[: self._next][live]
        self._live = np.ones(n, bool)
        self._next = n
        self._slot = dict(zip(self._slot_id.tolist(), range(n), strict=True))
        self._segments = [Segment(0, counts[live], number[doc_terms], doc_tf, n)]

    def stage(self, change: Change) -> Callable[[], None]:
        """Tokenize ``change``'s texts now; the returned function puts them in the postings.

        Publishing costs the changed texts' postings only (no scan of the corpus).

        Raises:
            ConfigError: if an added id is already indexed and not removed by the change.
        """
        removed = change.removed_chunk_ids()
        ids, chunks = change.added_chunks()
        gone = set(removed)
        if len(set(ids)) != len(ids) or any(i in self._slot and i not in gone for i in ids):
            raise ConfigError("duplicate ids in BM25Index.add")
        blocks = numbered_blocks(bm25_tokenize(c.text) for c in chunks)

        def publish() -> None:
            if removed:
                self.remove(removed)
            if ids:
                self._add_numbered(ids, blocks)

        return publish

    def apply(self, change: Change) -> None:
        """Remove the change's removed chunks, then index its added chunks."""
        self.stage(change)()

    def _idf(self, df: int, n: int, average: float) -> float:
        if self.idf == "lucene":
            return math.log1p((n - df + 0.5) / (df + 0.5))
        idf = math.log(n - df + 0.5) - math.log(df + 0.5)
        return idf if idf >= 0 else self.epsilon * average

    def _average_idf(self, n: int) -> float:
        """Okapi's average idf over every term (computed once per state of the postings)."""
        if self._average is not None and self._average[0] == self._generation:
            return self._average[1]
        terms = sum(self._df_hist.values())
        total = math.fsum(  # in a fixed order: equal histories give equal bits
            count * (math.log(n - df + 0.5) - math.log(df + 0.5))
            for df, count in sorted(self._df_hist.items())
        )
        average = total / terms if terms else 0.0
        self._average = (self._generation, average)
        return average

    def _postings(self, terms: list[int]) -> dict[int, tuple[Codes, Codes]]:
        """``(slots, tf)`` of each of ``terms``'s live postings, slots increasing."""
        wanted = np.asarray(terms)
        parts: dict[int, list[tuple[Codes, Codes]]] = {t: [] for t in terms}
        for segment in self._segments:
            at = np.searchsorted(segment.terms, wanted).tolist()
            for term, j in zip(terms, at, strict=True):
                if j == segment.terms.size or segment.terms[j] != term:
                    continue
                span = slice(int(segment.ptr[j]), int(segment.ptr[j + 1]))
                slots: Codes = segment.slots[span]
                tf: Codes = segment.tf[span]
                if segment.dead:
                    alive = self._live[slots]
                    slots, tf = slots[alive], tf[alive]
                parts[term].append((slots, tf))
        return {
            t: (np.concatenate([s for s, _ in p]), np.concatenate([f for _, f in p]))
            if len(p) > 1
            else p[0]
            for t, p in parts.items()
        }

    def matches(self, query: str) -> tuple[Ints, Floats64]:
        """Ids of the texts sharing a term with ``query`` (increasing) and their scores.

        The answers to the last :data:`_RECENT` token lists are kept until the next change
        (a hybrid retriever asks for a sub-query's top hits, then for its candidates'
        scores). The arrays returned are read-only.
        """
        tokens = bm25_tokenize(query)
        key = " ".join(tokens)
        with self._lock:
            kept = self._recent.get(key)
            if kept is not None and kept[0] == self._generation:
                return kept[1], kept[2]
            generation = self._generation
            n = len(self._slot)
            numbers = [self._terms.get(t) for t in tokens]
            present = [t for t in numbers if t is not None and self._df[t]]
            if not n or not present or not self._total_len:
                return np.zeros(0, np.int64), np.zeros(0)
            average = self._average_idf(n) if self.idf == "okapi" else 0.0
            # idf tf (k1 + 1) / (tf + k1 (1 - b) + k1 b length / avgdl), a pass at a time
            fixed, per_token = self.k1 * (1 - self.b), self.k1 * self.b / (self._total_len / n)
            postings = self._postings(sorted(set(present)))
            parts = [postings[t] for t in present]  # a repeated term counts again (rank-bm25)
            all_slots = np.concatenate([slots for slots, _ in parts])
            weights = np.empty(all_slots.size)
            end = 0
            for term, (slots, tf) in zip(present, parts, strict=True):
                start, end = end, end + slots.size
                part = weights[start:end]
                np.multiply(self._slot_len[slots], per_token, out=part)
                part += fixed
                part += tf
                np.divide(tf, part, out=part)
                part *= self._idf(int(self._df[term]), n, average) * (self.k1 + 1)
            slot_id, count = self._slot_id, self._next  # a compaction makes new arrays
        slots, scores = sum_by_slot(all_slots, weights, count)
        ids = slot_id[slots]
        if ids.size > 1 and not (ids[1:] > ids[:-1]).all():  # ids added out of order
            order = np.argsort(ids)
            ids, scores = ids[order], scores[order]
        ids.flags.writeable = scores.flags.writeable = False
        with self._lock:
            if self._generation == generation:  # no change since: still the answer
                if len(self._recent) >= _RECENT:
                    self._recent.clear()
                self._recent[key] = (generation, ids, scores)
        return ids, scores

    def scores(self, query: str) -> tuple[Ints, Floats64]:
        """BM25 score of every indexed id for ``query`` (ids increasing, scores)."""
        with self._lock:
            ids = np.fromiter(self._slot.keys(), dtype=np.int64, count=len(self._slot))
        ids.sort()
        return ids, values_at(*self.matches(query), ids)

    def scores_of(self, query: str, ids: Sequence[int]) -> Floats64:
        """BM25 score of ``query`` for each of ``ids`` (0 where no term matches).

        Costs the postings of the query's terms and the ids asked, not the corpus.

        Raises:
            KeyError: if an id is not indexed.
        """
        want = np.asarray(ids, dtype=np.int64).ravel()
        with self._lock:
            missing = [i for i in want.tolist() if i not in self._slot]
        if missing:
            raise NotIndexedError(f"ids not in the BM25 index: {missing[:5]}")
        return values_at(*self.matches(query), want)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Top ``k`` ``(id, score)`` pairs among texts sharing a query term, best first.

        Okapi's idf is floored for a term in more than half the texts, so matching, not a
        positive score, decides what is returned (with ``idf="lucene"`` every match scores
        above 0). Ties go to the lower id.
        """
        if k < 1:
            raise ConfigError(f"k must be >= 1, got {k}")
        ids, scores = self.matches(query)
        if not ids.size:
            return []
        order = top_k(scores[None, :], k)[0][0]
        return [(int(ids[i]), float(scores[i])) for i in order]

    def search_many(self, queries: Sequence[str], k: int) -> list[list[tuple[int, float]]]:
        """:meth:`search` for each query (a database backend answers them in one read)."""
        return [self.search(q, k) for q in queries]

    def save(self, directory: Path) -> list[str]:
        """Write ``bm25.json`` (ids and token lists, in order of addition)."""
        with self._lock:
            slots = sorted(self._slot.values())
            starts = [s.start for s in self._segments]
            tokens = []
            for slot in slots:  # each term as often as it occurs (order does not count)
                segment = self._segments[bisect.bisect_right(starts, slot) - 1]
                row = segment.row(slot)
                tokens.append(
                    [
                        self._names[t]
                        for t, tf in zip(
                            segment.doc_terms[row].tolist(),
                            segment.doc_tf[row].tolist(),
                            strict=True,
                        )
                        for _ in range(tf)
                    ]
                )
            payload = {
                "k1": self.k1,
                "b": self.b,
                "epsilon": self.epsilon,
                "idf": self.idf,
                "ids": self._slot_id[slots].tolist(),
                "tokens": tokens,
            }
        (directory / "bm25.json").write_text(json.dumps(payload), encoding="utf-8")
        return ["bm25.json"]

    @classmethod
    def load(cls, directory: Path) -> BM25Index:
        """Read what :meth:`save` wrote."""
        payload = json.loads((directory / "bm25.json").read_text(encoding="utf-8"))
        index = cls(
            k1=payload["k1"],
            b=payload["b"],
            epsilon=payload.get("epsilon", 0.25),
            idf=payload.get("idf", "okapi"),
        )
        ids, tokens = payload["ids"], payload["tokens"]
        if len(ids) != len(tokens):
            raise StoreError("bm25.json: ids and token lists differ in length")
        index.add_tokens(ids, ([str(t) for t in ts] for ts in tokens))
        return index

    def __repr__(self) -> str:
        return f"BM25Index(k1={self.k1}, b={self.b}, idf={self.idf!r}, size={len(self)})"
