from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semrag.errors import ConfigError
from semrag.text import (
    HuggingFaceTokenizer,
    LengthFunctionTokenizer,
    Tokenizer,
    WhitespaceTokenizer,
    as_tokenizer,
)
from tests.strategies import any_text


def test_whitespace_counts_and_offsets():
    tok = WhitespaceTokenizer()
    assert tok.count(["a bc  d", "", "  "]) == [3, 0, 0]
    text = " ab  c\nd "
    assert [text[s:e] for s, e in tok.offsets(text)] == ["ab", "c", "d"]
    assert isinstance(tok, Tokenizer)


@pytest.mark.model
def test_minilm_word_pieces(minilm_tokenizer):
    tok = minilm_tokenizer
    assert isinstance(tok, HuggingFaceTokenizer)
    # "tokenization" is two word pieces in MiniLM's vocabulary; no [CLS]/[SEP] counted.
    assert tok.count(["tokenization"]) == [2]
    assert tok.count(["", "hello world"]) == [0, 2]
    text = "Hello, tokenization!"
    pieces = [text[s:e] for s, e in tok.offsets(text)]
    assert pieces == ["Hello", ",", "token", "ization", "!"]


@pytest.mark.model
def test_minilm_counts_beyond_model_max_length(minilm_tokenizer):
    # Truncation is off: counts are exact for texts longer than the model reads.
    assert minilm_tokenizer.count(["word " * 5000]) == [5000]


def test_hf_tokenizer_rejects_other_objects():
    with pytest.raises(TypeError, match="HuggingFaceTokenizer needs a"):
        HuggingFaceTokenizer(object())


def test_length_function_tokenizer_counts_in_the_users_units():
    chars = LengthFunctionTokenizer(len)
    assert chars.count(["abc", "", "a b"]) == [3, 0, 3]
    assert chars.offsets("ab c") == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert isinstance(chars, Tokenizer)
    # A LlamaIndex-style tokenizer returns the token list: its length is the count.
    assert LengthFunctionTokenizer(str.split).count(["two words", ""]) == [2, 0]
    assert repr(chars) == "LengthFunctionTokenizer(len)"


def test_length_function_must_return_a_count():
    with pytest.raises(ConfigError, match="expected an int >= 0"):
        LengthFunctionTokenizer(lambda t: -1).count(["x"])
    with pytest.raises(ConfigError, match="must be callable"):
        LengthFunctionTokenizer(3)  # type: ignore[arg-type]


def test_as_tokenizer_wraps_callables_and_keeps_tokenizers():
    ws = WhitespaceTokenizer()
    assert as_tokenizer(ws) is ws
    assert as_tokenizer(None) is None
    assert isinstance(as_tokenizer(len), LengthFunctionTokenizer)
    with pytest.raises(ConfigError, match="tokenizer must have"):
        as_tokenizer("bert")


@pytest.mark.model
def test_unknown_runs_count_by_their_length(minilm_tokenizer):
    tok = minilm_tokenizer
    # A word over WordPiece's length limit, or with no pieces, is one [UNK] to the model;
    # the cap counts it one token per 4 characters, never one token for any length.
    assert tok.count(["x" * 1_000_000, "👍" * 3000]) == [250_000, 750]
    text = "ok " + "👍" * 10 + " fine"
    spans = tok.offsets(text)
    assert len(spans) == tok.count([text])[0] == 5
    assert [text[a:b] for a, b in spans][1:4] == ["👍" * 4, "👍" * 4, "👍" * 2]


def test_whitespace_tokens_are_bounded_and_cjk_characters_count():
    tok = WhitespaceTokenizer()
    assert tok.count(["東京都は大きい", "x" * 40, "a bc"]) == [7, 3, 2]
    text = "ab 東京 " + "y" * 20
    assert [text[a:b] for a, b in tok.offsets(text)] == ["ab", "東", "京", "y" * 16, "y" * 4]


_GAPS = st.text(alphabet=" \t\n\r\u00a0\u3000", min_size=1, max_size=3)


@pytest.mark.model
@settings(max_examples=60)
@given(parts=st.lists(any_text, min_size=2, max_size=4), gaps=st.lists(_GAPS, min_size=3))
def test_additive_tokenizers_count_joined_texts_as_the_sum(parts, gaps, minilm_tokenizer):
    # What lets the chunkers count a run of sentences from the sentences' counts.
    joined = parts[0] + "".join(g + p for g, p in zip(gaps, parts[1:], strict=False))
    for tok in (minilm_tokenizer, WhitespaceTokenizer()):
        assert tok.additive
        assert tok.count([joined]) == [sum(tok.count(parts))]


def test_a_tokenizer_whose_pieces_carry_the_space_is_not_additive():
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import models, pre_tokenizers

    byte_level = HFTokenizer(models.BPE())
    byte_level.pre_tokenizer = pre_tokenizers.ByteLevel()
    assert not HuggingFaceTokenizer(byte_level).additive
    assert not hasattr(LengthFunctionTokenizer(len), "additive")


def test_pieces_of_a_tokenizer_that_is_not_additive_are_each_texts_own():
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import models, pre_tokenizers

    vocab = {"[UNK]": 0, "▁a": 1, "▁b": 2, "a": 3, "b": 4}
    metaspace = HFTokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    metaspace.pre_tokenizer = pre_tokenizers.Metaspace()
    tok = HuggingFaceTokenizer(metaspace)
    texts = ["a b", "", "b a a"]
    found = tok.pieces(texts)
    assert not tok.additive and found.counts == tok.count(texts) == [2, 0, 3]
    assert found.lengths.tolist() == [2, 0, 3] and found.ids.tolist() == [1, 2, 2, 1, 1]


@pytest.mark.model
def test_deleted_characters_count_so_the_cap_bounds_binary_junk(minilm_tokenizer):
    from semrag import SemanticChunker

    tok = minilm_tokenizer
    # BERT's normaliser deletes control and format characters: no piece stands for them,
    # and they used to count as nothing (a binary file read as text made one 12k chunk)
    assert tok.count(["\x00" * 8, "ok \x01\x02\x03\x04\x05 fine", "a\u200b b", "plain text"]) == [
        2,
        4,
        3,
        2,
    ]
    text = "ok \x00\x00\x00\x00\x00 fine"
    assert [text[a:b] for a, b in tok.offsets(text)] == ["ok", "\x00" * 4, "\x00", "fine"]
    junk = bytes((i * 7919 + 13) % 256 for i in range(20_000)).decode("latin-1")
    chunker = SemanticChunker(max_tokens=64, overlap_tokens=0)
    chunks = chunker.chunk(junk)
    assert all(junk[c.start : c.end] == c.text for c in chunks)
    assert max(c.token_count for c in chunks) <= 64
    assert max(len(c.text) for c in chunks) <= 64 * 8  # bounded by the cap, whatever the text


_CONTROL_TEXT = st.text(
    alphabet=st.sampled_from(list("ab cé.\n") + ["\x00", "\x01", "\x0c", "\x1f", "\u200b", "👍"]),
    max_size=60,
)


@pytest.mark.model
@settings(max_examples=80)
@given(text=_CONTROL_TEXT)
def test_every_unit_has_a_span_and_the_spans_move_forward(text, minilm_tokenizer):
    tok = minilm_tokenizer
    spans = tok.offsets(text)
    assert len(spans) == tok.count([text])[0]
    assert all(0 <= a <= b <= len(text) for a, b in spans)
    assert all(a1 <= a2 for (a1, _), (a2, _) in zip(spans, spans[1:], strict=False))
