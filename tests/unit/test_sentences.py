from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semrag.errors import ConfigError
from semrag.text import is_line_structured, normalize_sentence_spans, split_sentences
from semrag.text.sentences import _LOWER_WORD, _used_in_lower_case
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
        ("iPhone sales rose. iPad sales fell.", ["iPhone sales rose.", "iPad sales fell."]),
        ("i went home. then i slept.", ["i went home.", "then i slept."]),  # all lower case
        (
            "She loved modern art. The museum closed.",
            ["She loved modern art.", "The museum closed."],
        ),
        ("We meet at 5 p.m. Tomorrow we fly.", ["We meet at 5 p.m.", "Tomorrow we fly."]),
        ("See Art. 213 of the treaty.", ["See Art. 213 of the treaty."]),
        ("It hit No. 1 on the chart.", ["It hit No. 1 on the chart."]),
        (
            "Say no. Nothing else matters to nothing.",
            ["Say no.", "Nothing else matters to nothing."],
        ),
        ("Sales rose. eBay fell.", ["Sales rose.", "eBay fell."]),
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
    with pytest.raises(TypeError, match="text must be str, got bytes"):
        split_sentences(b"bytes")  # type: ignore[arg-type]


def test_normalize_keeps_text_a_custom_splitter_skipped():
    text = "aaa bbb ccc"
    # A careless splitter that covers only two words.
    spans = normalize_sentence_spans(text, [(0, 3), (8, 11)])
    assert [s.of(text) for s in spans] == ["aaa bbb", "ccc"]


def test_normalize_rejects_bad_spans():
    with pytest.raises(ConfigError, match="sentence splitter returned span"):
        normalize_sentence_spans("abc", [(0, 10)])
    with pytest.raises(ConfigError, match="sentence splitter returned overlapping or"):
        normalize_sentence_spans("abc def", [(4, 7), (0, 3)])


TRANSCRIPT = (
    "so welcome back everyone\n"
    "today we look at waves on a string\n"
    "first a quick reminder of last week\n"
    "we had the harmonic oscillator\n"
    "and its energy"
)
CAPTIONS = "\n".join(  # lines cut by time, not by width: their lengths vary
    [
        "so today we are going to look at waves",
        "standing waves on a string",
        "that is fixed at both ends",
        "and we will see that only some of the frequencies",
        "are allowed",
        "so let us start with a quick demo",
    ]
)
WRAPPED = (
    "It was the best of times, it was the worst of times, it was the age of\n"
    "wisdom, it was the age of foolishness, it was the epoch of belief, it\n"
    "was the epoch of incredulity, it was the season of Light, it was the\n"
    "season of Darkness, it was the spring of hope, it was the winter of\n"
    "despair, we had everything before us, we had nothing before us."
)


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        (TRANSCRIPT, 5),  # unpunctuated speech, one utterance per line
        ("Milk\nEggs\nFresh bread\nTwo lemons", 4),  # a shopping list
        ("00:01 Hello there\n00:03 how are you\n00:05 fine thanks", 3),  # subtitles
        ("Shall I compare thee to a summer's day\nThou art more lovely\nAnd more temperate", 3),
        ("ok see you at five\nbring the slides\nthe projector is broken", 3),  # all lower case
        (CAPTIONS, 6),  # auto-captions: lower case, no stops, some lines near the width
        ("One sentence.\nAnother sentence.\nA third one.", 3),  # punctuated lines
        (
            "Adobe Creek\nAdobe Creek is a northward-flowing stream of Santa Clara County."
            "\nSee also\nList of rivers of California",
            4,
        ),  # a title, a sentence, a heading and an item, one per line
    ],
)
def test_line_structured_text_ends_a_sentence_at_each_line(text, lines):
    assert is_line_structured(text)
    spans = texts(text)
    assert spans == [line.strip() for line in text.split("\n")]
    assert len(spans) == lines


@pytest.mark.parametrize(
    "text",
    [
        WRAPPED,  # hard-wrapped prose: lines cut near one width, continuing in lower case
        "Wrapped line\ncontinues here.",  # a single line break decides nothing
        "A paragraph with no line breaks and no final stop",
    ],
)
def test_prose_is_not_line_structured(text):
    assert not is_line_structured(text)


def test_wrapped_prose_keeps_its_sentences_across_lines():
    assert texts(WRAPPED) == [WRAPPED]


def test_lines_option_overrides_the_rule():
    assert len(split_sentences(TRANSCRIPT, lines="never")) == 1
    assert [s.of(WRAPPED) for s in split_sentences(WRAPPED, lines="always")] == WRAPPED.split("\n")
    with pytest.raises(ConfigError, match="lines must be one of"):
        split_sentences("x", lines="sometimes")


def test_punctuation_still_splits_inside_a_line_of_a_line_structured_text():
    text = "hello\nwell. That was quick\nbye now\nsee you"
    assert texts(text) == ["hello", "well.", "That was quick", "bye now", "see you"]


@given(
    st.text(alphabet="abcAB1_.'’- \n", max_size=60),
    st.text(alphabet="abcAB'’-", min_size=1, max_size=5),
)
def test_a_word_is_used_in_lower_case_as_the_full_scan_finds_it(text, word):
    """The search for one word answers as the set of all the text's lower-case words."""
    word = word.lower()
    assert _used_in_lower_case(text, word) == (word in _LOWER_WORD.findall(text))
    for found in set(_LOWER_WORD.findall(text)):
        assert _used_in_lower_case(text, found)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("He joined the Co. Smith ran it.", ["He joined the Co. Smith ran it."]),
        (
            "He joined the Co. Today was calm. Today's plan: today.",
            ["He joined the Co.", "Today was calm.", "Today's plan: today."],
        ),
        # "paper" inside "rock-paper" is not a word of its own
        (
            "Made by Acme Inc. Paper won; rock-paper too.",
            ["Made by Acme Inc. Paper won; rock-paper too."],
        ),
    ],
)
def test_an_ambiguous_abbreviation_ends_a_sentence_before_a_word_also_used_in_lower_case(
    text, expected
):
    assert texts(text) == expected


def test_a_splitter_may_return_the_sentences_texts_in_order():
    text = "Bees dance.  Bees dance. Honey."
    spans = normalize_sentence_spans(text, ["Bees dance.", "", " Bees dance. ", "Honey."])
    assert [(s.start, s.end) for s in spans] == [(0, 11), (13, 24), (25, 31)]  # a repeat: after
    with pytest.raises(ConfigError, match="'Rockets.', which is not in the text"):
        normalize_sentence_spans(text, ["Honey.", "Rockets."])
    with pytest.raises(ConfigError, match="not in the text after the sentence before it"):
        normalize_sentence_spans(text, ["Honey.", "Bees dance."])  # out of order


@given(st.text(alphabet="ab .", max_size=60), st.lists(st.integers(0, 60), max_size=8))
def test_sentences_given_as_texts_are_the_spans_given_as_offsets(text, cuts):
    cuts = sorted({c for c in cuts if 0 < c < len(text)})
    bounds = list(zip([0, *cuts], [*cuts, len(text)], strict=True))
    pieces = [text[a:b] for a, b in bounds]
    starts = [(a + len(p) - len(p.lstrip()), b) for (a, b), p in zip(bounds, pieces, strict=True)]
    by_offsets = [span for span, p in zip(starts, pieces, strict=True) if p.strip()]
    assert normalize_sentence_spans(text, pieces) == normalize_sentence_spans(text, by_offsets)
