"""Sentence splitting with exact character offsets.

:func:`split_sentences` is a rule-based splitter that returns :class:`~semrag.types.Span`
objects, never strings, so nothing is lost or moved: every non-whitespace character of
the input lies in exactly one span, spans are in order, and no span starts or ends with
whitespace.

Rules, in order of precedence:

* A blank line always ends a sentence; so does a line break before a list item
  (``-``, ``*``, ``•``, ``1.``, ``a)``). A Markdown heading (``# ...``) is a sentence
  of its own.
* CJK and other scripts' terminal punctuation (``。！？``, ``।``, ``؟``, ``።`` ...) ends a
  sentence right away, whitespace or not.
* ``.``, ``!``, ``?``, ``…`` and ``...`` end a sentence when followed (after any closing
  quotes or brackets) by whitespace and a word that does not start in lower case (a
  camel-case name such as ``iPad`` counts as capitalised, and in a text with no capital
  letter at all a lower-case word may start a sentence), except after a title abbreviation
  (``Dr.``, ``e.g.``, ``Fig.``), a single-letter initial (``J. Smith``), a list number at
  the start of a line, or an ambiguous abbreviation (``U.S.``, ``Inc.``, ``p.m.``,
  ``No.``, ``art.``) unless the next word is a common sentence opener or a capitalised
  word the text also uses in lower case.
* Decimals (``3.14``) never split, since no whitespace follows their dot.
* **Line structure.** In a line-structured text every line break ends a sentence, so
  transcripts, subtitles, lists, poems and exported notes with one utterance per line
  and little or no punctuation still get sentences (see :func:`is_line_structured`
  for the rule; ``lines="always" | "never"`` overrides it).

Any callable ``(text) -> Sequence[Span | tuple[int, int]]`` can replace this splitter in
the chunkers; :func:`normalize_sentence_spans` makes its output safe.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

from semrag.errors import ConfigError
from semrag.types import Span

__all__ = [
    "LINE_MODES",
    "SentenceSplitter",
    "is_line_structured",
    "normalize_sentence_spans",
    "split_sentences",
]

SentenceSplitter = Callable[[str], Sequence["Span | tuple[int, int] | str"]]
"""Any callable that returns the sentence spans of a text, or its sentences in order (as
LlamaIndex's ``sentence_splitter`` and ``re.split`` do; each is found after the last)."""

_CLOSERS = "\"'”’»)]}」』）〕】〉》›"
_OPENERS = "\"'“‘«([{「『（〔【〈《‹"
# Terminal punctuation of scripts that do not need whitespace after the stop.
_CJK_STOPS = "。！？｡︒﹒﹗﹖"
_OTHER_STOPS = "।॥؟۔።፧፨᙮჻܂꓿"
_LATIN_STOPS = ".!?…‽"

_C = re.escape(_CLOSERS)
_CANDIDATE = re.compile(
    # every branch starts with a stop or a line break: the lookahead lets the scan skip
    # the other characters three times faster
    rf"(?=[{re.escape(_CJK_STOPS + _OTHER_STOPS + _LATIN_STOPS)}\n])(?:"
    rf"(?:[{re.escape(_CJK_STOPS + _OTHER_STOPS)}]+[{_C}]*)"  # break right after
    rf"|(?:[{re.escape(_LATIN_STOPS)}]+[{_C}]*(?=\s|$))"
    r"|(?:\n[ \t\r\f\v]*\n\s*)"  # blank line
    r"|(?:\n(?=[ \t]*(?:[-*•‣◦·–]|\d{1,3}[.)]|[A-Za-z][.)])\s))"  # line break before a list item
    r")"
)
_HEADING_LINE = re.compile(r"^[ \t]*#{1,6}[ \t]+[^\n]*$", re.MULTILINE)

# Abbreviations after which a period never ends a sentence.
_TITLES = frozenset(
    """mr mrs ms mx dr prof sr jr st rev fr gen capt cpt lt sgt maj cmdr adm hon gov sen rep
    pres supt nos fig figs eq eqs vs cf e.g i.e al approx ca vol vols pp ch sec secs
    dept viz eds op mt ft ave blvd rd mssrs messrs""".split()
)
# Abbreviations that are also words, or may end a sentence ("modern art.", "at 5 p.m."):
# they end one when a common opener follows, or a capitalised word that the text also
# uses in lower case (so it is capitalised only because a sentence starts with it).
_AMBIGUOUS = frozenset(
    """etc inc ltd co corp bros llc plc a.m p.m u.s u.k u.n e.u u.s.a jan feb mar apr jun jul
    aug sep sept oct nov dec ph.d m.d b.a m.a b.sc m.sc d.c no art col est ed""".split()
)
_OPENERS_WORDS = frozenset(
    """the a an it its he she they we i you this that these those there here but and or so yet
    however in on at for if when while after before as his her their our my your one some many
    most all no not then thus also still such each both what which who why how today tomorrow
    tonight yesterday now later meanwhile afterwards finally first next""".split()
)
_DOTTED = re.compile(r"^(?:[A-Za-z]\.)+[A-Za-z]$")

LINE_MODES = ("auto", "always", "never")
"""Values of ``split_sentences(lines=...)``."""
_TERMINAL = frozenset(_LATIN_STOPS + _CJK_STOPS + _OTHER_STOPS)
# Thresholds of the line-structure rule (see is_line_structured).
_MIN_LINE_BREAKS = 2
_WRAP_MIN_WIDTH = 30
_WRAP_LINE_SHARE = 0.8


_NEXT_WORD = re.compile(rf"[\s{re.escape(_OPENERS)}]*(\S*)")
_LOOK_BACK = 64  # characters searched for the word before a stop; longer words are walked


def _previous_word(text: str, pos: int) -> tuple[str, int]:
    """Return the run of non-space characters ending at ``pos`` and where it starts."""
    low = max(0, pos - _LOOK_BACK)
    window = text[low:pos]
    word = "" if not window or window[-1].isspace() else window.rsplit(None, 1)[-1]
    start = pos - len(word)
    if start == low and low > 0:  # a word longer than the window: walk back
        while start > 0 and not text[start - 1].isspace():
            start -= 1
    return text[start:pos], start


def _next_word(text: str, pos: int) -> str:
    """Return the next word after ``pos``, skipping whitespace and opening quotes."""
    return _NEXT_WORD.match(text, pos).group(1)  # type: ignore[union-attr]


def _starts_lower(word: str, caseless_text: bool) -> bool:
    """Whether the word after a stop continues the sentence.

    It does when it starts in lower case, unless it is a camel-case name ("iPhone",
    "eBay") or the whole text is in lower case.
    """
    if not word[0].islower() or caseless_text:
        return False
    return not any(c.isupper() for c in word[1:])


def _ends_latin_sentence(
    text: str,
    stop_start: int,
    end: int,
    caseless_text: bool = False,
    in_lower_case: Callable[[str], bool] = lambda word: False,
) -> bool:
    """Decide whether a Latin stop ``text[stop_start:end]`` (plus closers) ends a sentence."""
    nxt = _next_word(text, end)
    if not nxt:
        return True
    if _starts_lower(nxt, caseless_text):
        return False
    stops = text[stop_start:end].rstrip(_CLOSERS)
    if stops != ".":
        return True  # "!", "?", "...", "…" before a capital or non-cased word
    word, word_start = _previous_word(text, stop_start)
    word = word.lstrip(_OPENERS)
    if not word:
        return True
    key = word.lower()
    if key in _TITLES:
        return False
    if len(word) == 1 and word.isalpha() and word.isupper():
        return False  # an initial: "J. Smith"
    if word.isdigit() and not text[text.rfind("\n", 0, word_start) + 1 : word_start].strip():
        return False  # a numbered list marker: "1. First item"
    if key in _AMBIGUOUS or _DOTTED.match(word):
        following = nxt.strip(_OPENERS).rstrip(",;:.!?")
        return following.lower() in _OPENERS_WORDS or (
            following[:1].isupper() and in_lower_case(following.lower())
        )
    return True


def is_line_structured(text: str) -> bool:
    r"""Whether ``text`` puts one sentence, utterance, heading or item per line.

    The rule looks at the line breaks inside paragraphs (a line followed by another
    non-blank line); blank lines always end a sentence anyway. The text is
    line-structured when

    1. it has at least two such line breaks, and
    2. it does not look like hard-wrapped prose. A line that was broken by wrapping
       could not have taken the next line's first word within the text's width (the
       90th percentile line length); in hard-wrapped prose at least 80% of the lines are
       like that. Lines narrower than 30 characters are never taken for wrapped prose.

    A line break that is not wrapping was put there by the author, so it ends a sentence
    even where the line has no final stop: a transcript, a subtitle or caption file, a
    list, a poem, a title above its text, one sentence or paragraph per line. A novel
    wrapped at 70 columns is not line-structured, and its sentences run across lines.

    Examples:
        >>> is_line_structured("so welcome back\ntoday we talk about waves\nfirst some history")
        True
        >>> is_line_structured("Bees\nBees make honey. They live in hives.\nSee also: wasps")
        True
    """
    lines = [line.strip() for line in text.split("\n")]
    pairs = [(a, b) for a, b in zip(lines, lines[1:], strict=False) if a and b]
    if len(pairs) < _MIN_LINE_BREAKS:
        return False
    widths = sorted(len(a) for a, _ in pairs)
    width = widths[int(0.9 * (len(widths) - 1))]
    if width < _WRAP_MIN_WIDTH:
        return True
    # A line broken by wrapping could not take the next line's first word.
    full = sum(len(a) + 1 + len(b.split(maxsplit=1)[0]) > width for a, b in pairs)
    return full < _WRAP_LINE_SHARE * len(pairs)


_LOWER_WORD = re.compile(r"(?<![\w.])[a-z][a-z'’-]*\b")
"""A word in lower case, as the ambiguous-abbreviation rule reads the text's words."""
_WORD_OR_DOT = re.compile(r"[\w.]")
_IN_WORD = frozenset("'’-")  # may join a lower-case word to the one before it


def _used_in_lower_case(text: str, word: str) -> bool:
    """Whether ``text`` holds ``word`` as one of its lower-case words (:data:`_LOWER_WORD`).

    The same answer as finding all of the text's lower-case words and looking ``word`` up,
    found by searching for ``word`` alone (one call in about a hundred texts asks, and the
    search usually stops early). An occurrence that may sit inside a longer word joined by
    an apostrophe or hyphen is left to the full scan.
    """
    at = text.find(word)
    while at >= 0:
        if at == 0 or not _WORD_OR_DOT.match(text, at - 1):
            if at > 0 and text[at - 1] in _IN_WORD:
                return word in _LOWER_WORD.findall(text)
            found = _LOWER_WORD.match(text, at)
            if found is not None and found.group() == word:
                return True
        at = text.find(word, at + 1)
    return False


def _cut_points(text: str, lines: str) -> list[int]:
    cuts: list[int] = []
    if lines == "always" or (lines == "auto" and is_line_structured(text)):
        cuts += [m.start() for m in re.finditer("\n", text)]
    caseless = not any(map(str.isupper, text))  # per character, in C
    in_lower_case = functools.cache(functools.partial(_used_in_lower_case, text))
    for match in _CANDIDATE.finditer(text):
        token = match.group()
        if token[0] == "\n":
            cuts.append(match.start())
        elif token[0] in _LATIN_STOPS:
            if _ends_latin_sentence(text, match.start(), match.end(), caseless, in_lower_case):
                cuts.append(match.end())
        else:
            cuts.append(match.end())
    if "#" in text:  # (most texts have no heading line to look for)
        for match in _HEADING_LINE.finditer(text):
            cuts += (match.start(), match.end())
    return cuts


def _stripped(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _spans_from_cuts(text: str, cuts: Sequence[int]) -> list[Span]:
    spans: list[Span] = []
    prev = 0
    for cut in sorted(set(cuts)) + [len(text)]:
        if cut <= prev:
            continue
        start, end = _stripped(text, prev, cut)
        if start < end:
            spans.append(Span(start, end))
        prev = cut
    return spans


def split_sentences(text: str, *, lines: str = "auto") -> list[Span]:
    """Split ``text`` into sentence spans.

    Args:
        text: any string, including empty, whitespace-only or binary-looking text.
        lines: ``"auto"`` ends a sentence at every line break when
            :func:`is_line_structured` says the text is line-structured; ``"always"``
            does so in any text; ``"never"`` uses punctuation (and blank lines, list
            items and headings) only.

    Returns:
        Spans in order, non-overlapping, none empty, none starting or ending with
        whitespace; together they cover every non-whitespace character.

    Raises:
        TypeError: if ``text`` is not a ``str``.
        ConfigError: if ``lines`` is not one of :data:`LINE_MODES`.

    Examples:
        >>> t = "Dr. Smith arrived at 3.30 p.m. on Monday. He was late!"
        >>> [s.of(t) for s in split_sentences(t)]
        ['Dr. Smith arrived at 3.30 p.m. on Monday.', 'He was late!']
    """
    if not isinstance(text, str):
        raise ConfigError(f"text must be str, got {type(text).__name__}")
    if lines not in LINE_MODES:
        raise ConfigError(f"lines must be one of {LINE_MODES}, got {lines!r}")
    return _spans_from_cuts(text, _cut_points(text, lines))


def normalize_sentence_spans(
    text: str, spans: Sequence[Span | tuple[int, int] | str]
) -> list[Span]:
    """Make the output of any sentence splitter safe to chunk.

    Only the start of each span is trusted: sentence ``i`` runs from the start of span
    ``i`` to the start of span ``i + 1`` (whitespace trimmed), and text before the first
    span joins the first sentence. So a splitter that skips characters cannot make a
    chunker lose them.

    Args:
        text: the text that was split.
        spans: what the splitter returned, as :class:`Span` or ``(start, end)`` pairs, or
            the sentences' texts in order (blank ones skipped).

    Returns:
        Spans with the guarantees of :func:`split_sentences`.

    Raises:
        ConfigError: if the spans are out of bounds or out of order, or a sentence's text
            is not in ``text`` after the one before it.

    Examples:
        >>> [s.of("One. Two.") for s in normalize_sentence_spans("One. Two.", ["One.", "Two."])]
        ['One.', 'Two.']
    """
    starts: list[int] = []
    prev_end = 0
    for item in spans:
        if isinstance(item, str):
            if not item.strip():
                continue
            at = text.find(item.strip(), prev_end)
            if at < 0:
                raise ConfigError(
                    f"sentence splitter returned {item[:40]!r}, which is not in the text "
                    "after the sentence before it"
                )
            item = (at, at + len(item.strip()))
        start, end = (item.start, item.end) if isinstance(item, Span) else item
        if not (0 <= start <= end <= len(text)):
            raise ConfigError(f"sentence splitter returned span [{start}, {end}) outside the text")
        if start < prev_end:
            raise ConfigError("sentence splitter returned overlapping or unordered spans")
        starts.append(start)
        prev_end = end
    return _spans_from_cuts(text, starts[1:])
