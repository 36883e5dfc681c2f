"""Multi-hop retrieval on the development sets: semrag's graph retrievers against hybrid search.

Corpus per data set: every distinct paragraph (title, blank line, text) as one document,
indexed by a default ``SemanticIndex`` (SemanticChunker, packaged MiniLM). The LangChain
peers (FAISS, BM25Retriever, EnsembleRetriever with RRF and equal weights) index the same
paragraphs, one LangChain document each, with the same MiniLM.

Metric: full-support recall@k (every gold paragraph among the first k distinct paragraphs
a retriever returns) and ``R@k``, HippoRAG's recall@k (the share of the gold paragraphs
among them), k in (1, 2, 5, 10, 20). semrag retrievers
return chunks; several chunks of one paragraph take one place. Every difference to dense
search (LangChain FAISS) and to the EnsembleRetriever comes with a 95% paired bootstrap
interval.

Data: 2WikiMultihopQA (500 dev questions, ../shared/data/twowiki) and MuSiQue-Ans (100
questions, ../shared/data/musique), and a single-hop check where dense search is strong:
SQuAD v1.1 dev (the even articles, the chunking benchmark's development half), every
paragraph a document under its article's title, 10 questions per article (seed 0). These
are the only sets the defaults were chosen on.

``--parts fit`` is how ``GraphRetriever()``'s ``passage_weight`` and ``similarity_weight``
were chosen: every pair of a grid on all three sets; the pairs at which the single-hop
check is within one question of dense search at every k are kept; of those, the one a
multi-hop set scores best (the mean of its R@k and full@k, never below dense at any k) is
fitted on that set and reported on the other (2Wiki -> MuSiQue, MuSiQue -> 2Wiki). It
also asks the SQuAD questions against whole articles (the chunking benchmark's documents)
and counts a question found when a hit holds its answer's sentence.

Rows: the default ``GraphRetriever()`` (personalized PageRank over passages and entities)
with an ablation per component (and the exact power-iteration walk against the
default forward push, and the push to the earlier epsilon 1e-6), the default
``IntentAwareRetriever()`` and IAR with
fixed equal weights, IAR with the SSG traversal as its extended channel (the earlier
default) and IAR refining every intent (the default skips multi-hop questions), the SSG
query traversal (distinct spans), semrag's dense and BM25 channels, and the LangChain
peers. Latency (``--parts latency``): p50/p95 per query, one at
a time after a warm-up, on 2Wiki.

    python benchmarks/multihop.py [--parts quality latency fit] [--sets twowiki musique squad]
        [--only REGEX] [--out FILE]

With ``SEMRAG_BENCH_CACHE`` set, the built indexes are saved there and reused.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import random
import re
import time

from _common import BATCH, DATA, ENSEMBLE, emit, header, langchain_peers, need, query_latency, table
from _datasets import MultiHopQuestion, read_musique, read_twowiki
from iar_fusion import build_index

from semrag import Document, SemanticIndex
from semrag.embeddings import SentenceTransformerEmbedder
from semrag.eval import evaluate_retrievers
from semrag.retrieval import GraphRetriever, IntentAwareRetriever, PPRRetriever

KS = (1, 2, 5, 10, 20)
CHUNKS = 40  # chunks asked of semrag retrievers, enough for 20 distinct paragraphs
FAISS = "LangChain FAISS (dense)"
DEFAULT = "semrag GraphRetriever() (default: ppr)"
# the grid of --parts fit: (passage_weight, similarity_weight)
GRID = [(p, s) for p in (0.005, 0.01, 0.02, 0.05) for s in (4.0, 6.0, 8.0, 10.0, 12.0)]


def read_squad_paragraphs(path) -> tuple[list[Document], list[MultiHopQuestion]]:
    """SQuAD dev's even articles: each paragraph a document (title line, blank line, text)."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        articles = json.load(f)["data"][0::2]
    rng = random.Random(0)
    docs, questions = [], []
    for a, article in enumerate(articles):
        title = article["title"].replace("_", " ")
        asked = []
        for p, para in enumerate(article["paragraphs"]):
            doc_id = f"squad{a}.{p}"
            docs.append(Document(doc_id, f"{title}\n\n{para['context']}", {"title": title}))
            asked += [(qa["id"], qa["question"], doc_id) for qa in para["qas"]]
        for qid, question, doc_id in rng.sample(asked, min(10, len(asked))):
            questions.append(MultiHopQuestion(qid, question, (doc_id,), "", "single-hop"))
    return docs, questions


