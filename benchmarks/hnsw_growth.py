"""How the dense index's approximate build grows from N/10 to N chunks, in four layouts.

An HNSW build grows faster than the corpus (each insert searches a deeper graph whose rows
outgrow the CPU's caches). The dense index's default past 50,000 rows is an inverted file
instead (``DenseIndex(kind="ivf")``: ``--lists`` k-means centroids trained on 40 rows a
list, each row kept as a 4-bit product-quantised code in its nearest centroid's list and as
a float16 row; a search scans the ``nprobe`` lists nearest the query and re-ranks its best
codes on the rows), whose build costs each row its distances to the centroids. Three graph
layouts are measured beside it: one graph (``kind="hnsw"``), and two that bound what an
insert reads.
One graph that takes the rows by k-means cell (``--cells`` cells trained on 40 rows a
cell, the cells in a greedy nearest-neighbour chain through their centroids, 16,384 rows
a change): a run of inserts visits rows stored together, which stay in the caches; the
order's k-means is part of its build time. A segmented index, as Lucene keeps one, bounds
the graph: a new graph starts every ``--segment`` rows, so each row is inserted into a
graph of at most that size and the build grows linearly; a search then asks every segment
and merges their hits. This measures the layouts over the same chunk vectors (the scale
benchmark's distinct corpus: the packaged MiniLM's sentence vectors averaged per chunk),
each built with :class:`~semrag.index.parts.dense.DenseIndex` (its defaults): the build
seconds at N/10 and N chunks and their growth exponent, and at N the p50 of one query and
how many of the exact top 10 each finds, per search breadth (``ef_search`` for a graph,
``nprobe`` for the inverted file). The cell order and the segments exist here only, to
measure what they would cost (docs/semantic-index.md says why neither is kept).

    python benchmarks/hnsw_growth.py [--chunks 1000000] [--segment 262144] [--lists 1024]
        [--cells 1024] [--queries 500] [--out FILE] [--quick] [--embedder minilm|fake]

With ``SEMRAG_BENCH_CACHE`` set, the sentence vectors are those scale.py cached.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from _common import emit, header, table
from hnsw_storage import K, chunk_vectors, exact_top, query_vectors
from scale import cached_embedder

from semrag.index.parts.dense import DenseIndex

EF_SWEEP = (64, 128, 256, 512)
NPROBE_SWEEP = (64, 128, 256, 512)


class Segments:
    """HNSW graphs of at most ``size`` rows each; a search asks each and merges the hits."""

    breadths = EF_SWEEP

    def __init__(self, vectors: np.ndarray, size: int) -> None:
        self.parts = []
        for a in range(0, len(vectors), size):
            part = DenseIndex(vectors.shape[1], kind="hnsw")
            part.add(np.arange(a, min(a + size, len(vectors))), vectors[a : a + size])
            self.parts.append(part)

    def set_breadth(self, ef: int) -> None:
        for part in self.parts:
            part.ef_search = ef

    def search(self, query: np.ndarray, k: int) -> np.ndarray:
        found = [part.search(query, k) for part in self.parts]
        scores = np.concatenate([s for s, _ in found], 1)
        ids = np.concatenate([i for _, i in found], 1)
        return ids[0, np.argsort(-scores[0], kind="stable")[:k]]


CELL_STEP = 1 << 14  # rows a change of the cell-ordered graph adds


def training_rows(vectors: np.ndarray, cells: int) -> np.ndarray:
    """40 rows a cell (or every row), sampled with seed 0, for a k-means of ``cells``."""
    pick = np.random.default_rng(0).choice(len(vectors), min(len(vectors), 40 * cells), False)
    return np.ascontiguousarray(vectors[np.sort(pick)])


def cell_order(vectors: np.ndarray, cells: int) -> np.ndarray:
    """The rows by k-means cell (at most ``cells``, 256 rows a cell at least), the cells in
    a greedy nearest-neighbour chain through their centroids: near rows one after another."""
    import faiss

    cells = max(1, min(cells, len(vectors) // 256))
    kmeans = faiss.Kmeans(vectors.shape[1], cells, niter=10, seed=1, spherical=True)
    kmeans.train(training_rows(vectors, cells))
    sims, left, at = kmeans.centroids @ kmeans.centroids.T, np.ones(cells, bool), 0
    rank = np.empty(cells, np.int64)
    for i in range(cells):
        rank[at], left[at] = i, False
        at = int(np.argmax(np.where(left, sims[at], -np.inf))) if left.any() else at
    cell = kmeans.index.search(vectors, 1)[1][:, 0]
    return np.argsort(rank[cell], kind="stable")


class CellOrdered:
    """One graph that takes the rows by k-means cell, ``step`` rows a change (an HNSW insert
    reads the rows it visits: inserted together, near rows are stored together and stay in
    the caches). The order is part of the build's time."""

    breadths = EF_SWEEP

    def __init__(self, vectors: np.ndarray, cells: int, step: int = CELL_STEP) -> None:
        self.order = cell_order(vectors, cells)
        self.index = DenseIndex(vectors.shape[1], kind="hnsw")
        for a in range(0, len(vectors), step):
            rows = self.order[a : a + step]
            self.index.add(np.arange(a, a + len(rows)), vectors[rows])
        self.parts = [self.index]

    def set_breadth(self, ef: int) -> None:
        self.index.ef_search = ef

    def search(self, query: np.ndarray, k: int) -> np.ndarray:
        ids = self.index.search(query, k)[1][0]
        return np.where(ids >= 0, self.order[np.maximum(ids, 0)], -1)


