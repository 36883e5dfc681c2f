"""SKETCH's small pieces: every chunk cut again into overlapping pieces, with their vectors.

SKETCH (Mahalingam et al., 2024, §3.2.2) searches by vector over pieces of about 100
tokens with a 16-token overlap, each pointing back to the index chunk it came from. A
:class:`PieceIndex` holds them document by document:

* as a part of the index (``SemanticIndex(pieces=(100, 16))``): every change splits and
  embeds its added documents while it is staged, before the commit locks anything, and
  the pieces are saved and loaded with the index. No query embeds a piece;
* or derived for the retrievers of a reader that holds no pieces of their split
  (:mod:`semrag.index.derived`), brought up to date on the first query after each change
  (:meth:`PieceIndex.sync`).

A chunk already within ``max_tokens`` is its own piece and keeps the chunk's vector.
Piece ids are never reused and grow in index order; a document's pieces have consecutive
ids. A piece is held as a few numbers (its chunk, its offsets, its token count) and becomes
a :class:`~semrag.types.Chunk` when it is read (a million chunks make millions of pieces),
and a change is split and embedded a batch of pieces at a time, so it never holds all its
pieces' vectors at once.
"""

from __future__ import annotations

import bisect
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag._validation import INT, Interval, check_param
from semrag.chunking._split import split_with_overlap
from semrag.embeddings import Embedder
from semrag.errors import ConfigError, NotIndexedError, StoreError
from semrag.index.change import Change, IndexedDocument, differences
from semrag.index.parts.dense import DenseIndex
from semrag.text.tokens import Tokenizer
from semrag.types import Chunk, Ints, Span

__all__ = ["PieceIndex", "check_split"]


_FIELDS = ("id", "parent", "start", "end", "token_count", "index", "whole")
_BATCH = 1 << 14  # pieces split and embedded at a time


def check_split(owner: str, split: Any) -> tuple[int, int]:
    """``split`` as ``(max_tokens, overlap_tokens)``, checked.

    Raises:
        ConfigError: unless ``max_tokens >= 8`` and ``0 <= overlap <= max_tokens // 2``.
    """
    if not isinstance(split, tuple | list) or len(split) != 2:
        raise ConfigError(f"{owner}: split must be (max_tokens, overlap_tokens), got {split!r}")
    size = check_param(owner, "split[0]", split[0], [Interval(INT, 8, None)])
    overlap = check_param(owner, "split[1]", split[1], [Interval(INT, 0, None)])
    if overlap > size // 2:
        raise ConfigError(
            f"{owner}: split must be (max_tokens >= 8, overlap <= max_tokens // 2), got {split!r}"
        )
    return int(size), int(overlap)


_Columns = tuple[
    list[int], list[int], list[int], list[int], list[int], list[bool], list[str | None]
]
"""Each piece's chunk position, start, end, tokens, number, wholeness and text."""


@dataclass(frozen=True, slots=True)
class _DocPieces:
    """One document's pieces, ids ``first .. first + n - 1``, as columns."""

    record: IndexedDocument
    first: int
    at: Ints  # the position of each piece's chunk in the document
    start: Ints
    end: Ints
    tokens: Ints
    order: Ints  # the piece's number within its chunk (a whole chunk: the chunk's index)
    whole: npt.NDArray[np.bool_]  # the piece is its whole chunk

    @property
    def n(self) -> int:
        return int(self.at.size)

    @property
    def ids(self) -> range:
        return range(self.first, self.first + self.n)

    def parent(self, j: int) -> int:
        return int(self.record.chunk_ids[int(self.at[j])])

    def piece(self, j: int) -> Chunk:
        c = self.record.chunks[int(self.at[j])]
        if self.whole[j]:
            return c
        a, b = int(self.start[j]), int(self.end[j])
        text = self.record.doc.text[a:b]
        return replace(
            c, start=a, end=b, text=text, token_count=int(self.tokens[j]), index=int(self.order[j])
        )


class _ById(Mapping[int, Any]):
    """The pieces (or their parents' ids) by piece id, read from the columns when asked."""

    def __init__(self, owner: PieceIndex, parent: bool) -> None:
        self._owner, self._parent = owner, parent

    def __getitem__(self, i: int) -> Any:
        firsts, docs = self._owner._where
        k = bisect.bisect_right(firsts, i) - 1
        if k < 0 or not 0 <= i - docs[k].first < docs[k].n:
            raise NotIndexedError(f"no piece {i}")
        d, j = docs[k], i - docs[k].first
        return d.parent(j) if self._parent else d.piece(j)

    def __iter__(self) -> Iterator[int]:
        for d in self._owner._where[1]:
            yield from d.ids

    def __len__(self) -> int:
        return sum(d.n for d in self._owner._where[1])


