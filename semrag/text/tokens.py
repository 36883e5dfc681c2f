"""Token counting with character offsets.

A :class:`Tokenizer` counts tokens and says where each token is, so the token cap of the
chunkers can cut text at token boundaries without moving a character. Two
implementations ship: :class:`HuggingFaceTokenizer` (the embedder's own word pieces, used
by default with the packaged MiniLM) and :class:`WhitespaceTokenizer` (runs of
non-whitespace characters, used when an embedder has no tokenizer).
:class:`LengthFunctionTokenizer` measures with any ``length_function`` (LangChain's
convention, ``len`` by default: characters) or token-list function (LlamaIndex's
``tokenizer``), so a framework's ``chunk_size`` caps chunks in the user's own units.
"""

from __future__ import annotations

import itertools
import operator
import re
from collections import defaultdict
from collections.abc import Callable, Sequence, Sized
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from tokenizers import Tokenizer as _HFTokenizer

from semrag.errors import ConfigError

__all__ = [
    "MAX_CHARS_PER_TOKEN",
    "SPACE_RUN",
    "UNKNOWN_CHARS_PER_TOKEN",
    "HuggingFaceTokenizer",
    "LengthFunctionTokenizer",
    "Pieces",
    "Tokenizer",
    "WhitespaceTokenizer",
    "as_tokenizer",
    "word_splitter",
]


@runtime_checkable
class Tokenizer(Protocol):
    """Counts tokens and locates them in a text."""

    def count(self, texts: Sequence[str]) -> list[int]:
        """Return the number of tokens of each text."""
        ...

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Return the ``[start, end)`` character span of each token of ``text``, in order."""
        ...


# Ideographs, kana and hangul syllables are a token each (those scripts put no space
# between words); any other run of non-space characters is cut every 16 characters, so no
# run of text counts as one token whatever its length.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\uff66-\uff9d"
_WORD = re.compile(rf"[{_CJK}]|[^\s{_CJK}]{{1,16}}")
MAX_CHARS_PER_TOKEN = 16
"""The longest run of characters :class:`WhitespaceTokenizer` counts as one token."""
UNKNOWN_CHARS_PER_TOKEN = 4
"""Characters per counted token inside a span the model tokenizer could only call unknown."""


class WhitespaceTokenizer:
    """Tokens are runs of non-whitespace characters, at most 16 characters each.

    Each CJK ideograph, kana or hangul syllable is a token of its own. No token spans
    whitespace, so the count of texts joined by whitespace is the sum of their counts
    (:attr:`additive`).

    Examples:
        >>> WhitespaceTokenizer().count(["a bc  d", "", "東京都", "x" * 40])
        [3, 0, 3, 3]
    """

    additive = True
    """Texts joined by :data:`SPACE_RUN` count the sum of their counts."""

    def count(self, texts: Sequence[str]) -> list[int]:
        """Return the number of whitespace-separated words of each text."""
        return [len(_WORD.findall(t)) for t in texts]

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Return the span of each word."""
        return [m.span() for m in _WORD.finditer(text)]

    def __repr__(self) -> str:
        return "WhitespaceTokenizer()"


SPACE_RUN = re.compile("[ \t\n\r\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]+")
"""Whitespace every tokenizer here reads as a word break. An ``additive`` tokenizer counts
texts joined by it as the sum of their counts (not across control characters such as
``\x0c`` or ``\x1c``: Python calls them space, BERT's normaliser deletes them)."""
# Pre-tokenizers that cut at whitespace (and never make a piece across it).
_SPLITS_AT_SPACES = frozenset({"BertPreTokenizer", "Whitespace", "WhitespaceSplit"})
_SPACES = SPACE_RUN.pattern[1:-2]
_ASCII_PUNCT = r"!-/:-@\[-`{-~"
_ODD_SPACES = re.compile("[\x0b\x0c\x1c-\x1f\x85\u2028\u2029]")
"""What Python's ``str.split()`` cuts at and :data:`SPACE_RUN` does not."""
_PUNCT = re.compile(f"[{_ASCII_PUNCT}]")
_BERT_RUN = re.compile(f"[{_ASCII_PUNCT}]|[^{_ASCII_PUNCT}{_SPACES}]+")
"""BERT's finer units: every ASCII punctuation mark is a word of its own there."""
_SEPARATOR = "\u3000"
"""A space (never in a run) that closes each text when many are cut in one pass."""
_RUN_OR_SEPARATOR = re.compile(f"{_SEPARATOR}|{_BERT_RUN.pattern}")


