"""Text utilities: sentence splitting with offsets and token counting."""

from __future__ import annotations

from semrag.text.sentences import SentenceSplitter, normalize_sentence_spans, split_sentences
from semrag.text.tokens import HuggingFaceTokenizer, Tokenizer, WhitespaceTokenizer

__all__ = [
    "HuggingFaceTokenizer",
    "SentenceSplitter",
    "Tokenizer",
    "WhitespaceTokenizer",
    "normalize_sentence_spans",
    "split_sentences",
]
