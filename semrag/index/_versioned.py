"""The index side of a change: its parts staged by the corpus's commit, then its views."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

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
            self._part_set.take(shadow.part_set)
            self.notes.extend(shadow.notes)
            self._publish_view()

        return self._corpus.adopt(shadow.corpus, swap)

    def _share_vectors(self, added: Iterable[IndexedDocument]) -> None:
        """Point the records' vectors at the parts' rows (see :meth:`PartSet.share_vectors`)."""
        self._part_set.share_vectors(self._corpus.records(), added)

    def _publish_view(self) -> None:
        self._part_set.publish_view(
            self._corpus.version, self._corpus.by_id(), self.chunker.tokenizer
        )
