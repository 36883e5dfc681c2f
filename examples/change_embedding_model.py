"""Move a saved index to another embedding model, as a LangChain app would.

A team built its index with an older 384-dimensional model (here ``FakeEmbedder(dim=384)``
stands in for it: a hashing model, no download) and wants the packaged all-MiniLM-L6-v2,
which gives vectors of the same size. Loading the index with the new model is refused,
not answered wrongly; ``reembed`` moves it as one change; the saved index then loads with
the new model and serves a LangChain chain.

Run:  pip install "semrag[index,torch,langchain]" && python examples/change_embedding_model.py
(offline)
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from langchain_core.documents import Document  # noqa: E402

from langchain_semrag import GraphRetriever, SemanticTextSplitter  # noqa: E402
from semrag import SemanticIndex  # noqa: E402
from semrag.embeddings import SentenceTransformerEmbedder  # noqa: E402
from semrag.errors import EmbedderMismatchError  # noqa: E402
from semrag.testing import FakeEmbedder  # noqa: E402

DOCS = [
    Document(
        "Honey bees dance to show the hive where flowers grow. A waggle run points at the "
        "food; its length says how far away it is.",
        metadata={"source": "bees.txt"},
    ),
    Document(
        "Rockets burn fuel to reach orbit. The Saturn V carried Apollo 11 to the Moon in "
        "1969, and its first stage burned for about two and a half minutes.",
        metadata={"source": "rockets.txt"},
    ),
    Document(
        "Sourdough rises because wild yeast and bacteria ferment the flour. A starter is "
        "fed flour and water every day to keep it alive.",
        metadata={"source": "bread.txt"},
    ),
]
QUESTION = "How do insects tell each other where food is?"


def main() -> None:
    path = Path(tempfile.mkdtemp(prefix="semrag-model-")) / "index"

    # Last year: the index was built and saved with the old model.
    old_model = FakeEmbedder(dim=384)
    splitter = SemanticTextSplitter(embeddings=old_model)
    index = SemanticIndex(embedder=old_model)
    index.add_chunks(splitter.split_documents(DOCS), documents=DOCS)
    index.save(path)

    # Today: the app is started with the new default model. Same size, another space.
    try:
        SemanticIndex.load(path)
    except EmbedderMismatchError as err:
        print(f"refused: the index was built with {err.stored}, not {err.given}")

    # The move: open it with its own model, re-embed everything as one change, save.
    index = SemanticIndex.load(path, embedder=old_model)
    new_model = SentenceTransformerEmbedder()
    index.reembed(new_model)
    index.save(path)
    print(f"re-embedded {len(index.chunks())} chunks with {index.fingerprint.name}")

    # From now on the default model opens it, and a LangChain retriever serves it.
    served = SemanticIndex.load(path)
    hits = GraphRetriever(index=served, k=2).invoke(QUESTION)
    print(f"{QUESTION} -> {[d.metadata['source'] for d in hits]}")
    assert hits[0].metadata["source"] == "bees.txt"


if __name__ == "__main__":
    main()
