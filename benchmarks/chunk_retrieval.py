"""Chunking judged by retrieval on real documents, at an equal context budget.

Documents are kept whole: SQuAD v1.1 dev articles (title line, then the paragraphs
separated by blank lines) and PubMedQA abstracts (each section under its label line, the
conclusion last). Every question has a reference excerpt given by character offsets: the
sentence that holds the SQuAD answer; the PubMedQA abstract's conclusion (its long answer).

Every splitter chunks every document; all chunks of a corpus are embedded with the same
packaged all-MiniLM-L6-v2 and pooled; each question retrieves by cosine similarity. The
retrieved text is then cut to a budget: chunks in rank order until the budget of
characters is spent (the last one cut to fit), so a splitter with small chunks gets more
of them. Metrics over the reference characters (Chroma's chunking evaluation, at a
budget rather than at k): recall = share of the reference inside the retrieved text,
precision = reference characters / budget spent, IoU = reference characters retrieved /
(retrieved characters + reference characters missed). ``@5`` is the same at 5 chunks,
whatever their size.

The scoring is :func:`semrag.eval.evaluate_splitters` (the API users run on their own
documents): splitters whose chunks come without offsets are located in the text; chunks
that cannot be found are counted (``lost``) and retrieve nothing.

The articles and abstracts are split in two halves by position (even/odd): ``--half dev``
is where defaults were chosen, ``--half check`` the other half, which no setting saw.

    python benchmarks/chunk_retrieval.py [--half dev|check|all] [--squad N] [--pubmed N]
        [--only NAME ...] [--json FILE] [--out FILE]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from _common import DATA, Shared, emit, header, load_store, need, save_store, table

from semrag.text import split_sentences

BUDGETS = (1000, 4000)
K = 5


@dataclass(frozen=True)
class Question:
    text: str
    doc: int
    reference: tuple[int, int]


@dataclass
class Corpus:
    name: str
    texts: list[str]
    questions: list[Question]


def _half(items: list[Any], half: str) -> list[Any]:
    if half == "all":
        return items
    return items[0::2] if half == "dev" else items[1::2]


def squad(half: str, limit: int | None, per_article: int) -> Corpus:
    """SQuAD articles whole; the reference is the sentence holding the first answer."""
    with gzip.open(need(DATA / "squad_dev" / "dev-v1.1.json.gz"), "rt", encoding="utf-8") as f:
        data = _half(json.load(f)["data"], half)[:limit]
    rng = random.Random(0)
    texts: list[str] = []
    questions: list[Question] = []
    for article in data:
        title = article["title"].replace("_", " ")
        pos = len(title) + 2
        parts = [title]
        located: list[tuple[str, int]] = []
        for para in article["paragraphs"]:
            for qa in para["qas"]:
                located.append((qa["question"], pos + qa["answers"][0]["answer_start"]))
            parts.append(para["context"])
            pos += len(para["context"]) + 2
        text = "\n\n".join(parts)
        sentences = split_sentences(text)
        starts = [s.start for s in sentences]
        for q, at in rng.sample(located, min(per_article, len(located))):
            s = sentences[int(np.searchsorted(starts, at, side="right")) - 1]
            questions.append(Question(q, len(texts), (s.start, s.end)))
        texts.append(text)
    return Corpus("SQuAD", texts, questions)


def pubmed(half: str, limit: int | None) -> Corpus:
    """PubMedQA abstracts whole (label lines as headings); the reference is the conclusion."""
    with gzip.open(need(DATA / "pubmedqa" / "ori_pqal.json.gz"), "rt", encoding="utf-8") as f:
        data = json.load(f)
    texts: list[str] = []
    questions: list[Question] = []
    for pmid in _half(sorted(data), half)[:limit]:
        item = data[pmid]
        parts = [
            f"{label.title()}\n{context}"
            for label, context in zip(item["LABELS"], item["CONTEXTS"], strict=True)
        ]
        head = "\n\n".join(parts) + "\n\nConclusions\n"
        text = head + item["LONG_ANSWER"]
        questions.append(Question(item["QUESTION"], len(texts), (len(head), len(text))))
        texts.append(text)
    return Corpus("PubMedQA", texts, questions)


# -- splitters ------------------------------------------------------------------------------
def _variant(spec: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``"k=v,k=v"`` -> (splitter keywords, module constants of ``semrag.chunking.semantic``)."""
    import ast

    kwargs: dict[str, Any] = {}
    constants: dict[str, Any] = {}
    for part in filter(None, spec.split(",")):
        key, _, value = part.partition("=")
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            parsed = value
        (constants if key.isupper() else kwargs)[key] = parsed
    return kwargs, constants


