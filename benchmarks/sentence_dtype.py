"""Sentence vectors in float16 (the default index's ``sentence_dtype``): what it costs IAR.

The default ``SemanticIndex()`` holds each sentence's vector in float16 (half the memory:
at a million chunks about 1.75 GB of 3.5 GB). What reads them: IAR's sentence scores (the
``refine`` step), SPC, local search and a later ``enable("ssg")``. This runs the default
``IntentAwareRetriever()`` on the development sets twice over one index (the packaged
MiniLM): once with the sentence vectors in float32 and once with the same vectors rounded
to float16 (nothing else changes: chunk vectors, BM25 and the extended channel are the
same objects), and reports full-support and paragraph recall@k, the top-10 paragraphs
the two share, the largest difference of a sentence score and the bytes of the vectors.

    python benchmarks/sentence_dtype.py [--sets twowiki musique] [--out FILE]

With ``SEMRAG_BENCH_CACHE`` set, the built indexes are reused (those of iar_fusion.py).
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import BATCH, DATA, distinct, emit, evaluate_multihop, header, need, table
from iar_fusion import build_index
from multihop import CHUNKS, SETS

from semrag.embeddings import SentenceTransformerEmbedder
from semrag.retrieval import IntentAwareRetriever

K = 10


def ranked(index, queries: list[str]) -> list[list[str]]:
    iar = IntentAwareRetriever(index, k=CHUNKS, m=CHUNKS)
    return [distinct([h.chunk.doc_id for h in iar.retrieve(q)]) for q in queries]


def round_sentence_vectors(index, dtype: str) -> int:
    """Hold every document's sentence vectors as ``dtype``; returns their bytes."""
    total = 0
    for doc_id in index.doc_ids:
        e = index.reader().indexed(doc_id)
        object.__setattr__(e, "sentence_vectors", np.asarray(e.sentence_vectors).astype(dtype))
        total += e.sentence_vectors.nbytes
    return total


def one_set(set_name: str, emb) -> str:
    title, rel, reader = SETS[set_name]
    docs, questions = reader(need(DATA / rel))
    queries = [q.question for q in questions]
    index = build_index(set_name, docs, emb)
    rows, lists = [], {}
    # the largest change of a sentence score: every query against its top chunks' sentences
    q = np.asarray(emb.embed(queries[:50]), np.float32)
    vectors = {}
    for dtype in ("float32", "float16"):
        size = round_sentence_vectors(index, dtype)
        vectors[dtype] = np.concatenate([index.reader().sentence_vectors(d) for d in index.doc_ids])
        lists[dtype] = ranked(index, queries)
        row = evaluate_multihop(
            f"IntentAwareRetriever(), {dtype} sentence vectors", lists[dtype], questions
        )
        row["sentence vectors MB"] = size / 2**20
        rows.append(row)
    shared = np.mean(
        [
            len(set(a[:K]) & set(b[:K])) / max(1, len(set(a[:K])))
            for a, b in zip(lists["float32"], lists["float16"], strict=True)
        ]
    )
    scores32 = vectors["float32"] @ q.T
    scores16 = vectors["float16"].astype(np.float32) @ q.T
    worst = float(np.abs(scores32 - scores16).max())
    cols = ["retriever", "full@2", "full@5", "full@10", "para@10", "sentence vectors MB"]
    return "\n".join(
        [
            header(
                f"Sentence vectors in float16: IAR on {title}",
                f"{title}, {len(questions)} questions; {len(docs)} paragraphs -> "
                f"{len(index.chunks())} chunks, {len(vectors['float32']):,} sentences; "
                f"the default IntentAwareRetriever(k={CHUNKS}, m={CHUNKS})",
            ),
            "",
            table(rows, cols),
            "",
            f"Top-{K} paragraphs shared by the two: {shared:.3f} of a question's, on average. "
            f"Largest difference of a sentence score (cosine with 50 questions, every "
            f"sentence): {worst:.2e}.",
            "",
        ]
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", nargs="+", default=["twowiki", "musique"], choices=list(SETS))
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    emb = SentenceTransformerEmbedder(batch_size=BATCH, cache_size=100_000)
    emit("\n".join(one_set(s, emb) for s in args.sets), args.out)


if __name__ == "__main__":
    main()
