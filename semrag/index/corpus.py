"""The versioned corpus of an index: its documents' records, chunk ids, followers, commits."""

from __future__ import annotations

import bisect
import contextlib
import itertools
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from semrag._rwlock import RWLock
from semrag.errors import ConfigError, NotIndexedError
from semrag.index.change import Change, Follower, IndexedDocument
from semrag.types import Chunk

if TYPE_CHECKING:
    from semrag.index.ingest.prepared import PreparedDocument

__all__ = ["Corpus"]

# doc id -> (its record, chunk order by start, starts, furthest end so far)
_Spans = tuple[IndexedDocument, list[int], list[int], list[int]]


class Corpus:
    """The indexed documents of one :class:`~semrag.SemanticIndex`, one version at a time.

    It owns the records (one :class:`~semrag.index.change.IndexedDocument` per document,
    in insertion order), the chunk-id map, the next free chunk id, the version number,
    the followers, and the locks that order commits and reads:

    * one writer at a time (:meth:`writer`) orders whole commits (followers included), so
      every part sees the changes in the same order;
    * a commit stages the change in every part while readers go on, then swaps the staged
      states in while they wait (:meth:`swap`); readers of several parts hold one version
      (:meth:`read`), so they never mix two;
    * readers of the index and a follower (the knowledge graph) also hold the followers'
      read lock, which a commit holds from its swap until every follower is written (lock
      order: the followers' lock, then the read lock).

    Nothing outside the corpus takes its locks: it offers :meth:`read`, :meth:`writer` and
    :meth:`swap`. A change is made in one place, :meth:`commit`; the records are replaced,
    never rebuilt in place (their vectors move to the parts' rows through their
    :class:`~semrag.index.change.RecordRows`), and a mapping handed out by :meth:`by_id`
    stays the version it was.
    """

    def __init__(self) -> None:
        self._entries: dict[str, IndexedDocument] = {}
        self._chunk_by_id: dict[int, Chunk] = {}
        self._chunk_spans: dict[str, _Spans] = {}
        self._next_id = 0
        self._version = 0
        self._followers: list[Follower] = []
        self._lock = RWLock()  # readers of the records and parts; a swap writes
        self._follow_lock = RWLock()  # readers of the followers too; their write
        self._commit_lock = threading.RLock()  # one writer at a time

    # -- reads ------------------------------------------------------------------------------------
    @property
    def version(self) -> int:
        """The number of changes made so far (a new number after every add or delete)."""
        return self._version

    @property
    def next_id(self) -> int:
        """The next free chunk id (ids are never reused)."""
        return self._next_id

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._entries

    @property
    def doc_ids(self) -> list[str]:
        """Ids of the indexed documents, in insertion order."""
        return list(self._entries)

    def records(self) -> list[IndexedDocument]:
        """Every document's record, in insertion order."""
        return list(self._entries.values())

    def by_id(self) -> Mapping[str, IndexedDocument]:
        """The records by document id, as of now (a later change replaces, not edits, it)."""
        return self._entries

    def get(self, doc_id: str) -> IndexedDocument | None:
        """``doc_id``'s record, or ``None``."""
        return self._entries.get(doc_id)

    def entry(self, doc_id: str) -> IndexedDocument:
        """``doc_id``'s record.

        Raises:
            NotIndexedError: if the document is not indexed.
        """
        try:
            return self._entries[doc_id]
        except KeyError:
            raise NotIndexedError(f"document {doc_id!r} is not indexed") from None

    @property
    def n_chunks(self) -> int:
        """How many chunks the documents hold."""
        return len(self._chunk_by_id)

    def chunk(self, chunk_id: int) -> Chunk:
        """The chunk with this id.

        Raises:
            NotIndexedError: if no indexed chunk has it.
        """
        try:
            return self._chunk_by_id[chunk_id]
        except KeyError:
            raise NotIndexedError(f"chunk {chunk_id!r} is not indexed") from None

    def chunk_items(self) -> Iterator[tuple[int, Chunk]]:
        """``(id, chunk)`` of every indexed chunk."""
        return iter(self._chunk_by_id.items())

    def overlapping_chunks(self, doc_id: str, start: int, end: int) -> list[int]:
        """Ids of ``doc_id``'s chunks that share a character with ``[start, end)``.

        In the document's chunk order. Two binary searches bound the candidates (chunks
        by start, and the furthest end reached so far), so a document of many chunks
        costs a lookup ``log`` of them plus the chunks found, whatever their layout
        (chunks of a splitter may overlap).
        """
        entry = self._entries.get(doc_id)
        if entry is None:
            return []
        cached = self._chunk_spans.get(doc_id)
        if cached is None or cached[0] is not entry:
            order = sorted(range(len(entry.chunks)), key=lambda i: entry.chunks[i].start)
            starts = [entry.chunks[i].start for i in order]
            reach = list(itertools.accumulate((entry.chunks[i].end for i in order), max))
            cached = self._chunk_spans[doc_id] = (entry, order, starts, reach)
        _, order, starts, reach = cached
        lo, hi = bisect.bisect_right(reach, start), bisect.bisect_left(starts, end)
        chunks, ids = entry.chunks, entry.chunk_ids
        found = [j for j in order[lo:hi] if chunks[j].end > start]
        if len(found) > 1 and any(a > b for a, b in itertools.pairwise(found)):
            found.sort()  # chunks not stored in start order
        return [ids[j] for j in found]

    # -- reading one version ------------------------------------------------------------------
    def read(self, *, followers: bool = False) -> contextlib.AbstractContextManager[None]:
        """Hold one version for the ``with`` block (see :meth:`SemanticIndex.read`).

        Raises:
            ConfigError: ``followers=True`` inside a plain read of the same thread.
        """
        if not followers:
            return self._lock.read()
        if self._lock.reading() and not self._follow_lock.reading():
            raise ConfigError(
                "index.read(followers=True) inside index.read(): take the followers read "
                "first (the outermost read)"
            )
        return _hold_both(self._follow_lock.read(), self._lock.read())

    def writer(self) -> contextlib.AbstractContextManager[bool]:
        """Be the one writer for the ``with`` block: no other thread's change commits meanwhile.

        For work that reads one version and acts on it: ids taken in commit order, a part
        built and written to the followers before the next change, a save, a re-embedding's
        swap. The holder may itself commit (it is re-entrant); readers go on reading.
        """
        return self._commit_lock

    def swap(self) -> contextlib.AbstractContextManager[None]:
        """Readers wait for the ``with`` block: what it swaps in, they see whole or not at all."""
        return self._lock.write()

    def can_commit(self) -> bool:
        """Whether the calling thread may make a change now (it holds no read)."""
        return not (self._lock.reading() or self._follow_lock.reading())

    # -- followers ----------------------------------------------------------------------------
    def follow(
        self,
        part: Follower,
        *,
        replay: bool | Callable[[list[IndexedDocument], int], Change] = False,
    ) -> None:
        """Give every later change to ``part`` too (see :meth:`SemanticIndex.follow`)."""
        with self._commit_lock:
            if self.follows(part):
                return
            if replay:
                docs = self.records()
                change = (
                    replay(docs, self._version)
                    if callable(replay)
                    else Change(self._version, added=tuple(docs))
                )
                part.apply(change)
            self._followers.append(part)

    @property
    def followers(self) -> tuple[Follower, ...]:
        """The parts that get the changes after the index's own, in the order they came."""
        return tuple(self._followers)

    def follows(self, part: object) -> bool:
        """Whether ``part`` gets the changes."""
        return any(p is part for p in self._followers)

    def unfollow(self, part: Follower) -> bool:
        """Stop giving changes to ``part``; ``False`` if it was not following."""
        with self._commit_lock:
            for i, p in enumerate(self._followers):
                if p is part:
                    del self._followers[i]
                    return True
            return False

    # -- the one place the corpus changes -----------------------------------------------------
    def assign_ids(self, prepared: Sequence[PreparedDocument]) -> list[IndexedDocument]:
        """The records of prepared documents, with the next free chunk ids (taken now).

        Call it as the writer (:meth:`writer`), for the commit that follows: ids are taken in
        commit order.
        """
        out = []
        for doc in prepared:
            n = len(doc.chunks)
            out.append(doc.indexed(range(self._next_id, self._next_id + n)))
            self._next_id += n
        return out

    def skip_ids(self, next_id: int) -> None:
        """Take no chunk id below ``next_id`` (a re-embedded twin gives its chunks new ids)."""
        self._next_id = max(self._next_id, int(next_id))

    def commit(
        self,
        added: Sequence[IndexedDocument],
        removed_ids: Iterable[str],
        stage: Callable[[Change], Sequence[Callable[[], None]]],
        on_swap: Callable[[Change], None],
    ) -> Change:
        """Make one change: every part applies it, then the new version is published.

        ``added`` documents replace indexed ones of the same id. ``stage(change)`` has
        each part compute its next state where no reader looks (a failure there leaves
        the corpus as it was) and returns their publishers; readers wait only while the
        states are swapped in, with the records, and ``on_swap(change)`` (the index
        points its records at the parts' rows and publishes its graph view). Followers
        that stage (the knowledge graph's extraction) stage here too; they are written
        after the swap, before readers of followers go on.
        """
        with self._commit_lock:
            gone = {*removed_ids, *(d.id for d in added)}
            removed = tuple(e for i, e in self._entries.items() if i in gone)
            change = Change(self._version + 1, tuple(added), removed)
            if not change:
                return change
            publish = stage(change)
            follow = [_staged(f, change) for f in self._followers]
            with self._follow_lock.write():
                with self.swap():
                    for swap in publish:
                        swap()
                    entries = {i: e for i, e in self._entries.items() if i not in gone}
                    entries.update((d.id, d) for d in added)
                    for i in change.removed_chunk_ids():
                        self._chunk_by_id.pop(i, None)
                    for d in added:
                        self._chunk_by_id.update(zip(d.chunk_ids, d.chunks, strict=True))
                    self._entries = entries
                    for doc_id in gone:
                        self._chunk_spans.pop(doc_id, None)
                    self._version = change.version
                    on_swap(change)
                failed = _run_all(follow)  # readers of index and followers wait for these
            if failed is not None:
                raise failed
            return change

    def adopt(self, other: Corpus, on_swap: Callable[[Change], None]) -> Change:
        """Take ``other``'s records (the same documents, embedded again) as one change.

        Followers get a change that removes every document and adds its new version;
        ``on_swap(change)`` swaps the index's own state under the same locks. The caller
        is the writer (:meth:`writer`) and made sure no write landed since ``other`` was filled.
        """
        change = Change(self._version + 1, tuple(other.records()), tuple(self.records()))
        follow = [_staged(f, change) for f in self._followers]
        with self._follow_lock.write():
            with self.swap():
                self._entries, self._chunk_by_id = other._entries, other._chunk_by_id
                self._next_id, self._chunk_spans = other._next_id, {}
                self._version = change.version
                on_swap(change)
            failed = _run_all(follow)
        if failed is not None:
            raise failed
        return change

    def restore(
        self, records: Sequence[IndexedDocument], next_id: int, version: int | None = None
    ) -> None:
        """Hold the records of a saved index, at the version it was saved at.

        Saves before the version was recorded restore as version 1 (0 when empty).
        """
        if self._entries or self._version:
            raise ConfigError("restore() fills a fresh corpus only")
        for e in records:
            self._entries[e.id] = e
            self._chunk_by_id.update(zip(e.chunk_ids, e.chunks, strict=True))
        self._next_id = int(next_id)
        self._version = int(version) if version is not None else 1 if records else 0


def _run_all(writes: Sequence[Callable[[], None]]) -> Exception | None:
    """Run every follower's write, even after one fails; the first failure, if any.

    A follower that fails repairs itself from its own record (the knowledge graph
    rewrites its store from its ledger); the others must not miss the change meanwhile.
    Later failures are attached to the first as notes.
    """
    first: Exception | None = None
    for write in writes:
        try:
            write()
        except Exception as exc:  # noqa: BLE001 - re-raised by the caller
            if first is None:
                first = exc
            else:
                first.add_note(f"another follower failed too: {exc!r}")
    return first


@runtime_checkable
class _Stages(Protocol):
    """A follower that computes its next state before the swap (a knowledge graph does)."""

    def stage(self, change: Change) -> Callable[[], None]: ...


def _staged(part: Follower, change: Change) -> Callable[[], None]:
    """``part.stage(change)`` for a follower that stages, else a function that applies it."""
    if isinstance(part, _Stages):
        return part.stage(change)
    return lambda: part.apply(change)


@contextlib.contextmanager
def _hold_both(
    first: contextlib.AbstractContextManager[None], second: contextlib.AbstractContextManager[None]
) -> Iterator[None]:
    with first, second:
        yield
