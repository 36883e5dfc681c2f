"""Entity-name lookup with one meaning on every graph store: exact keys, then fuzzy matches.

A name matches an entity *exactly* when their keys (:func:`~semrag.graph.types.entity_key`)
are equal. A *fuzzy* match is an entity that shares a lookup token with the name (its name
tokens without stop words, see :func:`lookup_tokens`) and scores at least the store's
cutoff: the larger of the token Jaccard similarity and the character ratio of the two keys.
Exact matches rank first, then by score, ties by entity id. Each store finds the
candidates its own way (an in-memory token index, a Neo4j full-text index over the
tokens); :func:`rank_matches` scores and orders them the same way for both.

:func:`best_matches` is the per-name lookup of a query (``GraphStore.lookup``): a name's
exact match alone if it has one, else its best fuzzy matches.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence

from semrag.errors import ConfigError
from semrag.graph.types import entity_key
from semrag.text.phrases import STOP_WORDS

__all__ = ["best_matches", "lookup_tokens", "name_tokens", "per_name", "rank_matches"]

_EXACT = 2.0  # above every fuzzy score (at most 1)


def name_tokens(key: str) -> set[str]:
    """A key's tokens, plus the key without spaces ("sexy back" also finds "sexyback")."""
    words = {t for t in key.replace("-", " ").split() if t}
    if len(words) > 1:
        words.add("".join(key.replace("-", " ").split()))
    return words


def lookup_tokens(key: str) -> set[str]:
    """The tokens a fuzzy lookup follows.

    The name's tokens without stop words ("of", "the": each is shared by thousands of
    names), or all of them if nothing else is left.
    """
    tokens = name_tokens(key)
    return (tokens - STOP_WORDS) or tokens


def fuzzy_score(key: str, candidate: str) -> float:
    """The larger of the token Jaccard similarity and the character ratio of two keys."""
    want, have = name_tokens(key), name_tokens(candidate)
    jaccard = len(want & have) / len(want | have) if want | have else 0.0
    return max(jaccard, difflib.SequenceMatcher(None, key, candidate).ratio())


def rank_matches(
    names: Sequence[str],
    *,
    exists: Callable[[list[str]], set[str]],
    candidates: Callable[[set[str]], Iterable[str]],
    fuzzy: bool,
    cutoff: float,
    limit: int,
) -> list[str]:
    """Ids of the entities ``names`` match, best first (see the module docstring).

    Args:
        names: the names looked up.
        exists: the ids among the given keys that the store holds.
        candidates: the ids of the entities that share one of the given lookup tokens.
        fuzzy: also return fuzzy matches.
        cutoff: the least fuzzy score.
        limit: the most ids returned.
    """
    keys = [k for k in (entity_key(n) for n in names) if k]
    scored = dict.fromkeys(exists(list(dict.fromkeys(keys))), _EXACT)
    if fuzzy:
        for key in keys:
            _score_into(scored, key, candidates(lookup_tokens(key)), cutoff)
    return _best_first(scored, limit)


def best_matches(
    key: str, *, exact: bool, candidates: Iterable[str], cutoff: float, limit: int
) -> list[str]:
    """One name's matches: its exact key alone, else up to ``limit`` fuzzy ones, best first.

    Args:
        key: the name's key (:func:`~semrag.graph.types.entity_key`).
        exact: whether the store holds an entity with this key.
        candidates: the ids sharing one of the key's lookup tokens (unused if ``exact``).
        cutoff: the least fuzzy score.
        limit: the most fuzzy matches.
    """
    if exact:
        return [key]
    scored: dict[str, float] = {}
    _score_into(scored, key, candidates, cutoff)
    return _best_first(scored, limit)


def _score_into(
    scored: dict[str, float], key: str, candidates: Iterable[str], cutoff: float
) -> None:
    """Raise each candidate's score in ``scored`` to its fuzzy score for ``key`` (if kept)."""
    for eid in candidates:
        score = fuzzy_score(key, eid)
        if score >= cutoff and score > scored.get(eid, 0.0):
            scored[eid] = score


def _best_first(scored: dict[str, float], limit: int) -> list[str]:
    """The ``limit`` best ids: by score, ties by id."""
    return sorted(scored, key=lambda e: (-scored[e], e))[:limit]


def per_name(names: Sequence[str], fuzzy_limit: int | Sequence[int]) -> list[int]:
    """``lookup``'s fuzzy limit of each name (one for all, or one each).

    Raises:
        ConfigError: for a negative limit, or a list whose length is not the names'.
    """
    if isinstance(fuzzy_limit, int):
        limits = [fuzzy_limit] * len(names)
    else:
        limits = [int(x) for x in fuzzy_limit]
        if len(limits) != len(names):
            raise ConfigError(
                f"lookup got {len(limits)} fuzzy limits for {len(names)} names; "
                "give one limit, or one per name"
            )
    if any(x < 0 for x in limits):
        raise ConfigError(f"lookup's fuzzy limits must be >= 0, got {min(limits)}")
    return limits