SETS = {
    "twowiki": ("2WikiMultihopQA dev sample", "twowiki/2wiki_dev500_agenticrag.json", read_twowiki),
    "musique": ("MuSiQue-Ans", "musique/musique_ans_100.json.gz", read_musique),
    "squad": (
        "SQuAD v1.1 dev paragraphs (single-hop check)",
        "squad_dev/dev-v1.1.json.gz",
        read_squad_paragraphs,
    ),
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
        "  ablation: no title following (follow_titles=False)": PPRRetriever(
            index, k=CHUNKS, follow_titles=False
        ),
        "  ablation: title edges unweighted (title_weight=1)": PPRRetriever(
            index, k=CHUNKS, title_weight=1.0
        ),
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
    from langchain_core.documents import Document as LCDocument

    lc_docs = [LCDocument(d.text, metadata={"doc_id": d.id}) for d in docs]
    return langchain_peers(lc_docs, emb.model, max(KS))


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
        index, as_eval_questions(docs, questions), systems, ks=KS, baseline=[ENSEMBLE, FAISS]
    )
    print(f"{len(systems)} retrievers scored in {time.perf_counter() - t0:.0f} s", flush=True)
    rows = scored.rows
    by = {r["retriever"]: r for r in rows}
    d = 100 * (by[DEFAULT]["full@10"] - by[ENSEMBLE]["full@10"])
    cols = ["retriever"] + [f"full@{k}" for k in KS] + [f"R@{k}" for k in KS]
    shown = [DEFAULT, "semrag IntentAwareRetriever()", "semrag dense (SemanticIndex.search)"]
    ci_rows = [r for r in rows if r["retriever"] in shown]
    ci = {
        base: ["retriever"]
        + [f"{m} - {base}" for m in ("R@1", "R@2", "R@5", "R@10", "full@10")]
        + [f"{m} - {base} 95% CI" for m in ("R@1", "R@2", "R@5", "R@10", "full@10")]
        for base in (FAISS, ENSEMBLE)
    }
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
            "Differences to dense search (LangChain FAISS) and to the EnsembleRetriever, "
            "with 95% paired bootstrap intervals (semrag.eval.evaluate_retrievers; an "
            "interval that holds 0 is no difference these questions can show):",
            "",
            table(ci_rows, ci[FAISS]),
            "",
            table(ci_rows, ci[ENSEMBLE]),
            "",
        ]
    )


def _pair(pair: tuple[float, float]) -> str:
    return f"{pair[0]:g} / {pair[1]:g}"


def _weights_on(set_name: str, emb) -> tuple[object, int]:
    """Dense search and ``GraphRetriever()`` with every ``(passage_weight, similarity_weight)``."""
    _, rel, reader = SETS[set_name]
    docs, questions = reader(need(DATA / rel))
    index = build_index(set_name, docs, emb)
    systems = {"dense": functools.partial(_ids, index.search)}
    for pw, sw in GRID:
        systems[_pair((pw, sw))] = GraphRetriever(
            index, k=CHUNKS, passage_weight=pw, similarity_weight=sw
        )
    qs = as_eval_questions(docs, questions)
    return evaluate_retrievers(index, qs, systems, ks=KS[:4], baseline="dense"), len(qs)


def _area(row: dict) -> float:
    """The mean of R@k and full@k (k = 1, 2, 5, 10): how a weight scores on a fit set."""
    return sum(row[f"{m}@{k}"] for m in ("R", "full") for k in KS[:4]) / 8


def _sentence_check(emb) -> list[dict]:
    """SQuAD questions over whole articles: a hit counts when it holds the answer's sentence."""
    from chunk_retrieval import squad

    corpus = squad("dev", None, 10)
    index = SemanticIndex(embedder=emb)
    index.add_documents([Document(f"a{i}", t) for i, t in enumerate(corpus.texts)])
    systems = {
        "semrag dense (SemanticIndex.search)": lambda q: index.search(q, k=10),
        DEFAULT: GraphRetriever(index, k=10).retrieve,
        "GraphRetriever(per_passage=3)": GraphRetriever(index, k=10, per_passage=3).retrieve,
    }
    rows = []
    for name, search in systems.items():
        found = {k: 0 for k in KS[:4]}
        for q in corpus.questions:
            a, b = q.reference
            hits = search(q.text)
            for k in found:
                found[k] += any(
                    h.chunk.doc_id == f"a{q.doc}" and h.chunk.start < b and h.chunk.end > a
                    for h in hits[:k]
                )
        n = len(corpus.questions)
        rows.append({"retriever": name, **{f"R@{k}": v / n for k, v in found.items()}})
    return rows