class PieceIndex:
    """The pieces of every chunk, the chunk each came from, and a dense index of them.

    Args:
        split: ``(max_tokens, overlap_tokens)`` of the pieces (see :func:`check_split`).
        tokenizer: the index chunker's tokenizer (counts and offsets of tokens).
        embedder: embeds the pieces.
        kind: the index's dense kind: the pieces' dense index is of the same kind
            (``"ivf"``, ``"hnsw"``, ``"auto"``), or exact for any other (``"flat"``, a
            vector store's).
    """

    def __init__(
        self, split: tuple[int, int], tokenizer: Tokenizer, embedder: Embedder, kind: str
    ) -> None:
        self.split = check_split("PieceIndex", split)
        self.tokenizer = tokenizer
        self.embedder = embedder
        self.dense = DenseIndex(
            embedder.dim, kind=kind if kind in ("ivf", "hnsw", "auto") else "flat"
        )
        self._docs: dict[str, _DocPieces] = {}
        # the documents with pieces by first id, for lookups (replaced whole by a change)
        self._where: tuple[list[int], list[_DocPieces]] = ([], [])
        self._next = 0
        self._stage_lock = threading.Lock()
        self.version = 0
        """The index version the pieces are of."""

    @property
    def pieces(self) -> Mapping[int, Chunk]:
        """Each piece, by the id the dense index returns."""
        return _ById(self, parent=False)

    @property
    def parents(self) -> Mapping[int, int]:
        """The index chunk id each piece came from."""
        return _ById(self, parent=True)

    def pieces_of(self, doc_id: str) -> list[tuple[Chunk, int, np.ndarray]]:
        """``(piece, parent chunk id, vector)`` of each piece of ``doc_id``, in order."""
        d = self._docs.get(doc_id)
        if d is None or not d.n:
            return []
        vectors = self.dense.vectors_of(list(d.ids))
        return [(d.piece(j), d.parent(j), vectors[j]) for j in range(d.n)]

    # -- following the index --------------------------------------------------------------------
    def stage(self, change: Change) -> Callable[[], None]:
        """Split and embed the change's added documents; the returned function publishes.

        Searches read the current pieces until then.
        """
        return self._staged(change.added, change.removed_ids, change.version)

    def apply(self, change: Change) -> None:
        """Remove the change's removed documents' pieces, then add the added ones'."""
        self.stage(change)()

    def sync(self, live: Sequence[IndexedDocument], version: int) -> None:
        """Bring the pieces to the index's documents ``live`` (in index order) at ``version``.

        How a reader that keeps no pieces gets them (:mod:`semrag.index.derived`): the
        pieces of a document no longer there, or of an older version of it, leave; a
        document not split yet is split and embedded.
        """
        added, removed = differences({d: p.record for d, p in self._docs.items()}, live)
        self._staged(added, removed, version)()

    def _staged(
        self, added: Sequence[IndexedDocument], removed: Sequence[str], version: int
    ) -> Callable[[], None]:
        found: list[_DocPieces] = []
        gone = [i for d in removed if d in self._docs for i in self._docs[d].ids]
        publish_dense = self.dense.staged_batches(gone, self._batches(added, found))

        def publish() -> None:
            publish_dense()
            for d in removed:
                self._docs.pop(d, None)
            self._docs.update((p.record.id, p) for p in found)
            held = sorted((p for p in self._docs.values() if p.n), key=lambda p: p.first)
            self._where = ([p.first for p in held], held)
            self.version = version

        return publish

    def _batches(
        self, added: Sequence[IndexedDocument], found: list[_DocPieces]
    ) -> Iterator[tuple[Ints, np.ndarray]]:
        """``(ids, vectors)`` of the added documents' pieces, a batch at a time.

        Each document's columns go to ``found`` as its batch is made.
        """
        group: list[tuple[IndexedDocument, _Columns]] = []
        size = 0
        for d in added:
            group.append((d, self._split(d)))
            size += len(group[-1][1][0])
            if size >= _BATCH:
                yield self._embedded(group, found)
                group, size = [], 0
        if group:
            yield self._embedded(group, found)

    def _embedded(
        self, group: list[tuple[IndexedDocument, _Columns]], found: list[_DocPieces]
    ) -> tuple[Ints, np.ndarray]:
        n = sum(len(cols[0]) for _, cols in group)
        with self._stage_lock:  # ids are never reused, even by a change that is dropped
            first, self._next = self._next, self._next + n
        vectors = np.zeros((n, self.dense.dim), np.float32)
        texts: list[str] = []
        rows: list[int] = []
        at = 0
        for d, (pos, start, end, tokens, order, whole, piece_texts) in group:
            c_pos, c_start, c_end, c_tokens, c_order = (
                np.asarray(c, np.int64) for c in (pos, start, end, tokens, order)
            )
            keep = np.asarray(whole, bool)
            if keep.any():  # a whole chunk keeps the chunk's vector
                vectors[at + np.flatnonzero(keep)] = np.asarray(d.chunk_vectors)[c_pos[keep]]
            rows += [at + j for j in np.flatnonzero(~keep).tolist()]
            texts += [t for t in piece_texts if t is not None]
            found.append(_DocPieces(d, first + at, c_pos, c_start, c_end, c_tokens, c_order, keep))
            at += len(pos)
        if texts:
            vectors[rows] = self.embedder.embed(texts)
        return np.arange(first, first + n, dtype=np.int64), vectors

    def _split(self, d: IndexedDocument) -> _Columns:
        """Columns of the document's pieces.

        Each piece's chunk position, start, end, token count, number within its chunk (a
        whole chunk's own), whether it is the whole chunk, and its text (``None`` then).
        """
        size, overlap = self.split
        tok = self.tokenizer
        starts = [s.start for s in d.sentences]
        text = d.doc.text
        out: _Columns = ([], [], [], [], [], [], [])
        columns: list[list[Any]] = list(out)
        for pos, c in enumerate(d.chunks):
            if c.token_count <= size:
                whole: tuple[Any, ...] = (pos, c.start, c.end, c.token_count, c.index, True, None)
                for column, value in zip(columns, whole, strict=True):
                    column.append(value)
                continue
            spans = split_with_overlap(
                text,
                Span(c.start, c.end),
                [(c.start + a, c.start + b) for a, b in tok.offsets(c.text)],
                max_tokens=size,
                overlap_tokens=overlap,
                count=lambda t: tok.count([t])[0],
                preferred_starts=[s for s in starts if c.start < s < c.end],
            )
            for j, sp in enumerate(spans):
                piece_text = sp.of(text)
                row = (pos, sp.start, sp.end, tok.count([piece_text])[0], j, False, piece_text)
                for column, value in zip(columns, row, strict=True):
                    column.append(value)
        return out

    # -- persistence --------------------------------------------------------------------------
    def save(self, directory: Path) -> list[str]:
        """Write ``pieces.json`` (each piece's place) and the dense index (``pieces_*``)."""
        columns = ("start", "end", "tokens", "order", "whole")
        rows = [
            [i, p.parent(j), *(int(getattr(p, name)[j]) for name in columns)]
            for p in self._where[1]
            for j, i in enumerate(p.ids)
        ]
        record = {"split": list(self.split), "next": self._next, "fields": _FIELDS, "rows": rows}
        (directory / "pieces.json").write_text(json.dumps(record), encoding="utf-8")
        return ["pieces.json", *self.dense.save(directory, prefix="pieces")]

    @classmethod
    def load(
        cls,
        directory: Path,
        documents: Sequence[IndexedDocument],
        *,
        tokenizer: Tokenizer,
        embedder: Embedder,
        config: dict[str, Any],
        version: int = 0,
    ) -> PieceIndex:
        """Read what :meth:`save` wrote; ``documents`` are the loaded index's, in order.

        ``version``: the loaded index's version (a loaded index numbers its versions afresh).

        Raises:
            StoreError: if the pieces do not match the documents or their vectors.
        """
        data = json.loads((directory / "pieces.json").read_text(encoding="utf-8"))
        out = cls(tuple(data["split"]), tokenizer, embedder, config["kind"])
        out.dense = DenseIndex.load(directory, config, prefix="pieces")
        where = {cid: (d, j) for d in documents for j, cid in enumerate(d.chunk_ids)}
        mine: dict[str, list[list[int]]] = {}
        try:
            for i, parent, start, end, count, j, whole in data["rows"]:
                d, at = where[parent]
                c = d.chunks[at]
                if whole and (start, end) != (c.start, c.end):
                    raise StoreError(f"piece {i} is its whole chunk but not at its offsets")
                if not c.start <= start < end <= c.end:
                    raise StoreError(f"piece {i} [{start}, {end}) is outside its chunk")
                mine.setdefault(d.id, []).append([i, at, start, end, count, j, whole])
        except (KeyError, ValueError, TypeError) as exc:
            raise StoreError(f"{directory}: pieces.json does not match the index ({exc})") from exc
        for d in documents:
            rows = np.asarray(mine.get(d.id, np.zeros((0, 7))), np.int64).reshape(-1, 7)
            first = int(rows[0, 0]) if rows.size else out._next
            if (rows[:, 0] != first + np.arange(rows.shape[0])).any():
                raise StoreError(f"{directory}: the pieces of {d.id!r} are not numbered in a row")
            at, start, end, tokens, order = rows[:, 1:6].T.copy()
            out._docs[d.id] = _DocPieces(d, first, at, start, end, tokens, order, rows[:, 6] > 0)
        held = sorted((p for p in out._docs.values() if p.n), key=lambda p: p.first)
        out._where = ([p.first for p in held], held)
        if [i for p in held for i in p.ids] != out.dense.ids.tolist():
            raise StoreError(f"{directory}: the pieces and their vectors do not match")
        out._next = int(data["next"])
        out.version = version
        return out

    def __repr__(self) -> str:
        return f"PieceIndex(split={self.split}, pieces={len(self.pieces)})"
