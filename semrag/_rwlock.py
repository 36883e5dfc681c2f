"""A readers-writer lock: many readers at once, one writer alone, readers re-entrant.

A writer waits for the readers inside to leave and keeps new ones out while it waits
(so a steady stream of readers cannot starve it); a thread that already reads may read
again (nested calls never deadlock on a waiting writer). A thread must not ask to write
while it reads.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from semrag.index.reader import CorpusReader

_R = TypeVar("_R")

__all__ = ["ProvidesReader", "RWLock", "as_reader", "reading"]


class RWLock:
    """Shared reads, exclusive writes (see the module docstring)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer: int | None = None
        self._waiting = 0
        self._local = threading.local()

    def reading(self) -> bool:
        """Whether the calling thread holds a read (or the write)."""
        return bool(getattr(self._local, "depth", 0)) or self._writer == threading.get_ident()

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        """Hold a shared read for the block."""
        held = self.acquire_read()
        try:
            yield
        finally:
            self.release_read(held)

    def acquire_read(self) -> tuple[int, bool]:
        """Take a shared read; pass what it returns to :meth:`release_read` (in a ``finally``).

        :meth:`read` without a context manager's cost, for short reads made often.
        """
        depth = getattr(self._local, "depth", 0)
        counted = depth == 0 and self._writer != threading.get_ident()
        if counted:
            with self._cond:
                while self._writer is not None or self._waiting:
                    self._cond.wait()
                self._readers += 1
        self._local.depth = depth + 1
        return depth, counted

    def release_read(self, held: tuple[int, bool]) -> None:
        """Give back a read that :meth:`acquire_read` took."""
        depth, counted = held
        self._local.depth = depth
        if counted:
            with self._cond:
                self._readers -= 1
                if not self._readers and self._waiting:  # the last reader lets a writer in
                    self._cond.notify_all()

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        """Hold the exclusive write for the block (re-entrant for the writing thread)."""
        me = threading.get_ident()
        if self._writer == me:
            yield
            return
        if getattr(self._local, "depth", 0):
            raise RuntimeError("a thread that holds a read cannot start a write")
        with self._cond:
            self._waiting += 1
            try:
                while self._writer is not None or self._readers:
                    self._cond.wait()
            finally:
                self._waiting -= 1
            self._writer = me
        try:
            yield
        finally:
            with self._cond:
                self._writer = None
                self._cond.notify_all()


def reading(index: Any, *, followers: bool = False) -> contextlib.AbstractContextManager[Any]:
    """``index.read()``: one version of a reader for the ``with`` block (every reader has it).

    ``followers=True`` also reads the index's followers (its knowledge graph) at the
    same version (see :meth:`semrag.SemanticIndex.read`).
    """
    return index.read(followers=True) if followers else index.read()


@runtime_checkable
class ProvidesReader(Protocol):
    """An index whose retrievers read through a reader of its own (``SemanticIndex``)."""

    def reader(self) -> CorpusReader:
        """What retrievers read (``index.reader()``)."""
        ...


def as_reader(index: _R | ProvidesReader) -> _R | CorpusReader:
    """What a retriever reads of ``index``: its :meth:`reader`, or ``index`` when it is one.

    A :class:`~semrag.SemanticIndex` keeps its users' API and offers the reads on
    ``index.reader()``; a :class:`~semrag.neo4j.Neo4jIndex` or a reader of your own is
    read as it is.
    """
    return index.reader() if isinstance(index, ProvidesReader) else index
