"""An evaluation that decides: verdicts, cost beside quality, data warnings, the HTML report."""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from semrag import Document
from semrag.eval import (
    EvalDataWarning,
    EvalQuestion,
    Excerpt,
    MeteredEmbedder,
    MeteredLLM,
    Verdict,
    evaluate_retrievers,
    evaluate_splitters,
    questions_needed,
    verdict_lines,
    write_report,
)
from semrag.eval.checks import identical_candidates, long_excerpts, short_documents
from semrag.eval.verdict import compare
from semrag.testing import FakeEmbedder, FakeLLM

SCORES = st.lists(st.floats(0, 1, allow_nan=False), min_size=2, max_size=60)


# -- verdicts, as properties -------------------------------------------------------------------
@given(SCORES)
def test_a_candidate_identical_to_the_baseline_cannot_be_told_apart(scores):
    (v,) = compare({"R@5": scores}, {"R@5": scores}, candidate="same", baseline="base")
    assert v.outcome == "cannot tell" and v.difference == 0.0
    assert verdict_lines([v]) == ["same against base: cannot tell at R@5"]


@given(SCORES, st.floats(0.05, 1.0), st.integers(0, 2**31))
def test_a_shifted_candidate_is_better_and_its_mirror_worse(scores, shift, seed):
    noise = np.random.default_rng(seed).uniform(0, shift / 2, len(scores))
    up = (np.asarray(scores) + shift - noise).tolist()  # every question gains
    (better,) = compare({"m": up}, {"m": scores}, candidate="up", baseline="base", seed=seed)
    (worse,) = compare({"m": scores}, {"m": up}, candidate="base", baseline="up", seed=seed)
    assert better.outcome == "better" and better.low > 0
    assert worse.outcome == "worse" and worse.high < 0
    assert better.difference == pytest.approx(-worse.difference)


def test_a_candidate_better_at_one_rank_and_worse_at_another_is_flagged():
    base = {"R@2": [1.0, 1.0, 0.0] * 20, "R@10": [0.0, 0.0, 1.0] * 20, "R@5": [1.0, 0.0] * 30}
    cand = {"R@2": [0.0, 1.0, 0.0] * 20, "R@10": [1.0, 1.0, 1.0] * 20, "R@5": [0.0, 1.0] * 30}
    found = compare(cand, base, candidate="new", baseline="old")
    assert [v.outcome for v in found] == ["worse", "better", "cannot tell"]
    (line,) = verdict_lines(found)
    assert line.startswith("MIXED: new against old: better at R@10 (+0.667")
    assert "worse at R@2 (-0.333" in line and line.endswith("cannot tell at R@5")


def test_questions_needed_solves_the_interval_for_the_question_count():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0, 1, 400), rng.uniform(0, 1, 400)
    (v,) = compare({"m": a}, {"m": b}, candidate="a", baseline="b")
    half = (v.high - v.low) / 2
    assert 300 <= questions_needed(v, half) <= 530  # the bootstrap's width, about n = 400
    assert questions_needed(v, half / 2) == pytest.approx(4 * questions_needed(v, half), rel=0.01)


# -- splitters: verdicts, cost and warnings in one run -----------------------------------------
def _corpus(n_docs: int, sentences: int) -> tuple[list[Document], list[EvalQuestion]]:
    topics = ["bees", "rockets", "volcanoes", "violins", "glaciers", "tides"]
    docs, questions = [], []
    for d in range(n_docs):
        words = [f"{topics[(d + s) % len(topics)]} fact {d}-{s} holds." for s in range(sentences)]
        text = " ".join(w.capitalize() for w in words)
        docs.append(Document(f"doc{d}", text))
        first = text.split(". ")[1] + "."
        start = text.index(first)
        questions.append(
            EvalQuestion(f"What about {first}?", (Excerpt(f"doc{d}", start, start + len(first)),))
        )
    return docs, questions


def _by_chars(size: int):
    return lambda text: [text[i : i + size] for i in range(0, len(text), size)]


