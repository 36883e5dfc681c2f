"""OpenMP threads that spin: a model call beside exact search on a machine with few cores.

After each model call torch's OpenMP threads spin for a while, waiting for more work; on
a machine with few cores the next exact search's BLAS threads (and the next model call
after a search) wait for the cores. ``OMP_WAIT_POLICY=PASSIVE`` makes the OpenMP threads
sleep instead; it is read once, when the OpenMP runtime loads (with torch), so semrag sets
it when imported, unless the environment already does (:func:`semrag._deps.quiet_openmp`);
the "unset" row imports torch before semrag, as a process that loads torch first does.

This runs the same work in a fresh process under each policy: the packaged MiniLM embeds
one question, then an exact dense index (``DenseIndex(kind="flat")``) of ``--chunks``
vectors answers it, question after question (a query as dense search and IAR make it);
and the model embeds a batch of paragraphs (ingestion throughput). The index holds
random unit vectors: an exact search reads every vector whatever they are, so its cost
does not depend on them.

    python benchmarks/omp_wait.py [--chunks 20279] [--queries 200] [--rounds 5] [--out FILE]

Each policy runs ``--rounds`` times, in turn; the table gives the median of each column.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
from _common import DATA, emit, header, need, table

TWOWIKI = "twowiki/2wiki_dev500_agenticrag.json"
POLICIES = {
    "unset (OpenMP's default)": None,
    "PASSIVE (semrag's default)": "PASSIVE",
    "ACTIVE": "ACTIVE",
}


def child(n_chunks: int, n_queries: int) -> dict[str, float]:
    """The measurements of one process (its ``OMP_WAIT_POLICY`` set by the parent)."""
    if "OMP_WAIT_POLICY" not in os.environ:  # OpenMP's default: torch loads before semrag
        import torch  # noqa: F401  (semrag would set PASSIVE before torch's runtime read it)
    from _datasets import read_twowiki

    from semrag.embeddings import SentenceTransformerEmbedder
    from semrag.index.parts.dense import DenseIndex

    docs, questions = read_twowiki(need(DATA / TWOWIKI))
    queries = [q.question for q in questions][:n_queries]
    emb = SentenceTransformerEmbedder(cache_size=0)
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((n_chunks, emb.dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    dense = DenseIndex(emb.dim, kind="flat")
    dense.add(np.arange(n_chunks), vectors)
    for q in queries[:10]:  # warm-up
        dense.search(np.asarray(emb.embed([q]), np.float32), 10)
    model, search, total = [], [], []
    for q in queries:
        t0 = time.perf_counter()
        v = np.asarray(emb.embed([q]), np.float32)
        t1 = time.perf_counter()
        dense.search(v, 10)
        t2 = time.perf_counter()
        model.append(t1 - t0)
        search.append(t2 - t1)
        total.append(t2 - t0)
    texts = [d.text for d in docs[:1000]]
    t0 = time.perf_counter()
    emb.embed(texts)
    spent = time.perf_counter() - t0
    return {
        "query p50 ms": 1000 * float(np.median(total)),
        "model p50 ms": 1000 * float(np.median(model)),
        "exact search p50 ms": 1000 * float(np.median(search)),
        "paragraphs/s embedded": len(texts) / spent,
    }


def run(policy: str | None, n_chunks: int, n_queries: int) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy is not None:
        env["OMP_WAIT_POLICY"] = policy
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(n_chunks), str(n_queries)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=20_279)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--child", nargs=2, type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in POLICIES}
    for _ in range(args.rounds):  # the policies in turn, so a noisy minute hits each alike
        for name, policy in POLICIES.items():
            runs[name].append(run(policy, args.chunks, args.queries))
            print(name, runs[name][-1], flush=True)
    rows = [
        {"OMP_WAIT_POLICY": name, **{c: float(np.median([r[c] for r in got])) for c in got[0]}}
        for name, got in runs.items()
    ]
    unset, passive = rows[0], rows[1]
    cols = list(rows[0])

    def ratio(column: str) -> float:
        return passive[column] / unset[column]

    emit(
        "\n".join(
            [
                header(
                    "OpenMP wait policy: a model call beside exact search",
                    f"2Wiki dev questions (the first {args.queries}), one at a time: the "
                    f"packaged MiniLM embeds each, then an exact DenseIndex of "
                    f"{args.chunks:,} unit vectors answers it; then the model embeds 1,000 "
                    f"2Wiki paragraphs (throughput); each policy in a fresh process, {args.rounds} "
                    "times in turn (medians)",
                ),
                "",
                table(rows, cols),
                "",
                f"PASSIVE / unset: query p50 x{ratio('query p50 ms'):.2f}, "
                f"throughput x{ratio('paragraphs/s embedded'):.2f}.",
                "",
            ]
        ),
        args.out,
    )


if __name__ == "__main__":
    main()
