"""Fragmentation: answer coverage and context size with and without SPC.

InSemRAG Table 4 in spirit.

SQuAD v1.1 dev articles (paragraphs joined by blank lines) are cut into fixed-size chunks
of 64, 128 and 256 MiniLM tokens: a SemanticChunker whose distance threshold never fires
(2.0), so only its token cap cuts (no overlap; a cut prefers a sentence start in the
second half of the window). For every 10th question the dense index returns k chunks;
the context is those chunks (without SPC) or SPC's output on them (no LLM, no audit).

- coverage: share of questions with a gold answer span inside one context chunk
  (by offsets);
- tokens: mean context tokens per question (MiniLM word pieces);
- repaired: mean chunks SPC repaired per question.

Goal: SPC at 64 tokens reaches >= 90% of the 256-token coverage without SPC, with fewer
context tokens.

    python benchmarks/spc_fragmentation.py [--k 5 10] [--out FILE]
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import DATA, emit, header, need, table
from _datasets import read_squad_questions

from semrag import SemanticChunker, SemanticIndex
from semrag.embeddings import SentenceTransformerEmbedder
from semrag.postprocess import SPC

SIZES = (64, 128, 256)
EVERY = 10


def covered(question, chunks) -> bool:
    return any(
        c.doc_id == question.doc_id and c.start <= a and b <= c.end
        for c in chunks
        for a, b in question.answers
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, nargs="+", default=[5, 10])
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    docs, questions = read_squad_questions(need(DATA / "squad_dev" / "dev-v1.1.json.gz"))
    questions = questions[::EVERY]
    emb = SentenceTransformerEmbedder(batch_size=64, cache_size=200_000)
    qvecs = emb.embed([q.question for q in questions])
    rows = []
    for size in SIZES:
        chunker = SemanticChunker(emb, threshold=2.0, max_tokens=size, overlap_tokens=0)
        index = SemanticIndex(chunker=chunker, ssg=False)
        index.add_documents(docs)
        count = chunker.tokenizer.count
        for k in args.k:
            spc = SPC(index, k=k, audit=False, refine=False)
            base_cov, spc_cov, base_tok, spc_tok, repaired = [], [], [], [], []
            for q, v in zip(questions, qvecs, strict=True):
                hits = index.search_vector(v, k)
                result = spc.process(q.question, hits)
                base = [h.chunk for h in hits]
                fixed = [h.chunk for h in result.chunks]
                base_cov.append(covered(q, base))
                spc_cov.append(covered(q, fixed))
                base_tok.append(sum(count([c.text for c in base])))
                spc_tok.append(sum(count([c.text for c in fixed])))
                repaired.append(len(result.repaired))
            for name, cov, tok, rep in (
                ("fixed chunks", base_cov, base_tok, None),
                ("fixed chunks + SPC", spc_cov, spc_tok, repaired),
            ):
                rows.append(
                    {
                        "chunk tokens": size,
                        "k": k,
                        "context": name,
                        "coverage": float(np.mean(cov)),
                        "tokens": float(np.mean(tok)),
                        "repaired": "" if rep is None else f"{np.mean(rep):.1f}",
                    }
                )
                print(rows[-1], flush=True)
    lines = []
    for k in args.k:
        at = {(r["chunk tokens"], r["context"]): r for r in rows if r["k"] == k}
        small, big = at[(64, "fixed chunks + SPC")], at[(256, "fixed chunks")]
        ratio = small["coverage"] / big["coverage"]
        lines.append(
            f"k={k}: SPC at 64 tokens covers {small['coverage']:.3f} = {100 * ratio:.0f}% of "
            f"the 256-token coverage {big['coverage']:.3f} (goal >= 90%) with "
            f"{small['tokens']:.0f} vs {big['tokens']:.0f} context tokens."
        )
    report = "\n".join(
        [
            header(
                "Fragmentation: answer coverage with and without SPC",
                f"SQuAD v1.1 dev, {len(docs)} articles, {len(questions)} questions "
                f"(every {EVERY}th); dense retrieval, packaged MiniLM",
            ),
            "",
            table(rows, ["chunk tokens", "k", "context", "coverage", "tokens", "repaired"]),
            "",
            *lines,
            "",
        ]
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
