"""semrag.eval on your own documents: questions, splitters, retrievers, generated questions."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semrag import Document, SemanticChunker, SemanticIndex
from semrag.errors import ConfigError
from semrag.eval import (
    EvalQuestion,
    Excerpt,
    Split,
    evaluate_retrievers,
    evaluate_splitters,
    generate_questions,
    paired_bootstrap,
    read_questions,
    write_questions,
)
from semrag.eval.chunking import score_located
from semrag.eval.splitters import Located, locate
from semrag.testing import FakeEmbedder, FakeLLM

DOCS = [
    Document("bees", "Honey bees dance to show where flowers grow. The hive follows the dance."),
    Document("rockets", "Rockets burn fuel to reach orbit. The Saturn V carried Apollo 11."),
]


class Table(FakeEmbedder):
    """Vectors chosen by hand: a text's vector is the row named by its first character."""

    ROWS = {"q": [1, 0, 0], "a": [0.9, 0.1, 0], "b": [0.5, 0.5, 0], "c": [0, 0, 1]}

    def __init__(self) -> None:
        super().__init__(dim=3)

    def _embed_batch(self, texts):
        return np.asarray([self.ROWS[t[0]] for t in texts], np.float32)


# -- questions ---------------------------------------------------------------------------------
def test_questions_from_jsonl_by_text_or_offsets_round_trip(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        json.dumps(
            {"question": "Who follows?", "excerpts": [{"text": "The hive follows the dance."}]}
        )
        + "\n\n"
        + json.dumps(
            {"question": "What burns?", "excerpts": [{"doc_id": "rockets", "start": 0, "end": 33}]}
        )
        + "\n",
        encoding="utf-8",
    )
    qs = read_questions(path, DOCS)
    assert qs[0].excerpts == (Excerpt("bees", 45, 72),)  # found, doc_id inferred
    assert qs[1].excerpts == (Excerpt("rockets", 0, 33),)
    again = read_questions(write_questions(qs, tmp_path / "again.jsonl", DOCS), DOCS)
    assert again == qs
    assert (
        json.loads((tmp_path / "again.jsonl").read_text().splitlines()[1])["excerpts"][0]["text"]
        == "Rockets burn fuel to reach orbit."
    )


@pytest.mark.parametrize(
    ("excerpt", "message"),
    [
        ({"text": "Bees never sleep."}, "is not in any document"),
        ({"doc_id": "bees", "text": "Saturn V"}, "is not in document 'bees'"),
        ({"text": "The"}, "occurs 2 times"),  # in both documents: ambiguous
        ({"doc_id": "nope", "text": "x"}, "no document 'nope'"),
        ({"doc_id": "bees", "start": 10, "end": 999}, "outside 'bees'"),
        ({"doc_id": "bees", "start": 0, "end": 5, "text": "Bees!"}, "not the excerpt's text"),
        ({"start": 0, "end": 5}, "offsets need doc_id"),
        ({}, "needs its text or its offsets"),
    ],
)
def test_an_absent_or_ambiguous_excerpt_is_an_error_that_names_it(excerpt, message):
    with pytest.raises(ConfigError, match=message) as err:
        read_questions([{"question": "Q?", "excerpts": [excerpt]}], DOCS)
    assert "item 0" in str(err.value)


def test_malformed_question_files_are_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="bad.jsonl:1 is not JSON"):
        read_questions(bad, DOCS)
    with pytest.raises(ConfigError, match="no questions file"):
        read_questions(tmp_path / "missing.jsonl", DOCS)
    with pytest.raises(ConfigError, match="at least one excerpt"):
        read_questions([{"question": "Q?", "excerpts": []}], DOCS)
    with pytest.raises(ConfigError, match="no documents"):
        read_questions([{"question": "Q?", "excerpts": [{"text": "x"}]}], [])


