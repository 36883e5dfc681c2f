"""One vocabulary: ``graph=`` for a knowledge graph, ``strategy=`` for a retriever's variant.

The spellings before 0.3 (``kg=``, ``mode=``, ``algorithm=``) still work until 0.4, each
with a ``DeprecationWarning``, in the core and in both adapters; a call that gives both
spellings, or a keyword that is neither, is refused.
"""

from __future__ import annotations

import warnings

import pytest

import langchain_semrag
import llama_index_semrag
from semrag import Document, SemanticIndex
from semrag.errors import ConfigError
from semrag.graph import KnowledgeGraph
from semrag.retrieval import CommunityRetriever, SketchRetriever, SSGRetriever
from semrag.testing import FakeEmbedder


@pytest.fixture(scope="module")
def built():
    index = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
    index.add_documents(
        [
            Document("a", "Ada Lovelace met Charles Babbage in London. Cats nap in the sun."),
            Document("b", "Charles Babbage designed engines. London fog hid the engines."),
        ]
    )
    return index, KnowledgeGraph.build(index)


def test_the_new_names_take_no_warning(built):
    index, kg = built
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sketch = SketchRetriever(index, graph=kg)
        community = CommunityRetriever(index, graph=kg, strategy="global")
        ssg = SSGRetriever(index, strategy="basic_retrieval")
    assert sketch.graph is kg and community.graph is kg
    assert community.strategy == "global" and ssg.strategy == "basic_retrieval"
    assert "graph" in sketch.get_params() and "strategy" in ssg.get_params()


@pytest.mark.parametrize(
    ("make", "old", "attribute", "expected"),
    [
        (lambda ix, kg: SketchRetriever(ix, kg=kg), "kg=", "graph", "kg"),
        (lambda ix, kg: CommunityRetriever(ix, kg=kg), "kg=", "graph", "kg"),
        (lambda ix, kg: CommunityRetriever(ix, kg, mode="global"), "mode=", "strategy", "global"),
        (
            lambda ix, kg: SSGRetriever(ix, algorithm="basic_retrieval"),
            "algorithm=",
            "strategy",
            "basic_retrieval",
        ),
    ],
)
def test_an_old_spelling_warns_and_sets_the_new_parameter(built, make, old, attribute, expected):
    index, kg = built
    with pytest.warns(DeprecationWarning, match=f"{old} is now .*stops working in semrag 0.4"):
        retriever = make(index, kg)
    value = getattr(retriever, attribute)
    assert (value is kg) if expected == "kg" else (value == expected)


def test_the_old_attribute_names_warn_and_read_the_new_ones(built):
    index, kg = built
    community = CommunityRetriever(index, kg, strategy="global")
    with pytest.warns(DeprecationWarning, match=r"\.mode is now \.strategy"):
        assert community.mode == "global"
    with pytest.warns(DeprecationWarning, match=r"\.kg is now \.graph"):
        assert SketchRetriever(index, kg).kg is kg
    with pytest.warns(DeprecationWarning, match=r"\.algorithm is now \.strategy"):
        assert SSGRetriever(index).algorithm == "query_traversal"


def test_both_spellings_or_an_unknown_keyword_are_refused(built):
    index, kg = built
    with pytest.raises(ConfigError, match="give graph= only"):
        SketchRetriever(index, kg, kg=kg)
    with pytest.raises(ConfigError, match="give strategy= only"):
        CommunityRetriever(index, kg, strategy="global", mode="local")
    with pytest.raises(TypeError, match="unexpected keyword argument 'grpah'"):
        SketchRetriever(index, grpah=kg)
    with pytest.raises(ConfigError, match="needs graph="):
        CommunityRetriever(index)


def test_the_langchain_adapter_takes_the_old_field_names_with_a_warning(built):
    index, kg = built
    with pytest.warns(DeprecationWarning, match="algorithm= is now strategy="):
        ssg = langchain_semrag.SSGRetriever(index=index, algorithm="basic_retrieval", k=2)
    assert ssg.strategy == "basic_retrieval"
    with pytest.warns(DeprecationWarning, match="mode= is now strategy="):
        community = langchain_semrag.CommunityRetriever(index=index, graph=kg, mode="global")
    assert community.strategy == "global"
    assert community.invoke("Babbage engines") == langchain_semrag.CommunityRetriever(
        index=index, graph=kg, strategy="global"
    ).invoke("Babbage engines")
    with pytest.raises(ValueError, match="give strategy= only"):  # pydantic's ValidationError
        langchain_semrag.SSGRetriever(index=index, strategy="basic_retrieval", algorithm="x")


def test_the_llama_index_adapter_takes_the_old_names_with_a_warning(built):
    index, kg = built
    with pytest.warns(DeprecationWarning, match="algorithm= is now strategy="):
        ssg = llama_index_semrag.SSGRetriever(index=index, algorithm="basic_retrieval", k=2)
    new = llama_index_semrag.SSGRetriever(index=index, strategy="basic_retrieval", k=2)
    texts = [n.node.get_content() for n in ssg.retrieve("Babbage engines")]
    assert texts == [n.node.get_content() for n in new.retrieve("Babbage engines")]
    with pytest.warns(DeprecationWarning, match="kg= is now graph="):
        sketch = llama_index_semrag.SketchRetriever(index=index, kg=kg)
    assert len(sketch.retrieve("Babbage engines")) > 0