_DELETED = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f"
    "\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\ufffd]+"
)
"""Characters a BERT normaliser deletes (control and format characters, U+FFFD): no word
piece stands for them, so the cap counts them itself."""


def word_splitter(texts: Sequence[str]) -> Callable[[str], list[str]]:
    r"""The fastest function that cuts each of ``texts`` into its words (:data:`SPACE_RUN`).

    ``str.split`` unless a text holds a character it cuts at and BERT's normaliser deletes
    (``\x1c``, ``\x0c``, ...); then a regex split.

    Examples:
        >>> word_splitter(["a b"])("two  words")
        ['two', 'words']
        >>> word_splitter(["a\x1cb"])("a\x1cb c")
        ['a\x1cb', 'c']
    """
    if any(map(_ODD_SPACES.search, texts)):
        return lambda text: [w for w in SPACE_RUN.split(text) if w]
    return str.split


def _merged(first_at: list[int], first: Pieces, second_at: list[int], second: Pieces) -> Pieces:
    """The texts of ``first`` at positions ``first_at`` and of ``second`` at ``second_at``."""
    both = Pieces(
        np.concatenate([first.ids, second.ids]),
        np.concatenate([first.lengths, second.lengths]),
        first.counts + second.counts,
    )
    return _gather(both, np.argsort(first_at + second_at), [1] * len(both.counts))


def _gather(units: Pieces, order: Sequence[int] | np.ndarray, sizes: Sequence[int]) -> Pieces:
    """Texts made of units: text ``i`` is the next ``sizes[i]`` units of ``order``, in a row.

    Examples:
        >>> units = Pieces(np.array([7, 8, 9]), np.array([1, 2, 0]), [1, 2, 0])
        >>> got = _gather(units, [1, 0, 2, 0], [2, 0, 2])
        >>> got.ids.tolist(), got.lengths.tolist(), got.counts
        ([8, 9, 7, 7], [3, 0, 1], [3, 0, 1])
    """
    order = np.asarray(order, dtype=np.int64)
    runs = units.lengths[order]
    first = np.cumsum(units.lengths) - units.lengths
    ids = units.ids[
        np.repeat(first[order] - (np.cumsum(runs) - runs), runs) + np.arange(runs.sum())
    ]
    text = np.repeat(np.arange(len(sizes)), np.asarray(sizes, dtype=np.int64))
    lengths = np.bincount(text, weights=runs, minlength=len(sizes)).astype(np.int64)
    counts = np.bincount(
        text, weights=np.asarray(units.counts, np.float64)[order], minlength=len(sizes)
    )
    return Pieces(ids, lengths, counts.astype(np.int64).tolist())


