from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from semrag.text import split_sentences
from tests.strategies import any_text


@given(any_text)
def test_spans_cover_every_non_whitespace_character_in_order(text):
    spans = split_sentences(text)
    pos = 0
    for s in spans:
        assert s.start >= pos, "spans overlap or are out of order"
        assert not text[pos : s.start].strip(), "text between sentences was lost"
        piece = s.of(text)
        assert piece and not piece[0].isspace() and not piece[-1].isspace()
        pos = s.end
    assert not text[pos:].strip()


@given(any_text, any_text)
def test_the_split_depends_on_the_text_alone(text, other):
    # nothing a call leaves behind (caches, the abbreviation table) changes the next one
    first = split_sentences(text)
    split_sentences(other)
    assert split_sentences("".join(list(text))) == first


def _previous_word_walk(text, pos):
    start = pos
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    return text[start:pos], start


def _next_word_walk(text, pos):
    from semrag.text.sentences import _OPENERS

    i = pos
    while i < len(text) and (text[i].isspace() or text[i] in _OPENERS):
        i += 1
    j = i
    while j < len(text) and not text[j].isspace():
        j += 1
    return text[i:j]


@given(
    st.lists(st.sampled_from(list("ab.\"'“( \n\t\u00a0\u3000") + ["x" * 70]), max_size=30).map(
        "".join
    ),
    st.data(),
)
def test_the_words_around_a_stop_are_found_as_a_walk_finds_them(text, data):
    """The regex lookups equal walking character by character (words over 64 too)."""
    from semrag.text.sentences import _next_word, _previous_word

    pos = data.draw(st.integers(0, len(text)))
    assert _previous_word(text, pos) == _previous_word_walk(text, pos)
    assert _next_word(text, pos) == _next_word_walk(text, pos)
