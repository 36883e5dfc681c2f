"""Entities and key phrases without a model: capitalised runs, quotes, numbers, content words.

These rule-based extractors are the no-LLM defaults wherever semrag needs the "things a
text talks about": the sparse sub-queries of intent-aware retrieval, the key information
elements of SPC's coverage audit, and the heuristic knowledge-graph extractor. Every
phrase keeps its exact character offsets, so ``text[p.start:p.end] == p.text``.

Rules:

* **entity**: a run of capitalised words (``Barack Obama``, ``University of Chicago``;
  ``of``/``de``/``the``/``and``/``&`` may join two capitalised words), an all-caps
  acronym, or a capitalised word that does not open its sentence. A sentence-initial
  capitalised word counts only when another capitalised word follows it or it is not a
  common English word (``The``, ``Who``, ``However`` never count alone).
* **quoted**: text between straight or curly double quotes (2-80 characters).
* **number**: years, numbers with optional decimals, percentages.
* **phrase**: a maximal run of content words (not stop words, not question words),
  lower-cased in :attr:`Phrase.key`.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from itertools import accumulate, compress

__all__ = ["QUESTION_WORDS", "STOP_WORDS", "Phrase", "content_words", "entities", "key_phrases"]

QUESTION_WORDS = frozenset("who whom whose what which when where why how".split())
"""English question words; never part of an entity or key phrase."""

STOP_WORDS = (
    frozenset(
        """a about above after again against all also am an and any are aren't as at be because
    been before being below between both but by can could did do does doing down during each
    else ever few for from further had has have having he her here hers herself him himself his
    i if in into is isn't it it's its itself just let me more most much must my myself no nor
    not now of off on once one only or other ought our ours ourselves out over own per same
    shall she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up upon us very was we were what when where
    which while who whom whose why will with within without would yet you your yours yourself
    yourselves many name named called known
    """.split()
    )
    | QUESTION_WORDS
)
"""Function words (and question words) skipped by :func:`key_phrases`."""

# Words that open sentences in capitals without naming anything.
_COMMON_OPENERS = STOP_WORDS | frozenset(
    """however therefore thus moreover furthermore meanwhile instead although though since
    after before during while in on at as if when once then still also yet finally first second
    third later today tomorrow yesterday according despite unlike like many most some several
    each every another other such these those this that there here its it his her their our
    name list give tell explain describe find identify consider suppose please""".split()
)
_CONNECTORS = frozenset({"of", "de", "del", "della", "da", "van", "von", "der", "the", "and", "&"})
_WORD = re.compile(r"[\w][\w'’\-.]*[\w]|[\w]", re.UNICODE)
_WORD_SPLIT = re.compile(f"({_WORD.pattern})")
_QUOTED = re.compile(r"[\"“]([^\"“”\n]{2,80})[\"”]")
# A digit not after a word character or a point, then 1,234(.5)(%) or 12(.5)(%) not before a
# word character (the digit first, so the scan looks behind only at digits)
_NUMBER = re.compile(r"\d(?<![\w.]\d)(?:\d{0,2}(?:,\d{3})+(?:\.\d+)?%?|\d*(?:\.\d+)?%?(?!\w))")
_SENTENCE_BREAK = re.compile(r"[.!?;:\n]\s*$")


@dataclass(frozen=True, slots=True)
class Phrase:
    """An extracted phrase. Invariant: ``source[start:end] == text``."""

    text: str
    """The phrase as it appears in the source."""
    start: int
    """Offset of the first character, inclusive."""
    end: int
    """Offset after the last character, exclusive."""
    kind: str
    """``"entity"``, ``"quoted"``, ``"number"`` or ``"phrase"``."""

    @property
    def key(self) -> str:
        """Lower-cased, whitespace-normalised form for matching and deduplication."""
        return " ".join(self.text.lower().split())


def _is_capitalised(word: str) -> bool:
    return word[:1].isupper() or (len(word) > 1 and word.isupper())


def _opens_sentence(text: str, start: int) -> bool:
    return start == 0 or bool(_SENTENCE_BREAK.search(text[max(0, start - 3) : start]))


def _strip_word(text: str, m: re.Match[str]) -> tuple[str, int, int]:
    word, start, end = m.group(), m.start(), m.end()
    while word and word[-1] in ".'’-":
        word, end = word[:-1], end - 1
    if word.endswith(("'s", "’s")):
        word, end = word[:-2], end - 2
    return word, start, end


def _capitalised_word(word: str) -> bool:
    """:func:`_is_capitalised` of a word match, its possessive stripped, digits excluded.

    A word match never ends in ``.``, ``'`` or ``-``: only a possessive is ever stripped.
    """
    stripped = word[:-2] if word.endswith(("'s", "’s")) else word
    return _is_capitalised(stripped) and not stripped[0].isdigit()


def entities(text: str) -> list[Phrase]:
    """Named-entity-like phrases of ``text`` (capitalised runs, quotes, numbers), in order.

    Examples:
        >>> [p.text for p in entities('Who founded the University of Chicago in 1890?')]
        ['University of Chicago', '1890']
    """
    # The words and their offsets come from one split, and the lower-case words are passed
    # over, in C: only a word that may be capitalised (one not all lower case) is tested,
    # stripped and followed in Python.
    parts = _WORD_SPLIT.split(text)  # gap, word, gap, word, ..., gap
    words = parts[1::2]
    offsets = list(accumulate(map(len, parts)))  # word k spans offsets[2k] : offsets[2k + 1]
    n = len(words)

    def word_at(k: int) -> tuple[str, int, int]:
        word, start, end = words[k], offsets[2 * k], offsets[2 * k + 1]
        if word.endswith(("'s", "’s")):  # a word match never ends in ".", "'" or "-"
            return word[:-2], start, end - 2
        return word, start, end

    found: list[Phrase] = []
    i = 0  # the first word not yet in a run
    for c in compress(range(n), map(operator.not_, map(str.islower, words))):
        if c < i or not _capitalised_word(words[c]):
            continue
        i = c
        word, start, end = word_at(i)
        j = last = i
        j_end = last_end = end
        while j + 1 < n:
            nxt, n_start, n_end = word_at(j + 1)
            gap = text[j_end:n_start]
            if gap.strip(" ") or "\n" in gap:
                break
            if _capitalised_word(words[j + 1]):
                j = last = j + 1
                last_end = n_end
            elif nxt.lower() in _CONNECTORS and j + 2 < n and j + 1 - last < 2:
                j += 1
            else:
                break
            j_end = n_end
        run_start, run_end = start, last_end
        if _opens_sentence(text, start) and word.lower() in _COMMON_OPENERS:
            if last == i:
                i = last + 1
                continue
            # "The Beatles" -> "Beatles"; "Who Framed" -> "Framed"
            following, run_start, _ = word_at(i + 1)
            if following.lower() in _CONNECTORS:
                i = last + 1
                continue
        found.append(Phrase(text[run_start:run_end], run_start, run_end, "entity"))
        i = last + 1
    return _dedupe(found + _quotes_and_numbers(text))


def _quotes_and_numbers(text: str) -> list[Phrase]:
    """The quoted phrases, then the numbers, of ``text`` (the rest of :func:`entities`)."""
    quoted = [Phrase(m.group(1), m.start(1), m.end(1), "quoted") for m in _QUOTED.finditer(text)]
    return quoted + [
        Phrase(m.group(), m.start(), m.end(), "number") for m in _NUMBER.finditer(text)
    ]


def content_words(text: str) -> list[str]:
    """Lower-cased words of ``text`` that are not stop or question words.

    Examples:
        >>> content_words("Why did the Roman Empire fall?")
        ['roman', 'empire', 'fall']
    """
    out = []
    for m in _WORD.finditer(text):
        word = _strip_word(text, m)[0].lower()
        if word and word not in STOP_WORDS and not word.isdigit():
            out.append(word)
    return out


def key_phrases(text: str) -> list[Phrase]:
    """Maximal runs of content words, split at stop words and punctuation, in order.

    Examples:
        >>> [p.text for p in key_phrases("What causes ocean tides on the Earth?")]
        ['causes ocean tides', 'Earth']
    """
    found: list[Phrase] = []
    run: list[tuple[int, int]] = []

    def close() -> None:
        if run:
            found.append(Phrase(text[run[0][0] : run[-1][1]], run[0][0], run[-1][1], "phrase"))
            run.clear()

    for m in _WORD.finditer(text):
        word, start, end = _strip_word(text, m)
        if not word or word.lower() in STOP_WORDS:
            close()
            continue
        if run and text[run[-1][1] : start].strip(" '’-"):
            close()
        run.append((start, end))
        if end != m.end():  # stripped punctuation or a possessive ends the run
            close()
    close()
    return found


def _dedupe(phrases: list[Phrase]) -> list[Phrase]:
    """Sort by position, drop phrases inside an earlier longer one and repeated keys."""
    phrases.sort(key=lambda p: (p.start, -(p.end - p.start)))
    out: list[Phrase] = []
    seen: set[str] = set()
    for p in phrases:
        if out and p.start < out[-1].end:
            continue
        if p.key in seen:
            continue
        seen.add(p.key)
        out.append(p)
    return out