def _deleted(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Units for the deleted characters of ``text[start:end]``: one per 4 of each run."""
    step = UNKNOWN_CHARS_PER_TOKEN
    out = []
    for m in _DELETED.finditer(text, start, end):
        a, b = m.start(), m.end()
        out += [(i, min(i + step, b)) for i in range(a, b, step)]
    return out


@dataclass(frozen=True, slots=True)
class Pieces:
    """The word pieces of several texts (:meth:`HuggingFaceTokenizer.pieces`)."""

    ids: npt.NDArray[np.int64]
    """Every text's piece ids, one text after another."""
    lengths: npt.NDArray[np.int64]
    """How many of ``ids`` each text has."""
    counts: list[int]
    """Each text's token count, as :meth:`HuggingFaceTokenizer.count` counts it."""


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
            raise ConfigError(
                "HuggingFaceTokenizer needs a tokenizers.Tokenizer or a fast tokenizer"
            )
        self._tok = HFTokenizer.from_str(backend.to_str())
        self._tok.no_truncation()
        self._tok.no_padding()
        self.name = name
        unk = getattr(self._tok.model, "unk_token", None)
        self._unk_id = self._tok.token_to_id(unk) if unk else None
        self.additive = type(self._tok.pre_tokenizer).__name__ in _SPLITS_AT_SPACES
        """Whether texts joined by :data:`SPACE_RUN` count the sum of their counts: true when
        the pre-tokenizer cuts words at whitespace (BERT's word pieces, as MiniLM's), not
        for byte-level or metaspace models, whose pieces carry the space."""
        from tokenizers.models import WordPiece
        from tokenizers.normalizers import BertNormalizer
        from tokenizers.pre_tokenizers import BertPreTokenizer

        normalizer = self._tok.normalizer
        self._bert = (  # an uncased BERT: whole words can be looked up (see _looked_up)
            isinstance(self._tok.model, WordPiece)
            and isinstance(self._tok.pre_tokenizer, BertPreTokenizer)
            and isinstance(normalizer, BertNormalizer)
            and bool(normalizer.lowercase)
        )
        self._whole: dict[str, int] | None = None  # see _whole_pieces
        self._lower_cut: _HFTokenizer | None = None  # see _tokenized

    def _plain(self, text: str, ids: Sequence[int]) -> bool:
        """Whether each piece is one unit: no unknown token, no deleted character."""
        return (self._unk_id is None or self._unk_id not in ids) and not _DELETED.search(text)

    def _spans(
        self, text: str, ids: Sequence[int], offsets: Sequence[tuple[int, int]]
    ) -> list[tuple[int, int]]:
        """The character span of each unit the cap counts, in order.

        A word piece is one unit; an unknown-token span one per 4 characters; so is a run
        of characters the normaliser deletes (:data:`_DELETED`: control and format
        characters; a binary file read as text is mostly those) that no piece covers. So
        the cap bounds every text, whatever its characters.
        """
        plain = self._plain(text, ids)
        out: list[tuple[int, int]] = []
        last = 0  # where the pieces so far end
        start_at = 0  # normalisers can map several pieces to one character: keep monotone
        for token_id, (start, end) in zip(ids, offsets, strict=True):
            start = max(start, start_at)
            end = max(end, start)
            if plain:
                out.append((start, end))
            else:
                if start > last:
                    out += _deleted(text, last, start)
                if token_id == self._unk_id and end - start > 1:
                    step = UNKNOWN_CHARS_PER_TOKEN
                    out += [(a, min(a + step, end)) for a in range(start, end, step)]
                else:
                    out.append((start, end))
                last = max(last, end)
            start_at = start
        if not plain and last < len(text):
            out += _deleted(text, last, len(text))
        return out

    def count(self, texts: Sequence[str]) -> list[int]:
        """Return the number of units of each text (word pieces; no special tokens).

        A word the model can only call unknown (``[UNK]``: a run of characters it has no
        pieces for, or a word over its length limit) counts one token per 4 characters,
        never one token whatever its length, and so does a run of characters the model
        deletes (control characters): the cap bounds every text.
        """
        if not texts:
            return []
        return self._counts(texts, self._tok.encode_batch(list(texts), add_special_tokens=False))

    def _counts(self, texts: Sequence[str], encodings: Sequence[Any]) -> list[int]:
        """Each text's count from its encoding (word pieces, or the cap's units)."""
        return [
            len(e.ids) if self._plain(t, e.ids) else len(self._spans(t, e.ids, e.offsets))
            for t, e in zip(texts, encodings, strict=True)
        ]

    def pieces(self, texts: Sequence[str]) -> Pieces:
        """Every text's word-piece ids and its count (as :meth:`count` counts), in one pass.

        With an :attr:`additive` tokenizer the texts are tokenized as one string, joined by
        spaces (no piece spans a space, so each text gets its own pieces), and each piece
        goes back to its text by its offset: one call into the tokenizer instead of one per
        text. Texts with unknown pieces or deleted characters are recounted by
        :meth:`count`'s rules.

        Examples:
            >>> from semrag.static_embedder import StaticEmbedder
            >>> found = StaticEmbedder().tokenizer.pieces(["Bees dance.", "", "x"])
            >>> found.lengths.tolist(), found.counts
            ([3, 0, 1], [3, 0, 1])
        """
        texts = list(texts)
        if not self.additive:
            encodings = self._tok.encode_batch(texts, add_special_tokens=False)
            rows = [e.ids for e in encodings]
            return Pieces(
                np.fromiter((t for r in rows for t in r), dtype=np.int64),
                np.array([len(r) for r in rows], dtype=np.int64),
                self._counts(texts, encodings),
            )
        if not self._bert:
            return self._joined(texts)
        return self._looked_up(texts, split=True)

    def _looked_up(self, texts: list[str], *, split: bool) -> Pieces:
        """BERT's pieces: a text that is a vocabulary word is looked up, not tokenized.

        With ``split``, a text that is not is cut where BERT cuts it (at each ASCII
        punctuation mark) and its parts looked up in turn; what is left is tokenized
        (:meth:`_joined`). Only distinct texts reach the tokenizer.
        """
        whole = self._whole_pieces()
        found = list(map(whole.get, map(str.lower, texts), itertools.repeat(-1)))
        if not "".join(texts).isascii():  # a non-ASCII word may lower-case to an ASCII one
            for i in itertools.compress(
                range(len(texts)), map(operator.not_, map(str.isascii, texts))
            ):
                found[i] = -1
        hits = [i for i, f in enumerate(found) if f >= 0]
        rest_at = [i for i, f in enumerate(found) if f < 0]
        rest = [texts[i] for i in rest_at]
        if not split:
            left = self._tokenized(rest)
        else:  # every text's runs in one regex pass, each text closed by a separator
            joined = _SEPARATOR.join([*rest, ""])
            if joined.count(_SEPARATOR) != len(rest):  # a text holds one: a space there too
                joined = _SEPARATOR.join([*(t.replace(_SEPARATOR, " ") for t in rest), ""])
            parts: defaultdict[str, int] = defaultdict(itertools.count().__next__)
            closed = parts[_SEPARATOR]  # unit 0: the end of a text
            cut = np.fromiter(map(parts.__getitem__, _RUN_OR_SEPARATOR.findall(joined)), np.int64)
            sizes = np.diff(np.flatnonzero(cut == closed), prepend=-1) - 1
            inner = self._looked_up(list(parts)[1:], split=False)
            left = _gather(inner, cut[cut != closed] - 1, sizes.tolist())
        one_each = np.ones(len(hits), np.int64)
        whole_words = Pieces(
            np.asarray([found[i] for i in hits], np.int64), one_each, [1] * len(hits)
        )
        return _merged(hits, whole_words, rest_at, left)

    def _tokenized(self, texts: list[str]) -> Pieces:
        """:meth:`_joined` for BERT, the parts of ASCII letters and digits on a shortcut.

        For those, BERT's normaliser and pre-tokenizer only lower-case and cut at spaces,
        yet take as long as the word pieces themselves: a copy of the tokenizer that just
        does that tokenizes them (the same pieces); the others go through the whole one.
        """
        plain = [t.isascii() and t.isalnum() for t in texts]
        plain_at = list(itertools.compress(range(len(texts)), plain))
        other_at = list(itertools.compress(range(len(texts)), map(operator.not_, plain)))
        if self._lower_cut is None:
            from tokenizers.normalizers import Lowercase
            from tokenizers.pre_tokenizers import WhitespaceSplit

            self._lower_cut = type(self._tok).from_str(self._tok.to_str())
            self._lower_cut.normalizer = Lowercase()
            self._lower_cut.pre_tokenizer = WhitespaceSplit()
        plain_pieces = self._joined([texts[i] for i in plain_at], self._lower_cut)
        return _merged(plain_at, plain_pieces, other_at, self._joined([texts[i] for i in other_at]))

    def _whole_pieces(self) -> dict[str, int]:
        """BERT's vocabulary words that are a piece of their own (empty for other models).

        Lower-case ASCII letters and digits, or one ASCII punctuation mark: such a word,
        lower-cased, is looked up instead of tokenized (WordPiece keeps a word it has whole).
        """
        if self._bert and self._whole is None:
            self._whole = {
                w: i
                for w, i in self._tok.get_vocab().items()
                if w.isascii() and w == w.lower() and (w.isalnum() or _PUNCT.fullmatch(w))
            }
        return self._whole or {}

    def _joined(self, texts: list[str], tokenizer: _HFTokenizer | None = None) -> Pieces:
        """:meth:`pieces` for an additive tokenizer: one call into it, on the texts joined.

        ``tokenizer``: a stand-in for the model's own that gives the same pieces on these
        texts (:meth:`_tokenized`); texts with unknown pieces are recounted by the model's.
        """
        lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        starts = np.cumsum(lengths + 1) - (lengths + 1)  # each text, then one space
        joined = " ".join(texts)
        encoding = (tokenizer or self._tok).encode(joined, add_special_tokens=False)
        ids = np.asarray(encoding.ids, dtype=np.int64)
        at = np.fromiter((a for a, _ in encoding.offsets), dtype=np.int64, count=ids.size)
        owner = np.searchsorted(starts, at, side="right") - 1
        per_text = np.bincount(owner, minlength=len(texts)).astype(np.int64)
        counts = per_text.tolist()
        odd = set() if self._unk_id is None else set(owner[ids == self._unk_id].tolist())
        deleted = [m.start() for m in _DELETED.finditer(joined)]
        odd |= set((np.searchsorted(starts, deleted, side="right") - 1).tolist())
        if odd:
            which = sorted(odd)
            for i, n in zip(which, self.count([texts[i] for i in which]), strict=True):
                counts[i] = n
        return Pieces(ids, per_text, counts)

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Return the character span of each unit of ``text`` (as :meth:`count` counts)."""
        if not text:
            return []
        encoding = self._tok.encode(text, add_special_tokens=False)
        return self._spans(text, encoding.ids, encoding.offsets)

    def __repr__(self) -> str:
        return f"HuggingFaceTokenizer({self.name!r})"


class LengthFunctionTokenizer:
    """Measure texts with a user's length function; cut anywhere between characters.

    ``count`` is ``length_function(text)``: an ``int`` (LangChain's ``length_function``,
    e.g. ``len`` or a tiktoken counter) or a sized sequence whose length is taken
    (LlamaIndex's ``tokenizer``, which returns the token list). ``offsets`` gives one unit
    per character, so the chunkers' cap step can end a piece at any character; it then
    searches for the longest piece whose measured length fits, so the cap holds in the
    user's units whatever they are (the function should not shrink when text is added).

    Args:
        length_function: ``(text) -> int`` or ``(text) -> Sequence``.
        name: shown in ``repr`` (default: the function's name).

    Examples:
        >>> LengthFunctionTokenizer(len).count(["abc", ""])
        [3, 0]
        >>> LengthFunctionTokenizer(str.split).count(["two words"])
        [2]
    """

    def __init__(self, length_function: Callable[[str], Any] = len, *, name: str = "") -> None:
        if not callable(length_function):
            raise ConfigError(
                f"length_function must be callable, got {type(length_function).__name__}"
            )
        self.length_function = length_function
        self.name = name or getattr(length_function, "__name__", type(length_function).__name__)

    def _measure(self, text: str) -> int:
        value = self.length_function(text)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            value = len(cast(Sized, value))
        if value < 0 or value != int(value):
            raise ConfigError(
                f"length_function {self.name!r} returned {value!r}; expected an int >= 0"
            )
        return int(value)

    def count(self, texts: Sequence[str]) -> list[int]:
        """Return ``length_function`` of each text."""
        return [self._measure(t) for t in texts]

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Return one unit per character."""
        return [(i, i + 1) for i in range(len(text))]

    def __repr__(self) -> str:
        return f"LengthFunctionTokenizer({self.name})"


def as_tokenizer(tokenizer: Tokenizer | Callable[[str], Any] | None) -> Tokenizer | None:
    """Accept a :class:`Tokenizer`, a length function or token-list function, or ``None``.

    A plain callable (``len``, ``lambda t: len(enc.encode(t))``, LlamaIndex's
    ``tokenizer``) becomes a :class:`LengthFunctionTokenizer`.

    Raises:
        ConfigError: for anything else.
    """
    if tokenizer is None or isinstance(tokenizer, Tokenizer):
        return tokenizer
    if callable(tokenizer):
        return LengthFunctionTokenizer(tokenizer)
    raise ConfigError(
        "tokenizer must have count(texts) and offsets(text), or be a callable "
        f"(text) -> int | token list; got {type(tokenizer).__name__}"
    )
