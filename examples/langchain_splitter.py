"""SemRAG semantic chunking inside a LangChain pipeline (offline).

Run:  pip install "semrag[langchain]" && python examples/langchain_splitter.py   (no torch)
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from langchain_core.documents import Document  # noqa: E402

from langchain_semrag import SemanticTextSplitter  # noqa: E402

text = (Path(__file__).resolve().parent / "data" / "three_topics.txt").read_text(encoding="utf-8")
splitter = SemanticTextSplitter(buffer_size=1, window="split")  # the packaged static encoder
docs = splitter.split_documents([Document(page_content=text, metadata={"source": "three_topics"})])
for d in docs:
    start, end = d.metadata["start_index"], d.metadata["end_index"]
    assert text[start:end] == d.page_content
    tokens = d.metadata["semrag_token_count"]
    print(f"{start:>5}-{end:<5} {tokens:>4} tokens  {d.page_content[:60]}...")
