"""Damage detection without a model: is a retrieved chunk semantically complete?

:func:`assess` scores a chunk's completeness in [0, 1] from surface signals that mark the
fragments InSemRAG repairs (paper §3.2.2 and appendix A.1.3). Each signal found multiplies
the score by ``1 - penalty``; a clean chunk scores 1, and any single signal drops it below
the default damage threshold ``delta = 0.5``.

==================== ======= ===== ===========================================================
signal               penalty side  fires when
==================== ======= ===== ===========================================================
cut_start            0.6     start the chunk starts inside a sentence (known from the source's
                                   sentence spans) or, without a source, with a lower-case
                                   letter or a continuing punctuation mark
cut_end              0.6     end   the chunk ends inside a sentence, or without terminal
                                   punctuation
unbalanced           0.6     start brackets or double quotes do not pair up (the side with
                     /end          the unmatched mark)
dangling_reference   0.6     start the chunk opens with a pronoun or demonstrative (He, It,
                                   They, This, These, Such ...): its antecedent is not in the
                                   chunk
discourse_marker     0.55    start the chunk opens with a connective that needs a premise
                                   (However, As a result, Therefore, Moreover ...)
dangling_enumeration 0.55    start the chunk opens with a list item marker, or ends announcing
                     /end          a list (":", "the following", "such as") or with a list
                                   of bare items ("include A, B.") that never closes with
                                   "and"/"or"
==================== ======= ===== ===========================================================

The *side* tells the repair step where the missing context lies: before the chunk
(``start``) or after it (``end``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from semrag.types import Span

__all__ = ["Completeness", "Signal", "assess", "sentence_edges"]

PENALTIES = {
    "cut_start": 0.6,
    "cut_end": 0.6,
    "unbalanced": 0.6,
    "dangling_reference": 0.6,
    "discourse_marker": 0.55,
    "dangling_enumeration": 0.55,
}
"""Penalty of each signal (the score is the product of ``1 - penalty`` over signals)."""

_PRONOUNS = frozenset(
    "he she it they him her his hers its their theirs them this these those such".split()
)
_MARKERS = (
    "however",
    "therefore",
    "thus",
    "hence",
    "consequently",
    "as a result",
    "as such",
    "moreover",
    "furthermore",
    "in addition",
    "additionally",
    "meanwhile",
    "nevertheless",
    "nonetheless",
    "instead",
    "similarly",
    "likewise",
    "otherwise",
    "besides",
    "accordingly",
    "afterwards",
    "in contrast",
    "on the other hand",
    "for example",
    "for instance",
    "in turn",
    "because of this",
    "due to this",
    "despite this",
    "in this case",
    "the latter",
    "the former",
    "the same",
    "also",
    "then",
    "but",
    "and",
    "so",
    "yet",
    "still",
)
_MARKER = re.compile(r"^(?:" + "|".join(re.escape(m) for m in _MARKERS) + r")\b", re.IGNORECASE)
_LEADING_NOISE = "\"'“‘«([{ \t\n"
_TERMINAL = re.compile(r"[.!?…。！？][\"'”’»)\]]*$")
_LIST_ITEM = re.compile(r"^(?:\d{1,2}[.)]|[a-z][.)]|[-*•])\s")
_ANNOUNCE = re.compile(
    r"(?::|\b(?:the following|as follows|such as|namely|including|include|includes))\s*$",
    re.IGNORECASE,
)
_BARE_LIST = re.compile(
    r"\b(?:include|includes|including|such as|namely|consists? of|comprises?)\s+"
    r"([^.;:!?]*,[^.;:!?]*)[.!?]?$",
    re.IGNORECASE,
)
_PAIRS = (("(", ")"), ("[", "]"), ("{", "}"), ("“", "”"))


@dataclass(frozen=True, slots=True)
class Signal:
    """One sign of damage."""

    name: str
    """A key of :data:`PENALTIES`."""
    side: str
    """Where the missing context is: ``"start"`` or ``"end"`` of the chunk."""
    detail: str
    """What was seen (e.g. the opening word)."""

    @property
    def penalty(self) -> float:
        """The signal's penalty."""
        return PENALTIES[self.name]


