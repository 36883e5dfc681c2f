"""SKETCH's small pieces: every chunk cut again into overlapping pieces, with their vectors.

SKETCH (Mahalingam et al., 2024, §3.2.2) searches by vector over pieces of about 100
tokens with a 16-token overlap, each pointing back to the index chunk it came from. A
:class:`PieceIndex` holds them document by document:

* as a part of the index (``SemanticIndex(pieces=(100, 16))``): every change splits and
  embeds its added documents while it is staged, before the commit locks anything, and
  the pieces are saved and loaded with the index. No query embeds a piece;
* or kept by a :class:`~semrag.retrieval.SketchRetriever` whose split the index does not
  hold, brought up to date on the first query after each change (:meth:`PieceIndex.sync`).

A chunk already within ``max_tokens`` is its own piece and keeps the chunk's vector.
Piece ids are never reused and grow in index order.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from semrag._validation import INT, Interval, check_param
from semrag.chunking._split import split_with_overlap
from semrag.errors import ConfigError, StoreError
from semrag.index.change import Change, IndexedDocument
from semrag.index.dense import DenseIndex
from semrag.types import Chunk, Span

__all__ = ["PieceIndex", "check_split"]

_FIELDS = ("id", "parent", "start", "end", "token_count", "index", "whole")


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


class PieceIndex:
    """The pieces of every chunk, the chunk each came from, and a dense index of them.

    Args:
        split: ``(max_tokens, overlap_tokens)`` of the pieces (see :func:`check_split`).
        tokenizer: the index chunker's tokenizer (counts and offsets of tokens).
        embedder: embeds the pieces.
        kind: the index's dense kind: ``"hnsw"`` gives the pieces an HNSW index, anything
            else (``"flat"``, a vector store's) an exact one.
    """

    def __init__(self, split: tuple[int, int], tokenizer: Any, embedder: Any, kind: str) -> None:
        self.split = check_split("PieceIndex", split)
        self.tokenizer = tokenizer
        self.embedder = embedder
        self.dense = DenseIndex(embedder.dim, kind="hnsw" if kind == "hnsw" else "flat")
        self._docs: dict[str, tuple[IndexedDocument, list[int]]] = {}  # record, piece ids
        self._chunk: dict[int, Chunk] = {}
        self._parent: dict[int, int] = {}
        self._whole: set[int] = set()  # pieces that are their whole chunk
        self._next = 0
        self._stage_lock = threading.Lock()

    @property
    def pieces(self) -> Mapping[int, Chunk]:
        """Each piece, by the id the dense index returns."""
        return self._chunk

    @property
    def parents(self) -> Mapping[int, int]:
        """The index chunk id each piece came from."""
        return self._parent

    def pieces_of(self, doc_id: str) -> list[tuple[Chunk, int, np.ndarray]]:
        """``(piece, parent chunk id, vector)`` of each piece of ``doc_id``, in order."""
        ids = self._docs[doc_id][1] if doc_id in self._docs else []
        vectors = self.dense.vectors_of(ids) if ids else np.zeros((0, self.dense.dim), np.float32)
        return [(self._chunk[i], self._parent[i], v) for i, v in zip(ids, vectors, strict=True)]

    # -- following the index --------------------------------------------------------------------
    def stage(self, change: Change) -> Callable[[], None]:
        """Split and embed the change's added documents; the returned function publishes.

        Searches read the current pieces until then.
        """
        return self._staged(change.added, change.removed_ids)

    def apply(self, change: Change) -> None:
        """Remove the change's removed documents' pieces, then add the added ones'."""
        self.stage(change)()

    def sync(self, live: Sequence[IndexedDocument]) -> None:
        """Bring the pieces to the index's documents ``live`` (in index order).

        The pieces of a document no longer there, or of an older version of it, leave; a
        document not split yet is split and embedded.
        """
        now = {d.id: d for d in live}
        stale = [d for d, (record, _) in self._docs.items() if now.get(d) is not record]
        fresh = [d for d in live if d.id not in self._docs or d.id in stale]
        self._staged(fresh, stale)()

    def _staged(
        self, added: Sequence[IndexedDocument], removed: Sequence[str]
    ) -> Callable[[], None]:
        found = [(d, self._split(d)) for d in added]
        flat = [p for _, got in found for p in got]
        vectors = np.zeros((len(flat), self.dense.dim), np.float32)
        todo = []  # pieces to embed; a whole chunk keeps the chunk's vector
        for i, (_, _, vec) in enumerate(flat):
            if vec is None:
                todo.append(i)
            else:
                vectors[i] = vec
        if todo:
            vectors[todo] = self.embedder.embed([flat[i][0].text for i in todo])
        with self._stage_lock:  # ids are never reused, even by a change that is dropped
            first, self._next = self._next, self._next + len(flat)
        ids = np.arange(first, first + len(flat), dtype=np.int64)
        gone = sorted(i for d in removed if d in self._docs for i in self._docs[d][1])
        publish_dense = self.dense.staged(gone, ids, vectors if len(flat) else None)

        def publish() -> None:
            publish_dense()
            for d in removed:
                for i in self._docs.pop(d, (None, []))[1]:
                    del self._chunk[i], self._parent[i]
                    self._whole.discard(i)
            at = iter(ids.tolist())
            for d, got in found:
                mine = [next(at) for _ in got]
                self._docs[d.id] = (d, mine)
                for i, (piece, parent, vec) in zip(mine, got, strict=True):
                    self._chunk[i], self._parent[i] = piece, parent
                    if vec is not None:
                        self._whole.add(i)

        return publish

    def _split(self, d: IndexedDocument) -> list[tuple[Chunk, int, np.ndarray | None]]:
        """``(piece, parent chunk id, the chunk's vector if the piece is the whole chunk)``."""
        size, overlap = self.split
        tok = self.tokenizer
        starts = [s.start for s in d.sentences]
        text = d.doc.text
        out: list[tuple[Chunk, int, np.ndarray | None]] = []
        for cid, c, vec in zip(d.chunk_ids, d.chunks, d.chunk_vectors, strict=True):
            if c.token_count <= size:
                out.append((c, cid, vec))
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
                piece = replace(
                    c,
                    start=sp.start,
                    end=sp.end,
                    text=piece_text,
                    token_count=tok.count([piece_text])[0],
                    index=j,
                )
                out.append((piece, cid, None))
        return out

    # -- persistence --------------------------------------------------------------------------
    def save(self, directory: Path) -> list[str]:
        """Write ``pieces.json`` (each piece's place) and the dense index (``pieces_*``)."""
        rows = [
            [i, self._parent[i], c.start, c.end, c.token_count, c.index, int(i in self._whole)]
            for _, ids in self._docs.values()
            for i, c in ((i, self._chunk[i]) for i in ids)
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
        tokenizer: Any,
        embedder: Any,
        config: dict[str, Any],
    ) -> PieceIndex:
        """Read what :meth:`save` wrote; ``documents`` are the loaded index's, in order.

        Raises:
            StoreError: if the pieces do not match the documents or their vectors.
        """
        data = json.loads((directory / "pieces.json").read_text(encoding="utf-8"))
        out = cls(tuple(data["split"]), tokenizer, embedder, config["kind"])  # type: ignore[arg-type]
        out.dense = DenseIndex.load(directory, config, prefix="pieces")
        where = {cid: (d, j) for d in documents for j, cid in enumerate(d.chunk_ids)}
        mine: dict[str, list[int]] = {}
        try:
            for i, parent, start, end, count, j, whole in data["rows"]:
                d, at = where[parent]
                c = d.chunks[at]
                if whole:
                    piece = c
                    out._whole.add(i)
                else:
                    if not c.start <= start < end <= c.end:
                        raise StoreError(f"piece {i} [{start}, {end}) is outside its chunk")
                    text = d.doc.text[start:end]
                    piece = replace(c, start=start, end=end, text=text, token_count=count, index=j)
                out._chunk[i], out._parent[i] = piece, parent
                mine.setdefault(d.id, []).append(i)
        except (KeyError, ValueError, TypeError) as exc:
            raise StoreError(f"{directory}: pieces.json does not match the index ({exc})") from exc
        if sorted(out._chunk) != out.dense.ids.tolist():
            raise StoreError(f"{directory}: the pieces and their vectors do not match")
        out._docs = {d.id: (d, mine.get(d.id, [])) for d in documents}
        out._next = int(data["next"])
        return out

    def __repr__(self) -> str:
        return f"PieceIndex(split={self.split}, pieces={len(self._chunk)})"
