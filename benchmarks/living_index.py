"""A living index of about 100k window nodes: incremental changes against a rebuild.

Corpus: every section of ../shared/data/sectioned_text (Wikipedia articles, novels,
lecture transcripts; one document per section, its lines joined), embedded once with the
packaged MiniLM (or, with ``--embedder fake``, hashed bag-of-words vectors). Every
40th section is held out and added later. With
``SEMRAG_BENCH_CACHE`` set, the built index is saved there and reused.

Measured on the same index, in one process:

* **rebuild**: building every part (dense, BM25, graph) in one pass from the stored
  documents and vectors (no embedding), which is what the first query after any change
  cost before the living index (the graph was thrown away and rebuilt);
* **add 1 / 10 / 100 documents** and **delete 1**: the wall time of ``add_documents``
  (embedding the new text included) and of the commit alone (every part applying the
  change), and the longest time a commit kept readers waiting (it holds the write side of
  the index's lock only to swap the staged parts in);
* **first query after a change** against a steady-state query, per retriever;
* peak memory (RSS) of the process.

Usage: python benchmarks/living_index.py [--out F] [--every N] [--embedder minilm|fake]
[--knn auto|flat|hnsw]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import time
from pathlib import Path

from _common import CORPUS_QUERIES as QUERIES
from _common import DATA, emit, fresh, header, need, table

from semrag import Document, SemanticIndex, SSGRetriever
from semrag.index import SSGConfig
from semrag.index.parts.dense import DenseIndex
from semrag.index.parts.live_ssg import LiveSSG
from semrag.index.parts.sparse import BM25Index
from semrag.retrieval import IntentAwareRetriever

HOLD_OUT = 40
EMBEDDERS = {
    "minilm": "the packaged all-MiniLM-L6-v2",
    "fake": "FakeEmbedder (hashed bag of words, 384-d; no model, so the add times hold no "
    "model cost)",
}


FIRSTS = 5  # changes after which the first query is timed


def sections() -> list[Document]:
    root = need(DATA / "sectioned_text")
    docs = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for path in sorted(folder.iterdir()):
            if not path.is_file() or path.suffix in (".md",) or path.name.startswith("."):
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            parts = [p for p in text.split("==========") if p.strip()]
            for i, part in enumerate(parts):
                lines = [ln.strip() for ln in part.splitlines() if ln.strip()]
                if lines:
                    docs.append(Document(f"{folder.name}/{path.name}#{i}", " ".join(lines)))
    return docs


def embedder_for(name: str):
    if name == "fake":
        from semrag.testing import FakeEmbedder

        return FakeEmbedder(dim=384)
    from semrag.embeddings import as_embedder

    return as_embedder(None)


def build(docs: list[Document], name: str, knn: str) -> SemanticIndex:
    cache = os.environ.get("SEMRAG_BENCH_CACHE")
    where = Path(cache) / f"living-{name}" if cache else None
    embedder = embedder_for(name.split("-")[0])
    if where is not None and (where / "manifest.json").exists():
        return SemanticIndex.load(where, embedder=embedder)
    # Chunk vectors are the mean of their sentences' (no second embedding of long texts).
    index = SemanticIndex(
        embedder=embedder, chunk_vectors="mean", ssg=SSGConfig(knn=knn), show_progress=True
    )
    index.add_documents(docs)
    if where is not None:
        index.save(where)
    return index


def rebuild_seconds(index: SemanticIndex) -> float:
    """Every part built in one pass from the stored records (no embedding)."""
    entries = index.reader().corpus.records()
    t = time.perf_counter()
    LiveSSG.fresh(index.reader().ssg_config, index.embedder.dim, entries)
    dense = DenseIndex(index.embedder.dim)
    sparse = BM25Index()
    ids = [i for e in entries for i in e.chunk_ids]
    dense.add(ids, index.reader().dense.vectors_of(ids))
    sparse.add(ids, [c.text for e in entries for c in e.chunks])
    sparse.search("warm up the scorer", 1)
    return time.perf_counter() - t


def timed_commits(index: SemanticIndex) -> list[float]:
    """Wrap ``index._commit`` to record the time of every commit."""
    times: list[float] = []
    commit = index._commit

    def timed(*args, **kwargs):
        t = time.perf_counter()
        try:
            return commit(*args, **kwargs)
        finally:
            times.append(time.perf_counter() - t)

    index._commit = timed  # type: ignore[method-assign]
    return times


def timed_swaps(index: SemanticIndex) -> list[float]:
    """Record how long each commit holds the write side of the index's lock (readers wait)."""
    holds: list[float] = []
    corpus = index.reader().corpus
    swap = corpus.swap

    @contextlib.contextmanager
    def timed():
        with swap():
            t = time.perf_counter()
            try:
                yield
            finally:
                holds.append(time.perf_counter() - t)

    corpus.swap = timed  # type: ignore[method-assign]
    return holds


def retrievers(index: SemanticIndex) -> dict[str, object]:
    return {
        "dense": lambda q: index.search(q, k=10),
        "BM25": lambda q: index.search_sparse(q, k=10),
        "SSG triangulation_fulldim": SSGRetriever(
            index, strategy="triangulation_fulldim", k=10
        ).retrieve,
        "SSG ssg_traversal": SSGRetriever(index, strategy="ssg_traversal", k=10).retrieve,
        "IAR": IntentAwareRetriever(index, k=10).retrieve,
    }


