r"""The structure a document already has: paragraphs, headings, lists and tables.

Chunkers break between sentences; :func:`layout` says, for each gap between two sentences,
what the text there looks like (a blank line, a line break, the start of a heading, inside
a table), and for each sentence whether it is a heading and which headings it sits under.
It reads plain text and Markdown, with no parser and no model:

* a **heading** is a sentence that fills its line and is either a Markdown ATX heading
  (``# Title``, level = number of ``#``), a wiki heading (``== Title ==``, level = number
  of ``=``), or a *title line*: at the start of the document or after a blank line, at
  most 10 words, no sentence-ending punctuation, not ending in a joining word ("and",
  "of", ...), starting with a capital letter or digit, followed by a blank line or by a
  line at least half again as long (a wrapped paragraph's first line is as long as the
  next), and by more text (level 7: below every marked heading);
* a **paragraph break** is a gap holding a blank line; a **line break** one holding a
  single newline;
* a **table row** is a line that starts with ``|``;
* nothing inside a fenced code block (```` ``` ```` or ``~~~``) is a heading.

Examples:
    >>> from semrag.text import split_sentences
    >>> text = "# Cats\n\nCats purr. They nap.\n\n## Food\nCats eat fish."
    >>> lay = layout(text, split_sentences(text))
    >>> lay.heading.tolist(), lay.paragraph.tolist()
    ([1, 0, 0, 2, 0], [True, False, True, False])
    >>> lay.path(4)
    ('Cats', 'Food')
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from semrag.types import Span

__all__ = ["TITLE_LEVEL", "Layout", "layout"]

TITLE_LEVEL = 7
"""Heading level given to an unmarked title line (below Markdown's six levels)."""

_ATX = re.compile(r"(#{1,6})[ \t]+(\S.*?)[ \t#]*")
_WIKI = re.compile(r"(={1,6})[ \t]*(\S.*?)[ \t]*=+")
_FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$", re.M | re.S)
_BLANK = re.compile(r"\n[ \t\r\f\v]*\n")
_TITLE_END = ".!?:;,"
_TITLE_WORDS = 10
_JOINING = frozenset(
    "a an and the of for to in on at by with or nor but from as that which who".split()
)


@dataclass(frozen=True, slots=True)
class Layout:
    """What the text between and around the sentences of one document looks like."""

    paragraph: np.ndarray
    """Per gap: a blank line separates the two sentences."""
    line: np.ndarray
    """Per gap: a newline (blank or not) separates the two sentences."""
    table: np.ndarray
    """Per gap: both sentences are rows of the same table."""
    heading: np.ndarray
    """Per sentence: its heading level (1 = top), 0 when it is not a heading."""
    titles: tuple[str, ...]
    """Per sentence: the heading's text without its marks ("" when not a heading)."""

    def path(self, sentence: int) -> tuple[str, ...]:
        """The headings a sentence sits under, outermost first (its own if it is one)."""
        return self.paths()[sentence]

    def paths(self) -> list[tuple[str, ...]]:
        """:meth:`path` of every sentence, in one pass."""
        stack: list[tuple[int, str]] = []
        out: list[tuple[str, ...]] = []
        current: tuple[str, ...] = ()
        for level, title in zip(self.heading.tolist(), self.titles, strict=True):
            if level:
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, title))
                current = tuple(t for _, t in stack)
            out.append(current)
        return out


def _line_bounds(text: str, span: Span) -> tuple[bool, bool]:
    """Whether the span starts a line and ends one (only blanks around it on its line)."""
    before = text.rfind("\n", 0, span.start) + 1
    after = text.find("\n", span.end)
    after = len(text) if after < 0 else after
    return not text[before : span.start].strip(), not text[span.end : after].strip()


def _heading(text: str, spans: Sequence[Span], i: int) -> tuple[int, str]:
    """The heading level and title of sentence ``i``, which is alone on its line(s)."""
    span = spans[i]
    line = span.of(text).strip()
    if m := _ATX.fullmatch(line):
        return len(m.group(1)), m.group(2)
    if (m := _WIKI.fullmatch(line)) and line.endswith("="):
        return len(m.group(1)), m.group(2)
    if (
        i + 1 >= len(spans)
        or line[-1] in _TITLE_END
        or not (line[0].isupper() or line[0].isdigit())
    ):
        return 0, ""
    words = line.split()
    gap_after = text[span.end : spans[i + 1].start]
    if len(words) > _TITLE_WORDS or "\n" not in gap_after or words[-1].lower() in _JOINING:
        return 0, ""
    if not _BLANK.search(gap_after):
        nxt = spans[i + 1]
        end = text.find("\n", nxt.start)
        next_line = text[nxt.start : len(text) if end < 0 else end].strip()
        if len(next_line) < 1.5 * len(line):
            return 0, ""
    if i and not _BLANK.search(text[spans[i - 1].end : span.start]):
        return 0, ""  # a title line opens the document or follows a blank line
    return TITLE_LEVEL, line


def _fenced(text: str, sentences: Sequence[Span]) -> list[bool]:
    """Per sentence: whether it starts inside a fenced code block."""
    if "```" not in text and "~~~" not in text:
        return [False] * len(sentences)
    fences = [(m.start(), m.end()) for m in _FENCE.finditer(text)]
    starts = [a for a, _ in fences]
    out = []
    for s in sentences:
        k = bisect.bisect_right(starts, s.start) - 1
        out.append(k >= 0 and s.start < fences[k][1])
    return out


def layout(text: str, sentences: Sequence[Span]) -> Layout:
    """The :class:`Layout` of ``text`` cut into ``sentences`` (spans in order)."""
    n = len(sentences)
    gaps = [text[a.end : b.start] for a, b in zip(sentences, sentences[1:], strict=False)]
    # Python lists while it loops (a numpy scalar read per gap costs more than the test)
    line = ["\n" in g for g in gaps]
    paragraph = [nl and bool(_BLANK.search(g)) for nl, g in zip(line, gaps, strict=True)]
    # The gaps between sentences are whitespace, so a sentence starts a line when a newline
    # precedes it in its gap (or it is the first), and ends one when its gap after holds one.
    after = [*line, True]
    alone = [before and end for before, end in zip([True, *line], after, strict=True)]
    # a span never starts with whitespace: its first character says whether it is a row
    row = [text[s.start] == "|" and _line_bounds(text, s)[0] for s in sentences]
    table = [row[i] and row[i + 1] and line[i] for i in range(n - 1)]
    fenced = _fenced(text, sentences)
    found = [
        _heading(text, sentences, i) if alone[i] and not fenced[i] else (0, "") for i in range(n)
    ]
    heading = np.array([level for level, _ in found], dtype=np.int8)
    return Layout(
        np.array(paragraph, dtype=bool),
        np.array(line, dtype=bool),
        np.array(table, dtype=bool),
        heading,
        tuple(t for _, t in found),
    )
