"""Reads during writes: every hit is self-consistent while a writer changes the index.

Eight reader threads run every non-LLM retriever (dense, BM25, IAR, PPR, SKETCH, local
community search and every SSG traversal), each kept across the changes so its caches are
exercised, while one writer adds, replaces (with a different number of sentences, so
offsets move) and deletes documents; a knowledge graph follows the index. Each hit must
hold together: its text is the text of a version of its document at its offsets, and its
provenance sentences lie inside it. A ninth reader checks that the index and the graph
are read at one version: inside ``index.read(followers=True)`` every chunk the graph
mentions is a chunk of the index.
"""

from __future__ import annotations

import random
import threading
import time

from semrag import Document, SemanticIndex
from semrag.graph import KnowledgeGraph
from semrag.retrieval import (
    ALGORITHMS,
    CommunityRetriever,
    GraphRetriever,
    IntentAwareRetriever,
    SketchRetriever,
    SSGRetriever,
)
from semrag.testing import FakeEmbedder

DURATION = float(
    __import__("os").environ.get("SEMRAG_CONCURRENCY_S", 30)
)  # seconds of concurrent reads and writes (the setting)
READERS = 8
TOPICS = ["bees hive honey", "rockets orbit fuel", "bread dough oven", "rivers delta flood"]


def text_for(doc: int, version: int) -> str:
    n = 3 + (doc + version) % 5  # the sentence count changes between versions
    topic = TOPICS[(doc + version) % len(TOPICS)]
    return " ".join(f"Version {version} line {j} of {doc} is about {topic}." for j in range(n))


def retrievers(index: SemanticIndex, kg: KnowledgeGraph) -> list:
    made = [
        lambda q: index.search(q, k=5),
        lambda q: index.search_sparse(q, k=5),
        IntentAwareRetriever(index, k=5).retrieve,
        GraphRetriever(index, k=5).retrieve,
        SketchRetriever(index, kg, k=5).retrieve,
        CommunityRetriever(index, kg, strategy="local", k=5).retrieve,
    ]
    made += [
        SSGRetriever(index, strategy=a, k=5).retrieve
        for a in ALGORITHMS
        if a != "llm_guided_traversal"
    ]
    return made


def test_every_hit_stays_consistent_under_concurrent_writes():
    index = SemanticIndex(embedder=FakeEmbedder(dim=64), ssg=True)
    written: dict[str, set[str]] = {}
    lock = threading.Lock()

    def write(doc: int, version: int) -> None:
        text = text_for(doc, version)
        with lock:
            written.setdefault(f"w{doc}", set()).add(text)
        index.add_documents([Document(f"w{doc}", text)], on_conflict="replace")

    for d in range(40):
        write(d, 0)
    kg = KnowledgeGraph.build(index, communities=False)
    stop = time.monotonic() + DURATION
    violations: list[str] = []
    errors: list[BaseException] = []
    hits_seen = [0]

    def writer() -> None:
        rng = random.Random(0)
        version = 1
        while time.monotonic() < stop:
            doc = rng.randrange(60)
            if rng.random() < 0.2:
                index.delete(f"w{doc}")
            else:
                write(doc, version)
            version += 1

    def reader(seed: int) -> None:
        rng = random.Random(seed)
        mine = retrievers(index, kg)
        try:
            while time.monotonic() < stop:
                for hit in rng.choice(mine)(rng.choice(TOPICS)):
                    hits_seen[0] += 1
                    c = hit.chunk
                    with lock:
                        versions = set(written.get(c.doc_id, ()))
                    if not any(t[c.start : c.end] == c.text for t in versions):
                        violations.append(f"{c.doc_id}: text not at its offsets in any version")
                    for s in (s for p in hit.provenance for s in p.get("sentences", ())):
                        if not c.start <= s["start"] < s["end"] <= c.end:
                            violations.append(
                                f"{c.doc_id}: sentence {s} outside [{c.start}, {c.end})"
                            )
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    graph_reads = [0]

    def graph_reader() -> None:
        """Inside a followers read, every chunk the graph mentions is a chunk of the index."""
        try:
            while time.monotonic() < stop:
                with index.read(followers=True):
                    entities = [e.id for e in kg.store.entities()]
                    for refs in kg.store.chunks_for(entities).values():
                        for ref in refs:
                            present = ref.doc_id in index.doc_ids
                            chunks = index.chunks(ref.doc_id) if present else []
                            if (ref.start, ref.end) not in {(c.start, c.end) for c in chunks}:
                                violations.append(f"graph mentions {ref.key}, not in the index")
                graph_reads[0] += 1
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer), threading.Thread(target=graph_reader)]
    threads += [threading.Thread(target=reader, args=(i,)) for i in range(READERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert hits_seen[0] > 100 and graph_reads[0] > 10, "the readers hardly ran"
    assert violations == [], f"{len(violations)} of {hits_seen[0]} hits: {violations[:5]}"
