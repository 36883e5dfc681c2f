"""Token counting with character offsets.

A :class:`Tokenizer` counts tokens and says where each token is, so the token cap of the
chunkers can cut text at token boundaries without moving a character. Two
implementations ship: :class:`HuggingFaceTokenizer` (the embedder's own word pieces, used
by default with the packaged MiniLM) and :class:`WhitespaceTokenizer` (runs of
non-whitespace characters, used when an embedder has no tokenizer).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from tokenizers import Tokenizer as _HFTokenizer

__all__ = ["HuggingFaceTokenizer", "Tokenizer", "WhitespaceTokenizer"]


@runtime_checkable
class Tokenizer(Protocol):
    """Counts tokens and locates them in a text."""

    def count(self, texts: Sequence[str]) -> list[int]:
        """Return the number of tokens of each text."""
        ...

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Return the ``[start, end)`` character span of each token of ``text``, in order."""
        ...


_WORD = re.compile(r"\S+")


class WhitespaceTokenizer:
    """Tokens are maximal runs of non-whitespace characters.

    Example:
        >>> WhitespaceTokenizer().count(["a bc  d", ""])
        [3, 0]
    """

    def count(self, texts: Sequence[str]) -> list[int]:
        """Return the number of whitespace-separated words of each text."""
        return [sum(1 for _ in _WORD.finditer(t)) for t in texts]

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Return the span of each word."""
        return [m.span() for m in _WORD.finditer(text)]

    def __repr__(self) -> str:
        return "WhitespaceTokenizer()"


class HuggingFaceTokenizer:
    """A ``tokenizers`` fast tokenizer, counting without special tokens.

    Args:
        tokenizer: a ``tokenizers.Tokenizer`` or a ``transformers`` fast tokenizer (its
            ``backend_tokenizer`` is used). Truncation and padding are switched off on a
            private copy so counts are exact for texts of any length.
        name: shown in ``repr``.
    """

    def __init__(self, tokenizer: _HFTokenizer | Any, *, name: str = "") -> None:
        from tokenizers import Tokenizer as HFTokenizer

        backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
        if not isinstance(backend, HFTokenizer):
            raise TypeError("HuggingFaceTokenizer needs a tokenizers.Tokenizer or a fast tokenizer")
        self._tok = HFTokenizer.from_str(backend.to_str())
        self._tok.no_truncation()
        self._tok.no_padding()
        self.name = name

    def count(self, texts: Sequence[str]) -> list[int]:
        """Return the number of word pieces of each text (no special tokens)."""
        if not texts:
            return []
        encodings = self._tok.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encodings]

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Return the character span of each word piece of ``text``."""
        if not text:
            return []
        spans = self._tok.encode(text, add_special_tokens=False).offsets
        # Normalisers can map several pieces to one character; keep spans monotone.
        out: list[tuple[int, int]] = []
        last = 0
        for start, end in spans:
            start = max(start, last)
            end = max(end, start)
            out.append((start, end))
            last = start
        return out

    def __repr__(self) -> str:
        return f"HuggingFaceTokenizer({self.name!r})"
