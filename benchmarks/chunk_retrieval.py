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

Splitters whose chunks come without offsets are located in the text; chunks that cannot
be found are counted (``lost``) and retrieve nothing.

The articles and abstracts are split in two halves by position (even/odd): ``--half dev``
is where defaults were chosen, ``--half check`` the other half, which no setting saw.

    python benchmarks/chunk_retrieval.py [--half dev|check|all] [--squad N] [--pubmed N]
        [--only NAME ...] [--json FILE] [--out FILE]
"""

from __future__ import annotations

import argparse
import bisect
import gzip
import json
import os
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
from _common import (  # noqa: E402
    DATA,
    STORE,
    cached_semrag_embedder,
    chonkie_embeddings,
    emit,
    encode_cached,
    header,
    lc_embeddings,
    li_embeddings,
    need,
    table,
)

from semrag.text import split_sentences  # noqa: E402

BUDGETS = (1000, 4000)
K = 5
Spans = list[tuple[int, int]]


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
def _squeezed(text: str) -> tuple[str, list[int]]:
    """``text`` with every whitespace run made one space, and each kept character's offset."""
    out: list[str] = []
    where: list[int] = []
    space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            if not space:
                out.append(" ")
                where.append(i)
            space = True
        else:
            out.append(ch)
            where.append(i)
            space = False
    return "".join(out), where


def _checked(text: str, pieces: list[tuple[str, int | None]]) -> Spans:
    """Spans of (chunk text, claimed start) pairs; a wrong or missing start is located.

    A piece whose whitespace the splitter changed (LangChain's ``SemanticChunker`` joins
    sentences with one space) is found with whitespace runs made equal; one that is still
    not found is lost, ``(-1, -1)``.
    """
    spans: Spans = []
    squeezed: tuple[str, list[int]] | None = None
    pos = 0
    for piece, start in pieces:
        if start is not None and start >= 0 and text[start : start + len(piece)] == piece:
            spans.append((start, start + len(piece)))
            pos = start + 1
            continue
        probe = piece.strip()
        at = text.find(probe, pos)
        if at < 0:
            at = text.find(probe)
        if at >= 0:
            spans.append((at, at + len(probe)))
            pos = at + 1
            continue
        if squeezed is None:
            squeezed = _squeezed(text)
        flat, where = squeezed
        small = _squeezed(probe)[0]
        from_ = bisect.bisect_left(where, pos)
        at = flat.find(small, from_)
        if at < 0:
            at = flat.find(small)
        if at < 0 or not small:
            spans.append((-1, -1))
            continue
        spans.append((where[at], where[at + len(small) - 1] + 1))
        pos = where[at] + 1
    return spans


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


def _patched(run: Callable[[list[str]], list[Spans]], constants: dict[str, Any]) -> Any:
    import semrag.chunking.semantic as semantic

    def patched(texts: list[str]) -> list[Spans]:
        saved = {k: getattr(semantic, k) for k in constants}
        for k, v in constants.items():
            setattr(semantic, k, v)
        try:
            return run(texts)
        finally:
            for k, v in saved.items():
                setattr(semantic, k, v)

    return patched


def splitters(
    model: Any, only: list[str] | None, variants: list[str] = ()
) -> dict[str, Callable[[list[str]], list[Spans]]]:
    from chonkie import RecursiveChunker as ChonkieRecursive
    from chonkie import SemanticChunker as ChonkieSemantic
    from langchain_experimental.text_splitter import SemanticChunker as LCSemantic
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from llama_index.core import Document as LIDocument
    from llama_index.core.node_parser import SemanticSplitterNodeParser, SentenceSplitter

    from langchain_semrag import MFCTextSplitter, PSCTextSplitter, SemanticTextSplitter

    lc_emb = lc_embeddings(model, cache=True)
    ours = cached_semrag_embedder(model)

    def langchain(splitter: Any) -> Callable[[list[str]], list[Spans]]:
        embedding_text = getattr(getattr(splitter, "chunker", None), "embedding_text", None)

        def run(texts: list[str]) -> list[Spans]:
            out = []
            for t in texts:
                docs = splitter.create_documents([t])
                spans = _checked(t, [(d.page_content, d.metadata.get("start_index")) for d in docs])
                heads = [d.metadata.get("semrag_headings") for d in docs]
                if embedding_text is not None and getattr(
                    splitter.chunker, "contextual_headings", False
                ):
                    # the text our index would embed: the heading path in front
                    spans = [
                        (a, b, " > ".join(h) + "\n\n" if h else "")
                        for (a, b), h in zip(spans, heads, strict=True)
                    ]
                out.append(spans)
            return out

        return run

    def llama(parser: Any) -> Callable[[list[str]], list[Spans]]:
        def run(texts: list[str]) -> list[Spans]:
            out = []
            for t in texts:
                nodes = parser.get_nodes_from_documents([LIDocument(text=t)])
                out.append(_checked(t, [(n.get_content(), n.start_char_idx) for n in nodes]))
            return out

        return run

    def chonkie(chunker: Any) -> Callable[[list[str]], list[Spans]]:
        def run(texts: list[str]) -> list[Spans]:
            return [_checked(t, [(c.text, c.start_index) for c in chunker.chunk(t)]) for t in texts]

        return run

    table_: dict[str, Callable[[], Callable[[list[str]], list[Spans]]]] = {
        "semrag SemanticTextSplitter()": lambda: langchain(SemanticTextSplitter(ours)),
        "semrag SemanticTextSplitter(1000, 200)": lambda: langchain(
            SemanticTextSplitter(ours, chunk_size=1000, chunk_overlap=200)
        ),
        "semrag paper rule (target_tokens=None, max_tokens=1024)": lambda: langchain(
            SemanticTextSplitter(ours, target_tokens=None, max_tokens=1024)
        ),
        "semrag PSCTextSplitter() (shipped weights)": lambda: langchain(PSCTextSplitter(ours)),
        "semrag MFCTextSplitter() (shipped weights)": lambda: langchain(MFCTextSplitter(ours)),
        "LangChain Recursive(1000, 200)": lambda: langchain(
            RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200, add_start_index=True)
        ),
        "LangChain Recursive(400, 0)": lambda: langchain(
            RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=0, add_start_index=True)
        ),
        "LangChain SemanticChunker": lambda: langchain(LCSemantic(lc_emb, add_start_index=True)),
        "chonkie RecursiveChunker": lambda: chonkie(ChonkieRecursive()),
        "chonkie SemanticChunker": lambda: chonkie(
            ChonkieSemantic(embedding_model=chonkie_embeddings(model, cache=True))
        ),
        "LlamaIndex SentenceSplitter": lambda: llama(SentenceSplitter()),
        "LlamaIndex SemanticSplitter": lambda: llama(
            SemanticSplitterNodeParser(embed_model=li_embeddings(model, cache=True))
        ),
    }
    chosen = {
        name: make()
        for name, make in table_.items()
        if not only or any(o.lower() in name.lower() for o in only)
    }
    for spec in variants:
        kwargs, constants = _variant(spec)
        chosen[f"semrag variant {spec}"] = _patched(
            langchain(SemanticTextSplitter(ours, **kwargs)), constants
        )
    return chosen


