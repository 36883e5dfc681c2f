"""The whole index on Neo4j against the embedded index: build, changes, answers, latency.

Data: the 2WikiMultihopQA dev sample (500 questions, ../shared/data/twowiki); the corpus
is every distinct paragraph (title + text), one SemanticIndex (default SemanticChunker,
packaged MiniLM, with the similarity graph and the passage phrases).

- build: the embedded index (chunking, embedding, dense, BM25, SSG), then writing all of
  it to a real Neo4j 5.26 server (the test suite's launcher) with ``Neo4jIndexStore``;
  then one change (a document replaced) on the embedded index alone and with the store
  following it;
- per retriever, on both backends (the embedded ``SemanticIndex`` and ``Neo4jIndex``, a
  reader that holds no corpus in process): p50 / p95 ms per query (after an untimed pass
  that caches the query embeddings, so neither side pays the model), the read round trips
  Neo4j ran per query, and the
  multi-hop quality (full@10 / para@10 over the distinct paragraphs of the first 20
  results), so a faster but different answer shows, and the share of questions whose top
  10 is the embedded one. IAR runs without and with its extended channel (PPR), and
  ``GraphRetriever()`` (PPR) on both: the index keeps the passage phrases
  (``index.enable("passages")``), which the store writes and the reader walks.
- concurrency: ``--concurrency`` dense searches at once on the Neo4j reader, awaited on
  the async driver (``asearch``) against the sync search in worker threads
  (``asyncio.to_thread(search)``, what the async twins did before): queries per second.

``--graph`` adds the knowledge-graph retrievers: the graph built on the embedded index in
memory (embedded side) and, following the same index, in the same Neo4j database, served
by a ``KnowledgeGraph`` opened with nothing but the store and the embedder (Neo4j side);
rows for ``SketchRetriever`` (over the chunks, ``split=None``) and ``CommunityRetriever``
local and global.

``--scale CHUNKS`` runs the same on a corpus of about that many chunks made as
``benchmarks/scale.py`` makes it (sectioned_text sections, recombined; the fake embedder,
chunk vectors the mean of their sentences) with ``scale.QUERIES`` (each timed in three
wordings, see ``_common.fresh``); there are no gold answers there, so the quality columns
are the overlap of each Neo4j top 10 with the embedded top 10. ``--heap`` and
``--page-cache-mb`` size the server.

    python benchmarks/neo4j_backend.py [--questions N] [--graph] [--scale CHUNKS] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

import numpy as np
from _common import (
    BATCH,
    DATA,
    distinct,
    emit,
    evaluate_multihop,
    forget_answers,
    fresh,
    header,
    need,
    table,
)
from _datasets import read_twowiki
from iar_fusion import build_index

from semrag import Document, SemanticIndex
from semrag.embeddings import SentenceTransformerEmbedder
from semrag.graph import KnowledgeGraph
from semrag.neo4j import Neo4jGraphStore, Neo4jIndex, Neo4jIndexStore
from semrag.retrieval import (
    CommunityRetriever,
    GraphRetriever,
    IntentAwareRetriever,
    SketchRetriever,
    SSGRetriever,
)
from semrag.retrieval.ssg import ALGORITHMS

ROOT = Path(__file__).resolve().parents[1]
K = 20


def start_neo4j(heap: str, page_cache_mb: int, settings: dict[str, str] | None = None):
    sys.path.insert(0, str(ROOT))
    from tests.neo4j_server.server import Neo4jTestServer

    server = Neo4jTestServer(heap=heap, page_cache_mb=page_cache_mb, settings=settings)
    server.start()
    return server


def retrievers(ix, kg=None) -> dict:
    """The retrievers compared, over one backend (and its knowledge graph, if given)."""
    out = {
        "dense (search)": lambda q: ix.search(q, k=K),
        "sparse (search_sparse: BM25 / Lucene)": lambda q: ix.search_sparse(q, k=K),
        "IntentAwareRetriever(extended=None)": IntentAwareRetriever(
            ix, k=K, m=K, extended=None
        ).retrieve,
        "IntentAwareRetriever() (PPR channel)": IntentAwareRetriever(ix, k=K, m=K).retrieve,
        "GraphRetriever() (PPR)": GraphRetriever(ix, k=K).retrieve,
    }
    for algorithm in ALGORITHMS:
        if algorithm != "llm_guided_traversal":
            out[f"SSGRetriever({algorithm})"] = SSGRetriever(ix, strategy=algorithm, k=K).retrieve
    if kg is not None:
        out["SketchRetriever(split=None)"] = SketchRetriever(ix, kg, k=K, split=None).retrieve
        for mode in ("local", "global"):
            out[f"CommunityRetriever({mode})"] = CommunityRetriever(
                ix, kg, strategy=mode, k=K
            ).retrieve
    return out


def run(
    fn, queries: list[str], store=None, index=None
) -> tuple[list[float], list[list[tuple]], float]:
    """Per-query ms, the ranked chunks, and the mean read round trips per query.

    A first, untimed pass over every query fills the embedder's cache (and warms the
    server), so the timed pass measures retrieval, not the model. The answers an embedded
    ``index`` keeps from that pass are dropped: the timed pass searches again.
    """
    for q in dict.fromkeys(queries):
        fn(q)
    if index is not None:
        forget_answers(index)
    times, ranked = [], []
    reads = store.reads if store is not None else 0
    for q in queries:
        t0 = time.perf_counter()
        hits = fn(q)
        times.append(1000 * (time.perf_counter() - t0))
        ranked.append([(h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in hits])
    trips = (store.reads - reads) / len(queries) if store is not None else 0.0
    return times, ranked, trips


def served_row(
    name: str, embedded: tuple[list, list], served: tuple[list, list], trips: float, embed_ms: float
) -> dict:
    """One retriever on both backends: p50 / p95 of each, their ratios (without and with the
    query's embedding on both sides), round trips, and the share of queries whose top 10
    chunks are the embedded ones. ``embedded`` and ``served`` are :func:`run`'s times and
    rankings."""
    (t_e, r_e), (t_n, r_n) = embedded, served
    e50, n50 = float(np.percentile(t_e, 50)), float(np.percentile(t_n, 50))
    return {
        "retriever": name,
        "embedded p50 ms": e50,
        "embedded p95 ms": float(np.percentile(t_e, 95)),
        "Neo4j p50 ms": n50,
        "Neo4j p95 ms": float(np.percentile(t_n, 95)),
        "p50 ratio": n50 / e50,
        "p50 ratio with the query's embedding": (n50 + embed_ms) / (e50 + embed_ms),
        "round trips / query": trips,
        "same top-10": float(np.mean([set(a) == set(b) for a, b in zip(r_n, r_e, strict=True)])),
    }


def quality(name: str, ranked: list[list[tuple]], questions, here: list[list[tuple]]) -> dict:
    """full@10 / para@10 on 2Wiki; on the scale corpus, the top 10's overlap with ``here``."""
    if questions is not None:
        paragraphs = [distinct([doc for doc, _, _ in r]) for r in ranked]
        return evaluate_multihop(name, paragraphs, questions)
    shared = [
        len(set(a[:10]) & set(b[:10])) / max(1, len(b[:10]))
        for a, b in zip(ranked, here, strict=True)
    ]
    return {"top-10 overlap": float(np.mean(shared))}


def bare_round_trip(store, n: int = 200) -> float:
    """p50 ms of a statement that reads nothing (``RETURN 1``): the floor of any read."""
    for _ in range(20):
        store.session.read_rows("RETURN 1 AS one")
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        store.session.read_rows("RETURN 1 AS one")
        times.append(1000 * (time.perf_counter() - t0))
    return float(np.percentile(times, 50))


def concurrency(reader, queries: list[str], n: int) -> list[dict]:
    """Queries per second with ``n`` dense searches in flight, two ways (see the doc)."""

    async def measure(search) -> float:
        todo = [queries[i % len(queries)] for i in range(max(4 * n, len(queries)))]
        sem = asyncio.Semaphore(n)

        async def one(q: str) -> None:
            async with sem:
                await search(q)

        await asyncio.gather(*(one(q) for q in todo[:n]))  # warm: connections, threads
        t0 = time.perf_counter()
        await asyncio.gather(*(one(q) for q in todo))
        return len(todo) / (time.perf_counter() - t0)

    async def threaded(q: str):
        return await asyncio.to_thread(reader.search, q, K)

    async def native(q: str):
        return await reader.asearch(q, K)

    out = []
    for name, search in [
        ("sync search in worker threads (asyncio.to_thread)", threaded),
        ("asearch on the async driver", native),
    ]:
        out.append({"path": name, "in flight": n, "queries / s": asyncio.run(measure(search))})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=None, help="only the first N questions")
    ap.add_argument("--scale", type=int, default=None, metavar="CHUNKS")
    ap.add_argument("--graph", action="store_true", help="add SKETCH and community search")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--heap", default="1g")
    ap.add_argument("--page-cache-mb", type=int, default=64)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.scale:
        from scale import QUERIES, cached_embedder, documents

        emb = cached_embedder("fake")
        docs = documents(args.scale, emb)
        questions, queries = None, fresh(QUERIES, 3)
        t0 = time.perf_counter()
        index = SemanticIndex(embedder=emb, chunk_vectors="mean", ssg=True, show_progress=True)
        index.add_documents(docs)
        emb.save()
        corpus = (
            f"../shared/data/sectioned_text sections, recombined as benchmarks/scale.py does "
            f"({len(docs):,} documents; fake embedder, mean chunk vectors); "
            f"{len(QUERIES)} queries (scale.QUERIES), each timed in three wordings"
        )
    else:
        docs, questions = read_twowiki(need(DATA / "twowiki" / "2wiki_dev500_agenticrag.json"))
        questions = questions[: args.questions] if args.questions else questions
        queries = [q.question for q in questions]
        emb = SentenceTransformerEmbedder(batch_size=BATCH)
        t0 = time.perf_counter()
        index = build_index("twowiki", docs, emb)
        corpus = f"2WikiMultihopQA dev sample, {len(questions)} questions; {len(docs)} paragraphs"
    index.enable("passages")  # the PPR passage graph's phrases, written by the store too
    embedded_build = time.perf_counter() - t0
    n_chunks = len(index.chunks())
    print(f"embedded index: {n_chunks} chunks, {embedded_build:.1f} s", flush=True)
    server = start_neo4j(args.heap, args.page_cache_mb)
    try:
        store = Neo4jGraphStore(server.uri, server.user, server.password)
        writer = Neo4jIndexStore(store)
        writer.clear()
        store.clear()
        t0 = time.perf_counter()
        writer.attach(index)
        neo4j_build = time.perf_counter() - t0
        counts = writer.counts()
        print("written", counts, f"{neo4j_build:.1f} s", flush=True)
        doc = index.document(index.doc_ids[0])
        again = Document(doc.id, doc.text + " (revised)", dict(doc.metadata))
        t0 = time.perf_counter()
        index.add_documents([again], on_conflict="replace")
        with_store = time.perf_counter() - t0
        writer_detached = index.unfollow(writer)
        t0 = time.perf_counter()
        index.add_documents([doc], on_conflict="replace")
        alone = time.perf_counter() - t0
        if writer_detached:
            writer.attach(index)  # writes the difference: the database is level again
        reader = Neo4jIndex(store, embedder=emb)
        t0 = time.perf_counter()  # a new serving process: its first PPR query reads the graph
        GraphRetriever(Neo4jIndex(store, embedder=emb), k=K).retrieve(queries[0])
        first_ppr = 1000 * (time.perf_counter() - t0)
        kg_here = kg_there = None
        graph_build = ""
        if args.graph:
            t0 = time.perf_counter()
            kg_here = KnowledgeGraph.build(index)
            graph_build = f"in memory {time.perf_counter() - t0:.1f} s"
            t0 = time.perf_counter()
            kg_writer = KnowledgeGraph.build(index, store=store)
            graph_build += f", into Neo4j {time.perf_counter() - t0:.1f} s"
            kg_there = KnowledgeGraph(store, embedder=emb)
            print("knowledge graph:", graph_build, flush=True)
        t_embed = []
        for q in dict.fromkeys(queries):
            emb.clear_cache()
            t0 = time.perf_counter()
            emb.embed([q])
            t_embed.append(1000 * (time.perf_counter() - t0))
        embed_ms = float(np.percentile(t_embed, 50))
        bare_ms = bare_round_trip(store)
        rows = []
        here, there = retrievers(index, kg_here), retrievers(reader, kg_there)
        for name in here:
            t_e, r_e, _ = run(here[name], queries, index=index)
            t_n, r_n, trips = run(there[name], queries, store)
            row = served_row(name, (t_e, r_e), (t_n, r_n), trips, embed_ms)
            if questions is not None:
                q_e = quality(name, r_e, questions, r_e)
                q_n = quality(name, r_n, questions, r_e)
                for key in ("full@10", "para@10"):
                    row[f"{key} embedded"], row[f"{key} Neo4j"] = q_e[key], q_n[key]
            else:
                row.update(quality(name, r_n, None, r_e))
            rows.append(row)
            print(rows[-1], flush=True)
        flow = concurrency(reader, list(dict.fromkeys(queries)), args.concurrency)
        print(flow, flush=True)
        first_after = ""
        if args.graph:  # a change the writer makes: the serving side's first queries after it
            index.add_documents([again], on_conflict="replace")
            kg_writer.refresh_communities()
            firsts = []
            for name in ("CommunityRetriever(local)", "CommunityRetriever(global)"):
                t0 = time.perf_counter()
                there[name](queries[0])
                firsts.append(f"{name} {1000 * (time.perf_counter() - t0):.0f} ms")
            first_after = (
                " After one more document change by the writer (its graph follows the index; "
                "communities refreshed), the serving side's first query: " + ", ".join(firsts) + "."
            )
            print(first_after, flush=True)
        store.close()
    finally:
        server.cleanup()
    data = (
        f"{corpus} -> {n_chunks} chunks, {counts['sentences']} sentences, "
        f"{counts['windows']} SSG windows, {counts['edges']} SSG edges; Neo4j heap "
        f"{args.heap}, page cache {args.page_cache_mb} MB"
    )
    exact = [r for r in rows if r["retriever"].startswith(("dense", "SSG", "GraphRetriever"))]
    if questions is not None:
        moved = max(
            abs(r[f"{key} Neo4j"] - r[f"{key} embedded"])
            for r in exact
            for key in ("full@10", "para@10")
        )
        agree = f"on the dense, SSG and PPR rows the quality columns move by at most {moved:.3f}"
    else:
        least = min(r["top-10 overlap"] for r in exact)
        agree = f"the dense, SSG and PPR rows share at least {least:.3f} of the embedded top 10"
    emit(
        "\n".join(
            [
                header("The whole index on Neo4j (Neo4jIndexStore / Neo4jIndex)", data),
                "",
                f"Build: the embedded index {embedded_build:.1f} s (or loaded from "
                "SEMRAG_BENCH_CACHE); writing it all to Neo4j 5.26 "
                f"{neo4j_build:.1f} s. One document replaced: {1000 * alone:.0f} ms embedded, "
                f"{1000 * with_store:.0f} ms with the Neo4j store following (one transaction)."
                + (
                    f" The knowledge graph (heuristic extraction, communities): {graph_build}; "
                    "the Neo4j side serves it with KnowledgeGraph(store, embedder=...): local "
                    "search asks the entity name vector index, global search reads the "
                    "graph's change stamp with each query and the reports' stored vectors "
                    "once per version." + first_after
                    if args.graph
                    else ""
                ),
                "",
                table(rows, list(rows[0])),
                "",
                table(flow, list(flow[0])),
                "",
                f"Times exclude embedding the query (cached by an untimed first pass); one "
                f"query's embedding takes {embed_ms:.1f} ms (p50), which the last ratio adds to "
                "both sides: what a caller waits for. Round "
                "trips are the read statements Neo4j ran per query; a statement that reads "
                f"nothing (`RETURN 1`) takes {bare_ms:.2f} ms at p50 on this server, the floor "
                "of one round trip. Sparse differs by design "
                "(Lucene's BM25 with its analyzer against semrag's Okapi BM25), and so does IAR, "
                "which fuses it. Dense search and the SSG traversals score exactly what the "
                "embedded index scores, from candidates of Neo4j's approximate (HNSW) vector "
                f"indexes: where those miss a true neighbour, an answer differs ({agree}). "
                "`GraphRetriever()` on Neo4j walks the passage graph the store wrote (mention "
                "edges and phrase-name vectors), read once per stored version by the serving "
                "process; its dense seeds come from the vector index. A new serving "
                f"process's first PPR query (reading that graph) took {first_ppr:.0f} ms. "
                "`same top-10`: the share of questions whose top 10 chunks are the embedded "
                "ones.",
                "",
                f"Concurrency: {args.concurrency} dense searches in flight on one reader, "
                "each awaited on the store's async driver or run as the sync search in the "
                "event loop's default thread pool (min(32, cores + 4) threads).",
                "",
            ]
        ),
        args.out,
    )


if __name__ == "__main__":
    main()
