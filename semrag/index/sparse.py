"""BM25 over the same integer ids as the dense index (rank-bm25's Okapi BM25).

References:
    Robertson & Zaragoza (2009), "The Probabilistic Relevance Framework: BM25 and Beyond";
    Trotman et al. (2014), the variants implemented by rank-bm25.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag.errors import ConfigError
from semrag.index.change import Change

__all__ = ["BM25Index", "bm25_tokenize"]

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
    """Okapi BM25 with incremental add and delete (the scorer is rebuilt lazily).

    Args:
        k1: term-frequency saturation.
        b: length normalisation.
    """

    def __init__(self, *, k1: float = 1.5, b: float = 0.75) -> None:
        if k1 < 0 or not 0 <= b <= 1:
            raise ConfigError(f"need k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        self.k1 = k1
        self.b = b
        self._ids: list[int] = []
        self._tokens: list[list[str]] = []
        self._bm25: Any = None
        self._id_array = np.zeros(0, dtype=np.int64)
        self._postings: dict[str, list[int]] = {}

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, ids: Sequence[int], texts: Sequence[str]) -> None:
        """Index ``texts`` under ``ids``."""
        if len(ids) != len(texts):
            raise ConfigError("ids and texts differ in length")
        self._ids.extend(int(i) for i in ids)
        self._tokens.extend(bm25_tokenize(t) for t in texts)
        self._invalidate()

    def remove(self, ids: Sequence[int]) -> int:
        """Remove ids; returns how many were present."""
        drop = {int(i) for i in ids}
        keep = [j for j, i in enumerate(self._ids) if i not in drop]
        removed = len(self._ids) - len(keep)
        if removed:
            self._ids = [self._ids[j] for j in keep]
            self._tokens = [self._tokens[j] for j in keep]
            self._invalidate()
        return removed

    def apply(self, change: Change) -> None:
        """Remove the change's removed chunks, then index its added chunks."""
        removed = change.removed_chunk_ids()
        if removed:
            self.remove(removed)
        ids, chunks, _ = change.added_chunks()
        if ids:
            self.add(ids, [c.text for c in chunks])

    def _invalidate(self) -> None:
        self._bm25 = None
        self._postings = {}

    def _scorer(self) -> Any:
        if self._bm25 is None:
            from rank_bm25 import BM25Okapi

            self._bm25 = BM25Okapi(self._tokens, k1=self.k1, b=self.b)
            self._id_array = np.asarray(self._ids, dtype=np.int64)
            postings: dict[str, list[int]] = {}
            for pos, tokens in enumerate(self._tokens):
                for t in set(tokens):
                    postings.setdefault(t, []).append(pos)
            self._postings = postings
        return self._bm25

    def scores(self, query: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """BM25 score of every indexed id for ``query`` (ids, scores)."""
        tokens = bm25_tokenize(query)
        if not self._ids or not tokens or not any(self._tokens):
            return np.asarray(self._ids, dtype=np.int64), np.zeros(len(self._ids))
        scorer = self._scorer()
        return self._id_array, np.asarray(scorer.get_scores(tokens), dtype=np.float64)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Top ``k`` ``(id, score)`` pairs among texts sharing a query term, best first.

        Okapi's IDF is zero for a term in half the texts (and floored when more common),
        so matching, not a positive score, decides what is returned.
        """
        if k < 1:
            raise ConfigError(f"k must be >= 1, got {k}")
        tokens = set(bm25_tokenize(query))
        if not tokens or not any(self._tokens):
            return []
        ids, scores = self.scores(query)  # builds the scorer and the postings
        matched = sorted({p for t in tokens for p in self._postings.get(t, ())})
        if not matched:
            return []
        cand = np.asarray(matched, dtype=np.int64)
        order = cand[np.argsort(-scores[cand], kind="stable")][:k]
        return [(int(ids[i]), float(scores[i])) for i in order]

    def save(self, directory: Path) -> list[str]:
        """Write ``bm25.json`` (ids and token lists; the scorer is rebuilt on load)."""
        payload = {"k1": self.k1, "b": self.b, "ids": self._ids, "tokens": self._tokens}
        (directory / "bm25.json").write_text(json.dumps(payload), encoding="utf-8")
        return ["bm25.json"]

    @classmethod
    def load(cls, directory: Path) -> BM25Index:
        """Read what :meth:`save` wrote."""
        payload = json.loads((directory / "bm25.json").read_text(encoding="utf-8"))
        index = cls(k1=payload["k1"], b=payload["b"])
        index._ids = [int(i) for i in payload["ids"]]
        index._tokens = payload["tokens"]
        return index

    def __repr__(self) -> str:
        return f"BM25Index(k1={self.k1}, b={self.b}, size={len(self)})"
