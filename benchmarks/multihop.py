"""Multi-hop retrieval on the development sets: semrag's graph retrievers against hybrid search.

Corpus per data set: every distinct paragraph (title, blank line, text) as one document,
indexed by a default ``SemanticIndex`` (SemanticChunker, packaged MiniLM). The LangChain
peers (FAISS, BM25Retriever, EnsembleRetriever with RRF and equal weights) index the same
paragraphs, one LangChain document each, with the same MiniLM.

Metric: full-support recall@k (every gold paragraph among the first k distinct paragraphs
a retriever returns) and ``R@k``, HippoRAG's recall@k (the share of the gold paragraphs
among them), k in (2, 5, 10, 20). semrag retrievers
return chunks; several chunks of one paragraph take one place.

Data: 2WikiMultihopQA (500 dev questions, ../shared/data/twowiki) and MuSiQue-Ans (100
questions, ../shared/data/musique). These are the only sets the defaults were chosen on.

Rows: the default ``GraphRetriever()`` (personalized PageRank over passages and entities)
with an ablation per component (and the exact power-iteration walk against the
default forward push, and the push to the earlier epsilon 1e-6), the default
``IntentAwareRetriever()`` and IAR with
fixed equal weights, IAR with the SSG traversal as its extended channel (the earlier
default) and IAR refining every intent (the default skips multi-hop questions), the SSG
query traversal (distinct spans), semrag's dense and BM25 channels, and the LangChain
peers. Latency (``--parts latency``): p50/p95 per query, one at
a time after a warm-up, on 2Wiki.

    python benchmarks/multihop.py [--parts quality latency] [--sets twowiki musique]
        [--only REGEX] [--out FILE]

With ``SEMRAG_BENCH_CACHE`` set, the built indexes are saved there and reused.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from _common import (  # noqa: E402
    BATCH,
    DATA,
    emit,
    header,
    lc_embeddings,
    need,
    query_latency,
    table,
)
from iar_fusion import build_index  # noqa: E402

from semrag.embeddings import SentenceTransformerEmbedder  # noqa: E402
from semrag.eval import evaluate_retrievers  # noqa: E402
from semrag.eval.datasets import read_musique, read_twowiki  # noqa: E402
from semrag.retrieval import GraphRetriever, IntentAwareRetriever, PPRRetriever  # noqa: E402

KS = (2, 5, 10, 20)
CHUNKS = 40  # chunks asked of semrag retrievers, enough for 20 distinct paragraphs
ENSEMBLE = "LangChain EnsembleRetriever (RRF, equal weights)"
DEFAULT = "semrag GraphRetriever() (default: ppr)"

SETS = {
    "twowiki": ("2WikiMultihopQA dev sample", "twowiki/2wiki_dev500_agenticrag.json", read_twowiki),
    "musique": ("MuSiQue-Ans", "musique/musique_ans_100.json.gz", read_musique),
}


def semrag_systems(index) -> dict:
    equal = {"dense": 1, "sparse": 1, "extended": 1}
    return {
        DEFAULT: GraphRetriever(index, k=CHUNKS),
        "  ablation: no entity seeds (dense seeds only)": PPRRetriever(
            index, k=CHUNKS, entity_seeds=False
        ),
        "  ablation: no dense passage seeds": PPRRetriever(index, k=CHUNKS, passage_weight=0.0),
        "  ablation: with synonym edges (k=10, cosine >= 0.8)": PPRRetriever(
            index, k=CHUNKS, synonym_k=10
        ),
        "  ablation: damping 0.5": PPRRetriever(index, k=CHUNKS, damping=0.5),
        "HippoRAG-style baseline (damping 0.5, synonym edges)": PPRRetriever(
            index, k=CHUNKS, damping=0.5, synonym_k=10
        ),
        "  ablation: no title phrases": PPRRetriever(index, k=CHUNKS, titles=False),
        "  ablation: power iteration over the whole graph (epsilon=None)": PPRRetriever(
            index, k=CHUNKS, epsilon=None
        ),
        "  ablation: forward push to epsilon 1e-6 (the earlier default)": PPRRetriever(
            index, k=CHUNKS, epsilon=1e-6
        ),
        "semrag IntentAwareRetriever()": IntentAwareRetriever(index, k=CHUNKS, m=CHUNKS),
        "  IAR with fixed equal weights": IntentAwareRetriever(
            index, k=CHUNKS, m=CHUNKS, weights=equal
        ),
        "  IAR with the SSG traversal as its extended channel": IntentAwareRetriever(
            index, k=CHUNKS, m=CHUNKS, extended="ssg"
        ),
        "  IAR with sentence refinement for every intent": IntentAwareRetriever(
            index, k=CHUNKS, m=CHUNKS, refine="sentence"
        ),
        "semrag GraphRetriever(strategy='ssg:query_traversal')": GraphRetriever(
            index, strategy="ssg:query_traversal", k=CHUNKS
        ),
    }


def lc_peers(docs, emb) -> dict:
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever
    from langchain_community.vectorstores import FAISS
    from langchain_core.documents import Document as LCDocument

    lc_docs = [LCDocument(d.text, metadata={"doc_id": d.id}) for d in docs]
    n = max(KS)
    faiss_ret = FAISS.from_documents(lc_docs, lc_embeddings(emb.model)).as_retriever(
        search_kwargs={"k": n}
    )
    bm25 = BM25Retriever.from_documents(lc_docs, k=n)
    return {
        "LangChain FAISS (dense)": faiss_ret,
        "LangChain BM25Retriever": bm25,
        ENSEMBLE: EnsembleRetriever(retrievers=[faiss_ret, bm25], weights=[0.5, 0.5]),
    }


def _ids(search, query: str) -> list[str]:
    return [h.chunk.doc_id for h in search(query, k=CHUNKS)]


def as_eval_questions(docs, questions) -> list:
    """The data set's questions as :mod:`semrag.eval` takes them (a gold paragraph, whole)."""
    from semrag.eval import EvalQuestion, Excerpt

    length = {d.id: len(d.text) for d in docs}
    return [
        EvalQuestion(q.question, tuple(Excerpt(p, 0, length[p]) for p in q.supporting))
        for q in questions
    ]


