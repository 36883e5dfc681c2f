"""Coverage audit without a model: key information elements and their support.

:func:`key_elements` lists what a query needs the evidence to contain: its entities
(capitalised runs, quoted strings, numbers) and the content-word phrases not already
inside one. :func:`support_scores` measures, for each element, how well the best evidence
sentence supports it: the larger of

* lexical support: the share of the element's content words that occur in the sentence
  (suffix-insensitive, and two words match when they share a long enough prefix, so
  "succeeded" is supported by "successor" and "governor" by "government"), and
* semantic support: the cosine similarity of element and sentence vectors mapped linearly
  from ``[low, high]`` to ``[0, 1]`` (MiniLM gives related phrase/sentence pairs about
  0.5-0.7 and unrelated ones below 0.2, hence the defaults 0.2 and 0.7).

Elements whose support is below ``epsilon`` (0.6 in the paper) are missing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from semrag.text.phrases import content_words, entities, key_phrases

__all__ = [
    "distinct_queries",
    "follow_up_query",
    "key_elements",
    "lexical_support",
    "support_scores",
]


def key_elements(query: str, *, max_elements: int = 8) -> list[str]:
    """Entities first, then key phrases that do not overlap an entity, in query order.

    Examples:
        >>> key_elements("When was the performer of Sexy Back born?")
        ['Sexy Back', 'performer', 'born']
    """
    ents = entities(query)
    taken = [(e.start, e.end) for e in ents]
    out = [e.text for e in ents]
    for p in key_phrases(query):
        words = [
            (m.start() + p.start, m.end() + p.start, m.group())
            for m in re.finditer(r"[\w'’\-]+", p.text)
        ]
        free = [w for s, e, w in words if not any(a <= s < b for a, b in taken)]
        if free and content_words(" ".join(free)):
            out.append(" ".join(free))
    return list(dict.fromkeys(out))[:max_elements]


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _related(a: str, b: str) -> bool:
    """Same stem, or a shared prefix of at least 5 letters and 70% of the shorter word."""
    if a == b:
        return True
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n >= max(5, math.ceil(0.7 * min(len(a), len(b))))


def lexical_support(element: str, sentence: str) -> float:
    """Share of the element's content words found in the sentence (inflection-tolerant).

    Examples:
        >>> lexical_support("Sexy Back", "SexyBack is a song. Sexy Back was released.")
        1.0
        >>> lexical_support("succeeded", "His successor, Mary Jones, called an election.")
        1.0
    """
    words = content_words(element) or re.findall(r"\w+", element.lower())
    if not words:
        return 0.0
    return 1.0 - len(unsupported_words(words, sentence)) / len(words)


def unsupported_words(words: Sequence[str], text: str) -> list[str]:
    """The ``words`` that ``text`` does not contain, inflections allowed.

    The match is :func:`lexical_support`'s: same stem, or a long shared prefix.

    Examples:
        >>> unsupported_words(["resigned", "Smith", "Paris"], "Smith announced his resignation.")
        ['Paris']
    """
    have = {_stem(w) for w in re.findall(r"\w+", text.lower())}
    out = []
    for word in words:
        w = _stem(word.lower())
        if not (w in have or any(_related(w, h) for h in have)):
            out.append(word)
    return out


def support_scores(
    elements: Sequence[str],
    sentences: Sequence[str],
    element_vectors: npt.ArrayLike,
    sentence_vectors: npt.ArrayLike,
    *,
    low: float = 0.2,
    high: float = 0.7,
) -> tuple[list[float], list[int]]:
    """Support of each element by its best evidence sentence.

    Returns:
        ``(scores, best)``: a score in [0, 1] per element and the index of the sentence
        that gave it (-1 when there is no evidence).
    """
    if not sentences:
        return [0.0] * len(elements), [-1] * len(elements)
    sims = (
        np.asarray(element_vectors, dtype=np.float64)
        @ np.asarray(sentence_vectors, dtype=np.float64).T
    )
    semantic = np.clip((sims - low) / (high - low), 0.0, 1.0)
    scores, best = [], []
    for i, element in enumerate(elements):
        lexical = np.array([lexical_support(element, s) for s in sentences])
        combined = np.maximum(lexical, semantic[i])
        j = int(np.argmax(combined))
        scores.append(float(combined[j]))
        best.append(j)
    return scores, best


def follow_up_query(element: str, query: str, covered: Sequence[str] = ()) -> str:
    """A retrieval query for a missing element.

    An entity is searched on its own; any other element gets the query's entities (or
    content words) as context, so that a follow-up about, say, a birth date still names
    whose birth date. Context the evidence already ``covered`` is left out, so the
    follow-up does not steer back to the documents that were already found.

    Examples:
        >>> follow_up_query("born", "When was the performer of Sexy Back born?")
        'born Sexy Back'
        >>> follow_up_query("Sexy Back", "When was the performer of Sexy Back born?")
        'Sexy Back'
        >>> q = "When did John Smith resign, and what do honey bees do?"
        >>> follow_up_query("honey bees", q, covered=["John Smith", "resign"])
        'honey bees'
    """
    if any(e.text == element for e in entities(query)):
        return element
    done = " ".join(covered).lower()
    others = [
        e.text
        for e in entities(query)
        if e.text.lower() not in element.lower() and e.text.lower() not in done
    ]
    words = [w for w in content_words(query) if w not in element.lower() and w not in done]
    context = others or words
    return " ".join([element, *context]).strip()


def distinct_queries(queries: Sequence[str]) -> list[str]:
    """``queries`` without those that ask for the same words as an earlier one.

    Follow-ups built from one query's words are often its words in another order
    (``'type required model'``, ``'required type model'``): a retriever answers them alike,
    so only the first is kept.

    Examples:
        >>> distinct_queries(["type required model", "required type model", "Sexy Back"])
        ['type required model', 'Sexy Back']
    """
    seen: set[frozenset[str]] = set()
    out = []
    for q in queries:
        key = frozenset(_stem(w) for w in re.findall(r"\w+", q.lower()))
        if key and key not in seen:
            seen.add(key)
            out.append(q)
    return out