def fit(emb) -> str:
    """How the two weights were chosen: fit on one multi-hop set, report on the other."""
    scored = {name: _weights_on(name, emb) for name in ("twowiki", "musique", "squad")}
    ks = [f"R@{k}" for k in KS[:4]]
    single, n_single = scored["squad"]
    dense_single = single.row("dense")
    keep = [
        w
        for w in GRID
        if all(single.row(_pair(w))[m] >= dense_single[m] - 1 / n_single - 1e-9 for m in ks)
    ]
    grid = []
    for w in GRID:
        row = {
            "passage / similarity weight": _pair(w),
            "single-hop kept": "yes" if w in keep else "no",
        }
        for name, (t, _) in scored.items():
            r = t.row(_pair(w))
            for m in ks:
                row[f"{name} {m} - dense"] = r[f"{m} - dense"]
            row[f"{name} full@10"] = r["full@10"]
        grid.append(row)
    cross = []
    for fit_on, test_on in (("twowiki", "musique"), ("musique", "twowiki")):
        t_fit, t_test = scored[fit_on][0], scored[test_on][0]
        above = [w for w in keep if all(t_fit.row(_pair(w))[f"{m} - dense"] >= 0 for m in ks)]
        if not above:
            cross.append({"fit on": fit_on, "weights": "none kept", "test on": test_on})
            continue
        best = max(above, key=lambda w: _area(t_fit.row(_pair(w))))
        r = t_test.row(_pair(best))
        cross.append(
            {
                "fit on": fit_on,
                "weights": _pair(best),
                "test on": test_on,
                **{f"{m} - dense": r[f"{m} - dense"] for m in ks},
                **{f"{m} - dense 95% CI": r[f"{m} - dense 95% CI"] for m in ks},
                "full@10 - dense": r["full@10 - dense"],
            }
        )
    cols = ["passage / similarity weight", "single-hop kept"] + [
        f"{name} {m}" for name in scored for m in (*[f"{k} - dense" for k in ks], "full@10")
    ]
    cols = [c for c in cols if c in grid[0]]
    sentence = _sentence_check(emb)
    return "\n".join(
        [
            header(
                "GraphRetriever's passage and similarity weights: fitted on one set, "
                "checked on the other",
                f"2Wiki ({scored['twowiki'][1]} q), MuSiQue ({scored['musique'][1]} q), "
                f"SQuAD paragraphs ({n_single} q, single-hop); k = {list(KS[:4])}",
            ),
            "",
            "Every pair of the grid (`passage_weight` / `similarity_weight`): R@k minus dense "
            "search's (semrag's own dense, the same chunks), and full@10. Kept: the "
            "single-hop check within one question of dense at every k.",
            "",
            table(grid, cols),
            "",
            "Cross-set: the kept pair a set scores best on (never below dense there), "
            "reported on the other set with 95% paired bootstrap intervals:",
            "",
            table(cross, list(cross[0])),
            "",
            "The SQuAD questions against whole articles (the chunking benchmark's development "
            "half: a section of about 2,000 characters is one passage): a question counts when "
            "one of the first k hits holds its answer's sentence. With one hit per passage (the "
            "default) the walk cannot return a section's second chunk, which dense search "
            "does; `per_passage=3` gives it back:",
            "",
            table(sentence, ["retriever", *ks]),
            "",
        ]
    )


def latency(emb) -> str:
    title, rel, reader = SETS["twowiki"]
    docs, questions = reader(need(DATA / rel))
    index = build_index("twowiki", docs, emb)
    queries = [q.question for q in questions]
    rows = []
    t0 = time.perf_counter()  # this index object has derived nothing yet
    GraphRetriever(index, k=10).retrieve(queries[0])
    first = time.perf_counter() - t0

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
            f"The first `GraphRetriever()` query over the built index (its passage graph "
            f"derived in process: phrases found, names embedded, graph assembled): {first:.1f} s; "
            "an index built with `SemanticIndex(passages=True)` keeps them instead.",
            "",
        ]
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", nargs="+", default=["quality", "latency"])
    ap.add_argument("--sets", nargs="+", default=["twowiki", "musique"])
    ap.add_argument("--only", default=None, help="regex: only the semrag rows it matches")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    emb = SentenceTransformerEmbedder(batch_size=BATCH)
    if "quality" in args.parts:
        for name in args.sets:
            emit(quality(name, emb, args.only), args.out)
    if "fit" in args.parts:
        emit(fit(emb), args.out)
    if "latency" in args.parts:
        emit(latency(emb), args.out)


if __name__ == "__main__":
    main()
