"""Neo4j at scale: the default index written batch by batch as a corpus grows, then served.

Corpus: ``benchmarks/scale.py``'s distinct corpus (sectioned_text sections, then their
sentence-level recombinations; every chunk its own text), with the packaged MiniLM's
sentence vectors (each distinct sentence embedded once; cached under
``SEMRAG_BENCH_CACHE``) and chunk vectors the mean of their sentences.

The index is the default one with the default retriever's part (``SemanticIndex(
passages=True)``: dense, BM25, the passage graph), followed from the start by a
:class:`~semrag.neo4j.Neo4jIndexStore` on a real Neo4j 5.26 server (the test suite's
launcher). Documents are added in ``--batches`` calls, as a living corpus grows: each call
is one commit of the index, which the store writes (in transactions of at most
``max_transaction_rows`` rows). Per batch: the chunks in the database after it, the
seconds of the index's own commit and of the store's write. The write's growth exponent
``b`` (cumulative write seconds ``~ n^b``) is taken between the first batch and the last:
a statement whose match is not backed by a constraint or an index scans what earlier
batches wrote, and ``b`` rises past 1. Then the server's store size on disk, and the p50
of dense search, BM25, IAR and ``GraphRetriever()`` on the served reader
(:class:`~semrag.neo4j.Neo4jIndex`, which holds no corpus in process) against the
embedded index, with the share of queries whose top 10 is the embedded one: each query
asked of one, then of the other, over ``--passes`` passes, so that a slow spell of the
machine (the server and the client share its cores) falls on both sides alike.

``--setting NAME=VALUE`` (repeatable) gives the server a setting as its neo4j.conf would,
for instance ``internal.dbms.index.vector.standard_merge_factor=2``: Neo4j's vector index
is a Lucene index whose segments are each searched in turn (each with the query's whole
candidate count), and by default it merges them only once 50 are at one level, so a corpus
written in batches is served from one segment per flush; a merge factor of 2 keeps a few.

    python benchmarks/neo4j_scale.py [--chunks 100000] [--batches 10] [--heap 2g]
        [--page-cache-mb 2048] [--setting NAME=VALUE ...] [--embedder minilm|fake] [--passes 3]
        [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

import numpy as np
from _common import emit, forget_answers, fresh, header, table
from neo4j_backend import served_row, start_neo4j
from scale import QUERIES, cached_embedder, distinct_counts, documents

from semrag import GraphRetriever, SemanticIndex
from semrag.index.change import Change
from semrag.neo4j import Neo4jGraphStore, Neo4jIndex, Neo4jIndexStore
from semrag.retrieval import IntentAwareRetriever

K = 10


class TimedStore(Neo4jIndexStore):
    """A :class:`Neo4jIndexStore` that records the seconds of each write it makes."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.write_s: list[float] = []

    def stage(self, change: Change):
        write = super().stage(change)

        def timed() -> None:
            t0 = time.perf_counter()
            try:
                write()
            finally:
                self.write_s.append(time.perf_counter() - t0)

        return timed


def vector_segments(home: Path) -> int:
    """Segments of the chunks' vector index (the Lucene index with the most of them)."""
    root = home / "data" / "databases" / "neo4j" / "schema" / "index" / "vector-2.0"
    return max((len(list(d.glob("*.si"))) for d in root.glob("*/1")), default=0)


def settle(home: Path, quiet_s: float = 6.0, limit_s: float = 600.0) -> None:
    """Wait until the server's index files stop changing (its merges after the last write
    run in the background, writing their segments as they go; timed queries must not share
    the CPU with them)."""
    root = home / "data" / "databases" / "neo4j" / "schema" / "index"

    def state() -> tuple:
        files = []
        for p in root.rglob("*"):
            with contextlib.suppress(OSError):  # a merge may delete a file as it is listed
                files.append((str(p), p.stat().st_size))
        return tuple(sorted(files))

    t0, last, since = time.monotonic(), state(), time.monotonic()
    while time.monotonic() - since < quiet_s and time.monotonic() - t0 < limit_s:
        time.sleep(1)
        now = state()
        if now != last:
            last, since = now, time.monotonic()


