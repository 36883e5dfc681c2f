"""SSG scaling: kNN graph build time and memory, and traversal latency.

Build: random unit vectors (384 dimensions) as window nodes, 50 nodes per document,
``top_k=15`` intra- and ``top_x=5`` inter-document edges, built by semrag's FAISS path
(`semrag.index.parts.ssg.build_edges`; exact below 50,000 nodes, HNSW above) and, where memory
allows, by a dense N x N similarity matrix (what a matrix-based build needs).

Latency: a real SemanticIndex over synthetic documents whose sentence vectors are random
(an embedder that hashes each text to a random unit vector), then per-query latency of
every non-LLM algorithm with precomputed query vectors (query embedding excluded).

    python benchmarks/ssg_scaling.py [--sizes 10000 100000 1000000] [--latency-nodes 100000]
"""

from __future__ import annotations

import argparse
import hashlib
import time

import numpy as np
from _common import emit, header, measure, table

from semrag import Document, SemanticIndex, SSGRetriever
from semrag.chunking import SemanticChunker
from semrag.embeddings import BaseEmbedder
from semrag.index import SSGConfig
from semrag.index.parts.ssg import build_edges
from semrag.retrieval import ALGORITHMS
from semrag.text import WhitespaceTokenizer

DIM = 384
PER_DOC = 50


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.normal(size=(n, DIM)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def dense_matrix_build(v: np.ndarray, offsets: list[int], top_k: int, top_x: int) -> int:
    sims = v @ v.T
    np.fill_diagonal(sims, -np.inf)
    doc = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    same = doc[:, None] == doc[None, :]
    intra = np.where(same, sims, -np.inf)
    inter = np.where(same, -np.inf, sims)
    a = np.argpartition(-intra, top_k, axis=1)[:, :top_k]
    b = np.argpartition(-inter, top_x, axis=1)[:, :top_x]
    return int(a.size + b.size)


class RandomEmbedder(BaseEmbedder):
    """Deterministic random unit vector per text (stands in for a model at scale)."""

    name = "RandomEmbedder"

    def __init__(self) -> None:
        super().__init__(cache_size=0, dim=DIM)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), DIM), np.float32)
        for i, t in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little")
            out[i] = np.random.default_rng(seed).normal(size=DIM)
        return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--latency-nodes", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    cfg = SSGConfig(min_intra=-1.0, min_inter=-1.0)  # keep every kNN edge: the worst case
    rows = []
    for n in args.sizes:
        v = unit(rng, n)
        offsets = list(range(0, n, PER_DOC)) + [n]
        (indptr, indices, *_), secs, mb = measure(lambda v=v, o=offsets: build_edges(v, o, cfg))
        knn = "exact (flat)" if n <= 50_000 else "HNSW"
        row = {
            "nodes": f"{n:,}",
            "method": f"semrag FAISS kNN, {knn}",
            "seconds": secs,
            "peak MB": mb,
            "edges": f"{indices.size:,}",
        }
        rows.append(row)
        print(row, flush=True)
        need_gb = n * n * 4 / 2**30
        if need_gb <= 2:
            edges, dsecs, dmb = measure(lambda v=v, o=offsets: dense_matrix_build(v, o, 15, 5))
            rows.append(
                {
                    "nodes": f"{n:,}",
                    "method": "dense N x N matrix",
                    "seconds": dsecs,
                    "peak MB": dmb,
                    "edges": f"{edges:,}",
                }
            )
        else:
            rows.append(
                {
                    "nodes": f"{n:,}",
                    "method": "dense N x N matrix",
                    "seconds": "not run",
                    "peak MB": f"needs {need_gb:,.0f} GB for the matrix",
                    "edges": "-",
                }
            )
        print(rows[-1], flush=True)

    # Latency on a real index.
    n_docs = max(1, args.latency_nodes // PER_DOC)
    sentences = PER_DOC + 2  # 3-sentence windows, step 1 -> 50 nodes per document
    docs = [
        Document(f"d{d}", " ".join(f"Sentence {d} {i}." for i in range(sentences)))
        for d in range(n_docs)
    ]
    emb = RandomEmbedder()
    chunker = SemanticChunker(emb, tokenizer=WhitespaceTokenizer())
    index = SemanticIndex(chunker, emb, ssg=True)
    t0 = time.perf_counter()
    index.add_documents(docs)
    t_add = time.perf_counter() - t0
    t0 = time.perf_counter()
    graph = index.reader().ssg_view().graph
    _ = index.reader().ssg_view().node_index
    t_graph = time.perf_counter() - t0
    queries = unit(rng, args.queries)
    lat_rows = []
    for algorithm in ALGORITHMS:
        if algorithm == "llm_guided_traversal":
            continue
        retriever = SSGRetriever(index, strategy=algorithm, k=10)
        retriever.retrieve_vector(queries[0])  # warm-up
        times = []
        for q in queries:
            t = time.perf_counter()
            retriever.retrieve_vector(q)
            times.append((time.perf_counter() - t) * 1000)
        lat_rows.append(
            {
                "algorithm": algorithm,
                "p50 ms": float(np.percentile(times, 50)),
                "p95 ms": float(np.percentile(times, 95)),
            }
        )
        print(lat_rows[-1], flush=True)

    report = "\n".join(
        [
            header(
                "SSG scaling: graph build and query latency",
                f"random unit vectors, {DIM} dimensions, {PER_DOC} nodes per document; "
                f"latency on a SemanticIndex of {graph.n_nodes:,} window nodes "
                f"({n_docs:,} synthetic documents; add_documents {t_add:.1f} s with random "
                f"vectors, graph + node index {t_graph:.1f} s)",
            ),
            "",
            table(rows, ["nodes", "method", "seconds", "peak MB", "edges"]),
            "",
            f"Query latency per query at {graph.n_nodes:,} nodes, k=10, query embedding excluded "
            f"({args.queries} random queries):",
            "",
            table(lat_rows, ["algorithm", "p50 ms", "p95 ms"]),
            "",
        ]
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
