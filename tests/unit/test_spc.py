from __future__ import annotations

import asyncio
import json

import pytest

from semrag import Document, SemanticIndex
from semrag.errors import ConfigError, LLMOutputError
from semrag.postprocess import SPC, assess, key_elements
from semrag.postprocess.coverage import follow_up_query, lexical_support
from semrag.testing import FakeEmbedder, FakeLLM
from semrag.text import WhitespaceTokenizer
from semrag.types import Chunk, ScoredChunk

TEXT = (
    "Prime Minister John Smith faced an inquiry into party funding. "
    "He then announced his resignation shortly after the investigation concluded. "
    "The election was held in June. "
    'Critics said "the process was rushed. '
    "Turnout reached a record high of 71 percent."
)


@pytest.fixture()
def index():
    idx = SemanticIndex(embedder=FakeEmbedder())
    idx.add_documents([Document("pm", TEXT), Document("other", "Bees make honey in hives.")])
    return idx


def hit_of(text: str, fragment: str, doc_id: str = "pm", score: float = 1.0) -> ScoredChunk:
    start = text.index(fragment)
    return ScoredChunk(
        Chunk(doc_id, start, start + len(fragment), fragment, len(fragment.split())), score
    )


# -- damage detection on labelled fixtures -----------------------------------------------
@pytest.mark.parametrize(
    ("text", "signal"),
    [
        (
            "He then announced his resignation shortly after the investigation concluded.",
            "dangling_reference",
        ),
        ("This led to a significant shift in public opinion.", "dangling_reference"),
        ("As a result, the policy was widely criticized by experts.", "discourse_marker"),
        ("announced his resignation shortly after the", "cut_start"),
        ("The election was held in", "cut_end"),
        ('Critics said "the process was rushed.', "unbalanced"),
        ("The figures (from 2019 were revised.", "unbalanced"),
        ("The main reasons include economic pressure, social factors.", "dangling_enumeration"),
        ("The steps are as follows:", "dangling_enumeration"),
    ],
)
def test_damaged_fixtures(text, signal):
    found = assess(text)
    assert found.damaged(0.5)
    assert signal in {s.name for s in found.signals}


@pytest.mark.parametrize(
    "text",
    [
        "The election was held in June.",
        "Prime Minister John Smith faced an inquiry into party funding.",
        'Critics said "the process was rushed."',
        "The main reasons include economic pressure and social factors.",
    ],
)
def test_clean_fixtures(text):
    found = assess(text)
    assert found.score == 1.0 and not found.signals


def test_source_offsets_decide_cuts(index):
    spc = SPC(index)
    inside = hit_of(TEXT, "inquiry into party funding.").chunk
    whole = hit_of(TEXT, "The election was held in June.").chunk
    assert "cut_start" in {s.name for s in spc.assess(inside).signals}
    assert spc.assess(whole).score == 1.0


# -- repair ------------------------------------------------------------------------------
def test_repair_restores_the_exact_source_text(index):
    result = SPC(index, audit=False).process(
        "Why did John Smith resign?",
        [
            hit_of(
                TEXT, "He then announced his resignation shortly after the investigation concluded."
            )
        ],
    )
    hit, antecedent = (h.chunk for h in result.chunks[:2])  # the hit, then what it asks for
    (action,) = result.actions
    assert action.action == "repaired" and action.method == "extractive"
    assert hit.text.startswith("He then announced")
    assert antecedent.text.startswith("Prime Minister John Smith")  # the antecedent is back
    assert result.chunk_actions[1].action == "context" and antecedent.end <= hit.start
    for chunk in (hit, antecedent):
        assert TEXT[chunk.start : chunk.end] == chunk.text
    budgeted = SPC(index, audit=False, context=200).process(
        "Why did John Smith resign?", [hit_of(TEXT, hit.text)]
    )
    joined = budgeted.chunks[0].chunk.text  # with a budget: one region, in reading order
    assert joined.startswith("Prime Minister John Smith") and "He then announced" in joined
    prov = budgeted.chunks[0].provenance[-1]
    assert prov["step"] == "spc" and prov["exact"] is True
    assert prov["before"] != prov["after"]
    prov = result.chunks[1].provenance[-1]  # a context chunk names the hit it extends
    assert prov["before"] == [hit.start, hit.end] and prov["after"] == [
        antecedent.start,
        antecedent.end,
    ]