def _patched(splitter: Any, constants: dict[str, Any]) -> Callable[[str], list[Any]]:
    """``splitter`` run with module constants of ``semrag.chunking.semantic`` changed."""
    import semrag.chunking.semantic as semantic
    from semrag.eval.splitters import as_splitter

    split = as_splitter(splitter)

    def patched(text: str) -> list[Any]:
        saved = {k: getattr(semantic, k) for k in constants}
        for k, v in constants.items():
            setattr(semantic, k, v)
        try:
            return list(split(text))
        finally:
            for k, v in saved.items():
                setattr(semantic, k, v)

    return patched


def splitters(model: Any, only: list[str] | None, variants: list[str] = ()) -> dict[str, Any]:
    """The splitters compared, as :func:`semrag.eval.evaluate_splitters` takes them."""
    from chonkie import RecursiveChunker as ChonkieRecursive
    from chonkie import SemanticChunker as ChonkieSemantic
    from langchain_experimental.text_splitter import SemanticChunker as LCSemantic
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from llama_index.core.node_parser import SemanticSplitterNodeParser, SentenceSplitter

    from langchain_semrag import MFCTextSplitter, PSCTextSplitter, SemanticTextSplitter
    from semrag.static_embedder import StaticEmbedder

    lc_emb = Shared(model).langchain
    ours = Shared(model).semrag

    def chonkie(chunker: Any) -> Callable[[str], list[tuple[str, int]]]:
        return lambda text: [(c.text, c.start_index) for c in chunker.chunk(text)]

    table_: dict[str, Callable[[], Any]] = {
        "semrag SemanticTextSplitter()": lambda: SemanticTextSplitter(),
        "semrag SemanticTextSplitter(MiniLM boundaries)": lambda: SemanticTextSplitter(ours),
        "semrag SemanticTextSplitter(1000, 200)": lambda: SemanticTextSplitter(
            ours, chunk_size=1000, chunk_overlap=200
        ),
        "semrag paper rule (target_tokens=None, max_tokens=1024)": lambda: SemanticTextSplitter(
            target_tokens=None, max_tokens=1024
        ),
        "semrag paper rule, MiniLM boundaries": lambda: SemanticTextSplitter(
            ours, target_tokens=None, max_tokens=1024
        ),
        "semrag PSCTextSplitter() (shipped weights)": lambda: PSCTextSplitter(ours),
        "semrag MFCTextSplitter() (shipped weights)": lambda: MFCTextSplitter(ours),
        "LangChain Recursive(1000, 200)": lambda: RecursiveCharacterTextSplitter(
            chunk_size=1000, chunk_overlap=200, add_start_index=True
        ),
        "LangChain Recursive(400, 0)": lambda: RecursiveCharacterTextSplitter(
            chunk_size=400, chunk_overlap=0, add_start_index=True
        ),
        "LangChain SemanticChunker": lambda: LCSemantic(lc_emb, add_start_index=True),
        "chonkie RecursiveChunker": lambda: chonkie(ChonkieRecursive()),
        "chonkie SemanticChunker": lambda: chonkie(
            ChonkieSemantic(embedding_model=Shared(model).chonkie)
        ),
        "LlamaIndex SentenceSplitter": lambda: SentenceSplitter(),
        "LlamaIndex SemanticSplitter": lambda: SemanticSplitterNodeParser(
            embed_model=Shared(model).llama_index
        ),
    }
    chosen = {
        name: make()
        for name, make in table_.items()
        if not only or any(o.lower() in name.lower() for o in only)
    }
    for spec in variants:
        kwargs, constants = _variant(spec)
        if "static" in kwargs:  # static=PATH: boundaries from another static model
            kwargs["embeddings"] = StaticEmbedder(kwargs.pop("static"))
        elif kwargs.pop("minilm", False):
            kwargs["embeddings"] = ours
        chosen[f"semrag variant {spec}"] = _patched(SemanticTextSplitter(**kwargs), constants)
    return chosen


