"""The one place a :class:`~semrag.SemanticIndex` changes: stage every part, then publish."""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from semrag.index._ssg_view import SSGView
from semrag.index.change import Change, IndexedDocument, IndexPart


class Versioned:
    """Followers, commit and publish of a :class:`~semrag.SemanticIndex`."""

    # -- the one place the index changes ----------------------------------------------------
    def follow(
        self,
        part: IndexPart,
        *,
        replay: bool | Callable[[list[IndexedDocument], int], Change] = False,
    ) -> None:
        """Give every later change of this index to ``part`` too (e.g. a knowledge graph).

        ``part.apply(change)`` runs after the index's own parts have applied the change,
        in commit order. With ``replay=True``, ``part`` first gets one change that adds
        every document indexed now; with a function, it gets the change that function
        makes of the indexed documents (in order) and the version (a part that saved its
        state catches up this way). No change can slip in between.
        """
        with self._commit_lock:
            if self.follows(part):
                return
            if replay:
                docs = list(self._entries.values())
                change = (
                    replay(docs, self._version)
                    if callable(replay)
                    else Change(self._version, added=tuple(docs))
                )
                part.apply(change)
            self._followers.append(part)

    @property
    def followers(self) -> tuple[IndexPart, ...]:
        """The parts that get this index's changes after its own (:meth:`follow`)."""
        return tuple(self._followers)

    def follows(self, part: object) -> bool:
        """Whether ``part`` gets this index's changes."""
        return any(p is part for p in self._followers)

    def unfollow(self, part: IndexPart) -> bool:
        """Stop giving changes to ``part``; ``False`` if it was not following."""
        with self._commit_lock:
            for i, p in enumerate(self._followers):
                if p is part:
                    del self._followers[i]
                    return True
            return False

    def _commit(self, added: Sequence[IndexedDocument], removed_ids: Iterable[str] = ()) -> Change:
        """Make one change: every part applies it, then the new version is published.

        ``added`` documents replace indexed ones of the same id.
        """
        with self._commit_lock:
            gone = {*removed_ids, *(d.id for d in added)}
            removed = tuple(e for i, e in self._entries.items() if i in gone)
            change = Change(self._version + 1, tuple(added), removed)
            if not change:
                return change
            # Each part computes its next state where no reader looks (a failure here
            # leaves the index as it was); readers wait only while the states are swapped in.
            # Followers that stage (the knowledge graph's extraction) do it here too.
            publish = [part.stage(change) for part in self.parts.values()]
            follow = [_staged(f, change) for f in self._followers]
            with self._follow_lock.write():
                with self._lock.write():
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
                    self._share_vectors(added)
                    self._version = change.version
                    self._publish_view()
                failed = _run_all(follow)  # readers of index and followers wait for these
            if failed is not None:
                raise failed
            return change

    def _adopt(self, shadow: Any) -> Change:
        """Make a re-embedded twin of this index (:meth:`reembed`) current, as one change.

        ``shadow`` holds the same documents with another model's vectors. Followers get a
        change that removes every document and adds its new version. The caller holds
        ``_commit_lock`` and made sure no write landed since ``shadow`` was filled.
        """
        change = Change(
            self._version + 1,
            tuple(shadow._entries.values()),
            tuple(self._entries.values()),
        )
        fingerprint = shadow.fingerprint  # computed before readers are stopped
        follow = [_staged(f, change) for f in self._followers]
        with self._follow_lock.write():
            with self._lock.write():
                self.embedder, self.chunker = shadow.embedder, shadow.chunker
                self._fingerprint = fingerprint
                self._entries, self._chunk_by_id = shadow._entries, shadow._chunk_by_id
                self._next_id = shadow._next_id
                self._dense, self.sparse = shadow._dense, shadow.sparse
                self._ssg, self._pieces, self._passages = (
                    shadow._ssg,
                    shadow._pieces,
                    shadow._passages,
                )
                self._chunk_spans, self._shared = {}, shadow._shared
                self.notes.extend(shadow.notes)
                self._version = change.version
                self._publish_view()
            failed = _run_all(follow)
        if failed is not None:
            raise failed
        return change

    def _share_vectors(self, added: Iterable[IndexedDocument]) -> None:
        """Point documents' vectors at the rows the parts search: each vector held once.

        The dense part keeps every chunk vector in one array, the SSG every sentence and
        window-node vector in one array each (an HNSW graph holds its rows itself, read in
        place: the dense part's with ``dense="hnsw"``, the node index's with
        ``knn="hnsw"``); a document's arrays become views of its rows there, so the arrays
        ingestion made are freed. Those holders move when the rows
        outgrow them or are compacted (a delete); then every document is pointed again,
        which costs what the move did. The values never change, so a reader sees the same
        vectors either way.
        """
        dense, ssg = self._dense, self._ssg
        buffers = (
            *((dense.buffer,) if dense is not None else ()),
            *(ssg.buffers() if ssg is not None else ()),
        )
        moved = (
            self._shared is None
            or len(self._shared) != len(buffers)
            or any(ref() is not buf for ref, buf in zip(self._shared, buffers, strict=True))
        )
        for e in self._entries.values() if moved else added:
            if dense is not None:  # the same values, shared
                object.__setattr__(e, "chunk_vectors", dense.rows_view(e.chunk_ids))
            if ssg is not None:
                sentences, nodes = ssg.document_rows(e.id)
                object.__setattr__(e, "sentence_vectors", sentences)
                object.__setattr__(e, "node_vectors", nodes)
        self._shared = tuple(weakref.ref(b) for b in buffers)

    def _publish_view(self) -> None:
        if self._ssg is None:
            return
        self._view = SSGView(
            self._version,
            self._ssg.graph,
            self._entries,
            self._ssg.sentence_matrix,
            self._ssg.doc_sentences.tolist(),
            self.chunker.tokenizer,
            self.embedder.dim,
        )


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


def _staged(part: IndexPart, change: Change) -> Callable[[], None]:
    """``part.stage(change)`` for a part that stages, else a function that applies it."""
    stage = getattr(part, "stage", None)
    if callable(stage):
        return stage(change)
    return lambda: part.apply(change)


@contextlib.contextmanager
def hold_both(
    first: contextlib.AbstractContextManager[None], second: contextlib.AbstractContextManager[None]
) -> Iterator[None]:
    with first, second:
        yield
