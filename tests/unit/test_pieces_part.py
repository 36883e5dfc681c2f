"""SKETCH's pieces as a part of the index: enabled on a populated index (by an explicit
call only), saved, loaded, and searched with no piece split or embedded at query time."""

from __future__ import annotations

import numpy as np
import pytest

from semrag import Document, SemanticIndex
from semrag.errors import ConfigError
from semrag.graph import KnowledgeGraph
from semrag.retrieval import SketchRetriever
from semrag.testing import FakeEmbedder
from tests.counting import CountingEmbedder

DOCS = [
    Document(d, " ".join(f"{topic} fact number {i} is here." for i in range(30)))
    for d, topic in (("a", "Bees"), ("b", "Rockets"), ("c", "Honey"))
]


def pieces_table(index: SemanticIndex) -> tuple:
    kept = index.reader().piece_index
    ids = kept.dense.ids.tolist()
    return (
        [(kept.pieces[i].doc_id, kept.pieces[i].start, kept.pieces[i].end) for i in ids],
        [index.chunk(kept.parents[i]).start for i in ids],
        np.asarray(kept.dense.vectors),
    )


def test_enabled_pieces_equal_those_of_an_index_built_with_them():
    index = SemanticIndex(embedder=FakeEmbedder(dim=32))
    index.add_documents(DOCS[:2])
    assert index.reader().piece_index is None
    index.enable("pieces", split=(12, 3))
    index.add_documents(DOCS[2:])  # then they follow changes
    index.delete("a")
    built = SemanticIndex(embedder=FakeEmbedder(dim=32), pieces=(12, 3))
    built.add_documents(DOCS[1:])
    got, want = pieces_table(index), pieces_table(built)
    assert got[0] == want[0] and got[1] == want[1]
    np.testing.assert_array_equal(got[2], want[2])
    index.enable("pieces", split=(50, 5))  # already kept: left as it is
    assert index.reader().piece_index.split == (12, 3)


def test_a_bad_part_or_split_is_refused():
    index = SemanticIndex(embedder=FakeEmbedder(dim=32))
    with pytest.raises(ConfigError, match="'passages', 'pieces' and 'ssg'"):
        index.enable("ssg-ish")
    with pytest.raises(ConfigError, match="SemanticIndex.enable: split"):
        index.enable("pieces", split=(4, 9))  # overlap larger than a piece
    assert index.reader().piece_index is None


def test_a_loaded_index_serves_sketch_without_splitting_or_embedding_a_piece(tmp_path):
    index = SemanticIndex(embedder=FakeEmbedder(dim=32))
    index.add_documents(DOCS)
    kg = KnowledgeGraph.build(index, communities=False)
    version = index.version
    want = SketchRetriever(index, kg, split=(12, 3)).retrieve("Which fact about honey?")
    assert index.reader().piece_index is None and index.version == version  # derived, never enabled
    index.enable("pieces", split=(12, 3))  # kept (and saved) only when asked
    assert SketchRetriever(index, kg, split=(12, 3)).retrieve("Which fact about honey?") == want
    index.save(tmp_path / "index")

    loaded = SemanticIndex.load(tmp_path / "index", embedder=(counting := CountingEmbedder(dim=32)))
    assert loaded.reader().piece_index.split == (12, 3)
    kg2 = KnowledgeGraph(kg.store, index=loaded)
    got = SketchRetriever(loaded, kg2, split=(12, 3)).retrieve("Which fact about honey?")
    assert all("is here" not in t for t in counting.embedded)  # no piece, chunk or sentence again
    assert [(h.chunk.doc_id, h.chunk.start) for h in got] == [
        (h.chunk.doc_id, h.chunk.start) for h in want
    ]


def test_derived_pieces_are_made_once_for_every_retriever_and_follow_each_change():
    index = SemanticIndex(embedder=(counting := CountingEmbedder(dim=32)))
    index.add_documents(DOCS[:2])
    kg = KnowledgeGraph.build(index, communities=False)
    counting.embedded.clear()
    first = SketchRetriever(index, kg, split=(12, 3)).retrieve("Which fact about rockets?")
    made = [t for t in counting.embedded if "is here" in t]
    assert made  # the pieces, split and embedded on the first query
    counting.embedded.clear()
    again = SketchRetriever(index, kg, split=(12, 3)).retrieve("Which fact about rockets?")
    assert again == first and not [t for t in counting.embedded if "is here" in t]
    index.add_documents(DOCS[2:])
    counting.embedded.clear()
    SketchRetriever(index, kg, split=(12, 3)).retrieve("Which fact about honey?")
    made = [t for t in counting.embedded if "is here" in t]
    assert made and not [t for t in made if "Bees" in t or "Rockets" in t]  # the new one only
    assert index.reader().piece_index is None  # derived beside the index, never enabled on it
