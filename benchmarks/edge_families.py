"""How precise is each edge family a passage graph could have? (Multi-hop, development data.)

A passage graph helps a multi-hop walk when its edges join passages that answer one question
together; an imprecise family dilutes the precise ones (a kNN family pushed a published
title-mention graph below dense search). Here every paragraph of 2WikiMultihopQA and MuSiQue
is a document (title, blank line, text), indexed by a default ``SemanticIndex``, and each
family's passage-to-passage edges are counted:

* **shared phrase**: two passages mention one phrase of ``GraphRetriever()``'s passage graph
  (capitalised runs, quoted titles, the title itself) that at most ``--max-df`` passages
  mention (the walk weighs a phrase by 1 / its passages: a common one barely carries mass);
* **title mention**: passage A's text names passage B's title (whole words, case-insensitive,
  titles of 4+ characters; one regular expression over all titles, not a loop over pairs);
* **kNN similarity**: each passage's ``--knn`` most similar passages (MiniLM cosine);
* **same title**: two passages under one title (the only document structure paragraphs have).

A *gold pair* is two supporting paragraphs of one question. Precision: the share of a
family's edges that are gold pairs; recall: the share of gold pairs the family joins;
``edges/passage``: how many it adds. (Document structure beyond titles, e.g. sections of a
long document, has no gold pairs in these sets: their paragraphs are single documents.)

    python benchmarks/edge_families.py [--sets twowiki musique] [--knn 5] [--max-df 50]
        [--cache FILE] [--out FILE]
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from itertools import combinations
from typing import Any

import numpy as np
from _common import DATA, Shared, emit, header, load_store, need, save_store, table
from _datasets import read_musique, read_twowiki

from semrag import SemanticIndex
from semrag.retrieval import PPRRetriever

SETS = {
    "twowiki": ("2WikiMultihopQA dev (500)", "twowiki/2wiki_dev500_agenticrag.json", read_twowiki),
    "musique": ("MuSiQue-Ans (100)", "musique/musique_ans_100.json.gz", read_musique),
}
Edges = set[tuple[int, int]]


def pair(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


def shared_phrase(index: SemanticIndex, pos: dict[str, int], max_df: int) -> Edges:
    g = PPRRetriever(index).passage_graph()
    holders: dict[int, list[int]] = defaultdict(list)
    for node in range(g.n_passages):
        doc = pos[g.chunks[int(g.passage_ptr[node])].doc_id]
        for j in g.passage_phrases[node].tolist():
            holders[j].append(doc)
    edges: Edges = set()
    for docs in holders.values():
        if 1 < len(docs) <= max_df:
            edges.update(pair(a, b) for a, b in combinations(sorted(set(docs)), 2))
    return edges


def title_mention(docs: list[Any]) -> Edges:
    titles: dict[str, list[int]] = defaultdict(list)
    for i, d in enumerate(docs):
        title = d.metadata["title"].strip().lower()
        if len(title) >= 4:
            titles[title].append(i)
    pattern = re.compile(
        r"\b(" + "|".join(re.escape(t) for t in sorted(titles, key=len, reverse=True)) + r")\b"
    )
    edges: Edges = set()
    for i, d in enumerate(docs):
        body = d.text.split("\n\n", 1)[-1].lower()  # the text, not its own title line
        for m in set(pattern.findall(body)):
            edges.update(pair(i, j) for j in titles[m] if j != i)
    return edges


def knn(index: SemanticIndex, docs: list[Any], k: int) -> Edges:
    emb = index.embedder
    vectors = np.asarray(emb.embed([d.text for d in docs]), np.float32)
    edges: Edges = set()
    for start in range(0, len(docs), 512):
        sims = vectors[start : start + 512] @ vectors.T
        for row, i in enumerate(range(start, min(start + 512, len(docs)))):
            sims[row, i] = -np.inf
            for j in np.argpartition(-sims[row], k)[:k].tolist():
                edges.add(pair(i, int(j)))
    return edges


def same_title(docs: list[Any]) -> Edges:
    by_title: dict[str, list[int]] = defaultdict(list)
    for i, d in enumerate(docs):
        by_title[d.metadata["title"]].append(i)
    return {pair(a, b) for ids in by_title.values() for a, b in combinations(ids, 2)}


def measure(name: str, edges: Edges, gold: Edges, n: int) -> dict[str, Any]:
    hit = len(edges & gold)
    return {
        "family": name,
        "edges": len(edges),
        "edges/passage": 2 * len(edges) / n,
        "gold pairs joined": hit,
        "precision": hit / max(len(edges), 1),
        "recall": hit / max(len(gold), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", nargs="*", default=list(SETS))
    ap.add_argument("--knn", type=int, default=5)
    ap.add_argument("--max-df", type=int, default=50)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    load_store(args.cache)
    from semrag.embeddings import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder().model
    parts = []
    for key in args.sets:
        title, path, reader = SETS[key]
        docs, questions = reader(need(DATA / path))
        pos = {d.id: i for i, d in enumerate(docs)}
        gold = {pair(pos[a], pos[b]) for q in questions for a, b in combinations(q.supporting, 2)}
        index = SemanticIndex(embedder=Shared(model).semrag)
        index.add_documents(docs)
        families = {
            f"shared phrase (df <= {args.max_df})": shared_phrase(index, pos, args.max_df),
            "title mention": title_mention(docs),
            f"kNN similarity (k = {args.knn})": knn(index, docs, args.knn),
            "same title": same_title(docs),
        }
        rows = [measure(n, e, gold, len(docs)) for n, e in families.items()]
        both = families["title mention"] & families[f"shared phrase (df <= {args.max_df})"]
        rows.append(measure("title mention and shared phrase", both, gold, len(docs)))
        cols = ["family", "edges", "edges/passage", "gold pairs joined", "precision", "recall"]
        parts.append(
            f"#### {title}: {len(docs)} paragraphs, {len(questions)} questions, "
            f"{len(gold)} gold pairs\n\n{table(rows, cols)}\n"
        )
        print(parts[-1], flush=True)
        save_store(args.cache)
    data = "development data only: 2WikiMultihopQA dev, MuSiQue-Ans; all-MiniLM-L6-v2 (packaged)"
    report = "\n".join(
        [header("Edge families of a passage graph: precision on gold pairs", data), ""] + parts
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
