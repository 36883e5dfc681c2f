from __future__ import annotations

import pytest

from semrag.text import HuggingFaceTokenizer, Tokenizer, WhitespaceTokenizer


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
    with pytest.raises(TypeError):
        HuggingFaceTokenizer(object())
