from __future__ import annotations

from hypothesis import given

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


@given(any_text)
def test_deterministic(text):
    assert split_sentences(text) == split_sentences(text)
