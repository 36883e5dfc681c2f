"""``semrag eval chunkers`` and ``semrag eval retrievers`` on the corpus the repo ships."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from semrag.cli import main
from semrag.eval import evaluate_splitters
from semrag.eval.table import ResultTable
from semrag.testing import FakeEmbedder
from semrag.viz import plot_budget_recall

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "data" / "eval"
QUESTIONS = CORPUS / "questions.jsonl"


@pytest.mark.model
def test_eval_chunkers_prints_the_table_and_writes_json_csv_and_a_plot(tmp_path, capsys):
    out = tmp_path / "out"
    args = ["eval", "chunkers", str(CORPUS), "--questions", str(QUESTIONS), "--out", str(out)]
    assert main([*args, "--splitter", "semantic", "--splitter", "recursive:400:0"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("| splitter | recall 1000 | recall 4000 |")
    assert "| semantic |" in printed and "| recursive:400:0 |" in printed
    data = json.loads((out / "results.json").read_text())
    assert [r["splitter"] for r in data["rows"]] == ["semantic", "recursive:400:0"]
    assert data["data"]["questions"] == 12 and data["data"]["documents"] == 4
    assert all(len(v) == 12 for v in data["per_question"]["semantic"].values())
    rows = list(csv.DictReader((out / "results.csv").read_text().splitlines()))
    assert float(rows[0]["recall 4000"]) == pytest.approx(data["rows"][0]["recall 4000"])
    assert (out / "recall.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    verdict = next(line for line in printed.splitlines() if " against semantic: " in line)
    assert verdict.startswith(("recursive:400:0 against semantic:", "MIXED: recursive:400:0"))
    assert [v["outcome"] for v in data["verdicts"]] == [
        "better" if v["low"] > 0 else "worse" if v["high"] < 0 else "cannot tell"
        for v in data["verdicts"]
    ]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert verdict.replace("'", "&#x27;") in page and "<svg class='plot'" in page


@pytest.mark.model
def test_eval_retrievers_on_a_saved_index(tmp_path, capsys):
    assert main(["index", str(CORPUS), "--out", str(tmp_path / "idx")]) == 0
    capsys.readouterr()
    args = ["eval", "retrievers", str(tmp_path / "idx"), "--questions", str(QUESTIONS)]
    assert main([*args, "--retriever", "dense", "--retriever", "sparse", "--ks", "1", "3"]) == 0
    printed = capsys.readouterr().out
    assert "| dense | " in printed and "R@1 - dense 95% CI" in printed
    assert "sparse against dense: " in printed  # its verdict line


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["eval", "chunkers", str(CORPUS)], "give --questions JSONL"),
        (["eval", "chunkers", str(CORPUS), "--generate", "3"], "--generate needs --llm"),
        (
            ["eval", "chunkers", str(CORPUS), "--questions", str(QUESTIONS), "--splitter", "x:"],
            "--splitter 'x:'",
        ),
    ],
)
def test_eval_errors_are_one_line(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_missing_excerpt_in_the_questions_file_is_named(tmp_path, capsys):
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"question": "Q?", "excerpts": [{"text": "Bees play chess."}]}\n')
    assert main(["eval", "chunkers", str(CORPUS), "--questions", str(bad)]) == 2
    assert "'Bees play chess.' is not in any document" in capsys.readouterr().err


def test_the_plot_draws_a_splitter_table_only(tmp_path):
    from semrag import Document, SemanticChunker
    from semrag.errors import ConfigError
    from semrag.eval import EvalQuestion, Excerpt

    emb = FakeEmbedder(dim=16)
    docs = [Document("d", "Bees dance. Rockets fly. Cats nap.")]
    q = [EvalQuestion("bees", (Excerpt("d", 0, 11),))]
    table = evaluate_splitters(docs, q, {"a": SemanticChunker(emb)}, embedder=emb, budgets=(5, 50))
    assert plot_budget_recall(table, tmp_path / "p.png").stat().st_size > 1000
    with pytest.raises(ConfigError, match="evaluate_splitters"):
        plot_budget_recall(ResultTable([], "retriever"), tmp_path / "q.png")


@pytest.mark.model
def test_the_decision_example_decides_from_the_verdicts_and_writes_its_report(tmp_path):
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "examples" / "decide_a_splitter.py"
    out = subprocess.run(
        [sys.executable, str(script), "--budget", "500", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    verdicts = [line for line in out.splitlines() if " against recursive 1000/200: " in line]
    assert len(verdicts) == 2
    decision = next(line for line in out.splitlines() if line.startswith("decision: "))
    winners = [
        v.split(" against ")[0]
        for v in verdicts
        if "recall 500 (" in v.partition("better at ")[2].split(";")[0]
    ]
    if winners:
        assert any(decision.startswith(f"decision: switch to {w} (") for w in winners)
    else:
        assert decision.startswith("decision: keep recursive 1000/200")
    assert (tmp_path / "report.html").read_text(encoding="utf-8").startswith("<!doctype html>")