def test_short_documents_warn_that_every_splitter_returns_whole_documents():
    docs, questions = _corpus(8, 4)  # about 100 characters a document
    with pytest.warns(EvalDataWarning, match="no longer than the budget of 1,000"):
        table = evaluate_splitters(
            docs,
            questions,
            {"small": _by_chars(40), "same": _by_chars(40), "large": _by_chars(90)},
            embedder=FakeEmbedder(),
            budgets=(1000, 4000),
        )
    said = "\n".join(table.warnings)
    assert "8 of 8 documents" in said and "(and so at 4,000)" in said
    assert "small and same produce identical chunks" in said
    # one verdict per recall column and candidate; the rows keep the numbers
    assert {(v.candidate, v.metric) for v in table.verdicts} == {
        (c, m) for c in ("same", "large") for m in ("recall 1000", "recall 4000", "recall @5")
    }
    same = table.row("same")
    assert same["recall 1000 - small"] == 0.0 and same["recall 1000 - small 95% CI"] == (
        "[+0.000, +0.000]"
    )
    for row in table.rows:  # cost beside quality, from the same run
        assert row["split seconds"] >= 0 and row["embed seconds"] >= 0
        assert row["index build seconds"] == row["split seconds"] + row["embed seconds"]
        assert row["texts embedded"] == row["chunks"]
        assert row["chars embedded"] == pytest.approx(row["mean chars"] * row["chunks"])
        assert row["vector bytes"] == row["chunks"] * FakeEmbedder().dim * 4
        assert 0 <= row["query p50 ms"] <= row["query p95 ms"]


def test_long_documents_do_not_warn_about_whole_documents():
    docs, questions = _corpus(4, 400)  # about 9,000 characters a document
    table = evaluate_splitters(
        docs, questions, {"a": _by_chars(300), "b": _by_chars(500)}, embedder=FakeEmbedder()
    )
    assert not any("no longer than the budget" in w for w in table.warnings)
    assert short_documents(docs, (1000, 4000)) is None


def test_the_data_checks_say_the_number_behind_them():
    docs = [Document("a", "x" * 100), Document("b", "y" * 5000), Document("c", "z" * 300)]
    assert short_documents(docs, (200, 500)) == (
        "2 of 3 documents (median 300 characters) are no longer than the budget of 500 "
        "characters: there every splitter can return whole documents, so chunking hardly "
        "matters; compare at smaller budgets or on longer documents"
    )
    whole = [EvalQuestion("q", (Excerpt("a", 0, 90),)), EvalQuestion("r", (Excerpt("b", 0, 9),))]
    assert long_excerpts(docs, whole).startswith("1 of 2 excerpts span at least 50%")
    assert long_excerpts(docs, whole[1:]) is None
    assert identical_candidates({"p": [1], "q": [2], "r": [1], "s": [1]}, "chunks") == [
        "p, r and s produce identical chunks: their rows differ by nothing the data can show"
    ]


# -- retrievers: latency and metered spend -----------------------------------------------------
def test_retrievers_get_latency_and_what_their_meters_counted():
    docs, questions = _corpus(6, 4)
    embedder = MeteredEmbedder(FakeEmbedder())
    llm = MeteredLLM(FakeLLM(["doc0 doc1"], cycle=True))

    def with_llm(question: str) -> list[str]:
        llm.complete(f"Which documents answer: {question}")
        embedder.embed([question])
        return [d.id for d in docs]

    class Index:
        doc_ids = [d.id for d in docs]

    table = evaluate_retrievers(
        Index(),
        questions,
        {
            "plain": lambda q: [d.id for d in docs],
            "llm": with_llm,
            "reversed": lambda q: [d.id for d in reversed(docs)],
        },
        ks=(1, 3),
        meters={"encoder": embedder, "llm": llm},
    )
    plain, used = table.row("plain"), table.row("llm")
    assert plain["encoder texts embedded"] == 0 and plain["llm LLM calls"] == 0
    assert used["encoder texts embedded"] == len(questions) == used["llm LLM calls"]
    assert used["encoder chars embedded"] == sum(len(q.question) for q in questions)
    assert used["llm LLM tokens out"] == 4 * len(questions)  # "doc0 doc1": 4 word pieces
    assert used["llm LLM tokens in"] > 10 * len(questions)
    assert 0 <= used["query p50 ms"] <= used["query p95 ms"]
    assert table.row("llm")["R@1 - plain"] == 0.0
    said = "\n".join(table.warnings)
    assert "plain and llm produce identical results" in said
    # better on some questions, worse on others: six questions cannot tell
    assert {v.outcome for v in table.verdicts if v.candidate == "reversed"} == {"cannot tell"}
    assert "6 questions are too few to tell a difference of 0.02: reversed against plain" in said