# -- the chunking scores, by hand ---------------------------------------------------------------
def test_scores_at_a_budget_and_at_k_by_hand():
    """Three chunks ranked a (0.9), b (0.5), c (0) for the query; the excerpt is 10..30."""
    doc = Document("d", "a" + "x" * 19 + "b" + "y" * 19 + "c" + "z" * 19)  # 60 characters
    located = [[Located(0, 20), Located(20, 40), Located(40, 60)]]
    q = EvalQuestion("q", (Excerpt("d", 10, 30),))
    emb = Table()
    qv = np.asarray(emb.embed(["q"]), np.float32)
    row, per = score_located([doc], located, [q], qv, emb, budgets=(15, 30, 100), k=1)
    # budget 15: a cut to 0..15 -> 5 excerpt characters of 20 spent 15
    assert row["recall 15"] == pytest.approx(5 / 20)
    assert row["precision 15"] == pytest.approx(5 / 15)
    assert row["IoU 15"] == pytest.approx(5 / (15 + 20 - 5))
    # budget 30: a whole (10 of the excerpt) and b cut to 20..30 (10 more): all 20
    assert (row["recall 30"], row["precision 30"]) == pytest.approx((1.0, 20 / 30))
    assert row["IoU 30"] == pytest.approx(20 / 30)
    # budget 100: all 60 characters spent
    assert (row["recall 100"], row["precision 100"]) == pytest.approx((1.0, 20 / 60))
    # @1: chunk a only, whatever its size
    assert (row["recall @1"], row["precision @1"]) == pytest.approx((10 / 20, 10 / 20))
    assert (row["chunks"], row["mean chars"], row["lost"]) == (3, 20.0, 0)
    assert per["recall 15"] == [0.25]


def test_an_excerpt_across_two_documents_counts_both():
    docs = [Document("d1", "a" + "x" * 9), Document("d2", "c" + "z" * 9)]
    located = [[Located(0, 10)], [Located(0, 10)]]
    q = EvalQuestion("q", (Excerpt("d1", 0, 10), Excerpt("d2", 5, 10)))
    emb = Table()
    row, _ = score_located(
        docs, located, [q], np.asarray(emb.embed(["q"])), emb, budgets=(10, 20), k=1
    )
    assert row["recall 10"] == pytest.approx(10 / 15)  # d1 first: its 10 of the 15
    assert row["recall 20"] == pytest.approx(1.0)


@settings(max_examples=30, deadline=None)
@given(
    text=st.lists(
        st.sampled_from(["Bees dance.", "Rockets fly high.", "Cats nap a lot.", "Rain falls."]),
        min_size=2,
        max_size=12,
    ).map(" ".join),
    data=st.data(),
)
def test_recall_is_1_when_the_budget_covers_the_corpus_and_0_without_the_document(text, data):
    from semrag.text import split_sentences

    doc = Document("d", text)
    # an excerpt is a sentence (the whitespace between chunks is in no chunk)
    sentences = split_sentences(text)
    s = sentences[data.draw(st.integers(0, len(sentences) - 1))]
    q = EvalQuestion("bees", (Excerpt("d", s.start, s.end),))
    table = evaluate_splitters(
        [doc],
        [q],
        {"semrag": SemanticChunker(FakeEmbedder(dim=16), max_tokens=8)},
        embedder=FakeEmbedder(dim=16),
        budgets=(len(text),),
        k=1,
    )
    assert table.row("semrag")["recall " + str(len(text))] == pytest.approx(1.0)
    # nothing retrieved from the question's document: 0 at every budget
    other = Document("o", "Unrelated words here.")
    emb = FakeEmbedder(dim=16)
    row, _ = score_located(
        [doc, other],
        [[Located(-1, -1)], [Located(0, len(other.text))]],
        [q],
        np.asarray(emb.embed([q.question])),
        emb,
        budgets=(1, 10_000),
        k=3,
    )
    assert row["recall 1"] == row["recall 10000"] == row["recall @3"] == 0.0
    assert row["lost"] == 1


