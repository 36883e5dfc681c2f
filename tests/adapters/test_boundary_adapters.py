from __future__ import annotations

import numpy as np
import pytest
from langchain_text_splitters import TextSplitter
from llama_index.core import Document as LIDocument
from llama_index.core.node_parser import NodeParser
from llama_index.core.schema import NodeRelationship

from langchain_semrag import MFCTextSplitter, PSCTextSplitter
from llama_index_semrag import MFCNodeParser, PSCNodeParser
from semrag import SemanticChunker
from semrag.chunking.boundary import PairModelChunker
from semrag.chunking.boundary.data import sample_pairs
from semrag.chunking.boundary.models import fit_boundary_model
from semrag.chunking.boundary.train import TrainConfig
from semrag.errors import ConfigError
from semrag.eval.datasets import SectionedDocument
from semrag.testing import FakeEmbedder

WORDS = {
    "bees": ["bee", "hive", "honey", "queen", "pollen", "wax"],
    "rockets": ["rocket", "orbit", "launch", "fuel", "moon", "crew"],
    "bread": ["dough", "flour", "yeast", "oven", "crust", "loaf"],
}


def doc(seed: int) -> SectionedDocument:
    rng = np.random.default_rng(seed)
    sections = []
    for topic in rng.permutation(list(WORDS)):
        sections.append(
            tuple(" ".join(rng.choice(WORDS[topic], size=4)).capitalize() + "." for _ in range(3))
        )
    return SectionedDocument(str(seed), tuple(sections))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    emb = FakeEmbedder(dim=64)
    out = {}
    for kind in ("psc", "mfc"):
        model, _ = fit_boundary_model(
            kind,
            sample_pairs([doc(i) for i in range(40)]),
            sample_pairs([doc(100 + i) for i in range(8)]),
            emb,
            config=TrainConfig(epochs=8, proj_dim=16, lr=1e-2, batch_size=32),
        )
        out[kind] = model.save(tmp_path_factory.mktemp(kind))
    return emb, out


@pytest.mark.parametrize(("cls", "kind"), [(PSCTextSplitter, "psc"), (MFCTextSplitter, "mfc")])
def test_langchain_splitters_with_user_model(trained, cls, kind):
    emb, dirs = trained
    splitter = cls(embeddings=emb, model=dirs[kind])
    assert isinstance(splitter, TextSplitter)
    d = doc(7)
    text = d.text + " " + d.text  # the passage repeats: offsets must still be exact
    docs = splitter.create_documents([text])
    for x in docs:
        assert text[x.metadata["start_index"] : x.metadata["end_index"]] == x.page_content
    core = PairModelChunker(emb, model=dirs[kind]).chunk(text)
    assert [(x.metadata["start_index"], x.page_content) for x in docs] == [
        (c.start, c.text) for c in core
    ]
    assert len({x.metadata["start_index"] for x in docs} & set(d.section_starts[1:])) >= 1


@pytest.mark.parametrize(("cls", "kind"), [(PSCNodeParser, "psc"), (MFCNodeParser, "mfc")])
async def test_llama_index_parsers_with_user_model(trained, cls, kind):
    emb, dirs = trained
    parser = cls(embed_model=emb, model=dirs[kind])
    assert isinstance(parser, NodeParser)
    text = doc(8).text
    nodes = parser.get_nodes_from_documents([LIDocument(text=text, id_="d")])
    anodes = await parser.aget_nodes_from_documents([LIDocument(text=text, id_="d")])
    assert [n.text for n in nodes] == [n.text for n in anodes]
    for n in nodes:
        assert text[n.start_char_idx : n.end_char_idx] == n.text
    assert nodes[1].relationships[NodeRelationship.PREVIOUS].node_id == nodes[0].node_id


def test_missing_model_directory_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="no boundary model directory"):
        PSCTextSplitter(embeddings=FakeEmbedder(), model=tmp_path / "nope")
    with pytest.raises(ConfigError, match="no boundary model directory"):
        MFCNodeParser(embed_model=FakeEmbedder(), model=tmp_path / "nope")


def test_new_options_reach_the_core_in_both_frameworks(trained):
    from langchain_semrag import SemanticTextSplitter
    from llama_index_semrag import SemanticNodeParser

    emb, dirs = trained
    lc = PSCTextSplitter(embeddings=emb, model=dirs["psc"], threshold=0.2)
    li = PSCNodeParser(embed_model=emb, model=dirs["psc"], threshold=0.2)
    text = doc(9).text
    core = PairModelChunker(emb, model=dirs["psc"], threshold=0.2).chunk(text)
    assert [d.page_content for d in lc.create_documents([text])] == [c.text for c in core]
    nodes = li.get_nodes_from_documents([LIDocument(text=text, id_="d")])
    assert [n.text for n in nodes] == [c.text for c in core]
    valley = PairModelChunker(emb, model=dirs["mfc"], threshold=0.95, rule="valley").chunk(text)
    every = PairModelChunker(emb, model=dirs["mfc"], threshold=0.95).chunk(text)
    assert len(valley) < len(every)
    lc = MFCTextSplitter(embeddings=emb, model=dirs["mfc"], threshold=0.95, rule="valley")
    li = MFCNodeParser(embed_model=emb, model=dirs["mfc"], threshold=0.95, rule="valley")
    assert [d.page_content for d in lc.create_documents([text])] == [c.text for c in valley]
    nodes = li.get_nodes_from_documents([LIDocument(text=text, id_="d")])
    assert [n.text for n in nodes] == [c.text for c in valley]
    short = "The cat sat on the mat. Stock prices fell sharply today."
    for kwargs in ({"short_text_distance": 0.5}, {"short_text_distance": None}):
        want = len(SemanticChunker(FakeEmbedder(), **kwargs).chunk(short))
        lc_sem = SemanticTextSplitter(FakeEmbedder(), edge_correction=True, **kwargs)
        li_sem = SemanticNodeParser(embed_model=FakeEmbedder(), **kwargs)
        assert len(lc_sem.split_text(short)) == want
        assert len(li_sem.get_nodes_from_documents([LIDocument(text=short)])) == want
    with pytest.raises(ConfigError, match="edge_correction"):
        SemanticTextSplitter(FakeEmbedder(), window="centered", edge_correction=True)
