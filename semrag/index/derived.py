"""Derived parts of a reader that keeps none: the one path retrievers get them by.

A derived structure (PPR's passage phrases, SKETCH's small pieces) is a part
(:class:`~semrag.index.parts.passages.PassagePhrases`,
:class:`~semrag.index.parts.pieces.PieceIndex`). An index that keeps the part
(``SemanticIndex(passages=True)``, ``SemanticIndex(pieces=split)``, or
``index.enable(...)``, always an explicit call) makes it while each change is staged and
saves it; a retriever reads it there. A reader that keeps no such part but holds its
ingestion records (:class:`~semrag.index.reader.HoldsRecords`: an index built without the
part, a vector-store-backed index) has it derived here, once for every retriever over that
reader: :func:`derived` builds the part from the records on the first read and brings it to
the reader's version on the first read after each change (the part's ``sync``: the changed
documents only). Nothing here changes the reader's documents; the derived part is kept in
the reader's :class:`DerivedParts`, lives as long as the reader and is not saved with it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Protocol, TypeVar

from semrag._rwlock import reading
from semrag.embeddings import Embedder
from semrag.index.change import IndexedDocument
from semrag.index.reader import CorpusReader, HoldsRecords, need

__all__ = ["Derivable", "DerivedParts", "derived"]

logger = logging.getLogger(__name__)


class Derivable(Protocol):
    """A part that can be brought to a reader's documents from their records."""

    @property
    def embedder(self) -> Embedder | None:
        """The embedder its vectors are of; ``None`` when they are not the reader's.

        A reader that moves to another model starts such a part afresh; the passage
        phrases' names have no vectors of the reader's, so a new model keeps them.
        """
        ...

    def sync(self, live: Sequence[IndexedDocument], version: int) -> None:
        """Bring the part to the documents ``live`` (in the reader's order) at ``version``."""
        ...


D = TypeVar("D", bound=Derivable)


class _Derived:
    """One derived part of one reader, and the reader version it was brought to."""

    def __init__(self) -> None:
        self.part: Any = None
        self.version: int | None = None
        self.lock = threading.Lock()


class DerivedParts:
    """The parts derived for one reader, by key (a reader that holds records owns one)."""

    def __init__(self) -> None:
        self._slots: dict[Hashable, _Derived] = {}
        self._lock = threading.Lock()

    def __contains__(self, key: object) -> bool:
        return key in self._slots

    def slot(self, key: Hashable) -> _Derived:
        """The slot of ``key`` (made empty on first use)."""
        with self._lock:
            found = self._slots.get(key)
            if found is None:
                found = self._slots[key] = _Derived()
            return found


def derived(
    reader: CorpusReader,
    key: Hashable,
    make: Callable[[HoldsRecords], D],
    *,
    by: str,
    why: str,
) -> D:
    """The part ``key`` of ``reader``, derived from its records at its current version.

    Args:
        reader: the reader the part is of; every retriever over it shares the part.
        key: the part and its settings (``("passages", titles)``, ``("pieces", split)``).
        make: an empty part for the reader's records and current embedder.
        by: the retriever that asks (named in the error).
        why: what the caller can do instead (named in the error).

    Raises:
        MissingCapabilityError: naming :class:`~semrag.index.reader.HoldsRecords` when the
            reader holds no records to derive the part from.
    """
    records = need(reader, HoldsRecords, by=by, why=why)
    slot = records.derived_parts.slot(key)
    # Lock order: the reader's read first, then the part's lock (a change waits for both).
    with reading(reader), slot.lock:
        part: D | None = slot.part
        if part is None or part.embedder not in (None, reader.embedder):  # new, or reembedded
            part = slot.part = make(records)
            slot.version = None
        version = reader.current_version()
        if slot.version != version:
            started = time.perf_counter()
            part.sync([records.indexed(d) for d in reader.doc_ids], version)
            slot.version = version
            logger.info(
                "%s: derived %r for version %d in %.2f s (an index keeps it with "
                "SemanticIndex(passages=True) / SemanticIndex(pieces=split) or index.enable())",
                by,
                key,
                version,
                time.perf_counter() - started,
            )
        return part