# -- splitters of every kind --------------------------------------------------------------------
def test_locate_trusts_no_offset_and_counts_what_it_cannot_find():
    text = "Bees  dance.\nRockets fly."
    got = locate(
        text,
        [
            Split("Bees  dance.", 0),  # right offset
            Split("Rockets fly.", 3),  # wrong offset: found
            Split("Bees dance."),  # whitespace changed: found with runs squeezed
            Split("bees dance."),  # the text changed: lost
        ],
    )
    assert [(x.start, x.end) for x in got] == [(0, 12), (13, 25), (0, 12), (-1, -1)]
    assert [x.lost for x in got] == [False, False, False, True]


def test_every_kind_of_splitter_and_a_splitter_that_changes_the_text():
    emb = FakeEmbedder(dim=32)
    q = read_questions(
        [
            {
                "question": "What carried Apollo 11?",
                "excerpts": [{"text": "The Saturn V carried Apollo 11."}],
            }
        ],
        DOCS,
    )
    table = evaluate_splitters(
        DOCS,
        q,
        {
            "semrag": SemanticChunker(emb),
            "sentences": lambda t: [s.strip() + "." for s in t.split(".") if s.strip()],
            "chunks": lambda t: SemanticChunker(emb).chunk(t),
            "pairs": lambda t: [(t, 0)],
            "upper": lambda t: [t.upper()],  # a splitter that changes the text
        },
        embedder=emb,
        budgets=(40, 4000),
        k=1,
    )
    assert table.row("sentences")["recall 40"] == 1.0  # the answer sentence ranks first
    assert table.row("pairs")["recall 4000"] == 1.0
    upper = table.row("upper")  # every chunk lost: counted, and nothing retrieved
    assert (upper["lost"], upper["chunks"], upper["recall 4000"]) == (2, 0, 0.0)
    assert table.data["questions"] == 1 and table.data["embedder"] == "FakeEmbedder(dim=32)"
    with pytest.raises(ConfigError, match="not a splitter"):
        evaluate_splitters(DOCS, q, {"x": 42}, embedder=emb)
    with pytest.raises(ConfigError, match="needs documents"):
        evaluate_splitters([], q, {"semrag": SemanticChunker(emb)}, embedder=emb)
    other = [EvalQuestion("Q?", (Excerpt("elsewhere", 0, 3),))]
    with pytest.raises(ConfigError, match="not given"):
        evaluate_splitters(DOCS, other, {"semrag": SemanticChunker(emb)}, embedder=emb)


def test_the_results_table_writes_json_and_csv(tmp_path):
    emb = FakeEmbedder(dim=16)
    q = [EvalQuestion("bees", (Excerpt("bees", 0, 20),))]
    table = evaluate_splitters(DOCS, q, {"a": SemanticChunker(emb)}, embedder=emb, budgets=(50,))
    data = json.loads(table.to_json(tmp_path / "r.json").read_text())
    assert data["rows"][0]["splitter"] == "a" and data["per_question"]["a"]["recall 50"]
    header = table.to_csv(tmp_path / "r.csv").read_text().splitlines()[0]
    assert header.startswith("splitter,recall 50,")
    assert str(table).startswith("| splitter | recall 50 |")


# -- retrievers ---------------------------------------------------------------------------------
def test_retrievers_with_intervals_against_a_baseline():
    emb = FakeEmbedder(dim=32)
    index = SemanticIndex(embedder=emb)
    index.add_documents(DOCS)
    qs = read_questions(
        [
            {"question": "Honey bees dance", "excerpts": [{"text": "Honey bees dance"}]},
            {"question": "Saturn V Apollo", "excerpts": [{"text": "The Saturn V"}]},
        ],
        DOCS,
    )
    table = evaluate_retrievers(
        index,
        qs,
        {
            "dense": lambda q: [h.chunk.doc_id for h in index.search(q, k=2)],
            "wrong": lambda q: ["rockets", "bees"] if "bees" in q.lower() else ["bees", "rockets"],
        },
        ks=(1, 2),
    )
    dense, wrong = table.row("dense"), table.row("wrong")
    assert (dense["R@1"], dense["full@2"]) == (1.0, 1.0)
    assert (wrong["R@1"], wrong["R@2"]) == (0.0, 1.0)
    assert wrong["R@1 - dense"] == -1.0 and wrong["R@1 - dense 95% CI"] == "[-1.000, -1.000]"
    assert "R@1 - dense" not in dense
    both = evaluate_retrievers(
        index,
        qs,
        {"dense": lambda q: [h.chunk.doc_id for h in index.search(q, k=2)], "none": lambda q: []},
        ks=(1,),
        baseline=["dense", "none"],
    )
    assert both.row("none")["R@1 - dense"] == -1.0 and both.row("dense")["R@1 - none"] == 1.0
    assert "R@1 - none" not in both.row("none") and both.data["baselines"] == ["dense", "none"]
    with pytest.raises(ConfigError, match="baseline"):
        evaluate_retrievers(index, qs, {"dense": lambda q: []}, baseline="bm25")
    gone = [EvalQuestion("Q?", (Excerpt("missing", 0, 1),))]
    with pytest.raises(ConfigError, match="not indexed"):
        evaluate_retrievers(index, gone, {"dense": lambda q: []})


