"""The index keeps its users' API; what retrievers read is on ``index.reader()``."""

from __future__ import annotations

import warnings

import pytest

from semrag import Document, SemanticIndex
from semrag.index import IndexReader
from semrag.index.reader import CorpusReader
from semrag.index.semantic_index import MOVED_TO_READER, MOVED_TO_VIEW
from semrag.retrieval import PPRRetriever
from semrag.testing import FakeEmbedder

DOCS = [
    Document("bees", "Bees make honey. They dance to show where flowers are."),
    Document("rockets", "Rockets burn fuel. They reach orbit."),
]


@pytest.fixture(scope="module")
def index() -> SemanticIndex:
    index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=True)
    index.add_documents(DOCS)
    return index


def test_the_index_has_at_most_35_public_names_and_none_of_the_readers(index):
    public = {n for n in dir(index) if not n.startswith("_")}
    assert len(public) <= 35, sorted(public)
    assert not public & (MOVED_TO_READER | MOVED_TO_VIEW.keys())
    assert {"add_documents", "search", "delete", "save", "load", "enable", "reader"} <= public


def test_the_reader_is_a_corpus_reader_and_a_live_view_of_its_index(index):
    reader = index.reader()
    assert isinstance(reader, IndexReader) and isinstance(reader, CorpusReader)
    assert reader is index.reader()
    before = reader.version
    index.add_documents([Document("ants", "Ants carry leaves.")])
    try:
        assert reader.version > before and "ants" in reader.doc_ids and reader.chunks("ants")
    finally:
        index.delete("ants")
    assert "ants" not in reader.doc_ids and reader.documents(["ants"]) == {}


@pytest.mark.parametrize("name", sorted(MOVED_TO_READER))
def test_a_moved_name_still_answers_on_the_index_with_a_warning(index, name):
    with pytest.warns(DeprecationWarning, match=rf"SemanticIndex\.{name} moved to index\.reader"):
        old = getattr(index, name)
    assert old == getattr(index.reader(), name)


@pytest.mark.parametrize(("name", "attr"), sorted(MOVED_TO_VIEW.items()))
def test_a_graph_read_still_answers_on_the_index_with_a_warning(index, name, attr):
    with pytest.warns(DeprecationWarning, match=rf"ssg_view\(\)\.{attr}"):
        old = getattr(index, name)
    new = getattr(index.reader().ssg_view(), attr)
    assert type(old) is type(new)  # node_index is made on each read
    assert name == "node_index" or old is new or old == new


def test_an_unknown_name_is_an_attribute_error_without_a_warning(index):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="no_such_name"):
            index.no_such_name  # noqa: B018
        assert not hasattr(index, "also_missing")


def test_a_retriever_given_the_index_reads_its_reader(index):
    assert PPRRetriever(index).index is index.reader()
