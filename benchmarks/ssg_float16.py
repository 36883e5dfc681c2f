"""Float16 rows in the semantic similarity graph: the memory saved and what it costs.

Corpus: the 2WikiMultihopQA dev sample (every distinct paragraph one document, 500
questions), indexed three times from the same vectors (the packaged MiniLM; each text
embedded once and shared by the three builds):

* ``SSGConfig(knn="flat")``: the exact graph, the reference for the neighbour lists;
* ``SSGConfig(knn="hnsw")``: float32 rows and an ``IndexHNSWFlat`` node index;
* ``SSGConfig(knn="hnsw", vector_dtype="float16")``: float16 rows and an ``IndexHNSWSQ``
  (fp16) node index.

Reported per build: the SSG stage's time, the bytes of its node and sentence rows and of
its node index, the share of the exact inter-document neighbours its lists hold, and the
share of the exact top-10 anchor nodes its node search finds for the questions. Per SSG
algorithm: full-support and paragraph recall@10 on the questions, the overlap of the
float16 answers with the float32 ones (shared paragraphs in the top 10), and p50 latency
(query embeddings cached by a first pass).

    python benchmarks/ssg_float16.py [--out FILE]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import BATCH, DATA, distinct, emit, evaluate_multihop, header, need, table
from multihop import SETS
from scale import ssg_bytes, timed_parts

from semrag import SemanticIndex, SSGRetriever
from semrag.embeddings import SentenceTransformerEmbedder
from semrag.index import SSGConfig
from semrag.retrieval import ALGORITHMS

BUILDS = {
    "exact (flat, float32)": SSGConfig(knn="flat"),
    "hnsw, float32": SSGConfig(knn="hnsw"),
    "hnsw, float16": SSGConfig(knn="hnsw", vector_dtype="float16"),
}
K = 10


def inter_sets(index: SemanticIndex) -> list[set[int]]:
    g = index.reader().ssg_view().graph
    out = []
    for node in range(g.n_nodes):
        ids, _, kinds = g.neighbours(node)
        out.append(set(ids[kinds == 1].tolist()))
    return out


def share_found(got: list[set[int]], want: list[set[int]]) -> float:
    found = sum(len(a & b) for a, b in zip(got, want, strict=True))
    return found / max(1, sum(len(b) for b in want))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    title, rel, reader = SETS["twowiki"]
    docs, questions = reader(need(DATA / rel))
    queries = [q.question for q in questions]
    # one embedding of each text, shared by the three builds and every query
    emb = SentenceTransformerEmbedder(batch_size=BATCH, cache_size=1_000_000)

    indexes, builds, answers, quality, agreement = {}, [], {}, [], []
    for name, cfg in BUILDS.items():
        index = SemanticIndex(embedder=emb, ssg=cfg)
        spent: dict[str, float] = {}
        timed_parts(index, spent)
        index.add_documents(docs)
        indexes[name] = index
        rows_b, ann_b = ssg_bytes(index)
        builds.append(
            {
                "build": name,
                "SSG stage s": spent["ssg"],
                "rows MB": rows_b / 2**20,
                "node index MB": ann_b / 2**20,
            }
        )
        print(builds[-1], flush=True)
    exact = indexes["exact (flat, float32)"]
    want = inter_sets(exact)
    exact_search = exact.reader().ssg_view().node_index
    qvecs = [exact.reader().embed_query(q) for q in queries]
    anchors = [set(exact_search.search(v, K)[1][0].tolist()) for v in qvecs]
    for row, index in zip(builds, indexes.values(), strict=True):
        row["inter lists: exact neighbours held"] = share_found(inter_sets(index), want)
        search = index.reader().ssg_view().node_index
        got = [set(search.search(v, K)[1][0].tolist()) for v in qvecs]
        row["anchor search: exact top-10 found"] = share_found(got, anchors)

    for algorithm in ALGORITHMS:
        if algorithm == "llm_guided_traversal":
            continue
        for name, index in indexes.items():
            if name.startswith("exact"):
                continue
            retriever = SSGRetriever(index, strategy=algorithm, k=2 * K)
            times, lists = [], []
            for q in queries:
                t0 = time.perf_counter()
                hits = retriever.retrieve(q)
                times.append(1000 * (time.perf_counter() - t0))
                lists.append(distinct([h.chunk.doc_id for h in hits]))
            answers[(algorithm, name)] = lists
            row = evaluate_multihop(f"{algorithm} ({name})", lists, questions)
            row["p50 ms"] = float(np.percentile(times, 50))
            quality.append(row)
            print(row, flush=True)
        a, b = answers[(algorithm, "hnsw, float32")], answers[(algorithm, "hnsw, float16")]
        pairs = [(set(x[:K]), x[:K] == y[:K], set(y[:K])) for x, y in zip(a, b, strict=True)]
        agreement.append(
            {
                "algorithm": algorithm,
                "top-10 paragraphs shared (float16 vs float32)": float(
                    np.mean([len(x & y) / max(1, len(x)) for x, _, y in pairs])
                ),
                "identical top-10": float(np.mean([same for _, same, _ in pairs])),
            }
        )
    data = (
        f"{title}, {len(questions)} questions; {len(docs)} paragraphs -> "
        f"{len(exact.chunks())} chunks, {exact.ssg.n_nodes} SSG windows; packaged MiniLM "
        "(each text embedded once, shared by the builds)"
    )
    report = "\n".join(
        [
            header('SSG rows in float16 (SSGConfig(vector_dtype="float16"))', data),
            "",
            table(builds, list(builds[0])),
            "",
            table(quality, ["retriever", "full@10", "para@10", "full@20", "para@20", "p50 ms"]),
            "",
            table(agreement, list(agreement[0])),
            "",
        ]
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
