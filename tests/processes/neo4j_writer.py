"""A writer process of an index followed into Neo4j (run by tests/graph/test_neo4j_processes.py).

``python neo4j_writer.py URI USER PASSWORD N LOG READY``: builds ``SemanticIndex(passages=
True)`` over the base documents, follows it with ``Neo4jIndexStore``, touches READY, then
makes N changes: add a document, replace document ``r`` with its next text, delete the
document added two changes before. After each commit it logs ``{"time", "r", "docs"}``:
when the commit returned, the text version of ``r`` and the documents held.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from semrag import Document, SemanticIndex
from semrag.neo4j import Neo4jGraphStore, Neo4jIndexStore
from semrag.testing import FakeEmbedder

BASE = [
    Document("cats", "Cats\nCats sleep in the sun. Cats chase mice at night.", {"title": "Cats"}),
    Document("dogs", "Dogs\nDogs fetch balls. Dogs guard the house.", {"title": "Dogs"}),
]


def replaced(k: int) -> Document:
    return Document("r", f"Rivers\nThe river text is version {k}. Rivers reach the sea.")


def main(uri: str, user: str, password: str, n: int, out: str, ready: str) -> None:
    store = Neo4jGraphStore(uri, user, password)
    index = SemanticIndex(embedder=FakeEmbedder(), passages=True)
    Neo4jIndexStore.for_index(index, store)
    index.add_documents([*BASE, replaced(0)])
    Path(ready).touch()
    for i in range(n):
        if i % 3 == 0:
            index.add_documents([Document(f"n{i}", f"Note {i}\nNote {i} is about Cats.")])
        elif i % 3 == 1:
            index.add_documents([replaced(i)], on_conflict="replace")
        else:
            index.delete([f"n{i - 2}"])
        with open(out, "a", encoding="utf-8") as f:
            r = index.document("r").text.split("version ")[1].split(".")[0]
            f.write(json.dumps({"time": time.time(), "r": int(r), "docs": sorted(index.doc_ids)}))
            f.write("\n")
        time.sleep(0.05)
    store.close()


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], a[1], a[2], int(a[3]), a[4], a[5])
