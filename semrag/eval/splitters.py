"""Any splitter as a function from a text to chunks located in it.

:func:`as_splitter` takes a semrag chunker (exact offsets, and the text an index would
embed for each chunk), a LangChain ``TextSplitter`` or a LlamaIndex ``NodeParser`` (through
the adapters' bridges, :mod:`semrag.eval.bridges`), or a callable from a text to its
chunks (strings, :class:`~semrag.types.Chunk` objects, :class:`Split` records or
``(text, start)`` pairs). :func:`locate` then places every chunk in the text: at its
offset when the splitter gave a right one, else where its text occurs (after the
previous chunk; whitespace runs compared as one space, since some splitters rejoin
sentences with single spaces). A chunk found nowhere is *lost*: it is counted, and
retrieves nothing.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from semrag.errors import ConfigError
from semrag.eval.bridges import Piece, first
from semrag.types import Chunk

__all__ = ["Located", "Split", "as_splitter", "locate"]


@dataclass(frozen=True, slots=True)
class Split:
    """A chunk as a splitter gave it.

    Attributes:
        text: its text.
        start: its offset in the document, if the splitter says (checked, never trusted).
        embed_text: what an index embeds for it, when that is not its text (a heading
            path in front, say).
    """

    text: str
    start: int | None = None
    embed_text: str | None = None


@dataclass(frozen=True, slots=True)
class Located:
    """A chunk placed in its document: ``text[start:end]``; ``start == -1`` if lost."""

    start: int
    end: int
    embed_text: str | None = None

    @property
    def lost(self) -> bool:
        """Whether the chunk's text was found nowhere in the document."""
        return self.start < 0


@runtime_checkable
class Chunker(Protocol):
    """A semrag chunker: chunks with exact offsets, and the text an index embeds for each."""

    def chunk(self, text: str) -> list[Chunk]:
        """The chunks of one text."""
        ...

    def embedding_text(self, chunk: Chunk) -> str:
        """What an index embeds for ``chunk``."""
        ...


SplitFunction = Callable[[str], Sequence[Piece]]


def as_splitter(obj: object) -> SplitFunction:
    """A function from a text to its chunks, for ``obj``.

    Raises:
        ConfigError: for an object that is none of the kinds above (a framework object
            whose adapter package is not installed says which one to install).
    """
    bridged = first("splitter", obj)
    if bridged is not None:
        return bridged
    if isinstance(obj, Chunker):
        return lambda text: [Split(c.text, c.start, obj.embedding_text(c)) for c in obj.chunk(text)]
    if callable(obj):
        return lambda text: [_piece(x) for x in obj(text)]
    raise ConfigError(
        f"{type(obj).__name__} is not a splitter semrag can run: give a semrag chunker, a "
        "LangChain TextSplitter or a LlamaIndex NodeParser (with semrag[langchain] / "
        "semrag[llama-index] installed), or a function from a text to its chunks"
    )


def _piece(x: object) -> Piece:
    if isinstance(x, str):
        return Split(x)
    if isinstance(x, Chunk):
        return Split(x.text, x.start)
    if isinstance(x, Split):
        return x
    if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str):
        return Split(x[0], x[1] if isinstance(x[1], int) else None)
    raise ConfigError(
        f"a splitter function returned a {type(x).__name__}; give str, Chunk, Split or "
        "(text, start) for each chunk"
    )


def locate(text: str, pieces: Sequence[Piece]) -> list[Located]:
    """Place each chunk in ``text`` (see the module docs); a chunk found nowhere is lost."""
    out: list[Located] = []
    squeezed: tuple[str, list[int]] | None = None
    pos = 0
    for piece in pieces:
        chunk, start, embed = piece.text, piece.start, piece.embed_text
        if start is not None and start >= 0 and text[start : start + len(chunk)] == chunk:
            out.append(Located(start, start + len(chunk), embed))
            pos = start + 1
            continue
        probe = chunk.strip()
        at = text.find(probe, pos)
        if at < 0:
            at = text.find(probe)
        if at >= 0:
            out.append(Located(at, at + len(probe), embed))
            pos = at + 1
            continue
        if squeezed is None:
            squeezed = _squeezed(text)
        flat, where = squeezed
        small = _squeezed(probe)[0]
        from_ = bisect.bisect_left(where, pos)
        at = flat.find(small, from_)
        if at < 0:
            at = flat.find(small)
        if at < 0 or not small:
            out.append(Located(-1, -1))
            continue
        out.append(Located(where[at], where[at + len(small) - 1] + 1, embed))
        pos = where[at] + 1
    return out


def _squeezed(text: str) -> tuple[str, list[int]]:
    """``text`` with every whitespace run made one space, and each kept character's offset."""
    out: list[str] = []
    where: list[int] = []
    space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            if not space:
                out.append(" ")
                where.append(i)
            space = True
        else:
            out.append(ch)
            where.append(i)
            space = False
    return "".join(out), where