# -- scoring --------------------------------------------------------------------------------
def _overlap(spans: Spans, ref: tuple[int, int]) -> int:
    """Reference characters covered by the union of ``spans``."""
    a, b = ref
    covered = np.zeros(b - a, dtype=bool)
    for s, e in spans:
        lo, hi = max(s, a), min(e, b)
        if lo < hi:
            covered[lo - a : hi - a] = True
    return int(covered.sum())


def score(corpus: Corpus, spans: list[Spans], model: Any, queries: np.ndarray) -> dict[str, float]:
    owners = [(d, x[0], x[1]) for d, doc_spans in enumerate(spans) for x in doc_spans if x[0] >= 0]
    prefixes = [x[2] if len(x) > 2 else "" for doc_spans in spans for x in doc_spans if x[0] >= 0]
    texts = [p + corpus.texts[d][s:e] for p, (d, s, e) in zip(prefixes, owners, strict=True)]
    vectors = np.stack(encode_cached(model, texts)).astype(np.float32)
    lengths = np.array([e - s for _, s, e in owners])
    order = np.argsort(-(queries @ vectors.T), axis=1)
    sums: dict[str, list[float]] = {}
    for qi, q in enumerate(corpus.questions):
        ref_len = q.reference[1] - q.reference[0]
        ranked = order[qi]
        for label, budget in [*((f"{b}", b) for b in BUDGETS), (f"@{K}", None)]:
            taken: Spans = []
            spent = 0
            for j in ranked[:K] if budget is None else ranked:
                d, s, e = owners[j]
                length = int(lengths[j]) if budget is None else min(int(lengths[j]), budget - spent)
                spent += length
                if d == q.doc:
                    taken.append((s, s + length))
                if budget is not None and spent >= budget:
                    break
            hit = _overlap(taken, q.reference)
            sums.setdefault(f"recall {label}", []).append(hit / ref_len)
            sums.setdefault(f"precision {label}", []).append(hit / max(spent, 1))
            sums.setdefault(f"IoU {label}", []).append(hit / (spent + ref_len - hit))
    out = {k: float(np.mean(v)) for k, v in sums.items()}
    out["chunks"] = len(owners)
    out["mean chars"] = float(lengths.mean())
    out["lost"] = sum(1 for doc_spans in spans for x in doc_spans if x[0] < 0)
    return out


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
    if args.cache and os.path.exists(args.cache):
        with np.load(args.cache, allow_pickle=False) as z:
            STORE.update(zip(z["texts"].tolist(), z["vectors"], strict=True))

    from semrag.embeddings import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder().model
    corpora = [squad(args.half, args.squad, args.per_article), pubmed(args.half, args.pubmed)]
    queries = {
        c.name: np.stack(encode_cached(model, [q.text for q in c.questions])) for c in corpora
    }
    rows: list[dict[str, Any]] = []
    for name, run in splitters(model, args.only, args.ours).items():
        row: dict[str, Any] = {"splitter": name}
        t0 = time.perf_counter()
        for c in corpora:
            spans = run(c.texts)
            for key, value in score(c, spans, model, queries[c.name]).items():
                row[f"{c.name} {key}"] = value
        row["seconds"] = time.perf_counter() - t0
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
    if args.cache:
        np.savez(args.cache, texts=np.array(list(STORE)), vectors=np.stack(list(STORE.values())))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"data": data, "command": " ".join(sys.argv), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
