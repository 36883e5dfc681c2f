"""A Neo4j serving process under a writer's changes: GraphRetriever() latency, idle and busy.

A real Neo4j 5.26 server (the test suite's launcher). A writer process builds
``SemanticIndex(passages=True)`` over ``--docs`` SQuAD dev paragraphs, follows it with
``Neo4jIndexStore``, then commits about one change a second (adds a paragraph, or deletes
one every third change) for ``--seconds``. This process serves: ``Neo4jIndex`` +
``GraphRetriever()``, querying in a loop, first while the writer is idle, then while it
writes. Every new version makes the serving process's passage graph follow the writer: by
delta, reading only the changed documents (``RemotePassages.documents_read``).

Usage: python benchmarks/neo4j_serving.py [--out F] [--docs N] [--seconds S]
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import DATA, emit, header, need, table

from semrag import Document, GraphRetriever, SemanticIndex
from semrag.errors import SemragError

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = [
    "Which NFL team represented the AFC at Super Bowl 50?",
    "What is the name of the university's main library?",
    "Who designed the steam engine with a separate condenser?",
    "What did the Normans take from Anglo-Saxon England?",
    "Where did the Broncos practice for the Super Bowl?",
]


def paragraphs(n: int) -> list[Document]:
    with gzip.open(need(DATA / "squad_dev" / "dev-v1.1.json.gz"), "rt", encoding="utf-8") as f:
        data = json.load(f)["data"]
    docs = [
        Document(f"{a['title']}#{i}", p["context"], {"title": a["title"].replace("_", " ")})
        for a in data
        for i, p in enumerate(a["paragraphs"])
    ]
    return docs[:n]


def writer(uri: str, auth: tuple[str, str], n: int, seconds: float, folder: str) -> None:
    from semrag.neo4j import Neo4jGraphStore, Neo4jIndexStore

    docs = paragraphs(n + int(seconds) + 10)
    base, extra = docs[:n], docs[n:]
    store = Neo4jGraphStore(uri, *auth)
    Neo4jIndexStore(store).clear()
    index = SemanticIndex(passages=True)
    Neo4jIndexStore.for_index(index, store)
    index.add_documents(base)
    Path(folder, "ready").touch()
    while not Path(folder, "go").exists():
        time.sleep(0.1)
    commits = []
    end = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < end:
        t = time.perf_counter()
        if i % 3 == 2:
            index.delete([extra[i - 2].id])
        else:
            index.add_documents([extra[i]])
        commits.append(time.perf_counter() - t)
        i += 1
        time.sleep(max(0.0, 1.0 - (time.perf_counter() - t)))
    Path(folder, "commits.json").write_text(json.dumps(commits))
    store.close()


def serve(reader, retriever, until) -> tuple[list[float], int, int]:
    times, errors, untyped = [], 0, 0
    i = 0
    while not until():
        q = QUESTIONS[i % len(QUESTIONS)]
        i += 1
        t = time.perf_counter()
        try:
            retriever.retrieve(q)
        except SemragError:
            errors += 1
            continue
        except Exception:  # noqa: BLE001 - counted: an error outside semrag's types
            untyped += 1
            continue
        times.append(time.perf_counter() - t)
    return times, errors, untyped


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out")
    ap.add_argument("--docs", type=int, default=1500)
    ap.add_argument("--seconds", type=float, default=60.0)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from semrag.neo4j import Neo4jGraphStore, Neo4jIndex
    from tests.neo4j_server.server import Neo4jTestServer

    server = Neo4jTestServer(heap="1g", page_cache_mb=512)
    server.start()
    try:
        auth = (server.user, server.password)
        with tempfile.TemporaryDirectory() as folder:
            proc = mp.get_context("spawn").Process(
                target=writer, args=(server.uri, auth, args.docs, args.seconds, folder)
            )
            proc.start()
            while not Path(folder, "ready").exists():
                if not proc.is_alive():
                    raise SystemExit("the writer died")
                time.sleep(0.5)
            store = Neo4jGraphStore(server.uri, *auth)
            reader = Neo4jIndex(store)
            retriever = GraphRetriever(reader, k=5)
            retriever.retrieve(QUESTIONS[0])  # the first read of the graph, not timed
            part = reader.parts["passages"]
            read_before = part.documents_read
            stop = time.perf_counter() + min(30.0, args.seconds / 2)
            idle, e1, u1 = serve(reader, retriever, lambda: time.perf_counter() > stop)
            Path(folder, "go").touch()
            reads_before = part.reads
            busy, e2, u2 = serve(reader, retriever, lambda: not proc.is_alive())
            proc.join()
            commits = json.loads(Path(folder, "commits.json").read_text())
            versions = part.reads - reads_before
            store.close()
    finally:
        server.stop()

    def ms(xs: list[float], q: float) -> float:
        return 1000 * statistics.quantiles(xs, n=100)[int(q) - 1] if len(xs) > 2 else 0.0

    report = header(
        "Neo4j serving under a writer's changes",
        f"{args.docs} SQuAD dev paragraphs (title in metadata), SemanticIndex(passages=True) "
        f"on the packaged MiniLM, written by Neo4jIndexStore to a real Neo4j 5.26; the writer "
        f"commits about one change a second for {args.seconds:.0f} s; this process serves "
        "GraphRetriever(Neo4jIndex(store), k=5)",
    )
    rows = [
        {
            "phase": "idle",
            "queries": len(idle),
            "p50 ms": ms(idle, 50),
            "p95 ms": ms(idle, 95),
            "errors": e1,
            "untyped errors": u1,
        },
        {
            "phase": "writer committing",
            "queries": len(busy),
            "p50 ms": ms(busy, 50),
            "p95 ms": ms(busy, 95),
            "errors": e2,
            "untyped errors": u2,
        },
    ]
    report += "\n" + table(rows, list(rows[0])) + "\n"
    report += (
        table(
            [
                {
                    "commits": len(commits),
                    "commit p50 ms": 1000 * statistics.median(commits),
                    "versions the server followed": versions,
                    "documents read to follow them": part.documents_read - read_before,
                    "busy p50 / idle p50": ms(busy, 50) / ms(idle, 50),
                }
            ],
            [
                "commits",
                "commit p50 ms",
                "versions the server followed",
                "documents read to follow them",
                "busy p50 / idle p50",
            ],
        )
        + "\n"
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
