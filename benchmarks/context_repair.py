"""Repair or expand? SPC against what a user would pick instead, at the same context budget.

Real documents kept whole (development data only): SQuAD v1.1 dev's even articles (the
reference is the sentence holding the answer), PubMedQA abstracts (the reference is the
conclusion) and sectioned Wikipedia articles (the question is a section's first sentence,
the reference the rest of the section: answers longer than any budget).
Two ways of chunking: chunks cut mid-thought (a 64-token cap, no semantic
breaks: ``SemanticChunker(threshold=2.0, max_tokens=64)``) and the default splitter. Dense
search (the packaged MiniLM) returns the top ``k`` = 10 chunks; then every system turns
them into a context in its own order, and the context is cut to a budget of characters
(1,000 / 2,000 / 4,000; a text already in the context is not counted twice). Systems:

* **plain hits**: the chunks as retrieved.
* **SPC**: ``SPC(index, context=budget)`` (no LLM), the default at that budget; and
  ``SPC(index)`` with no budget (its anytime order, cut at the budget like any system's).
* **PrevNext** (LlamaIndex ``PrevNextNodePostprocessor(num_nodes=1, mode="both")`` over the
  same chunks as nodes with their prev/next relationships): each hit with its neighbours.
* **sentence window (3)** (LlamaIndex ``SentenceWindowNodeParser`` +
  ``MetadataReplacementPostProcessor``): sentences retrieved, each replaced by the three
  sentences around it.
* **AutoMerging** (LlamaIndex ``HierarchicalNodeParser`` 2048/512/128 tokens +
  ``AutoMergingRetriever``): leaves retrieved, merged into their parent when most of its
  children are.
* **parent documents** (LangChain ``ParentDocumentRetriever``, children 400 / parents 2,000
  characters, ``InMemoryVectorStore``): the parents of the retrieved children.
* **bigger chunks**: 256-token chunks of the same kind, plain hits.

Columns: recall of the reference's characters inside the context, full coverage (the whole
reference inside), characters the system added to the hits' own (per question, before the
cut), ms per query for the post-processing step (retrieval excluded where it is shared).
Every difference to plain hits has its 95% paired bootstrap interval.

``--audit``: does the coverage audit earn its place? On multi-passage questions (MuSiQue,
every paragraph a document, the default index), ``RetrieveAndCheck`` (IAR + SPC, follow-up
queries for the missing elements, no LLM) against one ``IntentAwareRetriever()`` retrieval
of the same ``k``, both cut to the same budgets: full-support recall (every supporting
paragraph inside the context), the share of the supporting paragraphs' characters, the
extra retrievals the loop made and ms per query.

    python benchmarks/context_repair.py [--squad N] [--per-article N] [--pubmed N]
        [--sections N] [--steps S ...] [--chunks 64 default] [--only REGEX] [--audit]
        [--cache FILE] [--out FILE]
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _common import (
    Shared,
    emit,
    header,
    lc_embeddings,
    li_embeddings,
    load_store,
    save_store,
    table,
)
from corpus_shapes import Question, Shape, abstracts, long_articles, sectioned

from semrag import SemanticChunker, SemanticIndex
from semrag.eval.chunking import _covered
from semrag.eval.verdict import paired_bootstrap
from semrag.minilm import MiniLMEmbedder
from semrag.postprocess import SPC

BUDGETS = (1000, 2000, 4000)
K = 10
PLAIN = "plain hits"
STEPS: list[float | None] = []  # SPC variants to compare (--steps; 0: own relevance)
Span = tuple[int, int, int]
System = Callable[[Question, list[Any]], list[Span]]  # (question, dense hits) -> spans


def fill(spans: list[Span], budget: int) -> list[Span]:
    """The context: ``spans`` in order, a span already inside it skipped, cut to ``budget``."""
    taken: list[Span] = []
    spent = 0
    for d, s, e in spans:
        if any(td == d and ts <= s and e <= te for td, ts, te in taken):
            continue
        length = min(e - s, budget - spent)
        taken.append((d, s, s + length))
        spent += length
        if spent >= budget:
            break
    return taken


def locate(text: str, piece: str, near: int = 0) -> tuple[int, int]:
    probe = piece.strip()
    at = text.find(probe, max(0, near - 50))
    if at < 0:
        at = text.find(probe)
    if at < 0:
        at = text.find(probe[:60])
    return (at, at + len(probe)) if at >= 0 else (-1, -1)


# -- systems --------------------------------------------------------------------------------
def semrag_systems(index: SemanticIndex, pos: dict[str, int]) -> dict[str, Callable]:
    def spans(hits: list[Any]) -> list[Span]:
        return [(pos[h.chunk.doc_id], h.chunk.start, h.chunk.end) for h in hits]

    anytime = SPC(index, k=K, audit=False)
    systems: dict[str, Callable] = {
        PLAIN: lambda q, hits, budget: spans(hits),
        "SPC(index), no budget (its anytime order, cut at the budget)": lambda q, hits, budget: (
            spans(anytime.process(q.text, hits).chunks)
        ),
    }
    import semrag.postprocess.spc as spc_module

    by_budget = {b: SPC(index, k=K, audit=False, context=b) for b in BUDGETS}
    systems["SPC(context=budget) (the default at that budget)"] = lambda q, hits, budget: spans(
        by_budget[budget].process(q.text, hits).chunks
    )
    for step in STEPS:

        def run(q, hits, budget, step=step):
            saved, spc_module.STEP = spc_module.STEP, step
            try:
                return spans(by_budget[budget].process(q.text, hits).chunks)
            finally:
                spc_module.STEP = saved

        systems[f"  variant: step {step}"] = run
    unrefined = {b: SPC(index, k=K, audit=False, context=b, refine=False) for b in BUDGETS}
    systems["  variant: refine=False"] = lambda q, hits, budget: spans(
        unrefined[budget].process(q.text, hits).chunks
    )
    return systems


def prev_next(index: SemanticIndex, pos: dict[str, int]) -> Callable:
    from llama_index.core.postprocessor import PrevNextNodePostprocessor
    from llama_index.core.schema import NodeRelationship, NodeWithScore, RelatedNodeInfo, TextNode
    from llama_index.core.storage.docstore import SimpleDocumentStore

    docstore = SimpleDocumentStore()
    node_of: dict[tuple[str, int], str] = {}
    for doc_id in pos:
        ids = index.reader().chunk_ids(doc_id)
        nodes = []
        for c in index.reader().chunks_of(ids):
            node = TextNode(
                id_=f"{doc_id}:{c.start}",
                text=c.text,
                start_char_idx=c.start,
                end_char_idx=c.end,
                metadata={"pos": pos[doc_id]},
            )
            nodes.append(node)
            node_of[(doc_id, c.start)] = node.id_
        for a, b in zip(nodes, nodes[1:], strict=False):
            a.relationships[NodeRelationship.NEXT] = RelatedNodeInfo(node_id=b.id_)
            b.relationships[NodeRelationship.PREVIOUS] = RelatedNodeInfo(node_id=a.id_)
        docstore.add_documents(nodes)
    post = PrevNextNodePostprocessor(docstore=docstore, num_nodes=1, mode="both")

    def run(q: Question, hits: list[Any], budget: int) -> list[Span]:
        nodes = [
            NodeWithScore(node=docstore.get_node(node_of[(h.chunk.doc_id, h.chunk.start)]))
            for h in hits
        ]
        out = post.postprocess_nodes(nodes)
        return [(n.node.metadata["pos"], n.node.start_char_idx, n.node.end_char_idx) for n in out]

    return run


def sentence_window(shape: Shape, model: Any) -> Callable:
    from llama_index.core import Document as LIDocument
    from llama_index.core import VectorStoreIndex
    from llama_index.core.node_parser import SentenceWindowNodeParser
    from llama_index.core.postprocessor import MetadataReplacementPostProcessor

    parser = SentenceWindowNodeParser.from_defaults(window_size=3)
    nodes = parser.get_nodes_from_documents(
        [LIDocument(text=d.text, id_=str(i), metadata={"pos": i}) for i, d in enumerate(shape.docs)]
    )
    by_doc: dict[int, list[Any]] = {}
    for n in nodes:
        by_doc.setdefault(n.metadata["pos"], []).append(n)
    extent: dict[str, Span] = {}
    for d, ns in by_doc.items():
        text = shape.docs[d].text
        starts = []
        at = 0
        for n in ns:  # the parser's sentences, located in order
            s, e = locate(text, n.metadata["original_text"], at)
            starts.append((s, e))
            at = max(at, e)
        for i, n in enumerate(ns):
            lo, hi = max(0, i - 3), min(len(ns), i + 4)
            extent[n.node_id] = (d, starts[lo][0], starts[hi - 1][1])
    index = VectorStoreIndex(nodes, embed_model=li_embeddings(model, cache=True))
    retriever = index.as_retriever(similarity_top_k=K)
    replace = MetadataReplacementPostProcessor(target_metadata_key="window")

    def run(q: Question, hits: list[Any], budget: int) -> list[Span]:
        found = replace.postprocess_nodes(retriever.retrieve(q.text))
        return [extent[n.node.node_id] for n in found]

    return run


def auto_merging(shape: Shape, model: Any) -> Callable:
    from llama_index.core import Document as LIDocument
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.node_parser import HierarchicalNodeParser, get_leaf_nodes
    from llama_index.core.retrievers import AutoMergingRetriever

    parser = HierarchicalNodeParser.from_defaults(chunk_sizes=[2048, 512, 128])
    nodes = parser.get_nodes_from_documents(
        [LIDocument(text=d.text, id_=str(i), metadata={"pos": i}) for i, d in enumerate(shape.docs)]
    )
    storage = StorageContext.from_defaults()
    storage.docstore.add_documents(nodes)
    index = VectorStoreIndex(
        get_leaf_nodes(nodes), storage_context=storage, embed_model=li_embeddings(model, cache=True)
    )
    retriever = AutoMergingRetriever(index.as_retriever(similarity_top_k=K), storage, verbose=False)

    def run(q: Question, hits: list[Any], budget: int) -> list[Span]:
        out = []
        for n in retriever.retrieve(q.text):
            d = n.node.metadata["pos"]
            s, e = locate(shape.docs[d].text, n.node.get_content(), n.node.start_char_idx or 0)
            out.append((d, s, e))
        return out

    return run


def parent_documents(shape: Shape, model: Any) -> Callable:
    from langchain_classic.retrievers import ParentDocumentRetriever
    from langchain_core.documents import Document as LCDocument
    from langchain_core.stores import InMemoryStore
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    retriever = ParentDocumentRetriever(
        vectorstore=InMemoryVectorStore(lc_embeddings(model, cache=True)),
        docstore=InMemoryStore(),
        child_splitter=RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=0),
        parent_splitter=RecursiveCharacterTextSplitter(
            chunk_size=2000, chunk_overlap=0, add_start_index=True
        ),
        search_kwargs={"k": K},
    )
    retriever.add_documents(
        [LCDocument(d.text, metadata={"pos": i}) for i, d in enumerate(shape.docs)]
    )

    def run(q: Question, hits: list[Any], budget: int) -> list[Span]:
        return [
            (
                p.metadata["pos"],
                p.metadata["start_index"],
                p.metadata["start_index"] + len(p.page_content),
            )
            for p in retriever.invoke(q.text)
        ]

    return run


def bigger_chunks(shape: Shape, model: Any, kind: str, pos: dict[str, int]) -> Callable:
    index = SemanticIndex(embedder=Shared(model).semrag, chunker=chunker(kind, 256))
    index.add_documents(shape.docs)

    def run(q: Question, hits: list[Any], budget: int) -> list[Span]:
        return [(pos[h.chunk.doc_id], h.chunk.start, h.chunk.end) for h in index.search(q.text, K)]

    return run


def pooled_spc(shape: Shape, kind: str, pos: dict[str, int]) -> Callable:
    """SPC over the index a user builds by default: the onnxruntime MiniLM, whose sentence
    vectors are pooled from the chunks' pass (the other SPC rows read sentences embedded
    apart); the same chunks, so the same hits."""
    index = SemanticIndex(embedder=MiniLMEmbedder(), chunker=chunker(kind, 64))
    index.add_documents(shape.docs)
    by_budget = {b: SPC(index, k=K, audit=False, context=b) for b in BUDGETS}

    def run(q: Question, hits: list[Any], budget: int) -> list[Span]:
        done = by_budget[budget].process(q.text, hits).chunks
        return [(pos[h.chunk.doc_id], h.chunk.start, h.chunk.end) for h in done]

    return run


def chunker(kind: str, tokens: int) -> SemanticChunker:
    if kind == "default":
        return SemanticChunker() if tokens == 64 else SemanticChunker(target_tokens=tokens)
    return SemanticChunker(threshold=2.0, max_tokens=tokens, overlap_tokens=0)


# -- scoring --------------------------------------------------------------------------------
def run_setting(shape: Shape, kind: str, model: Any, only: str | None) -> tuple[list, str]:
    index = SemanticIndex(embedder=Shared(model).semrag, chunker=chunker(kind, 64))
    index.add_documents(shape.docs)
    pos = {d.id: i for i, d in enumerate(shape.docs)}
    systems = semrag_systems(index, pos)
    peers: dict[str, Callable[[], Callable]] = {
        "  variant: sentence vectors pooled from the chunks (the default index)": lambda: (
            pooled_spc(shape, kind, pos)
        ),
        "PrevNext (LlamaIndex, 1 each side)": lambda: prev_next(index, pos),
        "sentence window 3 (LlamaIndex)": lambda: sentence_window(shape, model),
        "AutoMerging 2048/512/128 (LlamaIndex)": lambda: auto_merging(shape, model),
        "parent documents 400/2,000 (LangChain)": lambda: parent_documents(shape, model),
        "bigger chunks (256 tokens), plain hits": lambda: bigger_chunks(shape, model, kind, pos),
    }
    for name, make in peers.items():
        if not only or re.search(only, name):
            systems[name] = make()
    if only:
        systems = {n: f for n, f in systems.items() if n == PLAIN or re.search(only, n)}
    hits_of = [index.search(q.text, K) for q in shape.questions]
    per: dict[str, dict[str, list[float]]] = {}
    added: dict[str, list[int]] = {}
    ms: dict[str, list[float]] = {}
    for name, system in systems.items():
        rows: dict[str, list[float]] = {}
        for q, hits in zip(shape.questions, hits_of, strict=True):
            own = sum(h.chunk.end - h.chunk.start for h in hits)
            total = _covered(q.references, q.references)
            for budget in BUDGETS:
                t = time.perf_counter()
                spans = system(q, hits, budget)
                ms.setdefault(name, []).append(1000 * (time.perf_counter() - t))
                if budget == BUDGETS[-1]:
                    chars = sum(e - s for _, s, e in {*spans})
                    added.setdefault(name, []).append(chars - own)
                got = _covered(fill(spans, budget), q.references)
                rows.setdefault(f"recall {budget}", []).append(got / total)
                rows.setdefault(f"full {budget}", []).append(float(got == total))
        per[name] = rows
        print(f"  {shape.name} / {kind}: {name} done", flush=True)
    out = []
    for name, rows in per.items():
        row: dict[str, Any] = {"system": name}
        for m, values in rows.items():
            row[m] = float(np.mean(values))
            if name != PLAIN:
                d, lo, hi = paired_bootstrap(values, per[PLAIN][m])
                row[f"{m} vs plain"] = f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"
        row["chars added"] = float(np.mean(added[name]))
        row["ms p50"] = float(np.median(ms[name]))
        out.append(row)
    chunks = sum(len(index.reader().chunk_ids(d.id)) for d in shape.docs)
    how = "cut mid-thought (a 64-token cap)" if kind == "cut" else "the default splitter"
    note = (
        f"{shape.name}, chunks {how}: {len(shape.docs)} documents, {chunks} "
        f"chunks, {len(shape.questions)} questions; dense top {K}"
    )
    return out, note


def audit_table(model: Any, limit: int) -> str:
    """RetrieveAndCheck against one retrieval on MuSiQue, at equal budgets."""
    from corpus_shapes import paragraph_set, read_musique

    from semrag.retrieval import IntentAwareRetriever, RetrieveAndCheck

    shape = paragraph_set("MuSiQue", read_musique, "musique/musique_ans_100.json.gz", limit)
    index = SemanticIndex(embedder=Shared(model).semrag)
    index.add_documents(shape.docs)
    pos = {d.id: i for i, d in enumerate(shape.docs)}
    iar = IntentAwareRetriever(index, k=K)
    loop = RetrieveAndCheck(iar, SPC(index, k=K), max_rounds=3)
    budgeted = {b: SPC(index, k=K, context=b) for b in BUDGETS}  # SPC after a multi-hop order
    spc_name = "one retrieval (IAR) + SPC(context=budget)"
    rows: dict[str, dict[str, list[float]]] = {
        "one retrieval (IAR)": {},
        spc_name: {},
        "RetrieveAndCheck": {},
    }
    extra: list[int] = []
    for q in shape.questions:
        t = time.perf_counter()
        single = iar.retrieve(q.text)
        t_single = time.perf_counter() - t
        t = time.perf_counter()
        checked = loop.run(q.text)
        t_loop = time.perf_counter() - t
        extra.append(sum(len(r.queries) for r in checked.rounds[1:]))
        t = time.perf_counter()
        repaired = {b: spc.process(q.text, single).chunks for b, spc in budgeted.items()}
        t_spc = (time.perf_counter() - t) / len(BUDGETS)
        for name, hits_at, took in (
            ("one retrieval (IAR)", dict.fromkeys(BUDGETS, single), t_single),
            (spc_name, repaired, t_single + t_spc),
            ("RetrieveAndCheck", dict.fromkeys(BUDGETS, checked.chunks), t_loop),
        ):
            total = _covered(q.references, q.references)
            row = rows[name]
            row.setdefault("ms", []).append(1000 * took)
            for budget in BUDGETS:
                spans = [(pos[h.chunk.doc_id], h.chunk.start, h.chunk.end) for h in hits_at[budget]]
                context = fill(spans, budget)
                row.setdefault(f"recall {budget}", []).append(
                    _covered(context, q.references) / total
                )
                inside = {d for d, _, _ in context}
                row.setdefault(f"full support {budget}", []).append(
                    float(set(q.gold_docs) <= inside)
                )
    out = []
    for name, row in rows.items():
        line: dict[str, Any] = {"system": name}
        for m, values in row.items():
            if m != "ms":
                line[m] = float(np.mean(values))
        line["extra retrievals"] = float(np.mean(extra)) if name == "RetrieveAndCheck" else 0.0
        line["ms p50"] = float(np.median(row["ms"]))
        out.append(line)
    cols = ["system", *(f"full support {b}" for b in BUDGETS), *(f"recall {b}" for b in BUDGETS)]
    return (
        f"#### Does the coverage audit earn its place? MuSiQue paragraphs, {len(shape.docs)} "
        f"documents, {len(shape.questions)} questions, k = {K}, no LLM\n\n"
        f"{table(out, [*cols, 'extra retrievals', 'ms p50'])}\n"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--squad", type=int, default=12)
    ap.add_argument("--per-article", type=int, default=20)
    ap.add_argument("--pubmed", type=int, default=150)
    ap.add_argument("--chunks", nargs="*", default=["64", "default"])
    ap.add_argument("--only", default=None)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--sections", type=int, default=40)
    ap.add_argument("--steps", type=float, nargs="*", default=[])
    ap.add_argument("--audit", action="store_true", help="RetrieveAndCheck on MuSiQue only")
    args = ap.parse_args()
    STEPS.extend(s or None for s in args.steps)
    load_store(args.cache)
    from semrag.embeddings import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder().model
    if args.audit:
        data = "development data only: MuSiQue-Ans (100 questions); all-MiniLM-L6-v2 (packaged)"
        title = "The coverage audit: RetrieveAndCheck against one retrieval at equal budgets"
        emit("\n".join([header(title, data), "", audit_table(model, 100)]), args.out)
        return
    shapes = [
        long_articles(args.squad, args.per_article),
        abstracts(args.pubmed),
        sectioned(args.sections, 4),
    ]
    reports = []
    for kind in args.chunks:
        for shape in shapes:
            rows, note = run_setting(shape, "cut" if kind == "64" else kind, model, args.only)
            cols = ["system"]
            cols += [f"recall {b}" for b in BUDGETS] + [f"full {b}" for b in BUDGETS]
            cols += ["chars added", "ms p50"]
            diffs = ["system"] + [f"recall {b} vs plain" for b in BUDGETS]
            reports.append(
                f"#### {note}\n\n{table(rows, cols)}\n\nRecall against plain hits "
                f"(95% paired bootstrap):\n\n{table(rows[1:], diffs)}\n"
            )
            print(reports[-1], flush=True)
            save_store(args.cache)
    data = (
        "development data only: SQuAD v1.1 dev (even articles, whole), PubMedQA PQA-L (even "
        "abstracts), sectioned Wikipedia (wiki300_badjatiya, even articles, 4 sections each); "
        "all-MiniLM-L6-v2 (packaged) for every system"
    )
    report = "\n".join([header("Repair or expand? Context at equal budgets", data), ""] + reports)
    emit(report, args.out)


if __name__ == "__main__":
    main()