class Lists:
    """The dense index's inverted file (``kind="ivf"``) of ``lists`` lists, its defaults."""

    breadths = NPROBE_SWEEP

    def __init__(self, vectors: np.ndarray, lists: int) -> None:
        self.index = DenseIndex(vectors.shape[1], kind="ivf", ivf_lists=lists)
        self.index.add(np.arange(len(vectors)), vectors)
        self.parts = [self.index]

    def set_breadth(self, nprobe: int) -> None:
        self.index.nprobe = nprobe

    def search(self, query: np.ndarray, k: int) -> np.ndarray:
        return self.index.search(query, k)[1][0]


def timed_build(vectors: np.ndarray, make) -> tuple[object, float]:
    t0 = time.perf_counter()
    built = make(vectors)
    return built, time.perf_counter() - t0


def quality(built, queries: np.ndarray, truth: np.ndarray) -> list[dict]:
    """p50 ms of one query and recall@K of the exact top K, per search breadth."""
    rows = []
    for ef in built.breadths:
        built.set_breadth(ef)
        times, recall = [], []
        for q, want in zip(queries, truth, strict=True):
            t0 = time.perf_counter()
            ids = built.search(q, K)
            times.append(1000 * (time.perf_counter() - t0))
            recall.append(len(set(ids.tolist()) & set(want.tolist())) / K)
        rows.append({"breadth": ef, "p50 ms": float(np.median(times)), "recall": recall})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--segment", type=int, default=1 << 18, help="rows per segment graph")
    ap.add_argument("--lists", type=int, default=1024, help="the inverted file's lists")
    ap.add_argument("--cells", type=int, default=1024, help="k-means cells of the cell order")
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
    # layout -> how to build it at N and at N/10, and a key of the build at N/10: both graph
    # layouts are one graph at N/10 when a segment holds N/10 rows, timed once
    seg_small = min(segment, small)
    layouts = {
        f"inverted file of {args.lists:,} lists, re-ranked (the default)": (
            lambda v: Lists(v, args.lists),
            lambda v: Lists(v, args.lists),
            ("lists", args.lists),
        ),
        "one graph": (
            lambda v: Segments(v, len(vectors)),
            lambda v: Segments(v, small),
            ("graph", small),
        ),
        f"one graph, rows inserted by k-means cell ({args.cells:,} cells)": (
            lambda v: CellOrdered(v, args.cells),
            lambda v: CellOrdered(v, args.cells),
            ("cells", args.cells),
        ),
        f"segments of {segment:,} rows": (
            lambda v: Segments(v, segment),
            lambda v: Segments(v, seg_small),
            ("graph", seg_small),
        ),
    }
    rows, grew = [], math.log(len(vectors) / small)
    timed_build(vectors[:64], lambda v: Segments(v, 64))  # FAISS's first graph: untimed
    small_builds: dict[tuple, float] = {}  # a build at N/10 -> its seconds
    for name, (make, make_small, key) in layouts.items():
        if key not in small_builds:
            small_builds[key] = timed_build(vectors[:small], make_small)[1]
        small_s = small_builds[key]
        built, large_s = timed_build(vectors, make)
        for q in quality(built, queries, truth):
            rows.append(
                {
                    "layout": f"{name} ({len(built.parts)} at {len(vectors):,})",
                    f"build s at {small:,}": small_s,
                    f"build s at {len(vectors):,}": large_s,
                    "build growth": round(math.log(large_s / small_s) / grew, 2),
                    "search breadth": q["breadth"],
                    "p50 ms": q["p50 ms"],
                    f"recall@{K} of exact": float(np.mean(q["recall"])),
                }
            )
        del built
    report = "\n".join(
        [
            header(
                f"Dense build growth: the inverted file against one HNSW graph, one by "
                f"k-means cell and segments of {segment:,} rows, {small:,} to "
                f"{len(vectors):,} chunks",
                f"benchmarks/scale.py's distinct corpus, {len(vectors):,} chunk vectors "
                f"({args.embedder} sentence vectors, mean per chunk; the first {small:,} for "
                f"the smaller build); {len(queries):,} queries: lines of its sections (seed 7); "
                f"DenseIndex(kind='ivf') with its defaults ({args.lists:,} lists, fewer "
                "below 39 rows a list, trained on 40 rows a list, seed 0; 4-bit codes of "
                "4 values; 32 candidates a hit re-ranked on float16 rows); "
                f"DenseIndex(kind='hnsw') with its defaults (M 32, efConstruction 80, "
                f"float16 rows), one per segment; the cell order: {args.cells:,} k-means "
                f"cells (fewer below 256 rows a cell), {CELL_STEP:,} rows a change",
            ),
            "",
            table(rows, list(rows[0])),
            "",
            f"`build growth`: the exponent b of build seconds ~ n^b from {small:,} to "
            f"{len(vectors):,} chunks (goal <= 1.1). `search breadth`: ef_search for a "
            "graph, nprobe (the lists scanned) for the inverted file. A segmented search asks "
            f"each segment for its top {K}, one after another, and merges them; "
            f"`recall@{K} of exact`: "
            f"the share of the exact top {K} (float32 vectors, every row) it finds. One "
            "query at a time, the query's embedding excluded.",
            "",
        ]
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
