"""The index side of a change: its parts staged by the corpus's commit, then its views."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from semrag.index._ssg_view import SSGView
from semrag.index.change import Change, IndexedDocument, IndexPart


class Versioned:
    """Followers, commit and publish of a :class:`~semrag.SemanticIndex`.

    The corpus (:class:`~semrag.index.corpus.Corpus`) owns the records, the version, the
    followers and the locks, and makes each change; the index hands it its parts to
    stage and, for the swap, points the records at the parts' rows and publishes its
    graph view.
    """

    # -- followers ----------------------------------------------------------------------------
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
        self._corpus.follow(part, replay=replay)

    @property
    def followers(self) -> tuple[IndexPart, ...]:
        """The parts that get this index's changes after its own (:meth:`follow`)."""
        return self._corpus.followers

    def follows(self, part: object) -> bool:
        """Whether ``part`` gets this index's changes."""
        return self._corpus.follows(part)

    def unfollow(self, part: IndexPart) -> bool:
        """Stop giving changes to ``part``; ``False`` if it was not following."""
        return self._corpus.unfollow(part)

    # -- the one place the index changes ----------------------------------------------------
    def _commit(self, added: Sequence[IndexedDocument], removed_ids: Iterable[str] = ()) -> Change:
        """Make one change: every part applies it, then the new version is published.

        ``added`` documents replace indexed ones of the same id.
        """
        return self._corpus.commit(added, removed_ids, self.parts.values(), self._swapped)

    def _swapped(self, change: Change) -> None:
        """Under the write lock, after the corpus swapped in ``change``: views follow it."""
        self._share_vectors(change.added)
        self._publish_view()

    def _adopt(self, shadow: Any) -> Change:
        """Make a re-embedded twin of this index (:meth:`reembed`) current, as one change.

        ``shadow`` holds the same documents with another model's vectors. Followers get a
        change that removes every document and adds its new version. The caller holds
        the corpus's ``commit_lock`` and made sure no write landed since ``shadow`` was
        filled.
        """
        fingerprint = shadow.fingerprint  # computed before readers are stopped

        def swap(change: Change) -> None:
            self.embedder, self.chunker = shadow.embedder, shadow.chunker
            self._fingerprint = fingerprint
            self._dense, self.sparse = shadow._dense, shadow.sparse
            self._ssg, self._pieces, self._passages = (
                shadow._ssg,
                shadow._pieces,
                shadow._passages,
            )
            self._shared = shadow._shared
            self.notes.extend(shadow.notes)
            self._publish_view()

        return self._corpus.adopt(shadow.corpus, swap)

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
        for e in self._corpus.records() if moved else added:
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
            self._corpus.version,
            self._ssg.graph,
            self._corpus.by_id(),
            self._ssg.sentence_matrix,
            self._ssg.doc_sentences.tolist(),
            self.chunker.tokenizer,
            self.embedder.dim,
        )
