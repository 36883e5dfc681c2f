"""BM25 over the same integer ids as the dense index (Okapi BM25, as rank-bm25 scores it).

References:
    Robertson & Zaragoza (2009), "The Probabilistic Relevance Framework: BM25 and Beyond";
    Trotman et al. (2014), the variants implemented by rank-bm25.
"""

from __future__ import annotations

import json
import math
import re
import sys
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from semrag.errors import ConfigError
from semrag.index.change import Change
from semrag.index.dense import top_k

__all__ = ["IDF_VARIANTS", "BM25Index", "bm25_tokenize"]

IDF_VARIANTS = ("okapi", "lucene")
_RECENT = 32  # query answers BM25Index.matches keeps until the next change

Ints = npt.NDArray[np.int64]
Floats64 = npt.NDArray[np.float64]

_TOKEN = re.compile(r"\w+", re.UNICODE)
# A short English stop list: BM25's IDF already discounts common words, these only save time.
_STOP = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the to was were "
    "will with".split()
)


def bm25_tokenize(text: str) -> list[str]:
    """Lower-cased word tokens without the commonest English function words."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOP]


class BM25Index:
    """BM25 kept in postings, changed in place by add and delete.

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

    A query reads only the postings of its terms; a change touches only the postings of
    the changed texts' terms. Okapi's average idf comes from a histogram of document
    frequencies, so it costs as many steps as there are distinct frequencies.

    Args:
        k1: term-frequency saturation.
        b: length normalisation.
        epsilon: Okapi's floor factor for common terms (rank-bm25's default).
        idf: ``"okapi"`` or ``"lucene"``.

    Example:
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
        # id -> (length, its distinct terms), in insertion order. The terms are interned:
        # one string per term, however many texts hold it (the term frequencies are in the
        # postings), so a text costs its distinct terms, not a copy of its tokens.
        self._docs: dict[int, tuple[int, tuple[str, ...]]] = {}
        self._postings: dict[str, dict[int, int]] = {}  # term -> {id: term frequency}
        self._df_hist: dict[int, int] = {}  # document frequency -> number of terms
        self._generation = 0  # counts changes: the caches below hold for one generation
        self._average: tuple[int, float] | None = None  # (generation, Okapi's average idf)
        self._recent: dict[str, tuple[int, Ints, Floats64]] = {}  # tokens -> matches
        self._total_len = 0
        self._id_range = (0, -1)  # bounds every indexed id (for a dense tally in matches)
        # while the ids are dense: (lowest id, the length of each text by id - lowest id)
        self._lengths: tuple[int, Floats64] | None = None
        self._arrays: dict[str, tuple[Ints, Floats64, Floats64]] = {}  # per-term cache
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._docs)

    @property
    def _ids(self) -> list[int]:
        return list(self._docs)

    def _move(self, df_from: int, df_to: int) -> None:
        hist = self._df_hist
        if df_from:
            hist[df_from] -= 1
            if not hist[df_from]:
                del hist[df_from]
        if df_to:
            hist[df_to] = hist.get(df_to, 0) + 1

    def add(self, ids: Sequence[int], texts: Sequence[str]) -> None:
        """Index ``texts`` under ``ids``.

        Raises:
            ConfigError: if the lengths differ or an id is already indexed.
        """
        if len(ids) != len(texts):
            raise ConfigError("ids and texts differ in length")
        self._add_tokens(ids, [bm25_tokenize(t) for t in texts])

    def _add_tokens(self, ids: Sequence[int], token_lists: Sequence[list[str]]) -> None:
        new = [int(i) for i in ids]
        if len(set(new)) != len(new) or any(i in self._docs for i in new):
            raise ConfigError("duplicate ids in BM25Index.add")
        grown: dict[str, list[tuple[int, int, int]]] = {}  # cached terms' new postings
        with self._lock:
            self._generation += 1
            if new:
                low, high = min(new), max(new)
                if self._docs:
                    low, high = min(low, self._id_range[0]), max(high, self._id_range[1])
                self._id_range = (low, high)
            for i, tokens in zip(new, token_lists, strict=True):
                counts = Counter(map(sys.intern, tokens))
                self._docs[i] = (len(tokens), tuple(counts))
                self._total_len += len(tokens)
                for term, tf in counts.items():
                    posting = self._postings.setdefault(term, {})
                    self._move(len(posting), len(posting) + 1)
                    posting[i] = tf
                    if term in self._arrays:
                        grown.setdefault(term, []).append((i, tf, len(tokens)))
            self._note_lengths(new, [len(t) for t in token_lists])
            for term, rows in grown.items():  # extend cached arrays once per term
                ids_, tf_, length_ = self._arrays[term]
                more = np.asarray(rows, dtype=np.float64).reshape(-1, 3)
                self._arrays[term] = (
                    np.concatenate([ids_, more[:, 0].astype(np.int64)]),
                    np.concatenate([tf_, more[:, 1]]),
                    np.concatenate([length_, more[:, 2]]),
                )

    def _note_lengths(self, ids: list[int], lengths: list[int]) -> None:
        """Keep the texts' lengths in an array by id while the ids are dense.

        A term's postings then get their lengths in one gather (:meth:`_term_arrays`).
        Ids spread over a range more than four times the texts (plus 1024) keep their
        lengths in ``_docs`` alone.
        """
        low, high = self._id_range
        span = high - low + 1
        if span > 4 * len(self._docs) + 1024:
            self._lengths = None
            return
        kept = self._lengths
        if kept is None or kept[0] != low or kept[1].size < span:  # a larger table
            table = np.zeros(max(span, 2 * kept[1].size if kept is not None else 0))
            if kept is not None and kept[0] == low:
                table[: kept[1].size] = kept[1]
            else:  # the lowest id moved, or the ids were spread: every text again
                for i, (length, _) in self._docs.items():
                    table[i - low] = length
            kept = self._lengths = (low, table)
        kept[1][np.asarray(ids, np.int64) - low] = lengths

    def remove(self, ids: Sequence[int]) -> int:
        """Remove ids; returns how many were present."""
        removed = 0
        shrunk: dict[str, list[int]] = {}  # cached terms' removed postings
        with self._lock:
            self._generation += 1
            for i in {int(i) for i in ids}:
                doc = self._docs.pop(i, None)
                if doc is None:
                    continue
                removed += 1
                self._total_len -= doc[0]
                for term in doc[1]:
                    posting = self._postings[term]
                    self._move(len(posting), len(posting) - 1)
                    del posting[i]
                    if not posting:
                        del self._postings[term]
                        self._arrays.pop(term, None)
                    elif term in self._arrays:
                        shrunk.setdefault(term, []).append(i)
            for term, gone in shrunk.items():  # filter cached arrays once per term
                if term not in self._arrays:  # a later removal emptied its postings
                    continue
                ids_, tf_, length_ = self._arrays[term]
                keep = ~np.isin(ids_, gone)
                self._arrays[term] = (ids_[keep], tf_[keep], length_[keep])
        return removed

    def stage(self, change: Change) -> Callable[[], None]:
        """Tokenize ``change``'s texts now; the returned function puts them in the postings.

        Publishing costs the changed texts' postings only (no scan of the corpus).

        Raises:
            ConfigError: if an added id is already indexed and not removed by the change.
        """
        removed = change.removed_chunk_ids()
        ids, chunks, _ = change.added_chunks()
        tokens = [bm25_tokenize(c.text) for c in chunks]
        gone = set(removed)
        if len(set(ids)) != len(ids) or any(i in self._docs and i not in gone for i in ids):
            raise ConfigError("duplicate ids in BM25Index.add")

        def publish() -> None:
            if removed:
                self.remove(removed)
            if ids:
                self._add_tokens(ids, tokens)

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

    def _term_arrays(self, term: str) -> tuple[Ints, Floats64, Floats64]:
        """``(ids, tf, length)`` of a term's postings (cached until the term changes)."""
        found = self._arrays.get(term)
        if found is None:
            posting = self._postings[term]
            ids = np.fromiter(posting.keys(), dtype=np.int64, count=len(posting))
            tf = np.fromiter(posting.values(), dtype=np.float64, count=len(posting))
            if self._lengths is not None:
                length = self._lengths[1][ids - self._lengths[0]]
            else:
                length = np.fromiter(
                    (self._docs[i][0] for i in posting), dtype=np.float64, count=len(posting)
                )
            found = self._arrays[term] = (ids, tf, length)
        return found

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
            n = len(self._docs)
            present = [t for t in tokens if t in self._postings]
            if not n or not present or not self._total_len:
                return np.zeros(0, np.int64), np.zeros(0)
            average = self._average_idf(n) if self.idf == "okapi" else 0.0
            avgdl = self._total_len / n
            low, high = self._id_range
            ids_parts, score_parts = [], []
            for term in present:  # a repeated query term counts again, as in rank-bm25
                ids, tf, length = self._term_arrays(term)
                idf = self._idf(len(self._postings[term]), n, average)
                norm = tf + self.k1 * (1 - self.b + self.b * length / avgdl)
                ids_parts.append(ids)
                score_parts.append(idf * tf * (self.k1 + 1) / norm)
        uniq, scores = _sum_by_id(np.concatenate(ids_parts), np.concatenate(score_parts), low, high)
        uniq.flags.writeable = scores.flags.writeable = False
        with self._lock:
            if self._generation == generation:  # no change since: still the answer
                if len(self._recent) >= _RECENT:
                    self._recent.clear()
                self._recent[key] = (generation, uniq, scores)
        return uniq, scores

    def scores(self, query: str) -> tuple[Ints, Floats64]:
        """BM25 score of every indexed id for ``query`` (ids increasing, scores)."""
        with self._lock:
            ids = np.fromiter(self._docs.keys(), dtype=np.int64, count=len(self._docs))
        ids.sort()
        return ids, _values_at(*self.matches(query), ids)

    def scores_of(self, query: str, ids: Sequence[int]) -> Floats64:
        """BM25 score of ``query`` for each of ``ids`` (0 where no term matches).

        Costs the postings of the query's terms and the ids asked, not the corpus.

        Raises:
            KeyError: if an id is not indexed.
        """
        want = np.asarray(ids, dtype=np.int64).ravel()
        with self._lock:
            missing = [i for i in want.tolist() if i not in self._docs]
        if missing:
            raise KeyError(f"ids not in the BM25 index: {missing[:5]}")
        return _values_at(*self.matches(query), want)

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
        """Write ``bm25.json`` (ids and token lists)."""
        with self._lock:
            payload = {
                "k1": self.k1,
                "b": self.b,
                "epsilon": self.epsilon,
                "idf": self.idf,
                "ids": list(self._docs),
                "tokens": [  # each term as often as it occurs (order does not count)
                    [t for t in terms for _ in range(self._postings[t][i])]
                    for i, (_, terms) in self._docs.items()
                ],
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
            raise ValueError("bm25.json: ids and token lists differ in length")
        index._add_tokens(ids, [[str(t) for t in ts] for ts in tokens])
        return index

    def __repr__(self) -> str:
        return f"BM25Index(k1={self.k1}, b={self.b}, idf={self.idf!r}, size={len(self)})"


def _sum_by_id(ids: Ints, weights: Floats64, low: int, high: int) -> tuple[Ints, Floats64]:
    """The distinct ``ids`` (increasing) and the sum of the ``weights`` of each.

    Every id lies in ``low .. high``. Where that range is small next to the number of ids
    (a query of common terms), one tally over it costs less than sorting the ids; both
    sum each id's weights in the order given, so the results are the same to the bit.
    """
    span = high - low + 1
    if span > 8 * ids.size:
        uniq, inverse = np.unique(ids, return_inverse=True)
        return uniq, np.bincount(inverse, weights=weights, minlength=uniq.size)
    at = ids - low
    seen = np.zeros(span, bool)
    seen[at] = True
    places = np.flatnonzero(seen)
    return places + low, np.bincount(at, weights=weights, minlength=span)[places]


def _values_at(hit: Ints, values: Floats64, want: Ints) -> Floats64:
    """``values`` of each of ``want`` by its place in ``hit`` (increasing ids), 0 if absent."""
    if not hit.size or not want.size:
        return np.zeros(want.size)
    pos = np.minimum(np.searchsorted(hit, want), hit.size - 1)
    return np.where(hit[pos] == want, values[pos], 0.0)
