"""Splitting speed: the default semantic splitter against a recursive split and the peers.

One run, one process, the same documents: five development corpora of real documents
(:func:`_common.splitting_corpora`: SQuAD articles, PubMedQA abstracts, Wikipedia articles,
novels, lecture transcripts; 300,000 characters of each by default). Each contestant splits
every document after a warm-up on a short text. The contestants without MiniLM are timed
first, before anything loads torch, in eleven passes, each timing every one of them in
turn; a contestant's time is its median pass, and its ratio the median over the passes of
its time over LangChain's ``RecursiveCharacterTextSplitter(400, 0)``'s in the same pass (a
single run of a fast splitter varies by a third on a shared machine, the best of a few
runs by a fifth; a slow spell falls on a whole pass, so the paired ratio holds). The
MiniLM contestants run once, after them, against the recursive split's median. Times are
wall-clock on this machine.

Contestants: LangChain's recursive splitter on strings (``split_text``) and on documents
(``split_documents``, the floor of the contestants that take documents); semrag's
``SemanticTextSplitter()`` (LangChain adapter, documents in and out)
and the core ``SemanticChunker()`` on the packaged static boundary encoder; the same
splitter on MiniLM boundaries (the default before the static encoder); LangChain's
experimental ``SemanticChunker`` and chonkie's ``SemanticChunker`` on the same packaged
MiniLM; chonkie's ``SemanticChunker`` on our static model (chonkie reads model2vec models);
chonkie's ``RecursiveChunker``. ``--no-minilm`` leaves out the three MiniLM contestants
(a minute each).

    python benchmarks/splitting_speed.py [--chars 300000] [--no-minilm] [--out FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

from _common import (
    chonkie_embeddings,
    emit,
    header,
    lc_embeddings,
    measure,
    splitting_corpora,
    table,
)

PASSES = 11
"""Timed passes over the contestants without MiniLM, each timing every one of them in turn."""
WARM = "The warm-up text has three sentences. It loads every code path.\n\nThen it ends."


def timed(contestants: list[tuple[str, Any]], texts: list[str], passes: int) -> list[dict]:
    """Each contestant's first run (with its memory), then ``passes`` timed passes.

    A pass times every contestant once, one after another, so a slow spell of a shared
    machine falls on all of them alike. ``times`` holds each pass's time (with no pass, the
    first run's).
    """
    rows = []
    for name, fn in contestants:
        fn([WARM])
        n_out, secs, mb = measure(lambda fn=fn: fn(texts))
        rows.append({"contestant": name, "times": [secs], "peak MB": mb, "chunks": n_out})
        print(f"{name}: {secs:.3f}s (first run) {n_out} chunks", flush=True)
    for p in range(passes):
        for row, (_, fn) in zip(rows, contestants, strict=True):
            start = time.perf_counter()
            fn(texts)
            row["times"][p:] = [time.perf_counter() - start]  # (the first pass replaces the run)
    return rows


def index_builds(texts: list[str]) -> list[dict]:
    """The default index built on ``texts``, cut on MiniLM and on the static boundaries."""
    from semrag import SemanticChunker, SemanticIndex
    from semrag.embeddings import SentenceTransformerEmbedder

    rows = []
    for name, chunker in (
        ("SemanticIndex() (MiniLM boundaries, the default)", None),
        ("SemanticIndex(SemanticChunker()) (static boundaries)", SemanticChunker()),
    ):
        warm = SemanticIndex(chunker, SentenceTransformerEmbedder())  # loads the models
        warm.add_documents(["The warm-up document. It has two sentences."])
        index = SemanticIndex(chunker, SentenceTransformerEmbedder())
        start = time.perf_counter()
        index.add_documents(texts)
        secs = time.perf_counter() - start
        chunks = [c for d in index.reader().corpus.records() for c in d.chunks]
        rows.append(
            {
                "index": name,
                "build seconds": secs,
                "chunks": len(chunks),
                "mean chars": sum(len(c.text) for c in chunks) / len(chunks),
            }
        )
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chars", type=int, default=300_000, help="characters of each corpus")
    ap.add_argument("--no-minilm", action="store_true", help="leave out the MiniLM contestants")
    ap.add_argument("--out", default=None, help="append the table to this markdown file")
    ap.add_argument(
        "--index", action="store_true", help="also build the default index on either boundaries"
    )
    args = ap.parse_args()

    corpora = splitting_corpora(args.chars)
    texts = [t for ts in corpora.values() for t in ts]
    n_chars = sum(len(t) for t in texts)

    from chonkie import RecursiveChunker as ChonkieRecursive
    from chonkie import SemanticChunker as ChonkieSemantic
    from chonkie.embeddings import Model2VecEmbeddings
    from langchain_core.documents import Document as LCDocument
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from langchain_semrag import SemanticTextSplitter
    from semrag import SemanticChunker
    from semrag.static_embedder import StaticEmbedder

    splitter, chunker = SemanticTextSplitter(), SemanticChunker()

    def each(split):
        return lambda batch: sum(len(split(t)) for t in batch)

    recursive = RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=0)
    contestants = [
        ("LangChain RecursiveCharacterTextSplitter(400, 0)", each(recursive.split_text)),
        (
            "LangChain RecursiveCharacterTextSplitter(400, 0) (LangChain documents)",
            lambda batch: len(recursive.split_documents([LCDocument(t) for t in batch])),
        ),
        (
            "semrag SemanticTextSplitter() (LangChain documents)",
            lambda batch: len(splitter.split_documents([LCDocument(t) for t in batch])),
        ),
        ("semrag SemanticChunker() (core)", lambda batch: len(chunker.chunk_documents(batch))),
        (
            "chonkie SemanticChunker (our static model)",
            each(
                ChonkieSemantic(
                    embedding_model=Model2VecEmbeddings(StaticEmbedder().model),
                    chunk_size=256,
                    threshold=0.5,
                ).chunk
            ),
        ),
        ("chonkie RecursiveChunker", each(ChonkieRecursive().chunk)),
    ]
    rows = timed(contestants, texts, PASSES)
    torch_before = "torch" in sys.modules  # the fast contestants ran without torch loaded
    if not args.no_minilm:
        from langchain_experimental.text_splitter import SemanticChunker as LCSemantic

        from semrag.embeddings import SentenceTransformerEmbedder

        minilm = SentenceTransformerEmbedder(cache_size=0)
        model = minilm.model
        on_minilm = SemanticChunker(minilm)
        minilm_contestants = [
            (
                "semrag SemanticChunker(MiniLM) (boundaries before)",
                lambda batch: len(on_minilm.chunk_documents(batch)),
            ),
            (
                "LangChain SemanticChunker (MiniLM)",
                each(LCSemantic(lc_embeddings(model), buffer_size=1).split_text),
            ),
            (
                "chonkie SemanticChunker (MiniLM)",
                each(ChonkieSemantic(embedding_model=chonkie_embeddings(model)).chunk),
            ),
        ]
        rows += timed(minilm_contestants, texts, 0)
    floor, documents_floor = rows[0]["times"], rows[1]["times"]
    for r in rows:  # documents in and out are compared with the recursive split of documents
        base = documents_floor if "(LangChain documents)" in r["contestant"] else floor
        r["seconds"] = statistics.median(r["times"])
        r["MB/s"] = n_chars / r["seconds"] / 1e6
        if len(r["times"]) == len(base):  # timed in the same passes: the median pass's ratio
            paired = zip(r["times"], base, strict=True)
            r["x recursive"] = statistics.median(t / b for t, b in paired)
        else:
            r["x recursive"] = r["seconds"] / statistics.median(base)
        print(f"{r['contestant']}: {r['seconds']:.3f}s {r['x recursive']:.2f}x", flush=True)
    index_rows = index_builds(corpora["SQuAD"]) if args.index else []
    sizes = ", ".join(f"{k} {len(v)} documents" for k, v in corpora.items())
    report = "\n".join(
        [
            header(
                "Splitting speed (the default splitter against a recursive split and the peers)",
                f"{n_chars:,} characters of five development corpora ({sizes})",
            ),
            "",
            table(rows, ["contestant", "seconds", "x recursive", "MB/s", "peak MB", "chunks"]),
            "",
            "`x recursive`: the contestant's time over LangChain's "
            "`RecursiveCharacterTextSplitter(400, 0)` in the same run (lower is faster): its "
            "`split_documents` for the contestants that take and give LangChain documents, its "
            "`split_text` for the others. The contestants without MiniLM were timed first, in "
            f"{PASSES} passes each timing all of them in turn, with torch "
            f"{'already' if torch_before else 'not yet'} loaded: `seconds` is their median "
            "pass, `x recursive` the median over the passes of the contestant's time over the "
            "recursive split's in the same pass. The MiniLM ones ran once, after them.",
            "",
        ]
        + (
            [
                "The default index on the SQuAD part, cut on either boundaries (its sentence "
                "vectors come from MiniLM in both):",
                "",
                table(index_rows, ["index", "build seconds", "chunks", "mean chars"]),
                "",
            ]
            if index_rows
            else []
        )
    )
    emit(report, args.out)


if __name__ == "__main__":
    sys.exit(main())
