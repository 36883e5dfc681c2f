"""HNSW rows in float16 (the dense index's default ``hnsw_dtype``) against float32.

A dense index of ``kind="hnsw"`` (or ``"auto"`` with ``approximate="hnsw"``, past
:data:`~semrag.index.parts.dense.AUTO_APPROXIMATE_ROWS` chunks) keeps its vectors in an HNSW
graph; this builds that graph twice over the same chunk vectors
(the scale benchmark's distinct corpus, the packaged MiniLM's sentence vectors averaged per
chunk), once storing float32 rows and once float16, and reports the build seconds, the
bytes of the stored rows and of the links, the p50 of one query, and how many of the exact
top 10 (a matrix product over the float32 vectors) each finds.

    python benchmarks/hnsw_storage.py [--chunks 300000] [--queries 1000] [--out FILE]
        [--quick] [--embedder minilm|fake]

With ``SEMRAG_BENCH_CACHE`` set, the sentence vectors are those scale.py cached.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scale
from _common import emit, header, table

from semrag import SemanticIndex
from semrag.index.parts.dense import DenseIndex

K = 10


def chunk_vectors(target: int, embedder) -> np.ndarray:
    """The chunk vectors of the scale corpus's first ``target`` chunks (exact, float32)."""
    docs = scale.documents(target, embedder)
    index = SemanticIndex(embedder=embedder, chunk_vectors="mean", dense="flat")
    docs.add(index)
    return np.asarray(index.parts["dense"].vectors, np.float32)


def query_vectors(n: int, embedder) -> np.ndarray:
    """``n`` lines of the corpus's sections, chosen with a fixed seed, as queries."""
    lines = [line for _, section in scale.sections() for line in section]
    pick = np.random.default_rng(7).choice(len(lines), size=n, replace=False)
    return np.asarray(embedder.embed([lines[i] for i in pick]), np.float32)


def exact_top(vectors: np.ndarray, queries: np.ndarray) -> np.ndarray:
    out = np.empty((len(queries), K), np.int64)
    for a in range(0, len(queries), 100):
        sims = queries[a : a + 100] @ vectors.T
        out[a : a + 100] = np.argsort(-sims, axis=1)[:, :K]
    return out


def one(dtype: str, vectors: np.ndarray, queries: np.ndarray, truth: np.ndarray) -> dict:
    import faiss

    index = DenseIndex(vectors.shape[1], kind="hnsw", hnsw_dtype=dtype)
    t0 = time.perf_counter()
    index.add(np.arange(len(vectors)), vectors)
    build = time.perf_counter() - t0
    graph = index.buffer
    codes = faiss.downcast_index(graph.storage).code_size * graph.ntotal
    links = graph.hnsw.neighbors.size() * 4
    times, found = [], []
    for q in queries:
        t0 = time.perf_counter()
        _, ids = index.search(q, K)
        times.append(time.perf_counter() - t0)
        found.append(ids[0])
    recall = np.mean([len(set(f) & set(t)) / K for f, t in zip(found, truth, strict=True)])
    top1 = np.mean([f[0] == t[0] for f, t in zip(found, truth, strict=True)])
    return {
        "rows": dtype,
        "build s": build,
        "stored rows MB": codes / 2**20,
        "links MB": links / 2**20,
        "p50 ms": float(np.median(times)) * 1000,
        f"recall@{K} of exact": recall,
        "top-1 exact": top1,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=300_000)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--quick", action="store_true", help="a smoke run: 1,000 chunks, 50 queries")
    ap.add_argument("--embedder", choices=["minilm", "fake"], default="minilm")
    ap.add_argument("--out")
    args = ap.parse_args()
    embedder = scale.cached_embedder(args.embedder)
    vectors = chunk_vectors(1_000 if args.quick else args.chunks, embedder)
    queries = query_vectors(50 if args.quick else args.queries, embedder)
    embedder.save()
    truth = exact_top(vectors, queries)
    rows = [one(dtype, vectors, queries, truth) for dtype in ("float32", "float16")]
    cols = list(rows[0])
    report = "\n".join(
        [
            header(
                f"HNSW storage: float16 rows against float32 at {len(vectors):,} chunks",
                f"benchmarks/scale.py's distinct corpus, {len(vectors):,} chunk vectors "
                f"({args.embedder} sentence vectors, mean per chunk); {len(queries):,} queries: "
                f"lines of its sections (seed 7); DenseIndex(kind='hnsw') with its "
                f"defaults (M 32, efConstruction 80, efSearch 128) but hnsw_dtype",
            ),
            "",
            table(rows, cols),
            "",
            f"`recall@{K} of exact`: the share of the exact top {K} (float32 vectors, every "
            f"row) a search finds; `top-1 exact`: the share of queries whose first hit is "
            f"the exact first. One query at a time, the query's embedding excluded.",
            "",
        ]
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
