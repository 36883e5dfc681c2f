"""The vectorised text rules equal their plain per-word readings.

``entities`` walks only the words that may be capitalised (the rest are passed over in
C), ``keyword_themes`` counts words and pairs with C iterators, and ``_NUMBER`` tests
the digit before looking behind it. Each is checked here against the rule written as a
plain loop over every word, on generated text rich in the cases the rules turn on
(capitals, possessives, connectors, sentence openers, numbers, quotes, line breaks).
"""

from __future__ import annotations

import re
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from semrag.index.parts import ssg
from semrag.text import phrases
from semrag.text.phrases import (
    _COMMON_OPENERS,
    _CONNECTORS,
    _NUMBER,
    _WORD,
    Phrase,
    _dedupe,
    _is_capitalised,
    _opens_sentence,
    _quotes_and_numbers,
    _strip_word,
    entities,
)

PIECES = [
    "The", "Beatles", "of", "the", "University", "Chicago", "de", "la", "Who", "However",
    "John's", "O'Neil", "ABC", "ABC's", "eBay", "iPhone", "_AB", "x", "É", "é", "ß", "1990",
    "3.5%", "1,234", "12,34", "v2", "Dr.", "U.S.", "&", "and", '"quoted words"', "“Curly”",
    "\n", ".", "?", "!", ";", ",", "-", "'", "’s", "Ǆ", "ǅ", "中", "Ⅻ",
]  # fmt: skip
TEXTS = st.lists(
    st.tuples(st.sampled_from(PIECES), st.sampled_from([" ", "", "  ", ". ", ", ", "\n"])),
    max_size=40,
).map(lambda parts: "".join(a + b for a, b in parts))

# runs of names and connectors, as titles and organisations are written
NAMES = st.lists(
    st.tuples(
        st.sampled_from(["Bank", "of", "the", "America", "and", "de", "The", "John's", "ABC", "&"]),
        st.sampled_from([" ", " ", " ", ". ", "\n"]),
    ),
    max_size=12,
).map(lambda parts: "".join(a + b for a, b in parts))


def plain_entities(text: str) -> list[Phrase]:
    """The entity rules read word by word (every word stripped and tested)."""
    words = [w for w in (_strip_word(text, m) for m in _WORD.finditer(text)) if w[0]]
    found: list[Phrase] = []
    i = 0
    while i < len(words):
        word, start, _ = words[i]
        if not _is_capitalised(word) or word[0].isdigit():
            i += 1
            continue
        j = last = i
        while j + 1 < len(words):
            nxt, n_start, _ = words[j + 1]
            gap = text[words[j][2] : n_start]
            if gap.strip(" ") or "\n" in gap:
                break
            if _is_capitalised(nxt) and not nxt[0].isdigit():
                j = last = j + 1
            elif nxt.lower() in _CONNECTORS and j + 2 < len(words) and j + 1 - last < 2:
                j += 1
            else:
                break
        run_start, run_end = start, words[last][2]
        opener = _opens_sentence(text, start) and word.lower() in _COMMON_OPENERS
        if opener and last == i:
            i = last + 1
            continue
        if opener:
            run_start = words[i + 1][1]
            if words[i + 1][0].lower() in _CONNECTORS:
                i = last + 1
                continue
        found.append(Phrase(text[run_start:run_end], run_start, run_end, "entity"))
        i = last + 1
    return _dedupe(found + _quotes_and_numbers(text))  # the number rule is checked below


PLAIN_NUMBER = re.compile(
    r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?%?|(?<![\w.])\d+(?:\.\d+)?%?(?![\w])"
)


def plain_phrase_counts(text: str) -> Counter[str]:
    words = [w.lower() for w in ssg._WORD.findall(text)]
    out: Counter[str] = Counter()
    for i, w in enumerate(words):
        if w in ssg._STOP or len(w) < 3:
            continue
        out[w] += 1
        if i + 1 < len(words) and words[i + 1] not in ssg._STOP and len(words[i + 1]) >= 3:
            out[f"{w} {words[i + 1]}"] += 1
    return out


@settings(max_examples=400, deadline=None)
@given(st.one_of(TEXTS, NAMES))
def test_entities_equal_the_word_by_word_rules(text):
    fast = entities(text)
    assert fast == plain_entities(text)
    assert all(text[p.start : p.end] == p.text for p in fast)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789,.%a_ -", max_size=30))
def test_the_number_pattern_finds_what_the_plain_one_finds(text):
    assert [m.span() for m in _NUMBER.finditer(text)] == [
        m.span() for m in PLAIN_NUMBER.finditer(text)
    ]


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_theme_counts_equal_the_word_by_word_count(text):
    assert ssg._phrase_counts(text) == plain_phrase_counts(text)


def test_a_known_sentence_keeps_its_entities():
    text = "The Beatles met at the University of Chicago in 1,960. John's band sold 3.5% more."
    assert [p.text for p in phrases.entities(text)] == [
        "Beatles",
        "University of Chicago",
        "1,960",
        "John",
        "3.5%",
    ]