def evaluated(corpus: Corpus, chosen: dict[str, Any], embedder: Any):
    """:func:`semrag.eval.evaluate_splitters` on one corpus (documents named by position)."""
    from semrag.eval import EvalQuestion, Excerpt, evaluate_splitters
    from semrag.types import Document

    docs = [Document(str(i), t) for i, t in enumerate(corpus.texts)]
    questions = [
        EvalQuestion(q.text, (Excerpt(str(q.doc), *q.reference),)) for q in corpus.questions
    ]
    return evaluate_splitters(docs, questions, chosen, embedder=embedder, budgets=BUDGETS, k=K)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--half", choices=["dev", "check", "all"], default="dev")
    ap.add_argument("--squad", type=int, default=None, help="articles (default: all of the half)")
    ap.add_argument("--per-article", type=int, default=40, help="SQuAD questions per article")
    ap.add_argument("--pubmed", type=int, default=250, help="abstracts")
    ap.add_argument("--only", nargs="*", default=None, help="splitters whose name contains one")
    ap.add_argument("--ours", nargs="*", default=[], help="extra semrag settings: k=v,K=v")
    ap.add_argument("--json", default=None, help="write the results as JSON here")
    ap.add_argument("--out", default=None)
    ap.add_argument("--cache", default=None, help="keep the text -> vector store in this file")
    args = ap.parse_args()
    load_store(args.cache)

    from semrag.embeddings import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder().model
    corpora = [squad(args.half, args.squad, args.per_article), pubmed(args.half, args.pubmed)]
    chosen = splitters(model, args.only, args.ours)
    embedder = Shared(model).semrag
    tables = {c.name: evaluated(c, chosen, embedder) for c in corpora}
    rows: list[dict[str, Any]] = []
    for name in chosen:
        row: dict[str, Any] = {"splitter": name}
        for c in corpora:
            for key, value in tables[c.name].row(name).items():
                if key != "splitter":
                    row[f"{c.name} {key}"] = value
        row["seconds"] = sum(tables[c.name].row(name)["split seconds"] for c in corpora)
        for key in ("recall 1000", "recall 4000", "recall @5"):
            row[f"mean {key}"] = float(np.mean([row[f"{c.name} {key}"] for c in corpora]))
        rows.append(row)
        print(
            f"{name:45s} "
            + " ".join(
                f"{c.name}: r1k={row[f'{c.name} recall 1000']:.3f} "
                f"r4k={row[f'{c.name} recall 4000']:.3f} r@5={row[f'{c.name} recall @5']:.3f} "
                f"chars={row[f'{c.name} mean chars']:.0f} lost={row[f'{c.name} lost']}"
                for c in corpora
            ),
            flush=True,
        )
    data = (
        f"half `{args.half}`: SQuAD v1.1 dev, {len(corpora[0].texts)} articles, "
        f"{len(corpora[0].questions)} questions; PubMedQA PQA-L, {len(corpora[1].texts)} "
        f"abstracts, {len(corpora[1].questions)} questions; all-MiniLM-L6-v2"
    )
    cols = ["splitter"]
    for c in corpora:
        cols += [f"{c.name} recall 1000", f"{c.name} recall 4000", f"{c.name} recall @5"]
    cols += ["SQuAD mean chars", "PubMedQA mean chars", "SQuAD lost"]
    report = "\n".join(
        [
            header("Chunking judged by retrieval on real documents (equal budget)", data),
            "",
            table(rows, cols),
            "",
            "Recall is the share of the reference excerpt's characters inside the retrieved "
            "text; columns 1000 and 4000 are the context budgets in characters, @5 is five "
            "chunks whatever their size. IoU and precision at the same budgets:",
            "",
            table(
                rows,
                ["splitter"]
                + [
                    f"{c.name} {m} {b}"
                    for c in corpora
                    for m in ("IoU", "precision")
                    for b in BUDGETS
                ],
            ),
        ]
    )
    emit(report, args.out)
    save_store(args.cache)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"data": data, "command": " ".join(sys.argv), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