def test_a_verdict_survives_json(tmp_path):
    docs, questions = _corpus(6, 4)
    table = evaluate_splitters(
        docs, questions, {"a": _by_chars(40), "b": _by_chars(80)}, embedder=FakeEmbedder()
    )
    data = table.to_dict()
    assert data["verdict_lines"] == verdict_lines(table.verdicts)
    assert [
        Verdict(**{k: v for k, v in d.items() if k != "outcome"}) for d in data["verdicts"]
    ] == (table.verdicts)


# -- the HTML report, in a real browser --------------------------------------------------------
def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI installs Debian's chromium (.ci/run); it is missing")
        pytest.skip("no chromium on this machine (apt install chromium)")
    return found


def _headless(browser: str, tmp_path, *args: str) -> subprocess.CompletedProcess[str]:
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    return subprocess.run(
        [browser, *flags, *args], capture_output=True, text=True, timeout=120, check=True
    )


def test_the_report_opens_offline_in_a_headless_browser_with_its_plots(tmp_path):
    browser = _chromium()
    docs, questions = _corpus(8, 40)
    table = evaluate_splitters(
        docs,
        questions,
        {"chars 200": _by_chars(200), "chars 600": _by_chars(600)},
        embedder=FakeEmbedder(),
        budgets=(300, 1000),
    )
    page = write_report(table, tmp_path / "out")
    assert page.name == "report.html"
    text = page.read_text(encoding="utf-8")
    assert "http" not in text.replace("http://www.w3.org/2000/svg", "")  # nothing to fetch
    dom = _headless(browser, tmp_path, "--dump-dom", page.as_uri()).stdout
    plots = 1 + len({v.metric for v in table.verdicts})  # recall by budget, one per metric
    assert f'data-plots="{plots}"' in dom
    assert "chars 600 against chars 200" in dom and "Environment" in dom
    shot = tmp_path / "report.png"
    _headless(browser, tmp_path, f"--screenshot={shot}", "--window-size=1200,1600", page.as_uri())
    from PIL import Image

    pixels = np.asarray(Image.open(shot).convert("RGB"))
    assert pixels.shape[:2] == (1600, 1200)
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 20  # drawn, not a blank page


def test_a_retriever_report_draws_recall_by_rank_in_the_browser(tmp_path):
    browser = _chromium()
    docs, questions = _corpus(12, 4)

    class Index:
        doc_ids = [d.id for d in docs]

    table = evaluate_retrievers(
        Index(),
        questions,
        {
            "right": lambda q: [f"doc{q.split('fact ')[1].split('-')[0]}"],
            "first": lambda q: [d.id for d in docs],
        },
        ks=(1, 3),
    )
    assert [v.outcome for v in table.verdicts if v.metric == "R@1"] == ["worse"]
    page = write_report(table, tmp_path / "retrievers.html")
    dom = _headless(browser, tmp_path, "--dump-dom", page.as_uri()).stdout
    assert f'data-plots="{1 + len({v.metric for v in table.verdicts})}"' in dom
    assert "recall against the rank k" in dom and "first against right: worse at R@1" in dom