def test_cut_chunk_is_extended_to_whole_sentences(index):
    sentence = "The election was held in June."
    result = SPC(index, audit=False, context=len(sentence)).process(
        "When was the election?", [hit_of(TEXT, "election was held")]
    )
    assert result.chunks[0].chunk.text == sentence  # the cut sentence before anything else
    whole = SPC(index, audit=False).process("When was the election?", [hit_of(TEXT, "election")])
    # no budget: the hit and the rest of its sentence, then "The" (a chunk of its own)
    assert [h.chunk.text for h in whole.chunks[:2]] == ["election was held in June.", "The "]


def test_a_length_function_is_a_tokenizer_for_a_token_budget(index):
    hit = hit_of(TEXT, "He then announced")
    spc = SPC(index, tokenizer=len, context=120, unit="tokens", audit=False)
    assert spc.tokenizer.count(["four"]) == [4]  # len: one token a character
    result = spc.process("Why did he resign?", [hit])
    assert sum(len(c.chunk.text) for c in result.chunks) <= 120


@pytest.mark.parametrize("budget", [8, 12, 20, 40])
def test_a_repair_grows_within_its_budget_and_never_trims_the_hit(index, budget):
    tok = WhitespaceTokenizer()
    hit = hit_of(
        TEXT, "He then announced his resignation shortly after the investigation concluded."
    )
    result = SPC(index, context=budget, unit="tokens", tokenizer=tok, audit=False).process(
        "Why did he resign?", [hit]
    )
    chunk = result.chunks[0].chunk
    own = tok.count([hit.chunk.text])[0]
    if budget >= own:  # it only grows
        assert chunk.start <= hit.chunk.start and hit.chunk.end <= chunk.end
    assert TEXT[chunk.start : chunk.end] == chunk.text
    assert tok.count([chunk.text])[0] <= budget
    assert (chunk.end - chunk.start > len(hit.chunk.text)) == (budget >= 20)


def test_intact_chunks_are_left_alone(index):
    hit = hit_of(TEXT, "The election was held in June.")
    result = SPC(index, audit=False, context=len(hit.chunk.text)).process(
        "When was the election?", [hit]
    )
    assert result.actions[0].action == "intact"
    assert result.chunks[0].chunk == hit.chunk


def test_no_source_means_no_invented_neighbours():
    emb = FakeEmbedder()
    hit = hit_of(
        TEXT, "He then announced his resignation shortly after the investigation concluded."
    )
    result = SPC(embedder=emb, audit=False).process("Why?", [hit])
    assert result.actions[0].action == "source_unavailable"
    assert result.chunks[0].chunk == hit.chunk
    # with the text as a source, the same chunk is repaired
    result = SPC(embedder=emb, sources={"pm": TEXT}, audit=False).process("Why?", [hit])
    assert result.actions[0].action == "repaired"
    assert (
        TEXT[result.chunks[0].chunk.start : result.chunks[0].chunk.end]
        == result.chunks[0].chunk.text
    )


def test_stale_offsets_are_reported(index):
    hit = hit_of(TEXT, "He then announced his resignation")
    moved = ScoredChunk(Chunk("pm", 0, 33, hit.chunk.text, 5), 1.0)
    result = SPC(index, audit=False).process("Why?", [moved])
    assert result.actions[0].action == "source_mismatch"
    unknown = ScoredChunk(Chunk("pm", -1, -1, "in", 1), 1.0)  # occurs many times
    assert SPC(index, audit=False).process("Why?", [unknown]).actions[0].action == "offsets_unknown"


def test_chunks_without_offsets_are_located_when_unique(index):
    hit = hit_of(TEXT, "He then announced his resignation")
    unknown = ScoredChunk(Chunk("pm", -1, -1, hit.chunk.text, 5), 1.0)
    result = SPC(index, audit=False).process("Why did John Smith resign?", [unknown])
    assert result.actions[0].before == (hit.chunk.start, hit.chunk.end)
    assert result.actions[0].action == "repaired"


def test_refine_keeps_an_order_that_is_not_the_query_similarity(index):
    query = "When was the election held?"
    dense = index.search(query, 4)
    # a graph walk's order (a second hop need not resemble the query): kept, cut to k
    walked = [dense[-1], *dense[:-1]]
    kept = SPC(index, k=2, audit=False).process(query, walked)
    assert [a.before for a in kept.actions] == [(h.chunk.start, h.chunk.end) for h in walked[:2]]
    assert all("refine" in h.channel_scores for h in kept.chunks)


