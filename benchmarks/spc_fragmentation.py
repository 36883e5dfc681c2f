"""Fragmentation: small chunks + SPC against big chunks at the same number of tokens.

InSemRAG Table 4 in spirit, at equal context. SQuAD v1.1 dev articles (paragraphs joined
by blank lines) are cut into fixed-size chunks of 64 and 256 MiniLM tokens: a
``SemanticChunker`` whose distance threshold never fires (2.0), so only its token cap cuts
(no overlap; a cut prefers a sentence start in the second half of the window). The index
is the default one (the packaged MiniLM, sentence vectors pooled from the chunks).
For every 10th question dense search returns ``k`` 256-token chunks; their tokens are the
question's budget, and every 64-token system fills that same budget:

- **plain hits**: the 64-token top hits in rank order, whole, while they fit;
- **SPC**: ``SPC(index, context=budget, unit="tokens")`` (no LLM, no audit) over the
  64-token top ``k`` (the hits first, then the sentences around them worth the most);
- **SPC, no budget**: ``SPC(index)`` (its anytime order) over the same ``k`` hits, its
  chunks in order while they fit the budget, as a prompt that cuts it would take them.

Columns: coverage (share of questions with a gold answer span inside one context span, by
offsets), tokens (mean context tokens a question, MiniLM word pieces), the coverage as a
share of the 256-token coverage, and its 95% paired bootstrap interval against the
256-token chunks.

Goal: SPC at 64 tokens covers >= 90% of what 256-token chunks cover at the same number of
tokens.

    python benchmarks/spc_fragmentation.py [--k 5 10] [--out FILE]
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from _common import DATA, emit, header, need, table
from _datasets import read_squad_questions

from semrag import SemanticChunker, SemanticIndex
from semrag.eval.verdict import paired_bootstrap
from semrag.postprocess import SPC

EVERY = 10
BIG = "256-token chunks, top k"


def covered(question: Any, chunks: list[Any]) -> bool:
    return any(
        c.doc_id == question.doc_id and c.start <= a and b <= c.end
        for c in chunks
        for a, b in question.answers
    )


def build(docs: list[Any], tokens: int) -> SemanticIndex:
    chunker = SemanticChunker(threshold=2.0, max_tokens=tokens, overlap_tokens=0)
    index = SemanticIndex(chunker=chunker, ssg=False)
    index.add_documents(docs)
    return index


def fitting(hits: list[Any], budget: int, count: Any) -> list[Any]:
    """The chunks of ``hits`` in order, whole, while their tokens fit ``budget``."""
    spent, out = 0, []
    for h in hits:
        cost = int(count([h.chunk.text])[0])
        if spent + cost > budget:
            break
        spent += cost
        out.append(h.chunk)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, nargs="+", default=[5, 10])
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    docs, questions = read_squad_questions(need(DATA / "squad_dev" / "dev-v1.1.json.gz"))
    questions = questions[::EVERY]
    big, small = build(docs, 256), build(docs, 64)
    count = small.reader().tokenizer.count
    qvecs = small.embedder.embed([q.question for q in questions])
    anytime = SPC(small, audit=False)
    rows = []
    for k in args.k:
        cov: dict[str, list[float]] = {}
        tok: dict[str, list[float]] = {}

        def note(name: str, q: Any, chunks: list[Any]) -> None:
            cov.setdefault(name, []).append(float(covered(q, chunks)))
            tok.setdefault(name, []).append(float(sum(count([c.text for c in chunks]))))

        for q, v in zip(questions, qvecs, strict=True):
            reference = [h.chunk for h in big.search_vector(v, k)]
            note(BIG, q, reference)
            budget = int(sum(count([c.text for c in reference])))
            many = small.search_vector(v, 8 * k)
            note("64-token chunks, plain hits to the budget", q, fitting(many, budget, count))
            hits = many[:k]
            note("64-token chunks, top k", q, [h.chunk for h in hits])
            ordered = anytime.process(q.question, hits).chunks
            name = "64-token chunks, top k + SPC(index), no budget, cut"
            note(name, q, fitting(ordered, budget, count))
            spc = SPC(small, k=k, audit=False, context=budget, unit="tokens")
            note(
                "64-token chunks, top k + SPC(context=budget)",
                q,
                [h.chunk for h in spc.process(q.question, hits).chunks],
            )
        for name in cov:
            row: dict[str, Any] = {
                "k": k,
                "context": name,
                "coverage": float(np.mean(cov[name])),
                "tokens": float(np.mean(tok[name])),
                "share of 256": float(np.mean(cov[name]) / np.mean(cov[BIG])),
            }
            if name != BIG:
                d, lo, hi = paired_bootstrap(cov[name], cov[BIG])
                row["vs 256 (95%)"] = f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"
            rows.append(row)
            print(rows[-1], flush=True)
    lines = []
    for k in args.k:
        at = {r["context"]: r for r in rows if r["k"] == k}
        spc_row = at["64-token chunks, top k + SPC(context=budget)"]
        lines.append(
            f"k={k}: SPC at 64 tokens covers {spc_row['coverage']:.3f} = "
            f"{100 * spc_row['share of 256']:.0f}% of the 256-token coverage "
            f"{at[BIG]['coverage']:.3f} (goal >= 90%) in {spc_row['tokens']:.0f} tokens "
            f"against {at[BIG]['tokens']:.0f}."
        )
    columns = ["k", "context", "coverage", "tokens", "share of 256", "vs 256 (95%)"]
    report = "\n".join(
        [
            header(
                "Fragmentation: 64-token chunks + SPC against 256-token chunks, same tokens",
                f"SQuAD v1.1 dev, {len(docs)} articles, {len(questions)} questions "
                f"(every {EVERY}th); dense retrieval, the default index (packaged MiniLM)",
            ),
            "",
            table(rows, columns),
            "",
            *lines,
            "",
        ]
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
