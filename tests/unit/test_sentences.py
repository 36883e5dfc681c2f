from __future__ import annotations

import pytest

from semrag.errors import ConfigError
from semrag.text import normalize_sentence_spans, split_sentences
from semrag.types import Span


def texts(text: str) -> list[str]:
    return [s.of(text) for s in split_sentences(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Dr. Smith came. He sat.", ["Dr. Smith came.", "He sat."]),
        ("Use tools, e.g. hammers. Then rest.", ["Use tools, e.g. hammers.", "Then rest."]),
        ("Pi is 3.14 roughly. Yes.", ["Pi is 3.14 roughly.", "Yes."]),
        ("He lives in the U.S. The house is big.", ["He lives in the U.S.", "The house is big."]),
        ("The U.S. Army arrived.", ["The U.S. Army arrived."]),
        ("J. R. R. Tolkien wrote it. Fine.", ["J. R. R. Tolkien wrote it.", "Fine."]),
        ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
        ("(See above.) Next one.", ["(See above.)", "Next one."]),
        ("Wait... what happened? Nothing!", ["Wait... what happened?", "Nothing!"]),
        ("It ended… Then silence.", ["It ended…", "Then silence."]),
        ("你好。我很好！你呢？", ["你好。", "我很好！", "你呢？"]),
        ("यह एक वाक्य है। यह दूसरा है।", ["यह एक वाक्य है।", "यह दूसरा है।"]),
        ("هل أنت بخير؟ نعم", ["هل أنت بخير؟", "نعم"]),
        ("Title line\n\nBody starts here", ["Title line", "Body starts here"]),
        ("Items:\n- apples\n- pears", ["Items:", "- apples", "- pears"]),
        ("Steps:\n1. Open it\n2. Close it", ["Steps:", "1. Open it", "2. Close it"]),
        ("# Heading\nBody text", ["# Heading", "Body text"]),
        ("Wrapped line\ncontinues here.", ["Wrapped line\ncontinues here."]),
        ("no punctuation at all", ["no punctuation at all"]),
        ("Fig. 3 shows it. OK.", ["Fig. 3 shows it.", "OK."]),
        ("It was 1999. Then 2000 came.", ["It was 1999.", "Then 2000 came."]),
    ],
)
def test_rules(text, expected):
    assert texts(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t"])
def test_empty_and_whitespace(text):
    assert split_sentences(text) == []


def test_offsets_keep_original_whitespace():
    text = "  First one.   Second\tone.  "
    spans = split_sentences(text)
    assert spans == [Span(2, 12), Span(15, 26)]
    assert [s.of(text) for s in spans] == ["First one.", "Second\tone."]


def test_non_str_raises_type_error():
    with pytest.raises(TypeError):
        split_sentences(b"bytes")  # type: ignore[arg-type]


def test_normalize_keeps_text_a_custom_splitter_skipped():
    text = "aaa bbb ccc"
    # A careless splitter that covers only two words.
    spans = normalize_sentence_spans(text, [(0, 3), (8, 11)])
    assert [s.of(text) for s in spans] == ["aaa bbb", "ccc"]


def test_normalize_rejects_bad_spans():
    with pytest.raises(ConfigError):
        normalize_sentence_spans("abc", [(0, 10)])
    with pytest.raises(ConfigError):
        normalize_sentence_spans("abc def", [(4, 7), (0, 3)])
