"""Every retriever on every corpus shape, at equal context budgets: does the front door lose?

A user's corpus is rarely the multi-hop sets' one-paragraph documents. Each shape here is
indexed by a default ``SemanticIndex()`` (the default splitter, the packaged MiniLM) and
asked its own questions; every system returns its hits in its own order, and the hits fill
a context budget of characters (1,000 / 2,000 / 4,000; the last hit cut to fit). Score:
the share of the reference excerpt's characters inside the context (the chunking
benchmark's measure), and for the paragraph sets ``R@k``, the share of the gold paragraphs
among the first ``k`` distinct documents.

Shapes (development data only, ``../shared/data``):

* **long articles**: SQuAD v1.1 dev's even articles whole (title, paragraphs between
  blank lines); the reference is the sentence holding the answer.
* **abstracts**: PubMedQA abstracts whole (label lines as headings); the reference is the
  conclusion (the long answer).
* **sectioned**: Wikipedia articles of ``sectioned_text`` (human sections, one long
  document each); the query is a section's first sentence, the reference the rest of that
  section (what a reader of that sentence's context needs). Verbatim queries: it measures
  how much of the right section a system brings, not whether it finds it.
* **2Wiki / MuSiQue paragraphs**: every paragraph its own document (title, blank line,
  text); the references are the supporting paragraphs.
* **mixed**: the long articles and the MuSiQue paragraphs in one index, both question sets.

Systems: semrag's dense search (``index.search``), the default ``GraphRetriever()``, the
earlier default (``per_passage=1``), ``IntentAwareRetriever()``, semrag BM25; LangChain's
``InMemoryVectorStore`` over ``RecursiveCharacterTextSplitter(400, 0)`` chunks with the same
MiniLM, and LangChain's ``EnsembleRetriever`` (RRF, equal weights) of it and
``BM25Retriever`` over the same chunks. Every difference to dense search comes with a 95%
paired bootstrap interval (``semrag.eval``'s).

    python benchmarks/corpus_shapes.py [--shapes NAME ...] [--squad N] [--per-article N]
        [--pubmed N] [--wiki N] [--twowiki N] [--musique N] [--only REGEX]
        [--cache FILE] [--out FILE]
"""

from __future__ import annotations

import argparse
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import chunk_retrieval
import numpy as np
from _common import DATA, Shared, emit, header, lc_embeddings, load_store, need, save_store, table
from _datasets import read_musique, read_twowiki

from semrag import Document, SemanticIndex
from semrag.eval.chunking import _covered
from semrag.eval.verdict import paired_bootstrap
from semrag.retrieval import GraphRetriever, IntentAwareRetriever

BUDGETS = (1000, 2000, 4000)
KS = (1, 2, 5, 10)
HITS = 40  # hits asked of every system: enough to fill the largest budget
DENSE = "semrag dense (index.search)"
DEFAULT = "semrag GraphRetriever() (default)"

Span = tuple[int, int, int]  # (document position, start, end)


@dataclass(frozen=True)
class Question:
    text: str
    references: tuple[Span, ...]
    gold_docs: tuple[int, ...]  # documents that hold a reference (R@k on paragraph sets)


@dataclass
class Shape:
    name: str
    docs: list[Document]
    questions: list[Question]
    paragraphs: bool  # R@k columns (every document is one paragraph)


# -- the shapes ---------------------------------------------------------------------------
def _whole(corpus: Any, name: str, prefix: str) -> Shape:
    """One of the chunking benchmark's corpora (:mod:`chunk_retrieval`) as a shape."""
    docs = [Document(f"{prefix}{i}", t) for i, t in enumerate(corpus.texts)]
    questions = [Question(q.text, ((q.doc, *q.reference),), (q.doc,)) for q in corpus.questions]
    return Shape(name, docs, questions, False)


def long_articles(limit: int, per_article: int) -> Shape:
    return _whole(
        chunk_retrieval.squad("dev", limit, per_article), "long articles (SQuAD)", "squad"
    )


def abstracts(limit: int) -> Shape:
    return _whole(chunk_retrieval.pubmed("dev", limit), "abstracts (PubMedQA)", "pubmed")


def sectioned(limit: int, per_doc: int) -> Shape:
    from semrag.eval.datasets import read_sectioned_text

    found = read_sectioned_text(need(DATA / "sectioned_text" / "wiki300_badjatiya"))[0::2][:limit]
    rng = random.Random(0)
    docs, questions = [], []
    for sd in found:
        d, text = len(docs), sd.text
        starts = [*sd.section_starts, len(text)]
        candidates = []
        for i, section in enumerate(sd.sections):
            if i == 0 or len(section) < 4:
                continue
            first = section[0]
            begin = starts[i] + len(first) + 1
            candidates.append(Question(first, ((d, begin, starts[i + 1] - 1),), (d,)))
        questions += rng.sample(candidates, min(per_doc, len(candidates)))
        docs.append(Document(f"wiki{d}", text))
    return Shape("sectioned (Wikipedia)", docs, questions, False)


