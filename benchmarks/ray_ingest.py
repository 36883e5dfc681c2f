"""Ingestion on Ray against the in-process build: documents per second, 1 and 2 workers.

Data: the first ``--docs`` distinct paragraphs of the 2WikiMultihopQA dev sample
(../shared/data/twowiki; title + text), the packaged MiniLM, the default SemanticIndex.

- in process: ``SemanticIndex().add_documents(docs)`` with torch held to one thread (what
  one worker has), and with every core;
- on Ray (a local cluster, ``ray.init(num_cpus=2)``): ``semrag.ingest.ingest_with_ray`` with
  1 and 2 workers, each an actor holding one model with one torch thread
  (``cpus_per_worker=1``); the job's wall time includes starting the actors and loading
  their models; the calling process commits every prepared batch.

Each build is checked against the in-process one (same chunks, same dense top 10 for a few
queries), so a fast but different build shows. Ratios: the overhead of Ray with one worker
over the in-process build at one thread, and the throughput of 2 workers over 1.

    python benchmarks/ray_ingest.py [--docs 1000] [--batch 256] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, emit, header, need, table
from _datasets import read_twowiki

from semrag import SemanticIndex

QUERIES = ["Who directed the film?", "Where was the composer born?", "river in France"]


def signature(index: SemanticIndex) -> tuple:
    """What two equal builds share: chunks with offsets, and the dense top 10 of QUERIES."""
    chunks = [(c.doc_id, c.start, c.end) for c in index.chunks()]
    tops = [[(h.chunk.doc_id, h.chunk.start) for h in index.search(q, k=10)] for q in QUERIES]
    return chunks, tops


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import ray
    import torch

    from semrag.embeddings import SentenceTransformerEmbedder
    from semrag.ingest import ingest_with_ray

    docs, _ = read_twowiki(need(DATA / "twowiki" / "2wiki_dev500_agenticrag.json"))
    docs = docs[: args.docs]
    n_chars = sum(len(d.text) for d in docs)
    rows = []

    want = None

    def in_process(threads: int) -> SemanticIndex:
        torch.set_num_threads(threads)
        index = SemanticIndex(embedder=SentenceTransformerEmbedder())
        index.embedder.embed(["warm the model"])  # loaded before the clock starts
        t0 = time.perf_counter()
        index.add_documents(docs)
        took = time.perf_counter() - t0
        rows.append(
            {
                "build": f"in process, torch threads {threads}",
                "seconds": took,
                "documents / s": len(docs) / took,
                "same build": "yes" if signature(index) == want else "NO",
            }
        )
        print(rows[-1], flush=True)
        return index

    reference = in_process(1)
    want = signature(reference)
    rows[0]["same build"] = "(reference)"
    in_process(os.cpu_count() or 2)
    torch.set_num_threads(1)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        for workers in (1, 2):
            index = SemanticIndex(embedder=SentenceTransformerEmbedder())
            report = ingest_with_ray(index, docs, workers=workers, batch_size=args.batch)
            same = signature(index) == want
            rows.append(
                {
                    "build": f"Ray, {workers} worker(s), 1 thread each",
                    "seconds": report.seconds,
                    "documents / s": report.documents_per_second,
                    "same build": "yes" if same else "NO",
                }
            )
            print(rows[-1], flush=True)
    finally:
        ray.shutdown()
    one, ray1, ray2 = rows[0], rows[2], rows[3]
    overhead = ray1["seconds"] / one["seconds"]
    scaling = ray2["documents / s"] / ray1["documents / s"]
    data = (
        f"2WikiMultihopQA dev sample, the first {len(docs)} paragraphs ({n_chars:,} characters, "
        f"{len(reference.chunks())} chunks); packaged MiniLM on CPU; batches of {args.batch} "
        "documents"
    )
    emit(
        "\n".join(
            [
                header("Ingestion on Ray (semrag.ingest.ingest_with_ray)", data),
                "",
                table(rows, list(rows[0])),
                "",
                f"Overhead of Ray with one worker over the in-process build at one thread: "
                f"{overhead:.2f}x the time (actor start, model load, moving prepared batches "
                f"and the commits included). Two workers against one: {scaling:.2f}x the "
                "documents per second. `same build`: the same chunks (offsets) and the same "
                "dense top 10 for three queries as the in-process build.",
                "",
            ]
        ),
        args.out,
    )


if __name__ == "__main__":
    main()
