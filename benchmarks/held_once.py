"""Vectors held once with HNSW: what reading rows in place saves, and what it costs a query.

With ``SSGConfig(knn="hnsw")`` the node index's FAISS graph holds the window-node rows, and
with ``dense="hnsw"`` the dense part's graph holds the chunk vectors; the index reads them
in place (:class:`semrag._buffers.StoredRows`) instead of keeping a second copy in an
array. This builds the ``benchmarks/scale.py`` corpus at ``--chunks`` (real text,
recombined; ``--embedder fake`` by default, vectors cached by sentence) and reports:

* the bytes the index holds (RSS with the freed heap returned to the system, before and
  after the build), and the bytes of the rows that are no longer held twice;
* p50 latency of IAR and every non-LLM SSG algorithm with the rows read in place, and
  with the same rows from an array copy (the layout before), in alternating rounds in
  one process (rounds A, B, A, B; each p50 is over both rounds of its kind).

Usage: python benchmarks/held_once.py [--chunks 20000] [--embedder fake|minilm] [--out F]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import numpy as np
import scale
from _common import emit, header, rss_mb, table

from semrag import SemanticIndex, SSGRetriever
from semrag.index import SSGConfig
from semrag.retrieval import ALGORITHMS, IntentAwareRetriever


def timed_ms(fn, queries: list[str]) -> list[float]:
    """Milliseconds of each call of ``fn``, one query at a time."""
    times = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        times.append(1000 * (time.perf_counter() - t0))
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=20_000)
    ap.add_argument("--embedder", choices=["minilm", "fake"], default="fake")
    ap.add_argument("--out")
    args = ap.parse_args()
    embedder = scale.cached_embedder(args.embedder)
    docs = scale.documents(args.chunks, embedder)
    before = rss_mb(trim=True)
    index = SemanticIndex(
        embedder=embedder,
        chunk_vectors="mean",
        ssg=SSGConfig(knn="hnsw", vector_dtype="float16"),
        dense="hnsw",
    )
    docs.add(index)
    embedder.save()
    held = rss_mb(trim=True) - before
    graph = index.reader().part_set.ssg.graph
    dense = index.reader().part_set.dense
    stored_nodes, stored_chunks = graph.node_vectors, dense._version.vectors
    saved = stored_nodes.nbytes + stored_chunks.nbytes

    def layout(in_place: bool) -> None:
        """Node and chunk rows read in place, or from array copies (the layout before)."""
        graph.node_vectors = stored_nodes if in_place else np.asarray(stored_nodes)
        rows = stored_chunks if in_place else np.asarray(stored_chunks)
        dense._version = dataclasses.replace(dense._version, vectors=rows)

    run = {"IAR": IntentAwareRetriever(index, k=10).retrieve}
    for algorithm in ALGORITHMS:
        if algorithm != "llm_guided_traversal":
            run[f"SSG {algorithm}"] = SSGRetriever(index, strategy=algorithm, k=10).retrieve
    times: dict[tuple[str, bool], list[float]] = {}
    for rnd, in_place in enumerate((True, False, True, False)):
        layout(in_place)
        queries = [f"{q} (round {rnd})" for q in scale.QUERIES * 2]
        for name, fn in run.items():
            fn(f"warm up {rnd}")
            times.setdefault((name, in_place), []).extend(timed_ms(fn, queries))
    layout(True)
    rows = [
        {
            "retriever": name,
            "p50 ms, read in place": statistics.median(times[(name, True)]),
            "p50 ms, from an array copy": statistics.median(times[(name, False)]),
        }
        for name in run
    ]
    report = (
        header(
            f"Vectors held once: {len(index.chunks()):,} chunks",
            f"../shared/data/sectioned_text sections, recombined ({len(docs):,} documents, "
            f"{len(index.chunks()):,} chunks, {graph.n_nodes:,} window nodes); embedder: "
            f"{args.embedder}; SSGConfig(knn='hnsw', vector_dtype='float16'), dense='hnsw'",
        )
        + f"\nThe index holds {held:,.0f} MB (RSS with the freed heap returned to the system, "
        f"after the build less before it). Rows no longer held twice: {saved / 2**20:,.0f} MB "
        f"(node rows {stored_nodes.nbytes / 2**20:,.0f} MB, float16; chunk vectors "
        f"{stored_chunks.nbytes / 2**20:,.0f} MB, float32).\n\n"
        + table(rows, ["retriever", "p50 ms, read in place", "p50 ms, from an array copy"])
        + "\n"
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