def test_contained_chunks_are_dropped(index):
    hits = [
        hit_of(
            TEXT, "He then announced his resignation shortly after the investigation concluded."
        ),
        hit_of(TEXT, "Prime Minister John Smith faced an inquiry into party funding.", score=0.5),
    ]
    result = SPC(index, refine=False, audit=False).process("Why did John Smith resign?", hits)
    texts = [h.chunk.text for h in result.chunks]
    for hit in hits:  # each hit's text once, whole: no character twice
        assert sum(hit.chunk.text in t for t in texts) == 1
    spans = sorted((h.chunk.start, h.chunk.end) for h in result.chunks)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))


# -- coverage audit ----------------------------------------------------------------------
def test_audit_flags_an_absent_element_and_passes_a_present_one(index):
    hits = [hit_of(TEXT, "The election was held in June.")]
    result = SPC(index, audit=True).process(
        "When was the election held, and who won Wimbledon?", hits
    )
    assert result.coverage["election held"] >= 0.6
    assert "Wimbledon" in result.missing and "election held" not in result.missing
    assert any("Wimbledon" in q for q in result.follow_up_queries)


def test_key_elements_and_support_helpers():
    assert key_elements("Who founded the University of Chicago in 1890?") == [
        "University of Chicago",
        "1890",
        "founded",
    ]
    assert lexical_support("party funding", "An inquiry into party funding.") == 1.0
    assert lexical_support("Wimbledon", "An inquiry into party funding.") == 0.0
    # inflections and derivations: "succeeded" is in "His successor ..."
    assert lexical_support("succeeded", "His successor, Mary Jones, called an election.") == 1.0
    assert lexical_support("governed", "The governor signed it.") == 1.0
    # but a short shared prefix is not a match
    assert lexical_support("present", "The president spoke.") == 0.0
    assert lexical_support("born", "The bore drilled.") == 0.0
    assert follow_up_query("born", "When was the performer of Sexy Back born?") == "born Sexy Back"


# -- the LLM path ------------------------------------------------------------------------
def _script(prompt: str) -> str:
    if "Rate how useful" in prompt:
        return json.dumps({"scores": [2, 9]})
    if "semantically complete" in prompt:
        return json.dumps({"score": 0.2 if "He then" in prompt else 0.9, "problems": []})
    if "Rewrite the text" in prompt:
        return json.dumps({"text": "John Smith resigned after the funding inquiry concluded."})
    if "key information elements" in prompt:
        return json.dumps({"elements": ["John Smith", "reason for resignation", "Wimbledon"]})
    if "how well the evidence supports" in prompt:
        return json.dumps({"scores": [1.0, 0.8, 0.0], "follow_up": ["", "", "Wimbledon winner"]})
    raise AssertionError(prompt)


def test_llm_path_end_to_end(index):
    llm = FakeLLM(_script)
    hits = [
        hit_of(TEXT, "The election was held in June."),
        hit_of(
            TEXT, "He then announced his resignation shortly after the investigation concluded."
        ),
    ]
    result = SPC(index, llm=llm, audit=True).process("Why did John Smith resign?", hits)
    assert result.chunks[0].chunk.text == "John Smith resigned after the funding inquiry concluded."
    assert result.chunks[0].provenance[-1]["exact"] is False
    assert result.actions[0].method == "llm"
    assert result.actions[0].completeness["source"] == "llm"
    assert result.missing == ["Wimbledon"]
    assert result.follow_up_queries == ["Wimbledon winner"]
    assert result.llm_calls == len(llm.prompts) == 1 + 2 + 1 + 2


def test_malformed_llm_replies_fall_back_and_are_noted(index):
    llm = FakeLLM(["{not json", '{"nope": 1}'], cycle=True)
    hits = [
        hit_of(TEXT, "He then announced his resignation shortly after the investigation concluded.")
    ]
    result = SPC(index, llm=llm, audit=True).process("Why did John Smith resign?", hits)
    assert result.actions[0].action == "repaired" and result.actions[0].method == "extractive"
    assert result.actions[0].completeness["source"] == "heuristic"
    assert any("damage" in n for n in result.notes)
    assert any("compress" in n for n in result.notes)
    assert any("audit" in n for n in result.notes)
    with pytest.raises(LLMOutputError, match="LLM reply failed validation after 2"):
        SPC(index, llm=FakeLLM(["x"], cycle=True), on_llm_error="raise").process("Why?", hits)


