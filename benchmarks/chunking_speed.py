"""Chunking speed: semrag's SemanticChunker against the floor and the peer libraries.

All contestants use the same packaged all-MiniLM-L6-v2 weights (one model object shared
by semrag, LangChain and chonkie; LlamaIndex through a BaseEmbedding over that same
object) with batch size 64 (chonkie encodes with sentence-transformers' default, 32), on
CPU. The floor is the least any sentence-embedding chunker must do: split the sentences
and embed each one once. Each contestant runs once, after a warm-up on a short text.

    python benchmarks/chunking_speed.py [--articles N] [--out benchmarks/RESULTS.md]
"""

from __future__ import annotations

import argparse

from _common import (
    BATCH,
    DATA,
    chonkie_embeddings,
    emit,
    header,
    lc_embeddings,
    li_embeddings,
    measure,
    need,
    table,
)

from semrag import SemanticChunker
from semrag.embeddings import SentenceTransformerEmbedder
from semrag.eval.datasets import read_squad_articles
from semrag.text import split_sentences


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--articles", type=int, default=48)
    ap.add_argument("--out", default=None, help="append the table to this markdown file")
    args = ap.parse_args()

    docs = read_squad_articles(need(DATA / "squad_dev" / "dev-v1.1.json.gz"))[: args.articles]
    texts = [d.text for d in docs]
    n_chars = sum(len(t) for t in texts)
    emb = SentenceTransformerEmbedder(batch_size=BATCH, cache_size=0)
    model = emb.model

    from chonkie import SemanticChunker as ChonkieSemantic
    from langchain_experimental.text_splitter import SemanticChunker as LCSemantic
    from llama_index.core import Document as LIDocument
    from llama_index.core.node_parser import SemanticSplitterNodeParser

    def floor() -> int:
        sents = [s.of(t) for t in texts for s in split_sentences(t)]
        return len(model.encode(sents, batch_size=BATCH, normalize_embeddings=True))

    def ours(pooling: str, b: int):
        chunker = SemanticChunker(emb, buffer_size=b, pooling=pooling)
        return lambda: len(chunker.chunk_documents(texts))

    def langchain(b: int):
        splitter = LCSemantic(lc_embeddings(model), buffer_size=b)
        return lambda: sum(len(splitter.split_text(t)) for t in texts)

    def llamaindex(b: int):
        parser = SemanticSplitterNodeParser(buffer_size=b, embed_model=li_embeddings(model))
        li_docs = [LIDocument(text=t) for t in texts]
        return lambda: len(parser.get_nodes_from_documents(li_docs))

    def chonkie():
        chunker = ChonkieSemantic(embedding_model=chonkie_embeddings(model), chunk_size=100_000)
        return lambda: sum(len(chunker.chunk(t)) for t in texts)

    contestants = [
        ("floor: split + embed each sentence once", "-", floor),
        ("semrag pooling=mean", 1, ours("mean", 1)),
        ("semrag pooling=mean", 5, ours("mean", 5)),
        ("semrag pooling=concat", 1, ours("concat", 1)),
        ("semrag pooling=concat", 5, ours("concat", 5)),
        ("LangChain SemanticChunker", 1, langchain(1)),
        ("LangChain SemanticChunker", 5, langchain(5)),
        ("LlamaIndex SemanticSplitterNodeParser", 1, llamaindex(1)),
        ("LlamaIndex SemanticSplitterNodeParser", 5, llamaindex(5)),
        ("chonkie SemanticChunker (similarity_window=3)", "-", chonkie()),
    ]
    warm = "The warm-up text has three sentences. It loads every code path. Then it ends."
    model.encode([warm])
    rows = []
    for name, b, fn in contestants:
        saved = texts[:]
        texts[:] = [warm]
        fn()
        texts[:] = saved
        n_out, secs, mb = measure(fn)
        rows.append(
            {
                "contestant": name,
                "buffer": b,
                "seconds": secs,
                "chars/s": n_chars / secs,
                "peak MB": mb,
                "chunks": n_out,
            }
        )
        print(f"{name} b={b}: {secs:.1f}s {n_chars / secs:,.0f} chars/s {mb:.0f} MB", flush=True)

    t = {(r["contestant"], r["buffer"]): r["seconds"] for r in rows}
    t_floor = rows[0]["seconds"]
    for r in rows:
        r["x floor"] = r["seconds"] / t_floor
    ratios = []
    for b in (1, 5):
        for pooling in ("mean", "concat"):
            ours_t = t[(f"semrag pooling={pooling}", b)]
            lc = t[("LangChain SemanticChunker", b)] / ours_t
            li = t[("LlamaIndex SemanticSplitterNodeParser", b)] / ours_t
            ratios.append(
                {
                    "semrag": f"pooling={pooling}, buffer={b}",
                    "x floor": ours_t / t_floor,
                    "faster than LangChain": lc,
                    "faster than LlamaIndex": li,
                }
            )
    report = "\n".join(
        [
            header(
                "Chunking speed (SemanticChunker vs peers)",
                f"SQuAD v1.1 dev, {len(docs)} articles (paragraphs joined with one space), "
                f"{n_chars:,} characters",
            ),
            "",
            table(
                rows, ["contestant", "buffer", "seconds", "chars/s", "peak MB", "chunks", "x floor"]
            ),
            "",
            "Ratios (time of the other / time of semrag; `x floor` = semrag time / floor time):",
            "",
            table(ratios, ["semrag", "x floor", "faster than LangChain", "faster than LlamaIndex"]),
            "",
        ]
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