def paragraph_set(name: str, reader: Callable[..., Any], path: str, limit: int) -> Shape:
    all_docs, raw = reader(need(DATA / path))
    raw = raw[:limit]
    wanted = {pid for q in raw for pid in q.supporting}
    keep = sorted(wanted)
    rest = [d.id for d in all_docs if d.id not in wanted]
    # every gold paragraph plus the distractors of the questions kept (the sets' own pools)
    kept_ids = set(keep) | set(rest[: 9 * len(raw)])
    docs = [d for d in all_docs if d.id in kept_ids]
    pos = {d.id: i for i, d in enumerate(docs)}
    questions = [
        Question(
            q.question,
            tuple((pos[p], 0, len(docs[pos[p]].text)) for p in q.supporting),
            tuple(pos[p] for p in q.supporting),
        )
        for q in raw
        if q.supporting
    ]
    return Shape(name, docs, questions, True)


def mixed(articles: Shape, paragraphs: Shape) -> Shape:
    shift = len(articles.docs)

    def moved(q: Question) -> Question:
        refs = tuple((d + shift, s, e) for d, s, e in q.references)
        return Question(q.text, refs, tuple(d + shift for d in q.gold_docs))

    return Shape(
        "mixed (SQuAD articles + MuSiQue paragraphs)",
        articles.docs + paragraphs.docs,
        articles.questions + [moved(q) for q in paragraphs.questions],
        False,
    )


# -- the systems --------------------------------------------------------------------------
Ranked = Callable[[str], list[Span]]


def semrag_systems(index: SemanticIndex, pos: dict[str, int]) -> dict[str, Ranked]:
    def spans(hits: list[Any]) -> list[Span]:
        return [(pos[h.chunk.doc_id], h.chunk.start, h.chunk.end) for h in hits]

    graph = GraphRetriever(index, k=HITS)
    earlier = GraphRetriever(index, k=HITS, per_passage=1)
    iar = IntentAwareRetriever(index, k=HITS)
    return {
        DENSE: lambda q: spans(index.search(q, HITS)),
        DEFAULT: lambda q: spans(graph.retrieve(q)),
        "semrag GraphRetriever(per_passage=1) (the earlier default)": lambda q: spans(
            earlier.retrieve(q)
        ),
        "semrag IntentAwareRetriever()": lambda q: spans(iar.retrieve(q)),
        "semrag BM25 (index.search_sparse)": lambda q: spans(index.search_sparse(q, HITS)),
    }


def langchain_systems(docs: list[Document], model: Any) -> dict[str, Ranked]:
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever
    from langchain_core.documents import Document as LCDocument
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    split = RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=0, add_start_index=True)
    chunks = split.split_documents(
        [LCDocument(d.text, metadata={"pos": i}) for i, d in enumerate(docs)]
    )
    store = InMemoryVectorStore.from_documents(chunks, lc_embeddings(model, cache=True))
    dense = store.as_retriever(search_kwargs={"k": HITS})
    bm25 = BM25Retriever.from_documents(chunks, k=HITS)
    rrf = EnsembleRetriever(retrievers=[dense, bm25], weights=[0.5, 0.5])

    def spans(found: list[Any]) -> list[Span]:
        out = []
        for doc in found:
            start = doc.metadata["start_index"]
            out.append((doc.metadata["pos"], start, start + len(doc.page_content)))
        return out

    return {
        "LangChain InMemoryVectorStore (recursive 400)": lambda q: spans(dense.invoke(q)),
        "LangChain EnsembleRetriever (RRF, recursive 400)": lambda q: spans(rrf.invoke(q)),
    }


# -- scoring ------------------------------------------------------------------------------
def scores(ranked: list[Span], q: Question, paragraphs: bool) -> dict[str, float]:
    out: dict[str, float] = {}
    total = _covered(q.references, q.references)
    for budget in BUDGETS:
        taken, spent = [], 0
        for d, s, e in ranked:
            length = min(e - s, budget - spent)
            taken.append((d, s, s + length))
            spent += length
            if spent >= budget:
                break
        out[f"recall {budget}"] = _covered(taken, q.references) / total
    if paragraphs:
        order = list(dict.fromkeys(d for d, _, _ in ranked))
        gold = set(q.gold_docs)
        for k in KS:
            out[f"R@{k}"] = len(gold & set(order[:k])) / len(gold)
    return out