@pytest.mark.parametrize(
    ("rewrite", "note"),
    [
        ({"text": "word " * 500}, "over the budget"),
        ({"text": "John Smith resigned in Paris."}, "words not in the source (paris)"),
    ],
)
def test_an_llm_compression_over_budget_or_with_invented_words_is_rejected(index, rewrite, note):
    reply = json.dumps(rewrite)

    def script(prompt: str) -> str:
        return reply if "Rewrite" in prompt else _script(prompt)

    hits = [
        hit_of(TEXT, "He then announced his resignation shortly after the investigation concluded.")
    ]
    result = SPC(index, llm=FakeLLM(script), refine=False).process("Why?", hits)
    assert result.actions[0].method == "extractive"
    assert result.chunks[0].chunk.has_offsets
    assert any(note in n for n in result.notes)


@pytest.mark.parametrize("with_llm", [False, True])
def test_async_equals_sync(index, with_llm):
    hits = [
        hit_of(TEXT, "The election was held in June."),
        hit_of(
            TEXT, "He then announced his resignation shortly after the investigation concluded."
        ),
    ]
    make = lambda: SPC(index, llm=FakeLLM(_script) if with_llm else None, audit=True)  # noqa: E731
    sync = make().process("Why did John Smith resign?", hits)
    async_ = asyncio.run(make().aprocess("Why did John Smith resign?", hits))
    assert [h.chunk for h in sync.chunks] == [h.chunk for h in async_.chunks]
    assert sync.missing == async_.missing and sync.coverage == async_.coverage


def test_bad_arguments(index):
    with pytest.raises(ConfigError, match="SPC: k=0 is not allowed; expected an int in"):
        SPC(index, k=0)
    with pytest.raises(ConfigError, match="SPC: delta=2 is not allowed; expected a"):
        SPC(index, delta=2)
    # no index and no embedder: the packaged MiniLM, as the splitters use (loaded on use)
    assert type(SPC().embedder).__name__ == "MiniLMEmbedder"  # the default, torch-free
    with pytest.raises(TypeError, match="SPC: query must be a str, got NoneType"):
        SPC(index).process(None, [])
    assert SPC(index).process("anything", []).chunks == []


# -- nothing dropped or mislabelled silently -----------------------------------------------
def test_chunks_without_offsets_or_ids_are_never_dropped_as_contained():
    # Unknown offsets (-1) and empty ids: nothing proves containment, so all are kept.
    texts = ["Alpha beta gamma.", "Delta epsilon.", "Zeta eta theta.", "Iota kappa."]
    hits = [ScoredChunk(Chunk("", -1, -1, t, 3), 1.0 - i / 10) for i, t in enumerate(texts)]
    result = SPC(embedder=FakeEmbedder(), refine=False, audit=False).process("alpha?", hits)
    assert [h.chunk.text for h in result.chunks] == texts
    same_start = [ScoredChunk(Chunk("", 0, len(t), t, 3), 1.0) for t in texts[:2]]
    result = SPC(embedder=FakeEmbedder(), refine=False, audit=False).process("x?", same_start)
    assert len(result.chunks) == 2


def test_containment_needs_both_chunks_verified_in_the_source(index):
    inner = hit_of(TEXT, "The election was held in June.")
    outer_text = "The election was held in June. Turnout was low."  # not the source's text
    outer = ScoredChunk(
        Chunk("pm", inner.chunk.start, inner.chunk.start + len(outer_text), outer_text, 9), 2.0
    )
    result = SPC(index, refine=False, audit=False, context=len(outer_text) + 30).process(
        "When was the election?", [outer, inner]
    )
    assert len(result.chunks) == 2
    assert [a.action for a in result.actions] == ["source_mismatch", "intact"]


def test_an_intact_hit_whose_text_differs_from_its_source_is_a_mismatch(index):
    foreign = ScoredChunk(Chunk("pm", 0, 20, "Totally other words.", 3), 1.0)
    (action,) = SPC(index, refine=False, audit=False).process("words?", [foreign]).actions
    assert action.action == "source_mismatch"


def test_llm_compressed_text_carries_no_offsets(index):
    hits = [
        hit_of(TEXT, "He then announced his resignation shortly after the investigation concluded.")
    ]
    result = SPC(index, llm=FakeLLM(_script), refine=False).process("Why did he resign?", hits)
    (hit,) = result.chunks
    assert hit.chunk.text == "John Smith resigned after the funding inquiry concluded."
    assert not hit.chunk.has_offsets and (hit.chunk.start, hit.chunk.end) == (-1, -1)
    assert hit.provenance[-1]["offsets"] is None
    assert result.actions[0].after != (-1, -1)  # the source span it was compressed from


