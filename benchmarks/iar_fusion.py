"""Intent-aware retrieval (IAR) against static fusion, on MuSiQue and SQuAD.

Every system ranks the *same chunks*: one SemanticIndex (default SemanticChunker, packaged
MiniLM) is built per data set, and the LangChain peers (FAISS, BM25Retriever and
EnsembleRetriever with RRF and equal weights) are built over the texts of its chunks.
Each system returns its top k chunks, k in (2, 5, 10, 20).

- MuSiQue-Ans (100 questions, every paragraph of every question as a document):
  para@k = share of supporting paragraphs with a chunk in the top k; full@k = share of
  questions with every supporting paragraph there (full-support recall).
- SQuAD v1.1 dev (all 48 articles as documents, every 10th question): recall@k = share
  of questions with a gold answer span inside one of the top k chunks.

IAR runs with no LLM, with its default extended channel (personalized PageRank) and with a
heuristic KnowledgeGraph of the index (SKETCH as the extended channel). Ablations: fixed
equal weights (no intent), no extended channel, the SSG traversal as the extended channel
(the earlier default), no sentence refinement, sentence refinement for every intent (the
default skips it for multi-hop questions). semrag's own dense
and BM25 channels are listed too (its BM25 lower-cases and splits on word characters;
LangChain's BM25Retriever splits on whitespace by default, which is part of the gap to the
LangChain rows).

Latency (``--parts latency``): p50/p95 per query on SQuAD of IAR, of SPC on IAR's
results, and of EnsembleRetriever, one query at a time after a warm-up.

    python benchmarks/iar_fusion.py [--parts quality latency] [--out FILE]
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from _common import BATCH, DATA, ENSEMBLE, emit, header, langchain_peers, need, query_latency, table
from _datasets import read_musique, read_squad_questions

from semrag import SemanticIndex
from semrag.embeddings import SentenceTransformerEmbedder
from semrag.graph import KnowledgeGraph
from semrag.retrieval import IntentAwareRetriever

KS = (2, 5, 10, 20)
SQUAD_EVERY = 10


def build_index(name: str, docs, emb) -> SemanticIndex:
    """Build (or, with SEMRAG_BENCH_CACHE set, reuse a saved) index of ``docs``."""
    cache = os.environ.get("SEMRAG_BENCH_CACHE")
    path = os.path.join(cache, name) if cache else None
    if path and os.path.exists(path):
        return SemanticIndex.load(path, embedder=emb)
    index = SemanticIndex(embedder=emb, ssg=True)
    index.add_documents(docs)
    if path:
        index.save(path)
    return index


def lc_peers(index: SemanticIndex, emb: SentenceTransformerEmbedder) -> dict:
    from langchain_core.documents import Document as LCDocument

    docs = [
        LCDocument(c.text, metadata={"doc_id": c.doc_id, "start": c.start}) for c in index.chunks()
    ]
    return langchain_peers(docs, emb.model, max(KS))


def systems(index: SemanticIndex) -> dict:
    n = max(KS)
    kg = KnowledgeGraph.build(index, communities=False)
    return {
        "semrag IntentAwareRetriever + KnowledgeGraph (SKETCH channel)": IntentAwareRetriever(
            index, k=n, m=n, graph=kg
        ),
        "semrag IntentAwareRetriever": IntentAwareRetriever(index, k=n, m=n),
        "  ablation: equal fixed weights": IntentAwareRetriever(
            index, k=n, m=n, weights={"dense": 1, "sparse": 1, "extended": 1}
        ),
        "  ablation: no extended channel": IntentAwareRetriever(index, k=n, m=n, extended=None),
        "  ablation: SSG traversal as the extended channel": IntentAwareRetriever(
            index, k=n, m=n, extended="ssg"
        ),
        "  ablation: no sentence refinement": IntentAwareRetriever(index, k=n, m=n, refine="none"),
        "  ablation: sentence refinement for every intent": IntentAwareRetriever(
            index, k=n, m=n, refine="sentence"
        ),
    }


def ranked_lists(index: SemanticIndex, emb, queries: list[str]) -> dict[str, list[list[tuple]]]:
    out: dict[str, list[list[tuple]]] = {}
    for name, ret in systems(index).items():
        out[name] = [[(h.chunk.doc_id, h.chunk.start) for h in ret.retrieve(q)] for q in queries]
        print(name, "done", flush=True)
    for name, search in (
        ("semrag dense (SemanticIndex.search)", index.search),
        ("semrag BM25 (SemanticIndex.search_sparse)", index.search_sparse),
    ):
        out[name] = [
            [(h.chunk.doc_id, h.chunk.start) for h in search(q, k=max(KS))] for q in queries
        ]
    for name, ret in lc_peers(index, emb).items():
        out[name] = [
            [(d.metadata["doc_id"], d.metadata["start"]) for d in ret.invoke(q)] for q in queries
        ]
        print(name, "done", flush=True)
    return out


def musique(emb) -> tuple[str, dict]:
    docs, questions = read_musique(need(DATA / "musique" / "musique_ans_100.json.gz"))
    index = build_index("musique", docs, emb)
    runs = ranked_lists(index, emb, [q.question for q in questions])
    rows = []
    for name, lists in runs.items():
        row: dict = {"retriever": name}
        for k in KS:
            para, full = [], []
            for ranked, q in zip(lists, questions, strict=True):
                top = {d for d, _ in ranked[:k]}
                hit = sum(p in top for p in q.supporting)
                para.append(hit / len(q.supporting))
                full.append(float(hit == len(q.supporting)))
            row[f"full@{k}"] = float(np.mean(full))
            row[f"para@{k}"] = float(np.mean(para))
        rows.append(row)
    cols = ["retriever"] + [f"full@{k}" for k in KS] + [f"para@{k}" for k in KS]
    data = (
        f"MuSiQue-Ans, {len(questions)} questions; {len(docs)} paragraphs -> "
        f"{len(index.chunks())} chunks"
    )
    return data, {"rows": rows, "cols": cols, "metric": "para@10"}


def squad(emb) -> tuple[str, dict]:
    docs, questions = read_squad_questions(need(DATA / "squad_dev" / "dev-v1.1.json.gz"))
    questions = questions[::SQUAD_EVERY]
    index = build_index("squad", docs, emb)
    spans = {(c.doc_id, c.start): c.end for c in index.chunks()}
    runs = ranked_lists(index, emb, [q.question for q in questions])
    rows = []
    for name, lists in runs.items():
        row: dict = {"retriever": name}
        for k in KS:
            hits = []
            for ranked, q in zip(lists, questions, strict=True):
                hits.append(
                    any(
                        d == q.doc_id and s <= a and b <= spans[(d, s)]
                        for d, s in ranked[:k]
                        for a, b in q.answers
                    )
                )
            row[f"recall@{k}"] = float(np.mean(hits))
        rows.append(row)
    cols = ["retriever"] + [f"recall@{k}" for k in KS]
    data = (
        f"SQuAD v1.1 dev, {len(docs)} articles -> {len(index.chunks())} chunks; "
        f"{len(questions)} questions (every {SQUAD_EVERY}th)"
    )
    return data, {"rows": rows, "cols": cols, "metric": "recall@10"}


def goal_line(result: dict, what: str) -> str:
    rows = {r["retriever"]: r for r in result["rows"]}
    ens = rows["LangChain EnsembleRetriever (RRF, equal weights)"]
    metric = result["metric"]
    parts = []
    for label, name in (
        ("IAR", "semrag IntentAwareRetriever"),
        ("IAR + graph", "semrag IntentAwareRetriever + KnowledgeGraph (SKETCH channel)"),
    ):
        iar = rows[name]
        extra = ""
        if "full@10" in iar:
            extra = f"; full@10 {iar['full@10']:.3f} vs {ens['full@10']:.3f}"
        d = 100 * (iar[metric] - ens[metric])
        parts.append(
            f"{label} {metric} {iar[metric]:.3f} vs EnsembleRetriever {ens[metric]:.3f} "
            f"({d:+.1f} points; goal +3){extra}"
        )
    return f"{what}: " + "; ".join(parts) + "."


def latency(emb) -> str:
    from semrag.postprocess import SPC

    docs, questions = read_squad_questions(need(DATA / "squad_dev" / "dev-v1.1.json.gz"))
    queries = [q.question for q in questions[::SQUAD_EVERY]][:300]
    index = build_index("squad", docs, emb)
    iar = IntentAwareRetriever(index, k=10)
    spc = SPC(index)
    ensemble = lc_peers(index, emb)[ENSEMBLE]
    hits_of = {q: iar.retrieve(q) for q in queries[:20]}  # warm-up (lazy builds, caches)
    emb.clear_cache()  # every system embeds its queries afresh
    rows = []

    def timed(name: str, fn) -> None:
        rows.append({"step": name, **query_latency(fn, queries, emb)})
        print(rows[-1], flush=True)

    timed("semrag IntentAwareRetriever (no LLM, k=10)", iar.retrieve)
    hits_of = {q: iar.retrieve(q) for q in queries}
    timed("semrag SPC.process on IAR's 10 hits (no LLM)", lambda q: spc.process(q, hits_of[q]))
    timed("LangChain EnsembleRetriever (RRF, FAISS + BM25)", ensemble.invoke)
    return "\n".join(
        [
            header(
                "Query latency: IAR, SPC and EnsembleRetriever",
                f"SQuAD v1.1 dev, {len(docs)} articles, {len(index.chunks())} chunks; "
                f"{len(queries)} questions, one at a time",
            ),
            "",
            table(rows, ["step", "p50 ms", "p95 ms"]),
            "",
        ]
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", nargs="+", default=["quality", "latency"])
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    emb = SentenceTransformerEmbedder(batch_size=BATCH)
    if "quality" in args.parts:
        m_data, m = musique(emb)
        s_data, s = squad(emb)
        report = "\n".join(
            [
                header(
                    "Intent-aware retrieval vs static fusion (recall@k, same chunks)",
                    f"{m_data}; {s_data}",
                ),
                "",
                "MuSiQue:",
                "",
                table(m["rows"], m["cols"]),
                "",
                "SQuAD:",
                "",
                table(s["rows"], s["cols"]),
                "",
                goal_line(m, "MuSiQue") + " " + goal_line(s, "SQuAD"),
                "",
            ]
        )
        emit(report, args.out)
    if "latency" in args.parts:
        emit(latency(emb), args.out)


if __name__ == "__main__":
    main()
