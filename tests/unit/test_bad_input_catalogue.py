"""The bad-input catalogue (docs/bad-inputs.md): one test per row, in both frameworks
where the input can arrive through them; the first test checks the catalogue itself."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import numpy as np
import pytest
from llama_index.core.schema import QueryBundle

import langchain_semrag as lcs
import llama_index_semrag as lis
from semrag import Document, SemanticChunker, SemanticIndex
from semrag.errors import ConfigError, LLMOutputError
from semrag.graph import KnowledgeGraph, LLMGraphExtractor
from semrag.postprocess import SPC
from semrag.retrieval import (
    CommunityRetriever,
    IntentAwareRetriever,
    RetrieveAndCheck,
    SketchRetriever,
    SSGRetriever,
)
from semrag.testing import FakeEmbedder, FakeLLM, check_chunks
from semrag.text import WhitespaceTokenizer
from semrag.types import Chunk, ScoredChunk

ROOT = Path(__file__).parents[2]
CATALOGUE = ROOT / "docs" / "bad-inputs.md"
TEXT = (
    "Prime Minister John Smith faced an inquiry into party funding. He then resigned after "
    "the investigation concluded. The election was held in June."
)


@functools.cache
def index() -> SemanticIndex:
    idx = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
    idx.add_documents(
        [Document("pm", TEXT), Document("bees", "Honey bees dance. The queen lays eggs.")]
    )
    return idx


@functools.cache
def larger_index() -> SemanticIndex:
    """Enough windows that a traversal takes several hops."""
    idx = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
    topics = ["honey bees hive", "queen bee eggs", "bee dance flowers", "hive wax comb"]
    idx.add_documents(
        [
            Document(f"d{i}", " ".join(f"Note {j}: {t} fact {j}." for j in range(8)))
            for i, t in enumerate(topics)
        ]
    )
    return idx


@functools.cache
def graph() -> KnowledgeGraph:
    return KnowledgeGraph.build(index())


def core_retrievers():
    return [
        SSGRetriever(index()),
        IntentAwareRetriever(index()),
        SketchRetriever(index(), graph()),
        CommunityRetriever(index(), graph(), strategy="local"),
        CommunityRetriever(index(), graph(), strategy="global"),
    ]


def hit() -> ScoredChunk:
    frag = "He then resigned after the investigation concluded."
    start = TEXT.index(frag)
    return ScoredChunk(Chunk("pm", start, start + len(frag), frag, 7), 1.0)


class Down:
    """An LLM whose every call raises, as a model server that is down does."""

    def complete(self, prompt: str) -> str:
        raise ConnectionError("model server down")

    async def acomplete(self, prompt: str) -> str:
        raise ConnectionError("model server down")


def test_every_catalogue_row_names_a_test_that_exists():
    rows = [line for line in CATALOGUE.read_text().splitlines() if re.match(r"\| \d+ \|", line)]
    assert len(rows) >= 20
    for row in rows:
        ref = re.findall(r"`(tests/[^`]+::test_\w+)`", row)
        assert ref, f"row without a test: {row[:60]}"
        path, name = ref[0].split("::")
        assert f"def {name}(" in (ROOT / path).read_text(), f"{ref[0]} does not exist"


@pytest.mark.parametrize("query", ["", "   \n\t"])
async def test_empty_query_is_refused_everywhere(query):
    for r in core_retrievers():
        with pytest.raises(ConfigError, match="query is empty"):
            r.retrieve(query)
        with pytest.raises(ConfigError, match="query is empty"):
            await r.aretrieve(query)
    with pytest.raises(ConfigError, match="query is empty"):
        SPC(index()).process(query, [hit()])
    with pytest.raises(ConfigError, match="query is empty"):
        RetrieveAndCheck(IntentAwareRetriever(index()), SPC(index())).run(query)
    with pytest.raises(ConfigError, match="query is empty"):
        lcs.IntentAwareRetriever(index=index()).invoke(query)
    with pytest.raises(ConfigError, match="query is empty"):
        lis.SSGRetriever(index=index()).retrieve(QueryBundle(query))


def test_non_str_query_is_refused():
    for r in core_retrievers():
        with pytest.raises(TypeError):
            r.retrieve(42)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="query must be a str"):
        SPC(index()).process(None, [hit()])  # type: ignore[arg-type]


@pytest.mark.parametrize("k", [0, -1, 2.5, "3", True])
def test_bad_per_call_k_is_refused(k):
    for r in core_retrievers():
        with pytest.raises(ConfigError, match="k="):
            r.retrieve("honey bees", k=k)
    with pytest.raises(ConfigError, match="k="):
        lcs.SSGRetriever(index=index(), k=3).invoke("honey bees", k=k)


def test_numpy_scalars_are_accepted():
    hits = SSGRetriever(index(), k=np.int64(2)).retrieve("honey bees", k=np.int32(1))
    assert len(hits) == 1
    chunker = SemanticChunker(FakeEmbedder(), max_tokens=np.int32(64), buffer_size=np.int64(1))
    assert chunker.max_tokens == 64 and type(chunker.max_tokens) is int
    assert SPC(index(), delta=np.float32(0.4)).delta == pytest.approx(0.4)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: SemanticChunker(FakeEmbedder(), max_tokens=100.0), "max_tokens=100.0"),
        (lambda: SemanticChunker(FakeEmbedder(), max_tokens="1024"), "max_tokens='1024'"),
        (lambda: SemanticChunker(FakeEmbedder(), max_tokens=True), "max_tokens=True"),
        (lambda: SemanticChunker(FakeEmbedder(), threshold=float("nan")), "threshold=nan"),
        (lambda: SemanticChunker(FakeEmbedder(), threshold_amount=float("inf")), "inf"),
        (lambda: SemanticChunker(FakeEmbedder(), window="left"), "window='left'"),
        (lambda: SemanticChunker(FakeEmbedder(), pooling="max"), "pooling='max'"),
        (lambda: SSGRetriever(index(), max_sentences=0), "max_sentences=0"),
        (lambda: SSGRetriever(index(), strategy="bfs"), "strategy='bfs'"),
        (lambda: IntentAwareRetriever(index(), refine_weight=1.5), "refine_weight=1.5"),
        (lambda: SPC(index(), neighbours=-1), "neighbours=-1"),
        (lambda: SemanticIndex(embedder=FakeEmbedder(), dense="annoy", ssg=True), "dense='annoy'"),
    ],
)
def test_bad_constructor_values_are_refused_up_front(make, name):
    with pytest.raises(ConfigError, match=re.escape(name)):
        make()


def test_overlap_above_half_the_cap_is_refused():
    with pytest.raises(ConfigError, match="max_tokens // 2"):
        SemanticChunker(FakeEmbedder(), max_tokens=1024, overlap_tokens=1023)
    with pytest.raises(ConfigError, match="max_tokens // 2"):
        lcs.SemanticTextSplitter(FakeEmbedder(), chunk_size=100, chunk_overlap=60)
    with pytest.raises(ConfigError, match="max_tokens // 2"):
        lis.SemanticNodeParser(FakeEmbedder(), chunk_size=100, chunk_overlap=60)
    assert SemanticChunker(FakeEmbedder(), max_tokens=100, overlap_tokens=50).overlap_tokens == 50


@pytest.mark.parametrize(
    "text",
    ["", "   \n\t ", "\x00\x01\x02 binary \xff\ufffd junk", "👍" * 500, "x" * 1_000_000],
)
def test_empty_and_junk_documents_chunk_safely(text):
    tok = WhitespaceTokenizer()
    chunker = SemanticChunker(FakeEmbedder(dim=32), tokenizer=tok, max_tokens=64)
    chunks = chunker.chunk(text)
    check_chunks(text, chunks, max_tokens=64, count=lambda t: tok.count([t])[0])
    assert (chunks == []) == (not text.strip())
    chars = SemanticChunker(FakeEmbedder(dim=32), tokenizer=len, max_tokens=5000)
    check_chunks(text, chars.chunk(text), max_tokens=5000, count=len)


def test_bad_query_vectors_are_refused():
    r = SSGRetriever(index())
    dim = index().embedder.dim
    with pytest.raises(ConfigError, match="finite"):
        r.retrieve_vector(np.full(dim, np.nan, dtype=np.float32))
    with pytest.raises(ConfigError, match=f"must be {dim} finite"):
        r.retrieve_vector(np.ones(dim + 1, dtype=np.float32))
    assert r.retrieve_vector(index().reader().embed_query("honey bees"), k=1)


def _plan_reply(weights: dict) -> str:
    return json.dumps(
        {"intent": "entity", "paraphrases": ["x"], "keywords": ["bees"], "weights": weights}
    )


@pytest.mark.parametrize("llm", [FakeLLM(["{not json"], cycle=True), Down()])
async def test_llm_failures_fall_back_with_a_reason_or_raise(llm):
    why = "LLM call failed (ConnectionError" if isinstance(llm, Down) else "LLM reply invalid"
    # IAR plan
    (top,) = IntentAwareRetriever(index(), k=1, llm=llm).retrieve("honey bees")
    assert top.provenance[0]["plan_source"] == "rules" and why in top.provenance[0]["note"]
    with pytest.raises((LLMOutputError, ConnectionError)):
        IntentAwareRetriever(index(), llm=llm, on_llm_error="raise").retrieve("honey bees")
    # SPC steps
    result = SPC(index(), llm=llm).process("Why did he resign?", [hit()])
    assert result.notes and all("invalid" in n or "rules" in n or "used" in n for n in result.notes)
    with pytest.raises((LLMOutputError, ConnectionError)):
        SPC(index(), llm=llm, on_llm_error="raise").process("Why did he resign?", [hit()])
    # SKETCH NER
    (first, *_) = SketchRetriever(index(), graph(), llm=llm).retrieve("John Smith")
    assert why in first.provenance[0]["note"]
    # LLM-guided traversal (sync and async)
    guided = SSGRetriever(larger_index(), strategy="llm_guided_traversal", llm=llm)
    steps = guided.traverse("honey bees").steps
    notes = [s.note for s in steps if s.note and "budget" not in s.note]
    assert notes and all(why in n and "fell back to the best candidate" in n for n in notes)
    assert await guided.aretrieve("honey bees")
    with pytest.raises((LLMOutputError, ConnectionError)):
        SSGRetriever(
            larger_index(), strategy="llm_guided_traversal", llm=llm, on_llm_error="raise"
        ).retrieve("honey bees")
    # extraction and community reports
    kg = KnowledgeGraph.build(index(), extractor=LLMGraphExtractor(llm), community_llm=llm)
    assert any(why in n for n in kg.notes) or isinstance(llm, FakeLLM)
    assert any("extractive report used" in n for n in kg.notes)
    with pytest.raises((LLMOutputError, ConnectionError)):
        kg.build_communities(llm=llm, on_llm_error="raise")


@pytest.mark.parametrize("weights", [{"dense": 0, "sparse": 0, "extended": 0}])
def test_unusable_llm_weights_are_replaced_and_said(weights):
    llm = FakeLLM([_plan_reply(weights)], cycle=True)
    plan = IntentAwareRetriever(index(), llm=llm).plan("Where do honey bees dance?")
    assert plan.source == "llm+rule_weights"
    assert "weights unusable" in plan.note
    assert abs(sum(plan.weights.values()) - 1) < 1e-9
    nan = '{"intent": "entity", "paraphrases": [], "keywords": ["bees"], ' + (
        '"weights": {"dense": NaN, "sparse": NaN, "extended": NaN}}'
    )
    plan = IntentAwareRetriever(index(), llm=FakeLLM([nan], cycle=True)).plan("bees?")
    assert plan.source in ("llm+rule_weights", "rules") and plan.note
    with pytest.raises(LLMOutputError, match="the LLM's channel weights are unusable:"):
        IntentAwareRetriever(index(), llm=llm, on_llm_error="raise").plan("bees?")