def test_plan_repair_is_a_pure_step_from_a_damaged_chunk_to_whole_sentences():
    from semrag.postprocess._spc_records import Source
    from semrag.postprocess._spc_repair import RepairPlan, plan_repair
    from semrag.postprocess.detect import assess
    from semrag.text.sentences import split_sentences
    from semrag.text.tokens import WhitespaceTokenizer
    from semrag.types import Chunk

    text = "Bees find flowers by scent. They dance to tell the hive. Rockets reach orbit."
    spans = split_sentences(text)
    start, end = text.index("find"), text.index("to tell") + len("to tell")
    chunk = Chunk("d", start, end, text[start:end], 8)
    found = assess(chunk.text, starts_sentence=False, ends_sentence=False)
    emb = FakeEmbedder()
    source = Source(text, spans, emb.embed([s.of(text) for s in spans]))
    plan = plan_repair(
        chunk, found, source, neighbours=1, budget=64, tokenizer=WhitespaceTokenizer()
    )
    assert isinstance(plan, RepairPlan) and plan.action == "repaired"
    assert (
        text[plan.span[0] : plan.span[1]]
        == "Bees find flowers by scent. They dance to tell the hive."
    )
    assert plan.method == "extractive"
    assert plan.stitched == text  # the window an LLM may compress: the repair and a neighbour
    again = plan_repair(
        chunk,
        found,
        source,
        neighbours=1,
        budget=5,
        tokenizer=WhitespaceTokenizer(),
    )
    # a budget below the chunk's own sentences: they are kept whole, nothing more is added
    assert text[again.span[0] : again.span[1]] == text[plan.span[0] : plan.span[1]]
    assert again.budget == 5 and (again.stitched is not None) == (again.action == "repaired")


def test_the_audits_follow_up_queries_are_distinct_questions_not_word_permutations():
    index = SemanticIndex(embedder=FakeEmbedder())
    index.add_documents([Document("a", "Bees dance. Rockets burn fuel to reach orbit.")])
    hit = index.search("bees", 1)
    result = SPC(index, refine=False, audit=True).process("What type of model is required?", hit)
    assert result.missing  # nothing in the evidence names a model
    words = [frozenset(q.lower().split()) for q in result.follow_up_queries]
    assert len(words) == len(set(words)) >= 1


def test_a_context_budget_puts_each_hit_first_and_grows_it_by_what_it_is_worth():
    emb = FakeEmbedder()
    text = (
        "Jane Smith led the inquiry into the harbour. She resigned in May after the report. "
        "The report named three officials. Rain fell on the harbour all week."
    )
    index = SemanticIndex(embedder=emb)
    index.add_documents([Document("a", text)])
    start = text.index("resigned")
    cut = ScoredChunk(Chunk("a", start, start + 20, text[start : start + 20], 4), 1.0)
    other = hit_of(text, "Rain fell on the harbour all week.", doc_id="a")
    query = "Who resigned in May?"
    small = SPC(index, context=60, audit=False, refine=False).process(query, [cut, other])
    # the cut sentence is completed before anything else: it is the hit's own thought
    assert small.chunks[0].chunk.text.startswith("She resigned in May")
    assert small.actions[0].action in ("expanded", "repaired")
    assert (
        small.actions[0].after[0] <= cut.chunk.start and cut.chunk.end <= small.actions[0].after[1]
    )
    assert sum(len(c.chunk.text) for c in small.chunks) <= 60
    big = SPC(index, context=len(text), audit=False, refine=False).process(query, [cut, other])
    assert [c.chunk.text for c in big.chunks] == [text]  # every hit, merged: nothing twice
    assert [a.action for a in big.actions][1] == "merged"


def test_a_context_budget_over_sources_embeds_only_the_sentences_near_the_hits():
    from tests.counting import CountingEmbedder

    emb = CountingEmbedder()
    text = " ".join(f"Sentence {i} talks about topic {i} at length." for i in range(400))
    start = text.index("Sentence 200 ")
    hit = ScoredChunk(Chunk("long", start, start + 30, text[start : start + 30], 6), 1.0)
    spc = SPC(sources={"long": text}, embedder=emb, context=400, refine=False)
    result = spc.process("What does sentence 200 talk about?", [hit])
    sentences = [t for t in emb.embedded if t.startswith("Sentence ")]
    assert 0 < len(sentences) <= 2 * 8 + 2  # the hit's sentences and 8 each side, not 400
    (out,) = result.chunks
    assert out.chunk.start <= start and start + 30 <= out.chunk.end
    assert text[out.chunk.start : out.chunk.end] == out.chunk.text and len(out.chunk.text) <= 400
