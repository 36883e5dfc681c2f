"""Text utilities: sentence splitting with offsets and token counting."""

from __future__ import annotations

from semrag.text.sentences import (
    LINE_MODES,
    SentenceSplitter,
    is_line_structured,
    normalize_sentence_spans,
    split_sentences,
)
from semrag.text.tokens import (
    HuggingFaceTokenizer,
    LengthFunctionTokenizer,
    Tokenizer,
    WhitespaceTokenizer,
    as_tokenizer,
)

__all__ = [
    "LINE_MODES",
    "HuggingFaceTokenizer",
    "LengthFunctionTokenizer",
    "SentenceSplitter",
    "Tokenizer",
    "WhitespaceTokenizer",
    "as_tokenizer",
    "is_line_structured",
    "normalize_sentence_spans",
    "split_sentences",
]
