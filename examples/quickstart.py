"""Quickstart: semantic chunking offline, on the static boundary encoder inside the package.

Run:  pip install "semrag[viz]" && python examples/quickstart.py
Needs no server, no API key, no network and no torch; the encoder ships in the package.
Prints the chunks of a three-topic text, why each break was made, and writes the
breakpoint plot.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from semrag import Document, SemanticChunker  # noqa: E402

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


if __name__ == "__main__":
    main()
