"""Swap the splitter of a production ingestion pipeline: no torch, a few times a recursive split.

A pipeline that re-splits every document on every re-index, written as a LangChain user
writes it: read files, split them, hand the chunks on (here: print what a vector store
would get). ``SemanticTextSplitter()`` takes the place of ``RecursiveCharacterTextSplitter``;
both run on the same documents and the script prints their time, their chunk sizes, and
that every chunk's offsets point at its text in the source. The LlamaIndex node parser
splits the same files the same way.

Run:  pip install "semrag[langchain,llama-index]" && python examples/production_splitting.py
(no torch, no network: the boundaries come from the static encoder inside the package)
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from langchain_core.documents import Document  # noqa: E402
from langchain_text_splitters import RecursiveCharacterTextSplitter  # noqa: E402
from llama_index.core import Document as LIDocument  # noqa: E402

from langchain_semrag import SemanticTextSplitter  # noqa: E402
from llama_index_semrag import SemanticNodeParser  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
files = sorted(p for p in DATA.rglob("*") if p.suffix in {".txt", ".md"})
docs = [
    Document(page_content=p.read_text(encoding="utf-8"), metadata={"source": p.name}) for p in files
]
docs = docs * 20  # a re-index of a small corpus, many times over


def timed(split):
    start = time.perf_counter()
    chunks = split(docs)
    return chunks, time.perf_counter() - start


semantic = SemanticTextSplitter()  # was: RecursiveCharacterTextSplitter(chunk_size=400, ...)
recursive = RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=0, add_start_index=True)
semantic.split_documents(docs[:1])  # loads the static encoder once (15 MB, from the package)
ours, t_ours = timed(semantic.split_documents)
theirs, t_theirs = timed(recursive.split_documents)

by_source = {d.metadata["source"]: d.page_content for d in docs}
for chunk in ours:
    text = by_source[chunk.metadata["source"]]
    assert text[chunk.metadata["start_index"] : chunk.metadata["end_index"]] == chunk.page_content
chars = sum(len(d.page_content) for d in docs)
print(f"{len(docs)} documents, {chars:,} characters")
for name, chunks, secs in (
    ("SemanticTextSplitter()", ours, t_ours),
    ("RecursiveCharacterTextSplitter(400, 0)", theirs, t_theirs),
):
    mean = sum(len(c.page_content) for c in chunks) / len(chunks)
    print(f"{name:40s} {secs:6.3f} s  {len(chunks):5d} chunks  mean {mean:4.0f} chars")

nodes = SemanticNodeParser().get_nodes_from_documents(
    [LIDocument(text=d.page_content, metadata=d.metadata) for d in docs[: len(files)]]
)
print(f"SemanticNodeParser(): {len(nodes)} nodes from {len(files)} files")
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"torch", "sentence_transformers"})
print("torch imported:", bool(heavy))