def test_the_paired_bootstrap_interval_holds_the_difference_and_narrows_with_data():
    rng = np.random.default_rng(1)
    a = rng.random(400) < 0.6
    b = rng.random(400) < 0.5
    d, low, high = paired_bootstrap(a, b, resamples=1000)
    assert low < d < high and d == pytest.approx(a.mean() - b.mean())
    _, low4, high4 = paired_bootstrap(a[:40], b[:40], resamples=1000)
    assert high4 - low4 > high - low


# -- questions written by an LLM ----------------------------------------------------------------
def reply(question: str, *excerpts: str) -> str:
    return json.dumps({"question": question, "excerpts": list(excerpts)})


def test_generated_excerpts_are_verified_and_what_is_dropped_is_counted():
    llm = FakeLLM(
        [
            reply(
                "How do bees show where flowers are?",
                "Honey bees dance to show where flowers grow.",
            ),
            reply("What do bees eat?", "Bees eat nectar from flowers."),  # fabricated
            "not JSON at all",
            "still not JSON",  # the retry fails too
            reply(
                "How do honey bees show where flowers are?",
                "Honey bees dance to show where flowers grow.",
            ),
            reply("What carried Apollo 11?", "The Saturn V carried Apollo 11.", "x"),
        ]
    )
    one = [Document("all", " ".join(d.text for d in DOCS))]  # every passage from it
    out = generate_questions(one, llm, n=3, max_calls=6, seed=0)
    assert [q.question for q in out.questions] == [
        "How do bees show where flowers are?",
        "What carried Apollo 11?",
    ]
    for q in out.questions:
        for e in q.excerpts:  # every kept excerpt is where it says
            assert one[0].text[e.start : e.end] in (
                "Honey bees dance to show where flowers grow.",
                "The Saturn V carried Apollo 11.",
            )
    assert out.calls == 6
    assert out.dropped == {
        "no verbatim excerpt": 1,
        "reply not the JSON asked for": 1,
        "near-duplicate of a kept question": 1,
    }
    assert out.dropped_excerpts == {
        "not verbatim in the document": 1,
        "shorter than min_excerpt_chars": 1,
    }
    assert "kept 2 questions from 6 LLM calls" in out.summary()


def test_generation_is_seeded_and_capped():
    def echo(prompt: str) -> str:  # copies the passage's first sentence
        passage = prompt.split("PASSAGE:\n", 1)[1]
        first = passage.split(". ")[0].rstrip(".") + "."
        return reply(f"What about: {first}", first)

    a = generate_questions(DOCS, FakeLLM(echo), n=5, seed=3, max_calls=4)
    b = generate_questions(DOCS, FakeLLM(echo), n=5, seed=3, max_calls=4)
    assert [q.to_dict() for q in a.questions] == [q.to_dict() for q in b.questions]
    assert a.calls <= 4
    with pytest.raises(ConfigError, match="not an LLM"):
        generate_questions(DOCS, object(), n=1)
    with pytest.raises(ConfigError, match="needs a document"):
        generate_questions([Document("e", "   ")], FakeLLM(echo), n=1)