def run_shape(shape: Shape, model: Any, only: str | None) -> tuple[list[dict[str, Any]], str]:
    embedder = Shared(model).semrag
    t0 = time.perf_counter()
    index = SemanticIndex(embedder=embedder)
    index.add_documents(shape.docs)
    build = time.perf_counter() - t0
    pos = {d.id: i for i, d in enumerate(shape.docs)}
    systems = {**semrag_systems(index, pos), **langchain_systems(shape.docs, model)}
    if only:
        systems = {n: f for n, f in systems.items() if n == DENSE or re.search(only, n)}
    per: dict[str, list[dict[str, float]]] = {}
    latency: dict[str, float] = {}
    for name, fn in systems.items():
        for q in shape.questions[:3]:  # warm-up: the first query builds what a query needs
            fn(q.text)
        times, rows = [], []
        for q in shape.questions:
            t = time.perf_counter()
            ranked = fn(q.text)
            times.append(time.perf_counter() - t)
            rows.append(scores(ranked, q, shape.paragraphs))
        per[name] = rows
        latency[name] = 1000 * float(np.median(times))
        print(f"  {shape.name}: {name} done", flush=True)
    metrics = list(per[DENSE][0])
    out = []
    for name, rows in per.items():
        row: dict[str, Any] = {"system": name}
        for m in metrics:
            values = [r[m] for r in rows]
            row[m] = float(np.mean(values))
            if name != DENSE:
                base = [r[m] for r in per[DENSE]]
                d, lo, hi = paired_bootstrap(values, base)
                row[f"{m} vs dense"] = f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"
        row["p50 ms"] = latency[name]
        out.append(row)
    reader = index.reader()
    chunks = sum(len(reader.chunk_ids(d.id)) for d in shape.docs)
    note = (
        f"{shape.name}: {len(shape.docs)} documents, {chunks} default chunks, "
        f"{len(shape.questions)} questions; index built in {build:.0f} s (vectors from the "
        "run's shared text -> vector store when an earlier shape or run embedded them)"
    )
    return out, note


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--shapes",
        nargs="*",
        default=["long", "abstracts", "sectioned", "twowiki", "musique", "mixed"],
    )
    ap.add_argument("--squad", type=int, default=12, help="SQuAD articles (even ones)")
    ap.add_argument("--per-article", type=int, default=20)
    ap.add_argument("--pubmed", type=int, default=200)
    ap.add_argument("--wiki", type=int, default=20, help="sectioned Wikipedia articles")
    ap.add_argument("--twowiki", type=int, default=150, help="2Wiki questions")
    ap.add_argument("--musique", type=int, default=100, help="MuSiQue questions")
    ap.add_argument("--only", default=None, help="systems whose name matches (dense always)")
    ap.add_argument("--cache", default=None, help="keep the text -> vector store in this file")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    load_store(args.cache)

    from semrag.embeddings import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder().model
    made: dict[str, Callable[[], Shape]] = {
        "long": lambda: long_articles(args.squad, args.per_article),
        "abstracts": lambda: abstracts(args.pubmed),
        "sectioned": lambda: sectioned(args.wiki, 5),
        "twowiki": lambda: paragraph_set(
            "2Wiki paragraphs", read_twowiki, "twowiki/2wiki_dev500_agenticrag.json", args.twowiki
        ),
        "musique": lambda: paragraph_set(
            "MuSiQue paragraphs", read_musique, "musique/musique_ans_100.json.gz", args.musique
        ),
        "mixed": lambda: mixed(made["long"](), made["musique"]()),
    }
    reports = []
    for key in args.shapes:
        shape = made[key]()
        rows, note = run_shape(shape, model, args.only)
        cols = ["system", *(f"recall {b}" for b in BUDGETS)]
        cols += [f"R@{k}" for k in KS] if shape.paragraphs else []
        cols += ["p50 ms"]
        diffs = ["system", *(f"recall {b} vs dense" for b in BUDGETS)]
        diffs += [f"R@{k} vs dense" for k in KS] if shape.paragraphs else []
        reports.append(
            f"#### {shape.name}\n\n{note}\n\n{table(rows, cols)}\n\n"
            f"Differences to semrag's dense search (95% paired bootstrap):\n\n"
            f"{table(rows[1:], diffs)}\n"
        )
        print(reports[-1], flush=True)
        save_store(args.cache)
    data = (
        "development data only: SQuAD v1.1 dev (even articles), PubMedQA PQA-L (even "
        "abstracts), sectioned_text Wikipedia (even documents), 2WikiMultihopQA dev, "
        "MuSiQue-Ans; all-MiniLM-L6-v2 (packaged) for every system"
    )
    intro = (
        "Each system's hits, in its own order, fill the budget (characters); recall is the "
        "share of the reference excerpt's characters inside it. R@k: the share of the gold "
        "paragraphs among the first k distinct documents. p50 ms: per query after three "
        "warm-up queries, with every system's query vectors from one shared cache, so it "
        "times the retrieval work, not the encoder."
    )
    report = "\n".join(
        [header("Corpus shapes: every retriever at equal context budgets", data), "", intro, ""]
        + reports
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