def ms(seconds: float) -> float:
    return 1000 * seconds


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument(
        "--every",
        type=int,
        default=1,
        help="index every Nth section only (2 gives about 115k window nodes)",
    )
    ap.add_argument(
        "--embedder",
        choices=["minilm", "fake"],
        default="minilm",
        help="minilm: the packaged model; fake: hashed bag-of-words vectors (no model)",
    )
    ap.add_argument(
        "--knn",
        choices=["auto", "flat", "hnsw"],
        default="auto",
        help="SSGConfig.knn: hnsw keeps a persistent node index (approximate lists)",
    )
    args = ap.parse_args()
    docs = sections()
    held = docs[::HOLD_OUT]
    base = [d for i, d in enumerate(docs) if i % HOLD_OUT and i % args.every == 0]
    t = time.perf_counter()
    name = args.embedder if args.every == 1 else f"{args.embedder}-{args.every}"
    index = build(base, name if args.knn == "auto" else f"{name}-{args.knn}", args.knn)
    print(f"index ready in {time.perf_counter() - t:.0f} s: {index!r}")
    nodes = index.reader().ssg_view().graph.n_nodes
    run = retrievers(index)
    for fn in run.values():  # warm every retriever (and its caches) once
        fn("Which question warms the caches?")
    # The same estimator as the first queries below: the median of single timed calls of
    # the same five questions (three wordings, as the index keeps its latest answers), no
    # change in between.
    asked = fresh(QUERIES[:FIRSTS], 3)
    steady = {name: statistics.median(ms(_time(fn, q)) for q in asked) for name, fn in run.items()}
    rebuild = rebuild_seconds(index)
    commits = timed_commits(index)
    holds = timed_swaps(index)

    rows = [{"change": "rebuild every part (one pass, no embedding)", "wall s": rebuild}]
    pos = 0
    for n in (1, 10, 100):
        batch = held[pos : pos + n]
        pos += n
        start = len(commits)
        t = time.perf_counter()
        index.add_documents(batch)
        wall = time.perf_counter() - t
        commit = sum(commits[start:])
        rows.append(
            {
                "change": f"add {n} document{'s' * (n > 1)}",
                "wall s": wall,
                "commit s": commit,
                "commit / rebuild": commit / rebuild,
                "readers wait ms": ms(max(holds[start:])),
            }
        )
    victim = index.doc_ids[len(index.doc_ids) // 2]
    start = len(commits)
    t = time.perf_counter()
    index.delete(victim)
    wall = time.perf_counter() - t
    rows.append(
        {
            "change": "delete 1 document",
            "wall s": wall,
            "commit s": sum(commits[start:]),
            "commit / rebuild": sum(commits[start:]) / rebuild,
            "readers wait ms": ms(max(holds[start:])),
        }
    )

    # Each retriever's first query after its own changes: five documents are taken out, then
    # put back one change at a time, each followed by one query. The control is the same
    # query after a pass over as many bytes as a commit reads (the graph's node vectors), with
    # no change: the part of the slowdown that is only the CPU caches being cold.
    step = max(1, len(index.doc_ids) // FIRSTS)
    first: dict[str, list[float]] = {name: [] for name in run}
    control: dict[str, list[float]] = {name: [] for name in run}
    nodes_matrix = index.reader().ssg_view().graph.node_vectors
    unasked = fresh(QUERIES[:FIRSTS], 4)[-FIRSTS:]  # a wording the version has not answered
    for name, fn in run.items():
        gone = [index.document(d) for d in index.doc_ids[::step][:FIRSTS]]
        for doc in gone:
            index.delete(doc.id)
        for j, doc in enumerate(gone):
            index.add_documents([doc])
            first[name].append(ms(_time(fn, QUERIES[j % len(QUERIES)])))
        for j in range(FIRSTS):
            (nodes_matrix @ nodes_matrix[:64].T).max()  # a memory pass, no change
            control[name].append(ms(_time(fn, unasked[j])))
    latency = [
        {
            "retriever": name,
            "steady p50 ms": steady[name],
            "first query after a change, p50 ms": statistics.median(first[name]),
            "ratio": statistics.median(first[name]) / steady[name],
            "control: after a memory pass, no change, p50 ms": statistics.median(control[name]),
        }
        for name in run
    ]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report = (
        header(
            f"Living index: incremental changes vs a rebuild ({nodes:,} window nodes)",
            f"../shared/data/sectioned_text, {len(base):,} sections indexed"
            f"{f' (every {args.every}th)' if args.every > 1 else ''} "
            f"({nodes:,} window nodes, {len(index.chunks()):,} chunks), every "
            f"{HOLD_OUT}th section held out and added; embedder: {EMBEDDERS[args.embedder]}; "
            "chunk vectors: mean of their sentences; "
            f"SSGConfig(knn={args.knn!r}), the other settings default",
        )
        + "\n"
        + table(rows, ["change", "wall s", "commit s", "commit / rebuild", "readers wait ms"])
        + "\n\n"
        + table(
            latency,
            [
                "retriever",
                "steady p50 ms",
                "first query after a change, p50 ms",
                "ratio",
                "control: after a memory pass, no change, p50 ms",
            ],
        )
        + f"\n\nPeak RSS of the process: {peak_mb:,.0f} MB.\n"
    )
    emit(report, args.out)


def _time(fn, query: str) -> float:
    t = time.perf_counter()
    fn(query)
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
