"""A commit lets go of the chunk vectors ingestion made as the dense part stores them.

Until the dense part's next state is published, the records a change adds are seen by no
reader; the dense part stores their vectors batch by batch when it stages, and each
batch's records read them from its staged rows from then on (:meth:`PartSet.stage`), so
the arrays ingestion made are freed during the commit. At a million chunks those arrays
were 1.5 GB a one-call add held beside the dense part's copy until it returned.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import semrag.index.parts.dense as dense_module
from semrag import Document, SemanticIndex
from semrag.errors import NotIndexedError
from semrag.index import BM25Index, DenseIndex
from semrag.index.corpus import Corpus
from semrag.index.parts._dense_version import StagedVersion
from semrag.testing import FakeEmbedder

TEXTS = [
    "Bees find flowers by their scent. They dance to tell the hive. Honey keeps for years.",
    "Rockets reach orbit on stages. Each stage falls away. The last one carries the load.",
    "Rivers carve valleys over ages. Floods move stones downstream. Deltas form at the sea.",
]


def watch_ingestion_arrays(monkeypatch) -> list[weakref.ref]:
    """Weak references to the chunk-vector arrays of every record a commit is given."""
    made: list[weakref.ref] = []
    assign = Corpus.assign_ids

    def assign_and_watch(self, prepared):
        records = assign(self, prepared)
        made.extend(weakref.ref(r.chunk_vectors) for r in records)
        return records

    monkeypatch.setattr(Corpus, "assign_ids", assign_and_watch)
    return made


def unit_rows(n: int, dim: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.mark.parametrize("dense", ["flat", "hnsw"])
def test_the_ingestion_arrays_are_freed_before_the_other_parts_stage(dense, monkeypatch):
    index = SemanticIndex(embedder=FakeEmbedder(), ssg=False, dense=dense)
    index.add_documents([Document("old", "Stones roll downhill. Water finds the sea.")])
    made = watch_ingestion_arrays(monkeypatch)
    alive_when_bm25_stages: list[int] = []
    stage = BM25Index.stage

    def stage_and_count(self, change):
        gc.collect()
        alive_when_bm25_stages.append(sum(r() is not None for r in made))
        return stage(self, change)

    monkeypatch.setattr(BM25Index, "stage", stage_and_count)
    index.add_documents([Document(f"d{i}", t) for i, t in enumerate(TEXTS)])
    assert len(made) == len(TEXTS)
    assert alive_when_bm25_stages == [0]
    for i in range(len(TEXTS)):
        record = index.reader().indexed(f"d{i}")
        stored = index.reader().dense.vectors_of(record.chunk_ids)
        np.testing.assert_array_equal(np.asarray(record.chunk_vectors, np.float32), stored)
    hits = index.search(TEXTS[1], k=1)
    assert hits[0].chunk.doc_id == "d1"


@pytest.mark.parametrize("dense", ["flat", "hnsw"])
def test_each_batch_the_dense_part_stores_lets_go_of_its_records_arrays(dense, monkeypatch):
    monkeypatch.setattr(dense_module, "_BLOCK", 2)  # a batch per document or two
    index = SemanticIndex(embedder=FakeEmbedder(), ssg=False, dense=dense)
    made = watch_ingestion_arrays(monkeypatch)
    alive_before_each_batch: list[int] = []
    added = DenseIndex._added

    def add_and_count(self, *args):
        gc.collect()
        alive_before_each_batch.append(sum(r() is not None for r in made))
        return added(self, *args)

    monkeypatch.setattr(DenseIndex, "_added", add_and_count)
    docs = [Document(f"d{i}", t) for i, t in enumerate(TEXTS * 2)]
    index.add_documents(docs)
    counts = alive_before_each_batch
    assert len(counts) >= 3 and counts[0] == len(docs)
    assert counts == sorted(counts, reverse=True) and counts[-1] < counts[0]
    for d in docs:
        record = index.reader().indexed(d.id)
        np.testing.assert_array_equal(
            np.asarray(record.chunk_vectors, np.float32),
            index.reader().dense.vectors_of(record.chunk_ids),
        )


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_a_staged_version_reads_its_rows_before_any_reader_does(kind):
    index = DenseIndex(8, kind=kind)
    first = unit_rows(20, 8, 1)
    index.add(np.arange(20), first)
    more = unit_rows(10, 8, 2)
    staged = index.staged([], np.arange(20, 30), more)
    assert isinstance(staged, StagedVersion)
    view = np.asarray(staged.rows_view(np.arange(22, 25)), np.float32)
    rounded = more if kind == "flat" else more.astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(view, rounded[2:5])
    with pytest.raises(
        NotIndexedError, match="ids not in the index:"
    ):  # not published: readers see the version before
        index.vectors_of([22])
    assert len(index) == 20
    staged()
    np.testing.assert_array_equal(index.vectors_of(np.arange(22, 25)), view)
    with pytest.raises(NotIndexedError, match="ids not in the index:"):
        staged.rows_view([30])


def test_a_failed_commit_publishes_nothing_and_a_retry_indexes_the_same(monkeypatch):
    index = SemanticIndex(embedder=FakeEmbedder(), ssg=False)
    docs = [Document(f"d{i}", t) for i, t in enumerate(TEXTS)]
    stage = BM25Index.stage

    def failing(self, change):
        raise RuntimeError("no room")

    monkeypatch.setattr(BM25Index, "stage", failing)
    with pytest.raises(RuntimeError):
        index.add_documents(docs)
    assert index.doc_ids == [] and len(index.reader().dense) == 0
    monkeypatch.setattr(BM25Index, "stage", stage)
    index.add_documents(docs)
    twin = SemanticIndex(embedder=FakeEmbedder(), ssg=False)
    twin.add_documents(docs)
    for i in range(len(TEXTS)):
        ours, theirs = index.reader().indexed(f"d{i}"), twin.reader().indexed(f"d{i}")
        np.testing.assert_array_equal(
            np.asarray(ours.chunk_vectors), np.asarray(theirs.chunk_vectors)
        )