def store_mb(home: Path) -> float:
    """MB of the server's files under ``home`` (its databases and transaction logs)."""
    return sum(p.stat().st_size for p in home.rglob("*") if p.is_file()) / 2**20


def retrievers(ix) -> dict:
    return {
        "dense": lambda q: ix.search(q, k=K),
        "BM25 (embedded) / Lucene (Neo4j)": lambda q: ix.search_sparse(q, k=K),
        "IAR": IntentAwareRetriever(ix, k=K).retrieve,
        "IAR, sparse weight 0": IntentAwareRetriever(
            ix, k=K, weights={"dense": 0.5, "sparse": 0.0, "extended": 0.5}
        ).retrieve,
        "GraphRetriever() (PPR)": GraphRetriever(ix, k=K).retrieve,
    }


def embedding_ms(emb, query: str) -> float:
    """ms of embedding ``query`` with the model (its cache cleared first)."""
    emb.inner.clear_cache()
    t0 = time.perf_counter()
    emb.inner.embed([query])
    return 1000 * (time.perf_counter() - t0)


def alternating(here, there, queries: list[str], store, index, passes: int, emb):
    """Both backends' per-query ms and rankings, timed query by query in turn.

    Each query is embedded by the model (its own cache cleared; the searches read the
    benchmark's sentence cache, so they embed nothing), then asked of the embedded index,
    then of the database, ``passes`` times over the query list, so a slow spell of the
    machine (the server shares its two cores) falls on every side alike; an untimed first
    pass warms both. The embedded index forgets its kept answers before each query.
    Rankings are the first pass's; the mean round trips per query are the database's.
    """
    for q in dict.fromkeys(queries):
        here(q)
        there(q)
    t_e, t_n, r_e, r_n, embeds, reads = [], [], [], [], [], 0
    for p in range(passes):
        for q in queries:
            embeds.append(embedding_ms(emb, q))
            forget_answers(index)
            t0 = time.perf_counter()
            hits_e = here(q)
            t_e.append(1000 * (time.perf_counter() - t0))
            before = store.reads
            t0 = time.perf_counter()
            hits_n = there(q)
            t_n.append(1000 * (time.perf_counter() - t0))
            reads += store.reads - before
            if p == 0:
                r_e.append([(h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in hits_e])
                r_n.append([(h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in hits_n])
    return (t_e, r_e), (t_n, r_n), reads / (passes * len(queries)), embeds


def overlap(found: list, expected: list) -> float:
    """The share of ``expected`` (a top 10) that ``found`` holds."""
    return len(set(found) & set(expected)) / max(1, len(expected))


def exponent(sizes: list[int], cumulative: list[float]) -> float:
    """``b`` of ``t ~ n^b`` between the first point and the last."""
    return float(np.log(cumulative[-1] / cumulative[0]) / np.log(sizes[-1] / sizes[0]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--embedder", choices=["minilm", "fake"], default="minilm")
    ap.add_argument("--heap", default="2g")
    ap.add_argument("--page-cache-mb", type=int, default=2048)
    ap.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--passes", type=int, default=3, help="timed passes over the queries")
    ap.add_argument("--out")
    args = ap.parse_args()
    settings = dict(kv.split("=", 1) for kv in args.setting)
    emb = cached_embedder(args.embedder)
    docs = documents(args.chunks, emb)
    queries = fresh(QUERIES, 3)
    server = start_neo4j(args.heap, args.page_cache_mb, settings)
    rows = []
    try:
        store = Neo4jGraphStore(server.uri, server.user, server.password)
        index = SemanticIndex(embedder=emb, chunk_vectors="mean", passages=True)
        writer = TimedStore(store)
        writer.clear()
        writer.attach(index)
        base = len(writer.write_s)
        held = 0
        for i, part in enumerate(np.array_split(np.arange(len(docs)), args.batches)):
            t0 = time.perf_counter()
            docs.add(index, part.tolist())
            total = time.perf_counter() - t0
            write = sum(writer.write_s[base:])
            base = len(writer.write_s)
            now = writer.counts()["chunks"]
            rows.append(
                {
                    "batch": i + 1,
                    "documents": len(part),
                    "chunks in the database": now,
                    "index commit s": total - write,
                    "Neo4j write s": write,
                    "write ms / chunk": 1000 * write / max(1, now - held),
                }
            )
            held = now
            print(rows[-1], file=sys.stderr, flush=True)
        emb.save()
        settle(server.home)
        segments = vector_segments(server.home)
        n_texts, _ = distinct_counts(index)
        n_chunks = len(index.chunks())
        size = store_mb(server.home)
        reader = Neo4jIndex(store, embedder=emb)
        here, there = retrievers(index), retrievers(reader)
        served, embeds = [], []
        for name in here:
            embedded, served_, trips, times = alternating(
                here[name], there[name], queries, store, index, args.passes, emb
            )
            embeds += times
            served.append((name, embedded, served_, trips))
        embed_ms = float(np.percentile(embeds, 50))
        for i, (name, embedded, served_, trips) in enumerate(served):
            row = served_row(name, embedded, served_, trips, embed_ms)
            row["top-10 overlap"] = float(
                np.mean([overlap(a, b) for a, b in zip(served_[1], embedded[1], strict=True)])
            )
            served[i] = row
            print(row, file=sys.stderr, flush=True)
        store.close()
    finally:
        server.cleanup()
    sizes = [r["chunks in the database"] for r in rows]
    cumulative = np.cumsum([r["Neo4j write s"] for r in rows]).tolist()
    b = exponent(sizes, cumulative)
    emit(
        "\n".join(
            [
                header(
                    f"Neo4j at scale: {n_chunks:,} chunks written in {args.batches} batches"
                    + (", tuned server" if settings else ""),
                    f"benchmarks/scale.py's distinct corpus ({len(docs):,} documents, "
                    f"{n_chunks:,} chunks, {n_texts / n_chunks:.1%} distinct chunk texts); "
                    f"embedder: {args.embedder} (each distinct sentence once; chunk vectors: "
                    f"mean of their sentences); SemanticIndex(passages=True) followed by "
                    f"Neo4jIndexStore; Neo4j 5.26, heap {args.heap}, page cache "
                    f"{args.page_cache_mb} MB, "
                    + (", ".join(f"{k}={v}" for k, v in settings.items()) or "default settings")
                    + f"; {len(QUERIES)} queries (scale.QUERIES) in three wordings",
                ),
                "",
                table(rows, list(rows[0])),
                "",
                f"Write growth: cumulative write seconds ~ n^{b:.2f} from "
                f"{sizes[0]:,} to {sizes[-1]:,} chunks (goal <= 1.1). The server's files on disk: "
                f"{size:,.0f} MB (store files and transaction logs). The chunks' vector index "
                f"held {segments} segments on disk when the queries ran (its merges done).",
                "",
                table(served, list(served[0])),
                "",
                "Each query is embedded, then timed on the embedded index, then on the "
                f"database, in turn, over {args.passes} passes of the {len(queries)} queries "
                "(a slow spell of the machine falls on every side). The search times exclude "
                "the query's embedding; it takes "
                f"{embed_ms:.1f} ms (p50 of {len(embeds):,}, the model's cache cleared) on "
                "this CPU, which the last ratio adds to both sides: what a caller waits for. "
                "`same top-10`: the share of queries whose top 10 chunks are the embedded "
                "ones; `top-10 overlap`: the mean share of the embedded top 10 found.",
                "",
            ]
        ),
        args.out,
    )


if __name__ == "__main__":
    main()
