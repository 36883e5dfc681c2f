"""SemRAG semantic chunking in a LlamaIndex IngestionPipeline (offline).

Run:  pip install "semrag[llama-index]" && python examples/llama_index_pipeline.py   (no torch)
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from llama_index.core import Document  # noqa: E402
from llama_index.core.ingestion import IngestionPipeline  # noqa: E402

from llama_index_semrag import SemanticNodeParser  # noqa: E402

text = (Path(__file__).resolve().parent / "data" / "three_topics.txt").read_text(encoding="utf-8")
pipeline = IngestionPipeline(transformations=[SemanticNodeParser(buffer_size=1, window="split")])
nodes = pipeline.run(documents=[Document(text=text, metadata={"source": "three_topics"})])
for n in nodes:
    assert text[n.start_char_idx : n.end_char_idx] == n.text
    print(f"{n.start_char_idx:>5}-{n.end_char_idx:<5} {n.text[:60]}...")
