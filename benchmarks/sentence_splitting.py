"""Sentence splitting: boundary precision and recall against gold sentences.

The sectioned_text sets in ../shared/data hold one gold sentence per line. Each document's
sentences are joined (with one space, as running text; and with a newline, as
line-structured text), split again, and the sentence starts found are compared with the
gold starts (section starts included; the document start is not counted). Peers on the
same text: NLTK's Punkt (when its model is installed) and a plain regex
(``(?<=[.!?])\\s+``, what LangChain's SemanticChunker uses).

    python benchmarks/sentence_splitting.py [--every N] [--out FILE]
"""

from __future__ import annotations

import argparse
import re
import time

from _common import DATA, emit, header, need, table

from semrag.eval.datasets import SectionedDocument, read_sectioned_text
from semrag.text import split_sentences

SETS = {
    "wiki300": "wiki300_badjatiya",
    "novels": "fiction82_gutenberg",
    "lectures (AI)": "lectures_ai_manual",
    "lectures (physics)": "lectures_physics_manual",
}
_REGEX = re.compile(r"(?<=[.!?])\s+")


def regex_starts(text: str) -> list[int]:
    return [m.end() for m in _REGEX.finditer(text)]


def punkt_starts():
    try:
        import nltk

        tokenizer = nltk.data.load("tokenizers/punkt/english.pickle")
    except Exception:
        return None

    def starts(text: str) -> list[int]:
        return [a for a, _ in tokenizer.span_tokenize(text)][1:]

    return starts


def score(docs: list[SectionedDocument], split) -> dict[str, float]:
    tp = fp = fn = 0
    for doc in docs:
        gold = set(doc.sentence_starts[1:])
        found = set(split(doc.text)) - {0}
        tp += len(gold & found)
        fp += len(found - gold)
        fn += len(gold - found)
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return {"precision": p, "recall": r, "F1": 2 * p * r / (p + r) if p + r else 0.0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    semrag = lambda text: [s.start for s in split_sentences(text)][1:]  # noqa: E731
    splitters = {"semrag split_sentences": semrag, "regex (?<=[.!?])\\s+": regex_starts}
    punkt = punkt_starts()
    if punkt is not None:
        splitters["NLTK Punkt"] = punkt
    rows, sizes = [], []
    for name, folder in SETS.items():
        docs = read_sectioned_text(need(DATA / "sectioned_text" / folder))[:: args.every]
        sizes.append(f"{name} {len(docs)} documents")
        for sep_name, sep in (("spaces", " "), ("one per line", "\n")):
            joined = [SectionedDocument(d.id, d.sections, sep) for d in docs]
            n = sum(len(d.sentence_starts) for d in joined)
            for label, split in splitters.items():
                t0 = time.perf_counter()
                row = {"set": name, "joined with": sep_name, "splitter": label, "sentences": n}
                row.update(score(joined, split))
                row["ms"] = (time.perf_counter() - t0) * 1000
                rows.append(row)
                print(row, flush=True)
    report = "\n".join(
        [
            header(
                "Sentence splitting: boundary precision / recall",
                "sectioned_text (" + "; ".join(sizes) + "), gold sentences one per line",
            ),
            "",
            table(
                rows, ["set", "joined with", "splitter", "sentences", "precision", "recall", "F1"]
            ),
            "",
            "The novels' files hold one paragraph per line, not one sentence: for them only the",
            "recall (paragraph starts found) means something; precision counts every sentence",
            "break inside a paragraph as a false positive.",
            "",
        ]
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
