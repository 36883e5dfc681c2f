"""What building the default index costs, stage by stage, against one pass of its encoder.

Corpus: whole SQuAD dev articles (../shared/data/squad_dev) up to ``--chars`` characters.
In one process, on the same text:

* ``SemanticIndex()`` (the defaults: the onnxruntime MiniLM, ``SemanticChunker()``) builds the
  index; the stages are timed by wrapping the chunker's and the embedder's calls (the
  commit is what is left: the dense, BM25 and passage parts);
* the same build with sentence-transformers' MiniLM (torch) as its embedder (no span
  pooling: it embeds the sentences apart), and 0.3's default (MiniLM boundaries, so the
  sentences are embedded before the chunks are cut);
* one pass of each encoder over the index's chunk texts (each at its default batch size);
* LangChain's ``InMemoryVectorStore.from_documents`` and LlamaIndex's ``VectorStoreIndex``
  over the same chunks, embedding with sentence-transformers' MiniLM.

The ratio that matters is the build against one pass of sentence-transformers' MiniLM over
its chunks (what a user pays for a plain vector store). A last table says what each
index's vectors find for the articles' questions (dense recall of the answer's sentence at
2,000 characters; the answer's sentence nearest the question among its article's).

Usage: python benchmarks/index_build.py [--out F] [--chars N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from collections import defaultdict
from typing import Any

import numpy as np
from _common import BATCH, DATA, emit, header, lc_embeddings, li_embeddings, load_model, need, table

from semrag import Document, SemanticChunker, SemanticIndex
from semrag.embeddings import SentenceTransformerEmbedder
from semrag.minilm import MiniLMEmbedder


def articles(chars: int) -> tuple[list[Document], list[tuple[str, str, int]]]:
    """Whole articles up to ``chars`` characters, and their questions (doc, text, answer at)."""
    with gzip.open(need(DATA / "squad_dev" / "dev-v1.1.json.gz"), "rt", encoding="utf-8") as f:
        data = json.load(f)["data"]
    docs, questions, total = [], [], 0
    for a in data:
        at = 0
        for p in a["paragraphs"]:
            questions += [
                (a["title"], q["question"], at + q["answers"][0]["answer_start"]) for q in p["qas"]
            ]
            at += len(p["context"]) + 2
        text = "\n\n".join(p["context"] for p in a["paragraphs"])
        docs.append(Document(a["title"], text, {"title": a["title"]}))
        total += len(text)
        if total >= chars:
            break
    return docs, questions


def quality(index: SemanticIndex, questions: list[tuple[str, str, int]]) -> dict[str, float]:
    """What the index's vectors find for the questions.

    ``dense recall @2000``: the share of the answer's sentence inside the first chunks of
    dense search, in rank order, until 2,000 characters; ``sentence top-1``: how often the
    answer's sentence is the nearest of its article's sentences to the question (what IAR,
    SPC and community search read the sentence vectors for).
    """
    reader = index.reader()
    records = reader.documents(sorted({d for d, _, _ in questions}))
    recall, top1 = [], []
    queries = index.embedder.embed([q for _, q, _ in questions])
    for (doc_id, _, at), q in zip(questions, queries, strict=True):
        record = records[doc_id]
        gold = next(i for i, s in enumerate(record.sentences) if s.start <= at < s.end)
        a, b = record.sentences[gold].start, record.sentences[gold].end
        sims = np.asarray(record.sentence_vectors, np.float32) @ q
        top1.append(float(int(np.argmax(sims)) == gold))
        covered, budget = set(), 2000
        for hit in index.search_vector(q, k=40):
            if budget <= 0:
                break
            c = hit.chunk
            end = min(c.end, c.start + budget)
            budget -= c.end - c.start
            if c.doc_id == doc_id:
                covered.update(range(max(a, c.start), min(b, end)))
        recall.append(len(covered) / (b - a))
    return {"dense recall @2000": float(np.mean(recall)), "sentence top-1": float(np.mean(top1))}


class Stages:
    """Wall time per stage, by wrapping an object's methods on the instance."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.texts: dict[str, int] = defaultdict(int)

    def wrap(self, obj: Any, method: str, name: Any) -> None:
        real = getattr(obj, method)

        def timed(*args: Any, **kwargs: Any) -> Any:
            label = name(args) if callable(name) else name
            t = time.perf_counter()
            try:
                return real(*args, **kwargs)
            finally:
                self.seconds[label] += time.perf_counter() - t
                if args and isinstance(args[0], list):
                    self.texts[label] += len(args[0])

        setattr(obj, method, timed)


