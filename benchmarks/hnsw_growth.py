"""How the dense index's HNSW build grows from N/10 to N chunks: one graph against segments.

The dense part's HNSW build grows faster than the corpus (each insert searches a deeper
graph whose rows outgrow the CPU's caches). A segmented index, as Lucene keeps one, bounds
that: a new graph starts every ``--segment`` rows, so each row is inserted into a graph of
at most that size and the build grows linearly; a search then asks every segment and
merges their hits. This measures both layouts over the same chunk vectors (the scale
benchmark's distinct corpus: the packaged MiniLM's sentence vectors averaged per chunk),
each built with :class:`~semrag.index.parts.dense.DenseIndex` (``kind="hnsw"``, its
defaults): the build seconds at N/10 and N chunks and their growth exponent, and at N the
p50 of one query and how many of the exact top 10 each finds, per ``ef_search``. The
segmented layout exists here only, to measure what it would cost; the index keeps one
graph (docs/semantic-index.md says why).

    python benchmarks/hnsw_growth.py [--chunks 1000000] [--segment 262144] [--queries 500]
        [--out FILE] [--quick] [--embedder minilm|fake]

With ``SEMRAG_BENCH_CACHE`` set, the sentence vectors are those scale.py cached.
"""

from __future__ import annotations

import argparse
import math
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
from _common import emit, header, table  # noqa: E402
from hnsw_storage import K, chunk_vectors, exact_top, query_vectors  # noqa: E402
from scale import cached_embedder  # noqa: E402

from semrag.index.parts.dense import DenseIndex  # noqa: E402

EF_SWEEP = (64, 128, 256, 512)


class Segments:
    """HNSW graphs of at most ``size`` rows each; a search asks each and merges the hits."""

    def __init__(self, vectors: np.ndarray, size: int) -> None:
        self.parts = []
        for a in range(0, len(vectors), size):
            part = DenseIndex(vectors.shape[1], kind="hnsw")
            part.add(np.arange(a, min(a + size, len(vectors))), vectors[a : a + size])
            self.parts.append(part)

    def set_ef(self, ef: int) -> None:
        for part in self.parts:
            part.ef_search = ef

    def search(self, query: np.ndarray, k: int) -> np.ndarray:
        found = [part.search(query, k) for part in self.parts]
        scores = np.concatenate([s for s, _ in found], 1)
        ids = np.concatenate([i for _, i in found], 1)
        return ids[0, np.argsort(-scores[0], kind="stable")[:k]]


def timed_build(vectors: np.ndarray, size: int) -> tuple[Segments, float]:
    t0 = time.perf_counter()
    built = Segments(vectors, size)
    return built, time.perf_counter() - t0


def quality(built: Segments, queries: np.ndarray, truth: np.ndarray) -> list[dict]:
    """p50 ms of one query and recall@K of the exact top K, per ef_search."""
    rows = []
    for ef in EF_SWEEP:
        built.set_ef(ef)
        times, recall = [], []
        for q, want in zip(queries, truth, strict=True):
            t0 = time.perf_counter()
            ids = built.search(q, K)
            times.append(1000 * (time.perf_counter() - t0))
            recall.append(len(set(ids.tolist()) & set(want.tolist())) / K)
        rows.append({"ef_search": ef, "p50 ms": float(np.median(times)), "recall": recall})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--segment", type=int, default=1 << 18, help="rows per segment graph")
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--quick", action="store_true", help="a smoke run: 2,000 chunks")
    ap.add_argument("--embedder", choices=["minilm", "fake"], default="minilm")
    ap.add_argument("--out")
    args = ap.parse_args()
    chunks, segment = (2_000, 500) if args.quick else (args.chunks, args.segment)
    embedder = cached_embedder(args.embedder)
    vectors = chunk_vectors(chunks, embedder)
    queries = query_vectors(50 if args.quick else args.queries, embedder)
    embedder.save()
    small = len(vectors) // 10
    truth = exact_top(vectors, queries)
    # at N/10 both layouts are one graph when a segment holds N/10 rows: timed once
    layouts = {"one graph": len(vectors), f"segments of {segment:,} rows": segment}
    rows, grew = [], math.log(len(vectors) / small)
    timed_build(vectors[:64], 64)  # FAISS's first graph pays its start-up: untimed
    small_builds: dict[int, float] = {}  # rows a segment holds at N/10 -> build seconds
    for name, size in layouts.items():
        smaller = min(size, small)
        if smaller not in small_builds:
            small_builds[smaller] = timed_build(vectors[:small], smaller)[1]
        small_s = small_builds[smaller]
        built, large_s = timed_build(vectors, size)
        for q in quality(built, queries, truth):
            rows.append(
                {
                    "layout": f"{name} ({len(built.parts)} at {len(vectors):,})",
                    f"build s at {small:,}": small_s,
                    f"build s at {len(vectors):,}": large_s,
                    "build growth": round(math.log(large_s / small_s) / grew, 2),
                    "ef_search": q["ef_search"],
                    "p50 ms": q["p50 ms"],
                    f"recall@{K} of exact": float(np.mean(q["recall"])),
                }
            )
        del built
    report = "\n".join(
        [
            header(
                f"HNSW growth: one graph against segments of {segment:,} rows, "
                f"{small:,} to {len(vectors):,} chunks",
                f"benchmarks/scale.py's distinct corpus, {len(vectors):,} chunk vectors "
                f"({args.embedder} sentence vectors, mean per chunk; the first {small:,} for "
                f"the smaller build); {len(queries):,} queries: lines of its sections (seed 7); "
                f"DenseIndex(kind='hnsw') with its defaults (M 32, efConstruction 80, "
                f"float16 rows), one per segment",
            ),
            "",
            table(rows, list(rows[0])),
            "",
            f"`build growth`: the exponent b of build seconds ~ n^b from {small:,} to "
            f"{len(vectors):,} chunks (goal <= 1.1). A segmented search asks each segment "
            f"for its top {K}, one after another, and merges them; `recall@{K} of exact`: "
            f"the share of the exact top {K} (float32 vectors, every row) it finds. One "
            "query at a time, the query's embedding excluded.",
            "",
        ]
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
