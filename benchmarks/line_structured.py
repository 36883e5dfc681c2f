"""Boundary quality on line-structured text: transcripts with one utterance per line.

Speech-to-text output, subtitles and exported notes put one utterance per line and often
drop the final stop. This benchmark makes such text from the lecture transcripts in
../shared/data/sectioned_text (AI and physics lectures, human topic segmentation): each
gold sentence becomes one line and its terminal punctuation (``.``, ``?``, ``!``, with the
spaces before it) is removed; punctuation inside a line stays. The punctuated original,
one sentence per line, is reported too.

Two tables:

1. Sentence splitting: precision / recall of the line (sentence) starts that
   ``split_sentences`` finds, with the line rule (``lines="auto"``, the default) and
   without it (``lines="never"``, the splitter before the rule).
2. Topic boundaries (Pk / WindowDiff over word units, k = half the mean gold section
   length): semrag ``SemanticChunker()`` as shipped, the same with ``lines="never"``,
   LangChain's experimental ``SemanticChunker``, LlamaIndex's
   ``SemanticSplitterNodeParser``, chonkie's ``SemanticChunker`` (each at its default
   settings), and a fixed-size splitter (LangChain ``RecursiveCharacterTextSplitter`` at
   the mean gold section length, no overlap). Every contestant uses the packaged MiniLM.

    python benchmarks/line_structured.py [--every N] [--out FILE]
"""

from __future__ import annotations

import argparse
import functools
import re

import numpy as np
from _common import DATA, Shared, emit, header, load_model, locate, need, segmentation_scores, table

from semrag import SemanticChunker
from semrag.eval.datasets import SectionedDocument, read_sectioned_text
from semrag.text import split_sentences

FOLDERS = ["lectures_ai_manual", "lectures_physics_manual"]
_FINAL_STOP = re.compile(r"\s*[.?!]+\s*$")


def unpunctuated(doc: SectionedDocument) -> SectionedDocument:
    """One utterance per line, final stops removed (a line that is only a stop is kept)."""
    sections = tuple(
        tuple(_FINAL_STOP.sub("", s) or s for s in section) for section in doc.sections
    )
    return SectionedDocument(doc.id, sections, "\n")


def splitting_scores(docs: list[SectionedDocument], lines: str) -> dict[str, float]:
    tp = fp = fn = 0
    for doc in docs:
        gold = set(doc.sentence_starts[1:])
        found = {s.start for s in split_sentences(doc.text, lines=lines)[1:]}
        tp += len(gold & found)
        fp += len(found - gold)
        fn += len(gold - found)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return {"precision": precision, "recall": recall}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--every", type=int, default=1, help="keep every N-th document")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    original = []
    for folder in FOLDERS:
        original += read_sectioned_text(need(DATA / "sectioned_text" / folder), separator="\n")
    original = original[:: args.every]
    sets = {"unpunctuated lines": [unpunctuated(d) for d in original], "punctuated lines": original}

    split_rows = []
    for name, docs in sets.items():
        for lines in ("auto", "never"):
            row = {"text": name, "splitter": f'split_sentences(lines="{lines}")'}
            row.update(splitting_scores(docs, lines))
            split_rows.append(row)
            print(row, flush=True)

    model = load_model()
    ours = Shared(model).semrag
    from chonkie import SemanticChunker as ChonkieSemantic
    from langchain_experimental.text_splitter import SemanticChunker as LCSemantic
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from llama_index.core import Document as LIDocument
    from llama_index.core.node_parser import SemanticSplitterNodeParser

    shipped = SemanticChunker(ours)
    never = SemanticChunker(
        ours, sentence_splitter=functools.partial(split_sentences, lines="never")
    )
    paper_rule = SemanticChunker(ours, target_tokens=None)  # no chunk size aimed at
    lc = LCSemantic(Shared(model).langchain)
    li = SemanticSplitterNodeParser(embed_model=Shared(model).llama_index)
    ch = ChonkieSemantic(embedding_model=Shared(model).chonkie)

    def by_chunker(chunker):
        return lambda docs: [
            [c.start for c in r.chunks] for r in chunker.chunk_with_stats([d.text for d in docs])
        ]

    def fixed(docs):
        out = []
        for d in docs:
            size = max(50, len(d.text) // max(len(d.sections), 1))
            splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=0)
            out.append(locate(d.text, splitter.split_text(d.text)))
        return out

    contestants = [
        ("semrag SemanticChunker() as shipped", by_chunker(shipped)),
        ('semrag SemanticChunker(), lines="never" (before the line rule)', by_chunker(never)),
        (
            "semrag SemanticChunker(target_tokens=None) (SemRAG's rule alone)",
            by_chunker(paper_rule),
        ),
        (
            "LangChain SemanticChunker (defaults)",
            lambda docs: [locate(d.text, lc.split_text(d.text)) for d in docs],
        ),
        (
            "LlamaIndex SemanticSplitterNodeParser (defaults)",
            lambda docs: [
                locate(
                    d.text,
                    [
                        n.get_content()
                        for n in li.get_nodes_from_documents([LIDocument(text=d.text)])
                    ],
                )
                for d in docs
            ],
        ),
        (
            "chonkie SemanticChunker (defaults)",
            lambda docs: [[c.start_index for c in ch.chunk(d.text)] for d in docs],
        ),
        ("fixed size (mean gold section length)", fixed),
    ]
    topic_rows = []
    for name, run in contestants:
        row = {"contestant": name}
        for set_name, docs in sets.items():
            scores = segmentation_scores(docs, run(docs))
            row[f"{set_name} Pk"], row[f"{set_name} WD"] = scores["Pk"], scores["WD"]
            row[f"{set_name} chunks/doc"] = scores["starts"]
        topic_rows.append(row)
        print(row, flush=True)

    gold_sections = np.mean([len(d.sections) for d in original])
    data = (
        f"sectioned_text lectures (AI + physics), {len(original)} transcripts, "
        f"{gold_sections:.1f} gold sections per transcript; one gold sentence per line"
    )
    cols = ["contestant"] + [f"{s} {m}" for s in sets for m in ("Pk", "WD", "chunks/doc")]
    report = "\n".join(
        [
            header("Line-structured text: sentence splitting and topic boundaries", data),
            "",
            table(split_rows, ["text", "splitter", "precision", "recall"]),
            "",
            table(topic_rows, cols),
            "",
        ]
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
