"""How long a user's evaluation takes: ``semrag.eval.evaluate_splitters`` on 1 MB, end to end.

Corpus: SQuAD v1.1 dev articles kept whole (title line, paragraphs separated by blank
lines), in file order, until 1,000,000 characters. Questions: 100, drawn with seed 0 from
those articles' questions; each one's excerpt is the sentence holding its first answer.
Splitters: the default ``SemanticChunker()``, LangChain ``RecursiveCharacterTextSplitter
(1000, 200)``, chonkie ``RecursiveChunker()`` and LlamaIndex ``SentenceSplitter()``.

Timed: one call of ``evaluate_splitters`` from the documents to the table, with a fresh
packaged all-MiniLM-L6-v2 (nothing cached: every sentence the default splitter embeds and
every chunk of every splitter is embedded in the run). The goal: under 5 minutes on this
machine's 2 cores.

    python benchmarks/eval_speed.py [--chars N] [--questions N] [--out FILE]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import time

import numpy as np
from _common import DATA, emit, header, need, table

from semrag.text import split_sentences

GOAL_SECONDS = 300.0


def corpus(chars: int, n_questions: int) -> tuple[list, list]:
    """Whole SQuAD articles up to ``chars`` characters, and ``n_questions`` of their questions."""
    from semrag import Document
    from semrag.eval import EvalQuestion, Excerpt

    with gzip.open(need(DATA / "squad_dev" / "dev-v1.1.json.gz"), "rt", encoding="utf-8") as f:
        articles = json.load(f)["data"]
    docs: list[Document] = []
    asked: list[tuple[str, str, int]] = []  # question, doc id, answer offset
    total = 0
    for article in articles:
        title = article["title"].replace("_", " ")
        parts, pos = [title], len(title) + 2
        for para in article["paragraphs"]:
            for qa in para["qas"]:
                asked.append((qa["question"], title, pos + qa["answers"][0]["answer_start"]))
            parts.append(para["context"])
            pos += len(para["context"]) + 2
        text = "\n\n".join(parts)
        if total + len(text) > chars and docs:
            break
        docs.append(Document(title, text))
        total += len(text)
    by_id = {d.id: d for d in docs}
    asked = [a for a in asked if a[1] in by_id]
    questions = []
    for q, doc_id, at in random.Random(0).sample(asked, n_questions):
        sentences = split_sentences(by_id[doc_id].text)
        starts = [s.start for s in sentences]
        s = sentences[int(np.searchsorted(starts, at, side="right")) - 1]
        questions.append(EvalQuestion(q, (Excerpt(doc_id, s.start, s.end),)))
    return docs, questions


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chars", type=int, default=1_000_000)
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    from chonkie import RecursiveChunker
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from llama_index.core.node_parser import SentenceSplitter

    from semrag import SemanticChunker
    from semrag.embeddings import SentenceTransformerEmbedder
    from semrag.eval import evaluate_splitters

    docs, questions = corpus(args.chars, args.questions)
    chonkie = RecursiveChunker()
    splitters = {
        "semrag SemanticChunker() (default)": SemanticChunker(),
        "LangChain Recursive(1000, 200)": RecursiveCharacterTextSplitter(
            chunk_size=1000, chunk_overlap=200, add_start_index=True
        ),
        "chonkie RecursiveChunker": lambda t: [(c.text, c.start_index) for c in chonkie.chunk(t)],
        "LlamaIndex SentenceSplitter": SentenceSplitter(),
    }
    t0 = time.perf_counter()
    result = evaluate_splitters(docs, questions, splitters, embedder=SentenceTransformerEmbedder())
    seconds = time.perf_counter() - t0
    rows = result.rows
    cols = ["splitter", "recall 1000", "recall 4000", "recall @5", "chunks", "mean chars"]
    cols += ["lost", "split seconds"]
    chars = sum(len(d.text) for d in docs)
    verdict = "met" if seconds < GOAL_SECONDS else "MISSED"
    report = "\n".join(
        [
            header(
                "Evaluating 4 splitters on 1 MB (semrag.eval.evaluate_splitters, end to end)",
                f"SQuAD v1.1 dev, {len(docs)} whole articles, {chars:,} characters; "
                f"{len(questions)} questions (seed 0); all-MiniLM-L6-v2, nothing cached",
            ),
            "",
            table(rows, cols),
            "",
            f"The whole evaluation took {seconds:.0f} s (goal: under {GOAL_SECONDS:.0f} s: "
            f"{verdict}), embedding included: every sentence the default splitter reads and "
            "every chunk of every splitter. `split seconds` is each splitter's own time "
            "(the default's includes embedding the sentences it reads).",
            "",
        ]
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