@dataclass(frozen=True, slots=True)
class Completeness:
    """A chunk's completeness score and the signals behind it."""

    score: float
    """In [0, 1]; 1 = no signal of damage."""
    signals: tuple[Signal, ...] = ()
    """The signals found."""
    source: str = "heuristic"
    """``"heuristic"`` or ``"llm"``."""

    def damaged(self, delta: float = 0.5) -> bool:
        """``score < delta``."""
        return self.score < delta

    @property
    def sides(self) -> set[str]:
        """Sides on which context is missing."""
        return {s.side for s in self.signals}

    def to_metadata(self) -> dict[str, object]:
        """Plain values for metadata."""
        return {
            "score": self.score,
            "source": self.source,
            "signals": [{"name": s.name, "side": s.side, "detail": s.detail} for s in self.signals],
        }


def sentence_edges(spans: Sequence[Span], start: int, end: int) -> tuple[bool, bool]:
    """Whether ``[start, end)`` starts and ends on sentence boundaries of ``spans``.

    Examples:
        >>> sentence_edges([Span(0, 5), Span(6, 12)], 6, 12)
        (True, True)
        >>> sentence_edges([Span(0, 5), Span(6, 12)], 2, 12)
        (False, True)
    """
    starts = {s.start for s in spans}
    ends = {s.end for s in spans}
    return start in starts, end in ends


def _first_words(text: str) -> str:
    return text.lstrip(_LEADING_NOISE)


def _unbalanced(text: str) -> Signal | None:
    for left, right in _PAIRS:
        depth, low = 0, 0
        for ch in text:
            if ch == left:
                depth += 1
            elif ch == right:
                depth -= 1
                low = min(low, depth)
        if low < 0:
            return Signal("unbalanced", "start", f"unmatched {right!r}")
        if depth > 0:
            return Signal("unbalanced", "end", f"unclosed {left!r}")
    if text.count('"') % 2:
        side = (
            "start" if text.rstrip().endswith('"') and not text.lstrip().startswith('"') else "end"
        )
        return Signal("unbalanced", side, "odd number of '\"'")
    return None


def assess(
    text: str, *, starts_sentence: bool | None = None, ends_sentence: bool | None = None
) -> Completeness:
    """The completeness of ``text`` from surface signals (see the module docstring).

    Args:
        text: the chunk's text.
        starts_sentence: whether the chunk starts on a sentence boundary of its source
            (``None`` when unknown: guessed from the text).
        ends_sentence: the same for its end.

    Examples:
        >>> assess("He then announced his resignation.").signals[0].name
        'dangling_reference'
        >>> assess("The minister resigned in May.").score
        1.0
    """
    body = text.strip()
    signals: list[Signal] = []
    if not body:
        return Completeness(0.0, (Signal("cut_start", "start", "empty"),))
    opening = _first_words(body)
    first = re.match(r"[\w'’]+", opening)
    first_word = first.group().lower() if first else ""
    if starts_sentence is False or (
        starts_sentence is None and (opening[:1].islower() or body[:1] in ",;:)]}”’")
    ):
        signals.append(Signal("cut_start", "start", body[:20]))
    if starts_sentence is False and first_word in _PRONOUNS:
        pass  # the cut already explains the missing antecedent
    elif first_word in _PRONOUNS:
        signals.append(Signal("dangling_reference", "start", first.group() if first else ""))
    elif starts_sentence is not False and (marker := _MARKER.match(opening)):
        signals.append(Signal("discourse_marker", "start", marker.group()))
    if ends_sentence is False or (ends_sentence is None and not _TERMINAL.search(body)):
        if not _ANNOUNCE.search(body):
            signals.append(Signal("cut_end", "end", body[-20:]))
    broken = _unbalanced(body)
    if broken is not None:
        signals.append(broken)
    if _LIST_ITEM.match(opening):
        signals.append(Signal("dangling_enumeration", "start", opening[:3]))
    if _ANNOUNCE.search(body):
        signals.append(Signal("dangling_enumeration", "end", body[-20:]))
    else:
        last = re.split(r"(?<=[.!?])\s+", body)[-1]
        bare = _BARE_LIST.search(last)
        if bare and not re.search(r"\b(?:and|or|etc|nor)\b", bare.group(1), re.IGNORECASE):
            signals.append(Signal("dangling_enumeration", "end", bare.group(1)[-30:]))
    score = 1.0
    for s in signals:
        score *= 1.0 - s.penalty
    return Completeness(round(score, 6), tuple(signals))