def build(
    docs: list[Document], embedder: Any, chunker: Any = None
) -> tuple[SemanticIndex, float, Stages]:
    """Build ``SemanticIndex(embedder=...)`` over ``docs``, timing its stages.

    Per block of documents the chunker places the boundaries (on its static encoder); an
    embedder that pools spans (the onnxruntime MiniLM) then reads the chunks and themes once and
    the sentence vectors are pooled from that pass; any other embeds the sentences, then
    the chunks and themes (its calls alternate).
    """
    stages = Stages()
    index = SemanticIndex(embedder=embedder, chunker=chunker, show_progress=False)
    state = {"calls": 0, "inside": False, "chunking": False}

    def which(args: tuple) -> str:
        if state["inside"] or state["chunking"]:
            return "(inside)"
        state["calls"] += 1
        return "embed sentences" if state["calls"] % 2 else "embed chunks + themes"

    stages.wrap(embedder, "embed", which)
    if hasattr(embedder, "embed_pooled"):
        pooled = embedder.embed_pooled

        def pooling(*args: Any, **kwargs: Any) -> Any:
            state["inside"] = True
            try:
                return pooled(*args, **kwargs)
            finally:
                state["inside"] = False

        embedder.embed_pooled = pooling
        stages.wrap(embedder, "embed_pooled", POOLED)
    chunk = index.chunker.chunk_with_stats

    def chunking(*args: Any, **kwargs: Any) -> Any:
        state["chunking"] = True  # a chunker on the index's embedder: served from its cache
        try:
            return chunk(*args, **kwargs)
        finally:
            state["chunking"] = False

    index.chunker.chunk_with_stats = chunking
    stages.wrap(index.chunker, "chunk_with_stats", "chunk (boundaries)")
    stages.wrap(index.chunker, "sentences", "split sentences")
    t = time.perf_counter()
    index.add_documents(docs)
    total = time.perf_counter() - t
    stages.seconds.pop("(inside)", None)
    return index, total, stages