def quality(set_name: str, emb, only: str | None) -> str:
    title, rel, reader = SETS[set_name]
    docs, questions = reader(need(DATA / rel))
    index = build_index(set_name, docs, emb)
    pick = re.compile(only) if only else None
    systems: dict = {}
    for name, ret in semrag_systems(index).items():
        if pick is None or pick.search(name) or name == DEFAULT:
            systems[name] = ret
    for name, search in (
        ("semrag dense (SemanticIndex.search)", index.search),
        ("semrag BM25 (SemanticIndex.search_sparse)", index.search_sparse),
    ):
        if pick is None or pick.search(name):
            systems[name] = functools.partial(_ids, search)
    systems.update(lc_peers(docs, emb))  # LangChain retrievers, taken as they are
    t0 = time.perf_counter()
    scored = evaluate_retrievers(
        index, as_eval_questions(docs, questions), systems, ks=KS, baseline=ENSEMBLE
    )
    print(f"{len(systems)} retrievers scored in {time.perf_counter() - t0:.0f} s", flush=True)
    rows = scored.rows
    by = {r["retriever"]: r for r in rows}
    d = 100 * (by[DEFAULT]["full@10"] - by[ENSEMBLE]["full@10"])
    cols = ["retriever"] + [f"full@{k}" for k in KS] + [f"R@{k}" for k in KS]
    ci = ["retriever"] + [f"{m} - {ENSEMBLE} 95% CI" for m in ("R@2", "R@5", "full@10")]
    data = (
        f"{title}, {len(questions)} questions; {len(docs)} paragraphs -> "
        f"{len(index.chunks())} chunks"
    )
    return "\n".join(
        [
            header(f"Multi-hop retrieval: {title} (full-support and paragraph recall@k)", data),
            "",
            table(rows, cols),
            "",
            f"Default GraphRetriever full@10 {by[DEFAULT]['full@10']:.3f} vs EnsembleRetriever "
            f"{by[ENSEMBLE]['full@10']:.3f} ({d:+.1f} points; goal +5). `R@k` is HippoRAG's "
            "recall@k: the share of a question's gold paragraphs among the first k distinct "
            "paragraphs (the `para@k` of the other tables); `full@k`: all of them there. "
            "The HippoRAG 2 paper (arXiv 2502.14802) reports R@5 on full corpora, which "
            "these samples are not (see docs/retrievers.md).",
            "",
            "Differences to the EnsembleRetriever with 95% paired bootstrap intervals "
            "(semrag.eval.evaluate_retrievers; an interval that holds 0 is no difference "
            "these questions can show):",
            "",
            table(rows, ci),
            "",
        ]
    )


def latency(emb) -> str:
    title, rel, reader = SETS["twowiki"]
    docs, questions = reader(need(DATA / rel))
    index = build_index("twowiki", docs, emb)
    queries = [q.question for q in questions]
    rows = []

    def timed(name: str, fn) -> None:
        rows.append({"retriever": name, **query_latency(fn, queries, emb, warmup=10)})
        print(rows[-1], flush=True)

    timed("semrag GraphRetriever() (default: ppr), k=10", GraphRetriever(index, k=10).retrieve)
    timed(
        "semrag PPRRetriever(epsilon=None) (power iteration), k=10",
        PPRRetriever(index, k=10, epsilon=None).retrieve,
    )
    timed("semrag IntentAwareRetriever(), k=10", IntentAwareRetriever(index, k=10).retrieve)
    timed("semrag dense (SemanticIndex.search), k=10", index.search)
    timed(ENSEMBLE, lc_peers(docs, emb)[ENSEMBLE].invoke)
    t0 = time.perf_counter()
    PPRRetriever(index).passage_graph()
    build = time.perf_counter() - t0
    return "\n".join(
        [
            header(
                "Multi-hop query latency",
                f"{title}, {len(docs)} paragraphs, {len(index.chunks())} chunks; "
                f"{len(queries)} questions, one at a time after a warm-up",
            ),
            "",
            table(rows, ["retriever", "p50 ms", "p95 ms"]),
            "",
            f"Building the passage-entity graph once: {build:.1f} s.",
            "",
        ]
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", nargs="+", default=["quality", "latency"])
    ap.add_argument("--sets", nargs="+", default=list(SETS))
    ap.add_argument("--only", default=None, help="regex: only the semrag rows it matches")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    emb = SentenceTransformerEmbedder(batch_size=BATCH)
    if "quality" in args.parts:
        for name in args.sets:
            emit(quality(name, emb, args.only), args.out)
    if "latency" in args.parts:
        emit(latency(emb), args.out)


if __name__ == "__main__":
    main()
