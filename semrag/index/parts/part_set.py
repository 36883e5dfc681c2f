"""The parts of an index, each following every change, and the graph view readers take."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from semrag._heap import give_back
from semrag.errors import ConfigError
from semrag.index.change import Change, IndexedDocument, StagedPart
from semrag.index.parts._dense_version import StagedVersion
from semrag.index.parts._ssg_view import SSGView
from semrag.index.parts.dense import DenseIndex
from semrag.index.parts.external import StoreBackedDense
from semrag.index.parts.live_ssg import LiveSSG
from semrag.index.parts.passages import PassagePhrases
from semrag.index.parts.pieces import PieceIndex
from semrag.index.parts.sparse import BM25Index
from semrag.text.tokens import Tokenizer
from semrag.types import Floats

__all__ = ["PartSet"]

_OPTIONAL = ("ssg", "pieces", "passages")


class PartSet:
    """The derived structures of one :class:`~semrag.SemanticIndex`.

    It owns the dense index (made on first use, unless it is a vector store's), BM25, and
    the optional parts: the semantic similarity graph (``ssg``), SKETCH's small pieces
    (``pieces``) and PPR's passage phrases (``passages``). Each stages and publishes every
    change the corpus makes (:meth:`named` lists them for it). It also keeps each vector
    once (:meth:`share_vectors` points the records at the parts' rows) and publishes the
    graph view readers take (:meth:`publish_view`).

    Args:
        dim: the embedder's dimension.
        dense_kind: the in-process dense kind (``"auto"``, ``"flat"``, ``"hnsw"``).
        sparse: the BM25 index.
        dense: a vector store's dense part (:class:`StoreBackedDense`), or ``None``.
        ssg, pieces, passages: the optional parts the index starts with.
    """

    def __init__(
        self,
        dim: int,
        dense_kind: str,
        sparse: BM25Index,
        *,
        dense: StoreBackedDense | None = None,
        ssg: LiveSSG | None = None,
        pieces: PieceIndex | None = None,
        passages: PassagePhrases | None = None,
    ) -> None:
        self._dim, self._dense_kind = int(dim), dense_kind
        self._dense: DenseIndex | StoreBackedDense | None = dense
        self._sparse = sparse
        self._optional: dict[str, Any] = {"ssg": ssg, "pieces": pieces, "passages": passages}
        self._view: SSGView | None = None
        self._shared: tuple[weakref.ref[Floats], ...] | None = None  # see share_vectors

    # -- the parts ------------------------------------------------------------------------------
    @property
    def dense(self) -> DenseIndex | StoreBackedDense:
        """Chunk vectors searched in process, or by the user's vector store."""
        if self._dense is None:
            self._dense = DenseIndex(self._dim, kind=self._dense_kind)
        return self._dense

    @property
    def sparse(self) -> BM25Index:
        """BM25 over the chunks."""
        return self._sparse

    @property
    def ssg(self) -> LiveSSG | None:
        """The semantic similarity graph, or ``None``."""
        return self._optional["ssg"]

    @property
    def pieces(self) -> PieceIndex | None:
        """SKETCH's small pieces, or ``None``."""
        return self._optional["pieces"]

    @property
    def passages(self) -> PassagePhrases | None:
        """PPR's passage phrases, or ``None``."""
        return self._optional["passages"]

    def named(self) -> dict[str, StagedPart]:
        """Every part by name: each stages and publishes every change."""
        parts: dict[str, StagedPart] = {"dense": self.dense, "sparse": self._sparse}
        parts.update((name, part) for name, part in self._optional.items() if part is not None)
        return parts

    def use(self, *, dense: DenseIndex | StoreBackedDense, sparse: BM25Index) -> None:
        """Hold these dense and BM25 parts instead (a loaded index's, a re-embedded twin's).

        Raises:
            ConfigError: once a change was applied to the current ones.
        """
        if len(self._sparse):
            raise ConfigError("use() replaces parts that hold no chunk yet")
        self._dense, self._sparse = dense, sparse

    def keep(
        self, name: str, part: LiveSSG | PieceIndex | PassagePhrases, *, replace: bool = False
    ) -> None:
        """Keep an optional part from now on (built from the corpus by the caller).

        ``replace``: instead of the one kept (a loaded index's part for its empty one).

        Raises:
            ConfigError: for another name, or a part of that name kept already.
        """
        if name not in _OPTIONAL or (self._optional[name] is not None and not replace):
            raise ConfigError(f"keep() adds one of {_OPTIONAL} not kept yet, not {name!r}")
        self._optional[name] = part
        if name == "ssg":
            self._shared = None  # every record points at the new graph's rows

    def take(self, other: PartSet) -> None:
        """Hold ``other``'s parts (a re-embedded twin's), all at once."""
        self._dim, self._dense_kind = other._dim, other._dense_kind
        self._dense, self._sparse = other._dense, other._sparse
        self._optional = dict(other._optional)
        self._shared = other._shared

    def stage(self, change: Change) -> list[Callable[[], None]]:
        """Stage every part (in :meth:`named`'s order); returns their publishers.

        As the in-process dense part stores each batch of the added chunks, the records of
        that batch read their chunk vectors from its staged rows (:class:`_ReadPlaced`), so
        the arrays ingestion made are freed while the change is staged, not after the
        commit: at a million chunks, 1.5 GB a one-call add held beside the dense part's
        copy, at its peak. The records are not published yet: no reader sees them move.
        """
        publish: list[Callable[[], None]] = []
        for name, part in self.named().items():
            if name == "dense" and isinstance(part, DenseIndex):
                publish.append(part.stage(change, placed=_ReadPlaced(change.added)))
            else:
                publish.append(part.stage(change))
        return publish

    # -- each vector once, and the graph's view --------------------------------------------
    def share_vectors(
        self, records: Sequence[IndexedDocument], added: Iterable[IndexedDocument]
    ) -> None:
        """Point documents' vectors at the rows the parts search: each vector held once.

        The dense part keeps every chunk vector in one array, the SSG every sentence and
        window-node vector in one array each (an HNSW graph holds its rows itself, read in
        place: the dense part's with ``dense="hnsw"``, the node index's with
        ``knn="hnsw"``); a document's arrays become views of its rows there, so the arrays
        ingestion made are freed. Those holders move when the rows outgrow them or are
        compacted (a delete); then every record (``records``) is pointed again, which
        costs what the move did, else only the ``added`` ones. The values never change, so
        a reader sees the same vectors either way.
        """
        dense, ssg = self._dense, self.ssg
        buffers = (
            *((dense.buffer,) if dense is not None else ()),
            *(ssg.buffers() if ssg is not None else ()),
        )
        moved = (
            self._shared is None
            or len(self._shared) != len(buffers)
            or any(ref() is not buf for ref, buf in zip(self._shared, buffers, strict=True))
        )
        for e in records if moved else added:
            if dense is not None:  # the same values, shared
                e.rows.share(chunk_vectors=dense.rows_view(e.chunk_ids))
            if ssg is not None:
                sentences, nodes = ssg.document_rows(e.id)
                e.rows.share(sentence_vectors=sentences, node_vectors=nodes)
        self._shared = tuple(weakref.ref(b) for b in buffers)

    def publish_view(
        self, version: int, by_id: Mapping[str, IndexedDocument], tokenizer: Tokenizer
    ) -> None:
        """Make the graph of this version the one readers take (nothing without a graph)."""
        ssg = self.ssg
        if ssg is None:
            return
        self._view = SSGView(
            version,
            ssg.graph,
            by_id,
            ssg.sentence_matrix,
            ssg.doc_sentences.tolist(),
            tokenizer,
            self._dim,
        )

    @property
    def view(self) -> SSGView | None:
        """The graph view of the current version, or ``None`` without a graph."""
        return self._view


class _ReadPlaced:
    """Points added records at the dense part's staged rows as their batches are stored.

    The dense part stores a change's chunks in the records' order, a few whole documents
    at a time; after each batch it says how many added rows it holds. The arrays the
    records let go of sit between arrays still in use, where ``free`` keeps their pages:
    they go back to the system (:func:`semrag._heap.give_back`).
    """

    def __init__(self, added: Sequence[IndexedDocument]) -> None:
        self._docs = [d for d in added if d.chunk_ids]
        self._next = 0  # the first record still reading its own array
        self._rows = 0  # the added rows of the records before it
        self._freed = 0  # bytes let go of since the heap was last trimmed

    def __call__(self, staged: StagedVersion, placed_rows: int) -> None:
        while self._next < len(self._docs):
            e = self._docs[self._next]
            if self._rows + len(e.chunk_ids) > placed_rows:
                break
            if isinstance(e.chunk_vectors, np.ndarray):  # (a view counts its own rows)
                self._freed += e.chunk_vectors.nbytes
            e.rows.share(chunk_vectors=staged.rows_view(e.chunk_ids))
            self._rows += len(e.chunk_ids)
            self._next += 1
        if give_back(self._freed):
            self._freed = 0