POOLED = "embed chunks + themes, sentences pooled from them"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out")
    ap.add_argument("--chars", type=int, default=1_000_000)
    args = ap.parse_args()
    docs, questions = articles(args.chars)
    model = load_model()
    model.encode(["warm up"])
    numpy_minilm = MiniLMEmbedder(cache_size=0)
    numpy_minilm.embed(["warm up"])

    index, ours, stages = build(docs, MiniLMEmbedder())
    texts = [c.text for c in index.chunks()]
    torch_index, torch_build, torch_stages = build(docs, SentenceTransformerEmbedder())
    old_minilm = MiniLMEmbedder()  # the 0.3 default: MiniLM boundaries, sentences apart
    old_index, old_build, old_stages = build(docs, old_minilm, SemanticChunker(old_minilm))

    t = time.perf_counter()
    model.encode(texts, batch_size=BATCH, normalize_embeddings=True)
    st_pass = time.perf_counter() - t
    t = time.perf_counter()
    numpy_minilm.embed(texts)
    np_pass = time.perf_counter() - t
    t = time.perf_counter()
    MiniLMEmbedder(cache_size=0, threads=1).embed(texts)
    np_serial = time.perf_counter() - t
    t = time.perf_counter()
    model.encode(texts, normalize_embeddings=True)
    st_default = time.perf_counter() - t

    from langchain_core.documents import Document as LCDocument
    from langchain_core.vectorstores import InMemoryVectorStore
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    t = time.perf_counter()
    InMemoryVectorStore.from_documents([LCDocument(x) for x in texts], lc_embeddings(model))
    lc = time.perf_counter() - t
    t = time.perf_counter()
    VectorStoreIndex([TextNode(text=x) for x in texts], embed_model=li_embeddings(model))
    li = time.perf_counter() - t

    chars = sum(len(d.text) for d in docs)
    report = header(
        "Building the default index against one pass of its encoder",
        f"{len(docs)} SQuAD dev articles whole ({chars / 1e6:.2f} MB), {len(texts)} chunks of "
        f"SemanticIndex()'s default chunker; encoders: the onnxruntime MiniLM (semrag's default) "
        f"(batches of 8, {numpy_minilm.threads} side by side) and sentence-transformers' "
        f"MiniLM (torch, CPU, batches of {BATCH}; its own default of 32 in one row)",
    )
    rows = []
    runs = (
        ("onnxruntime MiniLM", stages, ours),
        ("sentence-transformers", torch_stages, torch_build),
        ("onnxruntime MiniLM, MiniLM boundaries (0.3)", old_stages, old_build),
    )
    for name, st, total in runs:
        accounted = sum(st.seconds.values())
        for label in (
            "split sentences",
            "embed sentences",
            "chunk (boundaries)",
            "embed chunks + themes",
            POOLED,
        ):
            if label not in st.seconds:
                continue
            rows.append(
                {
                    "encoder": name,
                    "stage": label,
                    "texts": st.texts.get(label, ""),
                    "seconds": st.seconds.get(label, 0.0),
                    "share": st.seconds.get(label, 0.0) / total,
                }
            )
        rows.append(
            {
                "encoder": name,
                "stage": "commit and the rest",
                "texts": "",
                "seconds": total - accounted,
                "share": (total - accounted) / total,
            }
        )
        rows.append(
            {
                "encoder": name,
                "stage": "**build**",
                "texts": len(texts),
                "seconds": total,
                "share": 1.0,
            }
        )
    report += "\n" + table(rows, ["encoder", "stage", "texts", "seconds", "share"]) + "\n"
    ratio = [
        ("SemanticIndex() build (onnxruntime MiniLM)", ours),
        ("SemanticIndex(embedder=SentenceTransformerEmbedder()) build", torch_build),
        ("0.3's default: SemanticIndex(chunker=SemanticChunker(MiniLM)) build", old_build),
        ("one pass over the chunks: sentence-transformers MiniLM", st_pass),
        ("one pass over the chunks: sentence-transformers MiniLM, batches of 32", st_default),
        ("one pass over the chunks: onnxruntime MiniLM", np_pass),
        ("one pass over the chunks: onnxruntime MiniLM, one batch at a time", np_serial),
        ("LangChain InMemoryVectorStore.from_documents (ST MiniLM)", lc),
        ("LlamaIndex VectorStoreIndex (ST MiniLM)", li),
    ]
    report += (
        table(
            [{"run": r, "seconds": s, "x one ST pass": s / st_pass} for r, s in ratio],
            ["run", "seconds", "x one ST pass"],
        )
        + "\n"
    )
    found = [
        {"index": "SemanticIndex() (static boundaries, sentences pooled)"}
        | quality(index, questions),
        {"index": "SemanticIndex(embedder=SentenceTransformerEmbedder()) (sentences apart)"}
        | quality(torch_index, questions),
        {"index": "0.3's default (MiniLM boundaries, sentences apart)"}
        | quality(old_index, questions),
    ]
    report += (
        f"\nWhat the vectors find ({len(questions)} questions of these articles): "
        + (quality.__doc__ or "").split("\n\n")[1].replace("\n   ", "").strip()
        + "\n\n"
        + table(found, ["index", "dense recall @2000", "sentence top-1"])
        + "\n"
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
