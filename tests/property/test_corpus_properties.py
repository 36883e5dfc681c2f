"""The versioned corpus and the part set on their own: what every change must keep.

``Corpus`` owns the records, chunk ids, version and followers of an index; ``PartSet`` its
derived parts. The living-index state machine checks them through ``SemanticIndex``; these
properties check their own invariants over random sequences of changes.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semrag.errors import ConfigError, NotIndexedError
from semrag.index.change import Change
from semrag.index.corpus import Corpus
from semrag.index.ingest.prepared import PreparedDocument
from semrag.index.parts.part_set import PartSet
from semrag.index.parts.sparse import BM25Index
from semrag.types import Chunk, Document, Span

DIM = 4


def no_parts(change: Change) -> list:
    """A corpus's commit without parts: nothing to stage."""
    return []


def prepared(doc_id: str, cuts: list[int]) -> PreparedDocument:
    """A document of ``len(cuts)`` chunks, chunk ``i`` spanning ``cuts[i]`` characters."""
    text = "".join("x" * n + " " for n in cuts)
    chunks, at = [], 0
    for i, n in enumerate(cuts):
        chunks.append(Chunk(doc_id, at, at + n, "x" * n, n, i, i, i + 1))
        at += n + 1
    spans = [Span(c.start, c.end) for c in chunks]
    rows = np.eye(DIM, dtype=np.float32)[np.arange(len(cuts)) % DIM]
    return PreparedDocument(
        Document(doc_id, text), spans, rows, chunks, rows, [], rows[:0], [], rows[0]
    )


class Recorder:
    """A follower: the changes it was given."""

    def __init__(self) -> None:
        self.changes: list[Change] = []

    def apply(self, change: Change) -> None:
        self.changes.append(change)

    def save(self, directory):  # the IndexPart protocol; nothing to write
        return []


step = st.tuples(
    st.sampled_from(["add", "delete"]),
    st.sampled_from(["a", "b", "c", "d"]),
    st.lists(st.integers(1, 9), min_size=1, max_size=5),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(step, min_size=1, max_size=25))
def test_every_change_keeps_ids_fresh_the_version_counting_and_followers_in_step(steps):
    corpus, follower, swaps = Corpus(), Recorder(), []
    corpus.follow(follower)
    used: set[int] = set()
    model: dict[str, list[int]] = {}
    for kind, doc_id, cuts in steps:
        before = corpus.version
        with corpus.writer():
            if kind == "add":
                records = corpus.assign_ids([prepared(doc_id, cuts)])
                change = corpus.commit(records, (), no_parts, swaps.append)
                model.pop(doc_id, None)  # a replaced document goes to the end
                model[doc_id] = cuts
            else:
                change = corpus.commit((), (doc_id,), no_parts, swaps.append)
                model.pop(doc_id, None)
        ids = [i for e in change.added for i in e.chunk_ids]
        assert not used.intersection(ids)  # a chunk id is never given twice
        used.update(ids)
        assert corpus.version == before + (1 if change else 0)
        assert corpus.doc_ids == list(model)
        assert corpus.n_chunks == sum(len(c) for c in model.values())
    assert follower.changes == swaps  # each non-empty change: once, in commit order
    assert [c.version for c in follower.changes] == list(range(1, corpus.version + 1))
    for doc_id in corpus.doc_ids:
        entry = corpus.entry(doc_id)
        assert [corpus.chunk(i) for i in entry.chunk_ids] == list(entry.chunks)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 9), min_size=1, max_size=8),
    st.integers(0, 60),
    st.integers(0, 60),
)
def test_overlapping_chunks_equals_a_scan_of_every_chunk(cuts, a, length):
    corpus = Corpus()
    with corpus.writer():
        corpus.commit(corpus.assign_ids([prepared("d", cuts)]), (), no_parts, lambda c: None)
    entry = corpus.entry("d")
    start, end = a, a + length
    want = [
        i
        for i, c in zip(entry.chunk_ids, entry.chunks, strict=True)
        if c.start < end and c.end > start
    ]
    assert corpus.overlapping_chunks("d", start, end) == want
    assert corpus.overlapping_chunks("nope", start, end) == []


def test_a_failed_stage_leaves_the_corpus_as_it_was():
    corpus = Corpus()
    with corpus.writer():
        corpus.commit(corpus.assign_ids([prepared("a", [3, 4])]), (), no_parts, lambda c: None)

    def failing(change):
        raise RuntimeError("no room")

    with pytest.raises(RuntimeError), corpus.writer():
        corpus.commit(corpus.assign_ids([prepared("b", [2])]), (), failing, lambda c: None)
    assert corpus.doc_ids == ["a"] and corpus.version == 1
    with pytest.raises(NotIndexedError):
        corpus.entry("b")


def test_a_followers_read_inside_a_plain_read_is_refused():
    corpus = Corpus()
    with corpus.read(), pytest.raises(ConfigError, match="outermost"):
        corpus.read(followers=True)
    assert corpus.can_commit()
    with corpus.read():
        assert not corpus.can_commit()


def test_restore_fills_a_fresh_corpus_only():
    corpus = Corpus()
    corpus.restore([prepared("a", [2, 3]).indexed([4, 7])], next_id=8)
    assert corpus.version == 1 and corpus.next_id == 8 and corpus.chunk(7).text == "xxx"
    with pytest.raises(ConfigError, match="fresh"):
        corpus.restore([], next_id=0)


def test_the_part_set_keeps_each_optional_part_once_and_replaces_only_empty_parts():
    parts = PartSet(DIM, "flat", BM25Index())
    assert sorted(parts.named()) == ["dense", "sparse"] and parts.view is None
    with pytest.raises(ConfigError, match="not 'dense'"):
        parts.keep("dense", object())  # type: ignore[arg-type]
    marker = object()
    parts.keep("pieces", marker)  # type: ignore[arg-type]
    assert parts.pieces is marker and "pieces" in parts.named()
    with pytest.raises(ConfigError, match="not kept yet"):
        parts.keep("pieces", object())  # type: ignore[arg-type]
    other = object()
    parts.keep("pieces", other, replace=True)  # type: ignore[arg-type]
    assert parts.pieces is other
    full = BM25Index()
    full.add([0], ["bees dance"])
    parts.use(dense=parts.dense, sparse=full)
    with pytest.raises(ConfigError, match="no chunk yet"):
        parts.use(dense=parts.dense, sparse=BM25Index())
