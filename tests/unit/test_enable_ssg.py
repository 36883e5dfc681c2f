"""The similarity graph as a part on demand: ``index.enable("ssg")`` on a populated index
equals a build with the graph, follows changes, and is saved (or not) with the index."""

from __future__ import annotations

import numpy as np
import pytest

from semrag import Document, SemanticIndex, SSGRetriever
from semrag.errors import ConfigError
from semrag.index import SSGConfig
from semrag.retrieval import ALGORITHMS
from semrag.testing import FakeEmbedder
from tests.counting import CountingEmbedder
from tests.unit.test_living_index import SSG_CONFIG, assert_same_ssg

TEXTS = {
    "bees": "Bees make honey. The hive is warm. Honey is sweet. Bees dance at the hive.",
    "rockets": "Rockets need fuel. Orbit is far. Fuel burns fast. Rockets reach orbit.",
    "bread": "Bread needs dough. The oven is hot. Dough rises. Bread bakes in the oven.",
}
QUERIES = ["bees and honey", "rockets in orbit", "bread in the oven"]
ALGOS = [a for a in ALGORITHMS if a not in ("llm_guided_traversal", "triangulation_geometric_3d")]


def results(index: SemanticIndex) -> list:
    return [
        [(h.chunk.doc_id, h.chunk.start, h.chunk.end, round(h.score, 5)) for h in hits]
        for algorithm in ALGOS
        for q in QUERIES
        for hits in [SSGRetriever(index, strategy=algorithm, k=3).retrieve(q)]
    ]


def docs(*ids: str) -> list[Document]:
    return [Document(i, TEXTS[i]) for i in ids]


def test_enabling_the_graph_equals_building_with_it_and_embeds_nothing():
    emb = CountingEmbedder(dim=32)
    # float32 sentence vectors: the graph pooled from them is exactly the one built with it
    index = SemanticIndex(embedder=emb, ssg=False, sentence_dtype="float32")
    index.add_documents(docs("bees", "rockets"))
    with pytest.raises(ConfigError, match=r"index\.enable\('ssg'\)"):
        SSGRetriever(index)
    emb.embedded.clear()
    index.enable("ssg", config=SSG_CONFIG)
    assert emb.embedded == []  # the kept sentence vectors are pooled: nothing embedded
    assert "ssg" in index.parts and index.reader().ssg_config == SSG_CONFIG
    built = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=SSG_CONFIG)
    built.add_documents(docs("bees", "rockets"))
    assert_same_ssg(index.reader().part_set.ssg, built.reader().part_set.ssg)
    assert results(index) == results(built)
    sentences, nodes = index.reader().part_set.ssg.buffers()  # each vector held once, by the graph
    for doc_id in index.doc_ids:
        e = index.reader().indexed(doc_id)
        assert np.shares_memory(e.sentence_vectors, sentences)
        assert np.shares_memory(e.node_vectors, nodes)
    # then it follows changes
    for target in (index, built):
        target.add_documents(docs("bread"))
        target.delete("bees")
    assert_same_ssg(index.reader().part_set.ssg, built.reader().part_set.ssg)
    assert results(index) == results(built)
    index.enable("ssg")  # kept already: left as it is
    assert index.reader().ssg_config == SSG_CONFIG


def test_an_index_saves_and_loads_with_and_without_the_graph(tmp_path):
    index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=False)
    index.add_documents(docs("bees", "rockets", "bread"))
    index.save(tmp_path / "without")
    loaded = SemanticIndex.load(tmp_path / "without", embedder=FakeEmbedder(dim=32))
    assert loaded.reader().ssg_config is None and "ssg" not in loaded.parts
    loaded.enable("ssg", config=SSG_CONFIG)
    loaded.save(tmp_path / "with")
    again = SemanticIndex.load(tmp_path / "with", embedder=FakeEmbedder(dim=32))
    assert again.reader().ssg_config == SSG_CONFIG
    assert results(again) == results(loaded)


def test_a_config_the_kept_vectors_cannot_give_is_refused_before_any_change():
    index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=False)
    index.add_documents(docs("bees"))
    for config in (SSGConfig(node_pooling="concat"), SSGConfig(n_themes=3)):
        with pytest.raises(ConfigError, match="SemanticIndex\\(ssg=config\\)"):
            index.enable("ssg", config=config)
    with pytest.raises(ConfigError, match="SSGConfig"):
        index.enable("ssg", config={"window": 2})
    assert index.reader().ssg_config is None and "ssg" not in index.parts


def test_the_default_index_holds_its_sentence_vectors_in_float16_and_keeps_them_so(tmp_path):
    full = SemanticIndex(embedder=FakeEmbedder(dim=32), sentence_dtype="float32")
    index = SemanticIndex(embedder=FakeEmbedder(dim=32))
    for target in (full, index):
        target.add_documents(docs("bees", "rockets", "bread"))
    assert index.reader().sentence_dtype == "float16" and full.reader().sentence_dtype == "float32"
    for doc_id in index.doc_ids:
        half, exact = (
            index.reader().sentence_vectors(doc_id),
            full.reader().sentence_vectors(doc_id),
        )
        assert half.dtype == np.float16 and exact.dtype == np.float32
        assert half.nbytes * 2 == exact.nbytes
        np.testing.assert_array_equal(half, exact.astype(np.float16))  # rounded once
        # the chunk vectors are not rounded (the dense channel ranks as before)
        np.testing.assert_array_equal(
            index.reader().indexed(doc_id).chunk_vectors,
            full.reader().indexed(doc_id).chunk_vectors,
        )
    index.save(tmp_path / "half")
    loaded = SemanticIndex.load(tmp_path / "half", embedder=FakeEmbedder(dim=32))
    assert loaded.reader().sentence_dtype == "float16"
    assert loaded.reader().sentence_vectors("bees").dtype == np.float16
    np.testing.assert_array_equal(
        loaded.reader().sentence_vectors("bees"), index.reader().sentence_vectors("bees")
    )
    # a graph enabled later is pooled from the rounded vectors: within float16's rounding
    index.enable("ssg", config=SSG_CONFIG)
    full.enable("ssg", config=SSG_CONFIG)
    assert index.reader().sentence_dtype == "float32"  # the graph's rows hold them now
    np.testing.assert_allclose(
        index.reader().ssg_view().graph.node_vectors,
        full.reader().ssg_view().graph.node_vectors,
        atol=2e-3,
    )


def test_a_sentence_dtype_other_than_the_graphs_is_refused():
    with pytest.raises(ConfigError, match=r"SSGConfig\(vector_dtype=\.\.\.\)"):
        SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=True, sentence_dtype="float16")
    with pytest.raises(ConfigError, match="sentence_dtype"):
        SemanticIndex(embedder=FakeEmbedder(dim=32), sentence_dtype="int8")
    with_graph = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=True)
    assert with_graph.reader().sentence_dtype == "float32"  # the graph's vector_dtype decides
