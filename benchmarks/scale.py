"""Scale: build time and memory per stage, and query latency per retriever, at N chunks.

Corpus: the sections of ../shared/data/sectioned_text (Wikipedia articles, novels, lecture
transcripts; one document per section), chunked by the index's own chunker: about 98,000
chunks, 99.8% of them distinct. Larger corpora recombine the sections at the sentence
level: in round ``r`` (seeded permutations) each chunk is one or two next sentences of a
section followed by the next sentence of another stream of sections, and those chunks are
given to the index as chunks (``add_chunks``: placed, split into sentences and counted,
not chunked). Every sentence is real text and its vector a real sentence vector; the run
counts the distinct chunk texts and says whether the distinct corpus meets its goal
(99%). Recombined text handed to the chunker cannot meet it: the chunker keeps a long
sentence as a chunk by itself (about a third of the chunks here), and such a chunk comes
back in every round (a run that did stopped with 30% of a million chunks distinct).
``--corpus duplicated`` is the named run with realistic repetition: one document in ten a
copy of an earlier one, each with one of a few boilerplate footers.
Each distinct sentence is embedded once (the packaged MiniLM, or ``--embedder fake``) and,
with ``SEMRAG_BENCH_CACHE`` set, its vector is cached on disk; chunk vectors are the mean
of their sentences (``chunk_vectors="mean"``), so recombined documents cost few model calls.

The index is the default one with the default retriever's part: dense, BM25 and the passage
graph (``SemanticIndex(passages=True)``, the part ``GraphRetriever()`` reads);
``--ssg`` adds the semantic similarity graph.
Stages (wall time, and the process's peak RSS after each): chunk (splitting and chunking,
or placing the given chunks),
embed (model calls), dense, BM25, passage graph and SSG (each part applying the one change
that adds every document, or each of ``--batch``'s calls), then the heuristic knowledge
graph: extract, resolve (name resolution and the derived graph), write (the store),
communities, reports. Latency: p50 / p95 of single timed queries for every non-LLM
retriever, with the graph's degree statistics. With an approximate dense part, the share of
the exact top 10 its search finds, per ``nprobe`` (an inverted file) or ``ef_search`` (an
HNSW graph) (:func:`dense_recall`).

Usage: python benchmarks/scale.py [--chunks 100000] [--quick] [--embedder minilm|fake]
[--corpus distinct|duplicated] [--ssg] [--knn auto|flat|hnsw] [--vector-dtype float32|float16]
[--dense auto|flat|ivf|hnsw]
[--index-only] [--batch CHUNKS] [--no-sketch] [--sketch-split 100,16|none] [--out F];
python benchmarks/scale.py
--exponents SMALL.md LARGE.md (how each stage and each p50 grows between two reports, and
the goals checked on the larger). ``--index-only`` skips the knowledge graph (its stages
and the retrievers that need it); ``--no-sketch`` skips SKETCH's queries (its pieces);
``--sketch-split none`` queries SKETCH over the index's chunks instead of its 100-token
pieces;
``--ssg`` builds the similarity graph too (its stage and its traversals; ``--knn`` and
``--vector-dtype`` are its options: ``--vector-dtype float16`` holds the SSG's rows as
float16, with ``--knn hnsw``); ``--dense`` is the index's dense kind (``auto``, the
default: exact until 50,000 chunks, then the inverted file; ``flat``: always the exact
product; ``ivf``: the inverted file; ``hnsw``: always the HNSW graph), which the dense
channel of ``search``, IAR and the walk's seeds search; ``--batch 100000`` adds the
documents in calls of about that many chunks (each a commit, as a living index grows), so
a build's transient copies are a call's, not the corpus's. Besides the peak RSS, the
report gives the RSS after the index is built (what it holds, the transient copies of the
build freed) and the bytes of the SSG's rows and node index.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import resource
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
from _common import (
    CORPUS_QUERIES,
    DATA,
    LEAD_INS,
    emit,
    forget_answers,
    fresh,
    header,
    need,
    rss_mb,
    table,
)

from semrag import Chunk, Document, GraphRetriever, SemanticIndex, SSGRetriever
from semrag.embeddings import BaseEmbedder
from semrag.graph import KnowledgeGraph
from semrag.index import SSGConfig
from semrag.index.parts._distinct import row_hashes
from semrag.retrieval import (
    ALGORITHMS,
    CommunityRetriever,
    IntentAwareRetriever,
    SketchRetriever,
)
from semrag.testing import FakeEmbedder
from semrag.text.sentences import split_sentences

QUERIES = [
    *CORPUS_QUERIES,
    "How are proteins folded in the cell?",
    "What caused the economic crisis of the decade?",
    "Which king founded the city on the river?",
    "How is entropy related to temperature?",
]


def sections() -> list[tuple[str, list[str]]]:
    """``(id, lines)`` of every section, in a fixed order."""
    root = need(DATA / "sectioned_text")
    out = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for path in sorted(folder.iterdir()):
            if not path.is_file() or path.suffix == ".md" or path.name.startswith("."):
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for i, part in enumerate(p for p in text.split("==========") if p.strip()):
                lines = [ln.strip() for ln in part.splitlines() if ln.strip()]
                if lines:
                    out.append((f"{folder.name}/{path.name}#{i}", lines))
    return out


class Source(NamedTuple):
    """One document of the corpus: its id, its lines, and whether they are its chunks."""

    id: str
    lines: list[str]
    given: bool = False
    """Each line is a chunk as given (added with ``add_chunks``), not text to chunk."""


def recombined(corpus: str = "distinct") -> Iterator[Source]:
    """The corpus's documents without end: the sections (in a seeded order), then recombinations.

    Round 0 is the sections themselves, chunked by the index's own chunker. Round ``r``
    recombines them at the sentence level: a seeded permutation orders the sections, and
    each chunk of a section's document is one or two of its next sentences (a seeded
    draw) followed by the next sentence of another stream of sections (a second seeded
    permutation). Every sentence is real text, its vector a real sentence vector, and a
    chunk is a pair no other round repeats. These chunks are given as chunks
    (:attr:`Source.given`): the chunker keeps a long sentence as a chunk by itself (about
    a third of the chunks here), so recombined text handed to it repeats those chunks in
    every round (a run that did stopped with 30% of a million chunks distinct).

    ``corpus="duplicated"`` adds what real collections repeat: one document in ten is a
    copy of an earlier one (a file filed twice), and every document ends with one of a few
    boilerplate footers (a licence, a navigation line).
    """
    base = sections()
    rng = np.random.default_rng(0)
    emitted: list[Source] = []

    def out(source: Source) -> Source:
        if corpus != "duplicated":
            return source
        if emitted and rng.random() < 0.1:
            copied = emitted[int(rng.integers(len(emitted)))]
            return copied._replace(id=f"{source.id}=copy-of-{copied.id}")
        source = source._replace(lines=[*source.lines, FOOTERS[int(rng.integers(len(FOOTERS)))]])
        if len(emitted) < 20_000:  # what a copy is drawn from: the corpus's first files
            emitted.append(source)
        return source

    for i in np.random.default_rng(0).permutation(len(base)).tolist():  # every genre early
        yield out(Source(*base[i]))
    split: dict[int, list[str]] = {}

    def sentences_of(i: int) -> list[str]:
        if i not in split:
            text = " ".join(base[i][1])
            split[i] = [text[s.start : s.end] for s in split_sentences(text)]
        return split[i]

    r = 0
    while True:
        r += 1
        seeded = np.random.default_rng(r)
        order, partner = (seeded.permutation(len(base)).tolist() for _ in range(2))
        others = (s for b in itertools.cycle(partner) for s in sentences_of(b))
        for a in order:
            own, chunks, x = sentences_of(a), [], 0
            for run in seeded.integers(1, 3, size=len(own)).tolist():
                if x >= len(own):
                    break
                chunks.append(" ".join([*own[x : x + run], next(others)]))
                x += run
            yield out(Source(f"r{r}/{a}", chunks, given=True))


DISTINCT_GOAL = 0.99  # the share of distinct chunk texts the distinct corpus must have

# what the duplicated corpus's documents end with (one each, chosen by a seeded draw)
FOOTERS = [
    "This text is available under the Creative Commons Attribution-ShareAlike License; "
    "additional terms may apply.",
    "Retrieved from the archive. Jump to navigation. Jump to search. Main page. Contents.",
    "Copyright the authors. All rights reserved. No part of this publication may be "
    "reproduced without permission.",
    "Transcribed from the recording of the lecture. Errors in the transcript are ours.",
    "End of the Project Gutenberg text. Updated editions will replace the previous one.",
]


class SentenceCache(BaseEmbedder):
    """Embeds each distinct text once; the vectors are kept (and saved) by text.

    With ``keep`` off, texts not cached yet are embedded and not kept: the run turns it
    off once the index is built, so the names the knowledge graph embeds are held by the
    graph alone, not by this cache too. The fake embedder's vectors are never kept
    without a cache file (they cost less to make again than to hold: the index's memory
    would count the cache's).
    """

    def __init__(self, inner: BaseEmbedder, path: Path | None) -> None:
        super().__init__(dim=inner.dim)
        self.inner, self.path = inner, path
        self.vectors: dict[str, np.ndarray] = {}
        self.model_s = 0.0
        # cache what is embedded (off once the index is built)
        self.keep = path is not None or not isinstance(inner, FakeEmbedder)
        if path is not None and path.exists():
            with np.load(path, allow_pickle=False) as z:
                texts = z["texts"].tobytes().decode("utf-8").split("\x00")
                self.vectors = dict(zip(texts, z["vectors"], strict=True))

    @property
    def tokenizer(self):
        return self.inner.tokenizer

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if t not in self.vectors))
        made: dict[str, np.ndarray] = {}
        if todo:
            t0 = time.perf_counter()
            made = dict(zip(todo, np.asarray(self.inner.embed(todo), np.float32), strict=True))
            self.model_s += time.perf_counter() - t0
            if self.keep:  # copies: a row kept as a view would keep its whole batch alive
                self.vectors.update((t, v.copy()) for t, v in made.items())
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([made[t] if t in made else self.vectors[t] for t in texts])

    def save(self) -> None:
        # the texts as one NUL-separated UTF-8 blob (a str array pads every text to the
        # longest, gigabytes at 100k chunks)
        if self.path is not None and all("\x00" not in t for t in self.vectors):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            blob = np.frombuffer("\x00".join(self.vectors).encode("utf-8"), np.uint8)
            np.savez(self.path, texts=blob, vectors=np.stack(list(self.vectors.values())))


def embedder_for(name: str) -> BaseEmbedder:
    if name == "fake":
        return FakeEmbedder(dim=384)
    from semrag.embeddings import as_embedder

    return as_embedder(None)


def cached_embedder(name: str) -> SentenceCache:
    """The embedder ``name`` behind the sentence cache (on disk with SEMRAG_BENCH_CACHE)."""
    cache_dir = os.environ.get("SEMRAG_BENCH_CACHE")
    cache = Path(cache_dir) / f"scale-sentences-{name}.npz" if cache_dir else None
    return SentenceCache(embedder_for(name), cache)


@dataclass(frozen=True)
class Corpus:
    """A run's documents, and the chunks of those given as chunks (by document id)."""

    documents: list[Document]
    given: dict[str, list[Chunk]]

    def __len__(self) -> int:
        return len(self.documents)

    def add(self, index: SemanticIndex, which: Sequence[int] | None = None) -> None:
        """Add the documents (``which`` of them): chunked by the index, or as given."""
        docs = self.documents if which is None else [self.documents[i] for i in which]
        if chunked := [d for d in docs if d.id not in self.given]:
            index.add_documents(chunked)
        if placed := [d for d in docs if d.id in self.given]:
            index.add_chunks([c for d in placed for c in self.given[d.id]], documents=placed)


def as_document(source: Source) -> tuple[Document, list[Chunk] | None]:
    """The document of ``source``, and its chunks with their offsets where they are given."""
    text = " ".join(source.lines)
    if not source.given:
        return Document(source.id, text), None
    chunks, at = [], 0
    for line in source.lines:
        chunks.append(Chunk(source.id, at, at + len(line), line, 0))
        at += len(line) + 1
    return Document(source.id, text), chunks


def documents(target: int, embedder: BaseEmbedder, corpus: str = "distinct") -> Corpus:
    """The first documents of :func:`recombined` (``corpus``) that make about ``target`` chunks.

    Streamed: only the documents returned are held (at 1M chunks the corpus's over-long
    prefix would be gigabytes of text). A given document counts its chunks; a document
    to chunk counts the chunks per character of a sample of the sections.
    """
    # Chunks per character, from a sample spread over the sections (documents vary in
    # length far more than their chunks per character do).
    base = sections()
    step = max(1, len(base) // 300)
    sample = [Document(i, " ".join(lines)) for i, lines in base[::step]]
    probe = SemanticIndex(embedder=embedder, chunk_vectors="mean", ssg=False)
    probe.add_documents(sample)
    per_char = len(probe.chunks()) / sum(len(d.text) for d in sample)
    del probe, sample, base
    docs, given, expected = [], {}, 0.0
    for source in recombined(corpus):
        if expected >= target:
            break
        doc, chunks = as_document(source)
        docs.append(doc)
        if chunks is None:
            expected += per_char * len(doc.text)
        else:
            given[doc.id] = chunks
            expected += len(chunks)
    return Corpus(docs, given)


def distinct_counts(index: SemanticIndex) -> tuple[int, int]:
    """Distinct chunk texts and distinct chunk vectors of ``index`` (by 64-bit hashes)."""
    texts = len({hash(c.text) for c in index.chunks()})
    ids = index.reader().dense.ids
    hashes = np.concatenate(
        [
            row_hashes(index.reader().vectors_of(ids[a : a + 65_536]))
            for a in range(0, len(ids), 65_536)
        ]
    )
    return texts, int(np.unique(hashes).size)


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def ssg_bytes(index: SemanticIndex) -> tuple[int, int]:
    """Bytes of the SSG's node and sentence rows, and of its HNSW node index (0 without).

    With ``knn="hnsw"`` the node index holds the node rows (its bytes count them once).
    """
    view = index.reader().ssg_view()
    ann = view.graph.node_ann
    nodes = view.graph.node_vectors
    rows = view.sentence_matrix.nbytes + (nodes.nbytes if isinstance(nodes, np.ndarray) else 0)
    return rows, ann.nbytes if ann is not None else 0


def ssg_degrees(index: SemanticIndex) -> str:
    """The SSG's degree statistics and its inter-document edges, as a sentence."""
    g = index.reader().ssg_view().graph
    intra, inter = g.intra[0] >= 0, g.inter[0] >= 0  # the edges present in each node's lists
    degree = intra.sum(axis=1) + inter.sum(axis=1)
    return (
        f"SSG degree: mean {degree.mean():.2f}, median {np.median(degree):.0f}, max "
        f"{degree.max()}; inter-document edges: {int(inter.sum()):,} of {int(degree.sum()):,}."
    )


def graph_vectors(kg: KnowledgeGraph) -> list[tuple[str, float]]:
    """MB of the knowledge graph's vectors, by holder (their buffers' full capacity)."""
    return [(holder, n / 2**20) for holder, n in kg.held_bytes().items()]


def graph_note_held(parts: list[tuple[str, float]], rss: dict[str, float]) -> str:
    """The sentence on what the knowledge graph holds (empty without a graph)."""
    if not parts:
        return ""
    total = rss["graph held"] - rss["trimmed"]
    each = ", ".join(f"{name} {mb:,.0f} MB" for name, mb in parts)
    rest = total - sum(mb for _, mb in parts)
    return (
        f"RSS once the graph is built, with the freed heap returned: {rss['graph held']:,.0f}"
        f" MB: the knowledge graph holds {total:,.0f} MB, of which vectors: {each}; the "
        f"rest, {rest:,.0f} MB, is its records (each document's extraction, as columns "
        "with an index by entity; the store's entities, relations and mention counts with "
        "their indexes; the ledger's keys of them; the communities).\n\n"
    )


def timed_parts(
    index: SemanticIndex, spent: dict[str, float], embedder: SentenceCache | None = None
) -> None:
    """Record the time each of the index's parts takes to stage a change.

    With ``embedder``, the model calls a part makes through it (the passage graph embeds
    its new phrase names) are left out: the embed stage counts them.
    """

    def model_s() -> float:
        return embedder.model_s if embedder is not None else 0.0

    for name, part in index.parts.items():
        stage = part.stage

        def timed(change, _stage=stage, _name=name, **options):
            t0, model0 = time.perf_counter(), model_s()
            try:
                return _stage(change, **options)  # (the dense part's placed=)
            finally:
                took = time.perf_counter() - t0 - (model_s() - model0)
                spent[_name] = spent.get(_name, 0.0) + took

        part.stage = timed  # type: ignore[method-assign]


ROUNDS = 2  # wordings of each query timed


def embed_queries(index: SemanticIndex) -> float:
    """Embed every timed query once (the embedder keeps them); the p50 ms of one.

    The retrievers' latencies exclude the model: each query's vector is cached before any
    retriever is timed, as a serving process that embeds a query once for several
    retrievers, or on a GPU, would see. This p50 is what the model adds to each.
    """
    times = []
    for q in ["Which question warms the caches?", *fresh(QUERIES, ROUNDS)]:
        t0 = time.perf_counter()
        index.reader().embed_query(q)
        times.append(1000 * (time.perf_counter() - t0))
    return statistics.median(times[1:])


def latency(fn, index: SemanticIndex, embedder: SentenceCache) -> tuple[float, float, float]:
    """p50 / p95 ms of single calls, each on a query the index has not answered yet, and
    the mean ms of model calls a call makes.

    The index's latest dense and BM25 answers are dropped first, so no retriever is timed
    on answers an earlier one left (a retriever still shares one search between its own
    channels). A retriever that embeds more than the query (IAR a rewrite of it, SKETCH
    its bridges) pays the model: those milliseconds are taken out of its times and given
    in a column of their own, as the query's embedding is (see :func:`embed_queries`).
    """
    fn("Which question warms the caches?")  # entity vectors, pieces, reports
    forget_answers(index)
    times, model = [], []
    for q in fresh(QUERIES, ROUNDS):
        m0, t0 = embedder.model_s, time.perf_counter()
        fn(q)
        spent_model = embedder.model_s - m0
        times.append(1000 * (time.perf_counter() - t0 - spent_model))
        model.append(1000 * spent_model)
    return statistics.median(times), float(np.percentile(times, 95)), float(np.mean(model))


SWEEPS = {"ef_search": (128, 256, 512), "nprobe": (128, 256, 512)}  # the recall table's breadths
RECALL_K = 10
TIE = 1e-5  # scores this close to the exact 10th best count as tying it (summation order)
SAMPLED_SENTENCES = 200  # corpus sentences asked as queries in the recall table


def exact_top(index: SemanticIndex, queries: np.ndarray, k: int) -> np.ndarray:
    """Each query's ``k`` best scores by an exact product over the stored vectors.

    Reads the vectors the dense index stores (an HNSW graph's float16 rows as it compares
    them), a block of rows at a time, so no copy of every vector is held.
    """
    ids = index.reader().dense.ids
    best = np.full((len(queries), k), -np.inf, np.float32)
    for a in range(0, ids.size, 1 << 16):
        sims = queries @ index.reader().dense.vectors_of(ids[a : a + (1 << 16)]).T
        best = -np.sort(-np.concatenate([best, sims], 1), axis=1)[:, :k]
    return best


def dense_recall(index: SemanticIndex, sets: dict[str, list[str]]) -> list[dict]:
    """Recall@10 of the dense search against exact search, and its p50, per search breadth.

    The approximate search's top 10 against the exact top 10 over the same stored vectors,
    for each query set, at each of :data:`SWEEPS`'s breadths (``nprobe`` for an inverted
    file, ``ef_search`` for an HNSW graph; the index's own is put back after): a hit
    counts when it scores at least the exact 10th best, so chunks that tie (a repeated
    vector) count alike. Each search is timed alone, the index's recent answers dropped
    first.
    """
    dense, rows = index.reader().dense, []
    breadth, default = dense.breadth

    def widen(value: int) -> None:
        if breadth == "nprobe":
            dense.nprobe = value
        else:
            dense.ef_search = value

    try:
        for name, texts in sets.items():
            queries = np.stack([index.reader().embed_query(t) for t in texts]).astype(np.float32)
            truth = exact_top(index, queries, RECALL_K)
            for ef in SWEEPS[breadth]:
                widen(ef)
                times, hits = [], []
                for q, want in zip(queries, truth, strict=True):
                    forget_answers(index)
                    t0 = time.perf_counter()
                    scores, _ = dense.search(q[None], RECALL_K)
                    times.append(1000 * (time.perf_counter() - t0))
                    hits.append(float((scores[0] >= want[-1] - TIE).mean()))
                rows.append(
                    {
                        "queries": f"{name} ({len(texts)})",
                        "breadth": f"{breadth} {ef}" + (" (default)" if ef == default else ""),
                        f"recall@{RECALL_K}": float(np.mean(hits)),
                        "p50 ms": statistics.median(times),
                    }
                )
    finally:
        widen(default)
    return rows


def sampled_sentences(index: SemanticIndex, n: int) -> list[str]:
    """``n`` sentences of the index's chunks (a seeded sample): queries worded as the text."""
    chunks = index.chunks()
    rng = np.random.default_rng(7)
    picked = rng.choice(len(chunks), size=min(n, len(chunks)), replace=False)
    out = []
    for i in picked.tolist():
        text = chunks[i].text
        sentences = [text[s.start : s.end] for s in split_sentences(text)]
        out.append(sentences[int(rng.integers(len(sentences)))] if sentences else text)
    return out


def _read_report(path: str) -> tuple[int, dict[str, float]]:
    """Chunks, and the stage and retriever rows (seconds, p50 ms), of a report's file."""
    return _read_report_text(Path(path).read_text(encoding="utf-8"))


def _read_report_text(text: str) -> tuple[int, dict[str, float]]:
    """Chunks, and the rows of the stage and retriever tables (seconds, p50 ms), of a report."""
    n = int(text.split("### Scale: ", 1)[1].split(" chunks", 1)[0].replace(",", ""))
    rows, kind = {}, ""
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and len(cells) >= 2:
            try:
                value = float(cells[1].replace(",", ""))
            except ValueError:  # a header: the tables after it are read when they are times
                kind = {"stage": "s", "retriever": "p50 ms"}.get(cells[0], "")
                continue
            if kind:
                rows[f"{cells[0]} ({kind})"] = value
    return n, rows


def exponents(small: str, large: str) -> str:
    """How each stage's time and each retriever's p50 grow between two reports.

    The exponent ``b`` of ``t ~ n^b``: ``log(t_large / t_small) / log(n_large / n_small)``.
    Then the goals of a million chunks, checked on the larger report (:func:`goals`).
    """
    (n1, a), (n2, b) = _read_report(small), _read_report(large)
    if n1 == n2:
        raise SystemExit("the two reports are of the same size")
    rows = []
    for name, t1 in a.items():
        t2 = b.get(name)
        if t2 is None or t1 <= 0 or t2 <= 0:
            continue
        rows.append(
            {
                "stage or retriever": name,
                f"at {n1:,}": t1,
                f"at {n2:,}": t2,
                "exponent": round(float(np.log(t2 / t1) / np.log(n2 / n1)), 2),
            }
        )
    columns = ["stage or retriever", f"at {n1:,}", f"at {n2:,}", "exponent"]
    return (
        header(
            f"Scale: growth from {n1:,} to {n2:,} chunks"
            + (" with the knowledge graph" if "KG extract (heuristic) (s)" in b else ""),
            f"the two reports above ({small}, {large}); seconds per stage, p50 ms per "
            "retriever; exponent b of t ~ n^b",
        )
        + "\n"
        + table(rows, columns)
        + "\n\n"
        + goals(n2, Path(large).read_text(encoding="utf-8"), rows)
    )


# goal at a million chunks: (what, the largest value that meets it)
P50_GOALS = {
    "dense": 20.0,
    "BM25": 20.0,
    "IAR": 20.0,
    "GraphRetriever() (PPR)": 20.0,
    "SKETCH": 100.0,
    "SKETCH (split=None)": 100.0,
    "local": 100.0,
}
VARIANTS = {"SKETCH (split=None)"}  # listed only when the run measured them
BUILD_GOAL_S, PEAK_GOAL_MB, WITH_GRAPH_GOAL_MB, GROWTH_GOAL = 15 * 60, 8 * 1024, 16 * 1024, 1.1


def goals(n: int, report: str, growth: list[dict]) -> str:
    """The goals of the scale issue, checked against a report of ``n`` chunks and the growth.

    The default index built in under 15 minutes and 8 GB peak (embedding excluded); with
    the knowledge graph (and SKETCH's pieces, and the queries), under 16 GB together; every
    stage growing at most as n^1.1; p50
    under 20 ms for dense, BM25, IAR and ``GraphRetriever()``, under 100 ms for SKETCH
    and local search. A goal the report cannot tell is said to be not measured.
    """

    def number(pattern: str) -> float | None:
        m = re.search(pattern, report)
        return float(m.group(1).replace(",", "")) if m else None

    rows = []
    build = number(r"embedding excluded: ([\d,.]+) s")
    peak = number(r"([\d,.]+) MB after the index")
    graph = number(r"([\d,.]+) MB after the graph")
    if graph is not None:  # with the graph's retrievers' parts (SKETCH's pieces) and queries
        graph = max(graph, number(r"([\d,.]+) MB after the queries") or graph)
    share = number(r"distinct corpus: [\d,]+ distinct chunk texts \(([\d.]+)%")
    if share is not None:  # more is better: checked as the share of repeated texts
        repeated = 100.0 - share
        limit = 100.0 * (1.0 - DISTINCT_GOAL) + 1e-9
        rows.append(("repeated chunk texts < 1% (distinct corpus)", repeated, limit, "%"))
    rows.append(("index build < 15 min (embedding excluded)", build, BUILD_GOAL_S, "s"))
    rows.append(("peak RSS after the index < 8 GB", peak, PEAK_GOAL_MB, "MB"))
    rows.append(("peak RSS with the knowledge graph < 16 GB", graph, WITH_GRAPH_GOAL_MB, "MB"))
    _, p50 = _read_report_text(report)
    for name, limit in P50_GOALS.items():
        if name in VARIANTS and f"{name} (p50 ms)" not in p50:
            continue
        rows.append((f"{name} p50 < {limit:g} ms", p50.get(f"{name} (p50 ms)"), limit, "ms"))
    stages = [r for r in growth if r["stage or retriever"].endswith("(s)")]
    steep = [r for r in stages if r["exponent"] > GROWTH_GOAL]
    out = [
        {
            "goal": what,
            "measured": "not measured" if value is None else f"{value:,.1f} {unit}",
            "met": "-" if value is None else ("yes" if value < limit else "no"),
        }
        for what, value, limit, unit in rows
    ]
    out.append(
        {
            "goal": f"every stage grows <= n^{GROWTH_GOAL}",
            "measured": ", ".join(
                f"{r['stage or retriever'][:-4]} {r['exponent']:.2f}" for r in stages
            ),
            "met": "yes" if stages and not steep else ("-" if not stages else "no"),
        }
    )
    return (
        f"The goals at {n:,} chunks, from the report above:\n\n"
        + table(out, ["goal", "measured", "met"])
        + "\n"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=100_000, help="target number of chunks")
    ap.add_argument("--quick", action="store_true", help="a smoke run: about 1,000 chunks")
    ap.add_argument("--embedder", choices=["minilm", "fake"], default="minilm")
    ap.add_argument(
        "--corpus",
        choices=["distinct", "duplicated"],
        default="distinct",
        help="distinct: every chunk its own text (the default); duplicated: one document in "
        "ten a copy, every document with a boilerplate footer",
    )
    ap.add_argument("--knn", choices=["auto", "flat", "hnsw"], default="auto")
    ap.add_argument("--dense", choices=["auto", "flat", "ivf", "hnsw"], default="auto")
    ap.add_argument("--vector-dtype", choices=["float32", "float16"], default="float32")
    ap.add_argument("--index-only", action="store_true", help="no knowledge graph")
    ap.add_argument("--ssg", action="store_true", help="build the semantic similarity graph too")
    ap.add_argument(
        "--no-sketch",
        action="store_true",
        help="no SKETCH queries: its first query cuts the corpus into 100-token pieces and "
        "embeds them (at a million chunks, more than 24 GB holds beside the graph)",
    )
    ap.add_argument(
        "--batch",
        type=int,
        help="add the documents in calls of about this many chunks (one commit each; "
        "default: one call)",
    )
    ap.add_argument(
        "--sketch-split",
        choices=["100,16", "none"],
        default="100,16",
        help="SKETCH's split: the paper's 100-token pieces (the default), or none (search "
        "the index's chunks: no pieces to cut and embed)",
    )
    ap.add_argument("--out")
    ap.add_argument("--exponents", nargs=2, metavar=("SMALL", "LARGE"), help="compare two reports")
    args = ap.parse_args()
    if args.exponents:
        emit(exponents(*args.exponents), args.out)
        return
    target = 1_000 if args.quick else args.chunks
    embedder = cached_embedder(args.embedder)
    docs = documents(target, embedder, args.corpus)

    spent: dict[str, float] = {}
    rss: dict[str, float] = {"start": peak_mb(), "base": rss_mb(trim=True)}
    ssg_config = SSGConfig(knn=args.knn, vector_dtype=args.vector_dtype)
    index = SemanticIndex(
        embedder=embedder,
        chunk_vectors="mean",
        ssg=ssg_config if args.ssg else False,
        passages=True,
        dense=args.dense,
        show_progress=True,
    )
    timed_parts(index, spent, embedder)
    model_before = embedder.model_s
    calls = max(1, -(-target // args.batch)) if args.batch else 1
    t0 = time.perf_counter()
    for part in np.array_split(np.arange(len(docs)), calls):
        docs.add(index, part.tolist())
    total = time.perf_counter() - t0
    rss["index"] = peak_mb()
    embedder.save()
    embedder.keep = False
    rss["held"] = rss_mb()
    rss["trimmed"] = rss_mb(trim=True)
    rows_b, ann_b = (0, 0) if not args.ssg else ssg_bytes(index)
    n_texts, n_vectors = distinct_counts(index)
    print(f"distinct: {n_texts:,} chunk texts, {n_vectors:,} vectors", file=sys.stderr)
    embed_s = embedder.model_s - model_before
    parts_s = sum(spent.values())
    # progress on stderr, so a run stopped later still tells how far it got
    print(f"index: {total:.1f} s, parts {spent}, RSS {rss['index']:.0f} MB", file=sys.stderr)

    model_before_graph = embedder.model_s
    kg = None if args.index_only else KnowledgeGraph.build(index, communities=False)
    if kg is not None:
        print(f"graph: {kg.timings}, RSS {peak_mb():.0f} MB", file=sys.stderr)
        kg.build_communities()
        print(f"communities: {kg.timings}, RSS {peak_mb():.0f} MB", file=sys.stderr)
    rss["graph"] = peak_mb()
    held_by_graph = []
    if kg is not None:
        rss["graph held"] = rss_mb(trim=True)
        held_by_graph = graph_vectors(kg)
    t = kg.timings if kg is not None else {}
    names_s = embedder.model_s - model_before_graph  # the entity names the graph embeds
    stages = [
        {"stage": "chunk (split, chunk or place, mean vectors)", "s": total - embed_s - parts_s},
        {"stage": "embed (model calls, distinct sentences)", "s": embed_s},
        {"stage": "dense", "s": spent.get("dense", 0.0)},
        {"stage": "BM25", "s": spent.get("sparse", 0.0)},
        {"stage": "passage graph", "s": spent.get("passages", 0.0)},
        {"stage": "SSG", "s": spent.get("ssg", 0.0)},
        {"stage": "KG extract (heuristic)", "s": t.get("extract_s", 0.0)},
        {"stage": "KG resolve and derive", "s": t.get("resolve_s", 0.0)},
        {"stage": "KG write (in-memory store)", "s": t.get("write_s", 0.0)},
        {"stage": "KG communities", "s": t.get("communities_s", 0.0)},
        {"stage": "KG reports (extractive)", "s": t.get("reports_s", 0.0)},
        # the graph's model calls happen inside its stages (names embedded where they are
        # met): their total, which the graph's build time below leaves out
        {"stage": "KG embed (model calls within the KG rows)", "s": names_s},
    ]
    index_s = sum(r["s"] for r in stages[:6]) - embed_s
    graph_s = sum(r["s"] for r in stages[6:-1]) - names_s
    if kg is None:
        stages = stages[:6]
    if not args.ssg:
        stages = [r for r in stages if r["stage"] != "SSG"]

    pieces_note = ""
    run = {
        "dense": lambda q: index.search(q, k=10),
        "BM25": lambda q: index.search_sparse(q, k=10),
        "IAR": IntentAwareRetriever(index, k=10).retrieve,
        "GraphRetriever() (PPR)": GraphRetriever(index, k=10).retrieve,
    }
    for algorithm in [] if not args.ssg else ALGORITHMS:
        if algorithm != "llm_guided_traversal":
            run[f"SSG {algorithm}"] = SSGRetriever(index, strategy=algorithm, k=10).retrieve
    if kg is not None:
        if not args.no_sketch:
            split = None if args.sketch_split == "none" else (100, 16)
            name = "SKETCH" if split else "SKETCH (split=None)"
            t0 = time.perf_counter()  # with a split, the index splits and embeds its pieces
            run[name] = SketchRetriever(index, kg, k=10, split=split).retrieve
            kept = index.reader().piece_index
            if split and kept is not None:
                rss["pieces"] = peak_mb()
                stored = getattr(kept.dense.buffer, "ntotal", len(kept.dense))
                pieces_note = (
                    f"SKETCH's pieces (100 tokens, 16 overlap): {len(kept.pieces):,} pieces "
                    f"(their graph stores {stored:,} distinct vectors), split and embedded "
                    f"in {time.perf_counter() - t0:,.0f} s; peak RSS after them "
                    f"{rss['pieces']:,.0f} MB.\n\n"
                )
                print(pieces_note.strip(), file=sys.stderr)
        run["local"] = CommunityRetriever(index, kg, strategy="local", k=10).retrieve
        run["global"] = CommunityRetriever(index, kg, strategy="global", k=10).retrieve
    lat = []
    embed_ms = embed_queries(index)
    for name, fn in run.items():
        p50, p95, model_ms = latency(fn, index, embedder)
        lat.append({"retriever": name, "p50 ms": p50, "p95 ms": p95, "model ms": model_ms})
    recall_note = ""
    if index.reader().dense.approximate:
        sets = {
            "questions": fresh(QUERIES, len(LEAD_INS)),
            "corpus sentences": sampled_sentences(index, SAMPLED_SENTENCES),
        }
        recall_note = (
            "\n\nThe approximate dense search against the exact one over the same stored "
            f"vectors: recall@{RECALL_K} (the share of the exact top {RECALL_K} it finds) "
            "and the p50 of one search, per search breadth (`DenseIndex(nprobe=)` for an "
            "inverted file, `ef_search=` for an HNSW graph); "
            f"questions: the timed ones, in all {len(LEAD_INS)} wordings; corpus sentences: "
            f"{SAMPLED_SENTENCES} sentences of seeded chunks, asked as they are written.\n\n"
            + table(
                dense_recall(index, sets),
                ["queries", "breadth", f"recall@{RECALL_K}", "p50 ms"],
            )
            + "\n"
        )
    rss["queries"] = peak_mb()

    nodes = (
        "no similarity graph (the default; --ssg builds it)"
        if not args.ssg
        else f"{index.reader().ssg_view().graph.n_nodes:,} window nodes"
    )
    ssg_note = (
        "" if not args.ssg else f"SSGConfig(knn={args.knn!r}, vector_dtype={args.vector_dtype!r}); "
    )
    held = (
        ""
        if not args.ssg
        else ", of which the SSG's "
        + ("sentence rows" if args.knn == "hnsw" else "node and sentence rows")
        + f" are {rows_b / 2**20:,.0f} MB and its HNSW node index {ann_b / 2**20:,.0f} MB"
        + (" (which holds the node rows)" if args.knn == "hnsw" else "")
    )
    approximate = index.reader().dense.approximate
    structure = "HNSW graph" if index.reader().dense.breadth[0] == "ef_search" else "inverted file"
    stored_note = (
        ""
        if not approximate
        else f" (its {structure} stores {index.reader().dense.buffer.ntotal:,} vectors: a repeated "
        "vector is stored once)"
    )
    n_chunks = len(index.chunks())
    share = f"{n_texts / n_chunks:.1%}" if n_chunks else "-"
    met = "met" if n_chunks and n_texts >= DISTINCT_GOAL * n_chunks else "not met"
    corpus_note = (
        f"{args.corpus} corpus: {n_texts:,} distinct chunk texts ({share}"
        + (f"; the goal, {DISTINCT_GOAL:.0%}, {met}" if args.corpus == "distinct" else "")
        + f"), {n_vectors:,} distinct chunk vectors"
    )
    counts = kg.store.counts() if kg is not None else {}
    graph_note = (
        "no knowledge graph (--index-only)"
        if kg is None
        else f"heuristic knowledge graph in memory ({counts.get('entities', 0):,} entities, "
        f"{counts.get('relations', 0):,} relations)"
        + ("; SKETCH not queried (--no-sketch)" if args.no_sketch else "")
        + (
            "; SKETCH searches the index's chunks (--sketch-split none)"
            if args.sketch_split == "none" and not args.no_sketch
            else ""
        )
    )
    report = (
        header(
            f"Scale: {n_chunks:,} chunks"
            + (" with the knowledge graph" if kg is not None else "")
            + (", duplicated corpus" if args.corpus == "duplicated" else "")
            + (f", {structure} dense search" if approximate else ", exact dense search")
            + (" (dense='auto')" if args.dense == "auto" else "")
            + (f", added in {calls} calls" if calls > 1 else ""),
            f"../shared/data/sectioned_text sections, recombined ({len(docs):,} documents: "
            f"{len(docs) - len(docs.given):,} sections chunked by the index's chunker, "
            f"{len(docs.given):,} recombined at the sentence level and given as chunks; "
            f"{n_chunks:,} chunks, {nodes}); {corpus_note}; embedder: "
            f"{args.embedder} (each distinct sentence once; chunk vectors: mean of their "
            f"sentences); {ssg_note}dense={args.dense!r}{stored_note}; "
            + (f"added in {calls} calls of about {args.batch:,} chunks; " if calls > 1 else "")
            + graph_note,
        )
        + "\n"
        + table(stages, ["stage", "s"])
        + (
            "\n\nIndex build (dense, BM25, passage graph)"
            if not args.ssg
            else "\n\nIndex + SSG build"
        )
        + f", embedding excluded: {index_s:,.1f} s"
        + (
            ""
            if kg is None
            else f"; heuristic knowledge graph, embedding excluded: {graph_s:,.1f} s"
        )
        + f". Peak RSS: {rss['start']:,.0f} MB before the index (the "
        "corpus, the sentence-vector cache, the libraries), "
        f"{rss['index']:,.0f} MB after the index, "
        + (f"{rss['graph']:,.0f} MB after the graph, " if kg is not None else "")
        + f"{rss['queries']:,.0f} MB after the "
        f"queries. RSS once the index is built: {rss['held']:,.0f} MB; with the freed heap "
        f"returned to the system (malloc_trim) {rss['trimmed']:,.0f} MB, against "
        f"{rss['base']:,.0f} MB before the index: the index holds "
        f"{rss['trimmed'] - rss['base']:,.0f} MB{held}.\n\n"
        + graph_note_held(held_by_graph, rss)
        + pieces_note
        + ("" if not args.ssg else ssg_degrees(index) + "\n\n")
        + table(lat, ["retriever", "p50 ms", "p95 ms", "model ms"])
        + "\n\nLatency excludes the model: the query's embedding is cached before any "
        f"retriever is timed (one query's embedding takes {embed_ms:.1f} ms p50 on this "
        "CPU, to add to each row for what a caller waits), and what a retriever embeds "
        "besides (IAR a declarative rewrite of the query, SKETCH its bridges) is taken out "
        "of its times and given as `model ms` (the mean per query). No retriever reuses "
        "another's dense or BM25 answers.\n" + recall_note
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
