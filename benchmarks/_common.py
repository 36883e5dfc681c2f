"""Shared helpers for the benchmarks: data paths, peers' embedding wrappers, measurement."""

from __future__ import annotations

import ctypes
import datetime as _dt
import gc
import os
import platform
import shlex
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Before anything imports a model: no hub, no tokenizer threads beside the benchmark's own.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

DATA = Path(os.environ.get("SEMRAG_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
BATCH = 64


# Questions for the sectioned_text corpus (Wikipedia, novels, lectures), for latency runs.
CORPUS_QUERIES = [
    "When did the war end and who signed the treaty?",
    "How does a neural network learn its weights?",
    "What did she say to him at the door?",
    "What is the energy of a particle in a box?",
    "Where was the capital of the empire?",
    "Which algorithm finds the shortest path in a graph?",
    "Why did the river flood the valley?",
    "Who wrote the first novel of the series?",
]


LEAD_INS = ("", "Tell me: ", "Question: ", "I wonder: ")
"""Neutral openings that make each round of a repeated query set new text (see :func:`fresh`)."""


def fresh(queries: list[str], rounds: int) -> list[str]:
    """``rounds`` rounds of ``queries``, each round worded anew (a lead-in per round).

    A version of the index keeps its latest dense and BM25 answers, so a query asked twice
    is answered from them; latency is timed on queries the index has not seen.
    """
    if rounds > len(LEAD_INS):
        raise ValueError(f"at most {len(LEAD_INS)} rounds")
    return [lead + q for lead in LEAD_INS[:rounds] for q in queries]


def forget_answers(index: Any) -> None:
    """Drop the latest answers an embedded index keeps (dense and BM25), so a query already
    asked (an untimed warm-up pass) is searched again. An index on a server keeps none."""
    from semrag.index import BM25Index, DenseIndex

    dense, sparse = getattr(index, "dense", None), getattr(index, "sparse", None)
    if isinstance(dense, DenseIndex):
        dense._version.recent.clear()
    if isinstance(sparse, BM25Index):
        sparse._recent.clear()


def need(path: Path) -> Path:
    if not path.exists():
        sys.exit(f"data set missing: {path} (set SEMRAG_DATA to the shared data folder)")
    return path


def _run_commit() -> str:
    import report as results

    return results.commit()


RUN_COMMIT = _run_commit()
"""The commit this run measures, read when the run starts (``-dirty``: with changes)."""


def header(title: str, data: str) -> str:
    cmd = shlex.join(["python", f"benchmarks/{Path(sys.argv[0]).name}", *sys.argv[1:]])
    cpu = platform.processor() or platform.machine()
    return (
        f"### {title}\n\n"
        f"- command: `{cmd}`\n"
        f"- data: {data}\n"
        f"- commit: {RUN_COMMIT}\n"
        f"- date: {_dt.date.today().isoformat()}; machine: {os.cpu_count()} cores, {cpu}, "
        f"Python {platform.python_version()}, no GPU\n"
    )


def locate(text: str, pieces: list[str]) -> list[int]:
    """Start offsets of chunk strings that a peer returned without offsets (in order)."""
    starts, pos = [], 0
    for piece in pieces:
        probe = piece.strip()
        at = text.find(probe, pos)
        if at < 0:
            at = text.find(probe[:40], pos)
        starts.append(max(at, pos) if at >= 0 else pos)
        pos = starts[-1] + 1
    return starts


def emit(report: str, out: str | None) -> None:
    """Print the report; with ``out``, keep each of its tables as a record and rewrite
    ``benchmarks/RESULTS.md`` from the records (``benchmarks/report.py``).

    Any other ``out`` gets the report appended as it was printed (a scratch file).
    """
    import report as results

    print(report)
    if not out:
        return
    if Path(out).resolve() != results.RESULTS:  # a scratch report (tests, trials): appended
        with open(out, "a", encoding="utf-8") as f:
            f.write(report + "\n")
        return
    results.record_report(report)
    results.build()


def table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3f}" if abs(v) < 100 else f"{v:,.0f}"
        return str(v)

    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(fmt(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(out)


def load_model() -> Any:
    from sentence_transformers import SentenceTransformer

    from semrag.embeddings import packaged_model_path

    return SentenceTransformer(packaged_model_path(), device="cpu", local_files_only=True)


# Quality benchmarks share one text -> vector store across all contestants: the vectors
# are the same whoever asks, and it saves re-embedding identical windows and sentences.
STORE: dict[str, np.ndarray] = {}


def load_store(path: str | None) -> None:
    """Fill :data:`STORE` from a file an earlier run kept (``--cache``), if there is one."""
    if path and os.path.exists(path):
        with np.load(path, allow_pickle=False) as z:
            STORE.update(zip(z["texts"].tolist(), z["vectors"], strict=True))


def save_store(path: str | None) -> None:
    """Keep :data:`STORE` in ``path`` (``--cache``) for the next run."""
    if path and STORE:
        np.savez(path, texts=np.array(list(STORE)), vectors=np.stack(list(STORE.values())))


def encode_cached(model: Any, texts: list[str]) -> list[np.ndarray]:
    todo = [t for t in dict.fromkeys(texts) if t not in STORE]
    if todo:
        vecs = model.encode(todo, batch_size=BATCH, normalize_embeddings=True)
        STORE.update(zip(todo, vecs, strict=True))
    return [STORE[t] for t in texts]


def cached_semrag_embedder(model: Any) -> Any:
    from semrag.embeddings import BaseEmbedder
    from semrag.text import HuggingFaceTokenizer

    class StoreEmbedder(BaseEmbedder):
        def _embed_batch(self, texts: list[str]) -> Any:
            return np.stack(encode_cached(model, texts))

        @property
        def tokenizer(self) -> Any:  # MiniLM's word pieces, as the packaged embedder counts
            return pieces

    pieces = HuggingFaceTokenizer(model.tokenizer, name="all-MiniLM-L6-v2")
    return StoreEmbedder(cache_size=0)


def lc_embeddings(model: Any, *, cache: bool = False) -> Any:
    """A LangChain Embeddings over the shared model (optionally caching, for quality runs)."""
    from langchain_core.embeddings import Embeddings

    class STEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            if cache:
                return [v.tolist() for v in encode_cached(model, texts)]
            todo = list(dict.fromkeys(texts))
            vecs = model.encode(todo, batch_size=BATCH, normalize_embeddings=True)
            found = dict(zip(todo, vecs.tolist(), strict=True))
            return [found[t] for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return self.embed_documents([text])[0]

    return STEmbeddings()


def li_embeddings(model: Any, *, cache: bool = False) -> Any:
    """A LlamaIndex BaseEmbedding over the shared model."""
    from llama_index.core.base.embeddings.base import BaseEmbedding

    lc = lc_embeddings(model, cache=cache)

    class STEmbedding(BaseEmbedding):
        def _get_text_embedding(self, text: str) -> list[float]:
            return lc.embed_documents([text])[0]

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return lc.embed_documents(texts)

        def _get_query_embedding(self, query: str) -> list[float]:
            return lc.embed_documents([query])[0]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    return STEmbedding(embed_batch_size=BATCH)


def chonkie_embeddings(model: Any, *, cache: bool = False) -> Any:
    from chonkie.embeddings import SentenceTransformerEmbeddings

    if not cache:
        return SentenceTransformerEmbeddings(model)

    class Cached(SentenceTransformerEmbeddings):
        def embed_batch(self, texts: list[str]) -> list[np.ndarray]:
            return encode_cached(model, texts)

        def embed(self, text: str) -> np.ndarray:
            return self.embed_batch([text])[0]

    return Cached(model)


class Shared:
    """The shared model wrapped for semrag and each peer, all over one text -> vector store."""

    def __init__(self, model: Any) -> None:
        self.model = model

    @property
    def semrag(self) -> Any:
        return cached_semrag_embedder(self.model)

    @property
    def langchain(self) -> Any:
        return lc_embeddings(self.model, cache=True)

    @property
    def llama_index(self) -> Any:
        return li_embeddings(self.model, cache=True)

    @property
    def chonkie(self) -> Any:
        return chonkie_embeddings(self.model, cache=True)


ENSEMBLE = "LangChain EnsembleRetriever (RRF, equal weights)"


def langchain_peers(docs: list[Any], model: Any, k: int) -> dict[str, Any]:
    """LangChain's FAISS, BM25Retriever and their equal-weight RRF ensemble over ``docs``."""
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever
    from langchain_community.vectorstores import FAISS

    dense = FAISS.from_documents(docs, lc_embeddings(model)).as_retriever(search_kwargs={"k": k})
    bm25 = BM25Retriever.from_documents(docs, k=k)
    return {
        "LangChain FAISS (dense)": dense,
        "LangChain BM25Retriever": bm25,
        ENSEMBLE: EnsembleRetriever(retrievers=[dense, bm25], weights=[0.5, 0.5]),
    }


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _trim() -> None:
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass


def rss_mb(*, trim: bool = False) -> float:
    """The process's resident set now in MB, after a garbage collection (Linux).

    With ``trim``, the C heap first returns its free pages to the system (glibc's
    ``malloc_trim``), so the figure is what the process holds, not what it once freed.
    """
    if trim:
        _trim()
    else:
        gc.collect()
    return _rss_bytes() / 2**20


def measure(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """Run ``fn``; return (result, seconds, peak RSS growth in MB above the start)."""
    _trim()
    base = _rss_bytes()
    peak = base
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, _rss_bytes())
            time.sleep(0.005)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    start = time.perf_counter()
    try:
        result = fn()
    finally:
        elapsed = time.perf_counter() - start
        stop.set()
        t.join()
    peak = max(peak, _rss_bytes())
    return result, elapsed, (peak - base) / 2**20


MULTIHOP_KS = (2, 5, 10, 20)


def query_latency(
    fn: Callable[[str], Any], queries: list[str], emb: Any, *, warmup: int = 5
) -> dict[str, float]:
    """p50 / p95 milliseconds of ``fn`` per query, one at a time after ``warmup`` queries.

    The embedder's cache is cleared before and after, so every system embeds afresh; the
    warm-up queries are not timed (the index keeps its latest answers).
    """
    for q in queries[:warmup]:
        fn(q)
    emb.clear_cache()
    times = []
    for q in queries[warmup:]:
        t0 = time.perf_counter()
        fn(q)
        times.append(1000 * (time.perf_counter() - t0))
    emb.clear_cache()
    return {"p50 ms": float(np.percentile(times, 50)), "p95 ms": float(np.percentile(times, 95))}


def distinct(ids: list[str]) -> list[str]:
    """Ids in first-seen order without repeats (chunks -> ranked paragraphs)."""
    return list(dict.fromkeys(ids))


def evaluate_multihop(name: str, ranked_lists: list[list[str]], questions: Any) -> dict:
    """full@k (every supporting paragraph in the first k) and para@k (their share)."""
    row: dict = {"retriever": name}
    for k in MULTIHOP_KS:
        para, full = [], []
        for ranked, q in zip(ranked_lists, questions, strict=True):
            top = set(ranked[:k])
            hit = sum(p in top for p in q.supporting)
            para.append(hit / len(q.supporting))
            full.append(float(hit == len(q.supporting)))
        row[f"full@{k}"] = float(np.mean(full))
        row[f"para@{k}"] = float(np.mean(para))
    return row


def segmentation_scores(docs: list[Any], starts_per_doc: list[list[int]]) -> dict[str, float]:
    """Predicted section starts (character offsets) against each document's gold ones.

    Means over the documents of Pk, WindowDiff and boundary F1 (within 3 words), all over
    word gaps, and of the number of starts predicted (``"starts"``).
    """
    from semrag.eval.metrics import (
        boundaries_from_offsets,
        boundary_f1,
        pk,
        window_diff,
        word_starts,
    )

    rows = []
    for doc, starts in zip(docs, starts_per_doc, strict=True):
        words = word_starts(doc.text)
        gold = boundaries_from_offsets(words, doc.section_starts)
        hyp = boundaries_from_offsets(words, starts)
        f1 = boundary_f1(gold, hyp, tolerance=3)[2]
        rows.append((pk(gold, hyp), window_diff(gold, hyp), f1, len(starts)))
    means = np.mean(np.array(rows, dtype=float).reshape(-1, 4), axis=0)
    return dict(zip(("Pk", "WD", "F1", "starts"), means.tolist(), strict=True))


def splitting_corpora(chars: int = 300_000) -> dict[str, list[str]]:
    """Five development corpora of real documents, the first ``chars`` characters of each.

    SQuAD v1.1 dev articles (title, paragraphs between blank lines), PubMedQA abstracts
    (each section under its label line), and three sectioned sets as plain text: Wikipedia
    articles, Gutenberg novels and AI lecture transcripts (one sentence a line).
    """
    import gzip
    import json

    from semrag.eval.datasets import read_sectioned_text

    found: dict[str, list[str]] = {}
    with gzip.open(need(DATA / "squad_dev" / "dev-v1.1.json.gz"), "rt", encoding="utf-8") as f:
        found["SQuAD"] = [
            "\n\n".join([a["title"].replace("_", " ")] + [p["context"] for p in a["paragraphs"]])
            for a in json.load(f)["data"]
        ]
    with gzip.open(need(DATA / "pubmedqa" / "ori_pqal.json.gz"), "rt", encoding="utf-8") as f:
        found["PubMedQA"] = [
            "\n\n".join(
                f"{label.title()}\n{c}" for label, c in zip(v["LABELS"], v["CONTEXTS"], strict=True)
            )
            for _, v in sorted(json.load(f).items())
        ]
    for name, folder in (
        ("Wikipedia", "wiki300_badjatiya"),
        ("novels", "fiction82_gutenberg"),
        ("lectures", "lectures_ai_manual"),
    ):
        found[name] = [d.text for d in read_sectioned_text(need(DATA / "sectioned_text" / folder))]
    out: dict[str, list[str]] = {}
    for name, texts in found.items():
        taken: list[str] = []
        left = chars
        for text in texts:
            if left <= 0:
                break
            taken.append(text[:left])
            left -= len(taken[-1])
        out[name] = taken
    return out
