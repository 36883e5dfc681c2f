"""The rule intent classifier of ``IntentAwareRetriever`` on labelled questions.

Labels come from the data sets themselves, never from us: every question of a single-hop
set is single-hop (SQuAD v1.1 dev, every 10th question; PubMedQA PQA-L), every question of
a multi-hop set is multi-hop (MuSiQue-Ans; 2WikiMultihopQA with its ``type`` field:
compositional, inference, comparison, bridge_comparison). The table gives, per set, the
share of questions given each intent and the share classified correctly as multi-hop or
not; then precision / recall / F1 of the ``multi_hop`` intent over all sets together.

    python benchmarks/intent.py [--label TEXT] [--out FILE]

``--label`` names the classifier version in the table's title (run the script with an
older checkout of ``semrag`` on ``PYTHONPATH`` to measure that one).
"""

from __future__ import annotations

import argparse
import collections

from _common import DATA, emit, header, need, table
from _datasets import read_musique, read_squad_questions, read_twowiki

from semrag.eval.datasets import read_pubmedqa
from semrag.retrieval import classify_intent

INTENTS = ("entity", "explanatory", "multi_hop", "general")
SQUAD_EVERY = 10


def labelled() -> dict[str, tuple[bool, list[str]]]:
    """Set name -> (is multi-hop, questions)."""
    _, squad = read_squad_questions(need(DATA / "squad_dev" / "dev-v1.1.json.gz"))
    pubmed = read_pubmedqa(need(DATA / "pubmedqa" / "ori_pqal.json.gz"))
    _, musique = read_musique(need(DATA / "musique" / "musique_ans_100.json.gz"))
    _, twowiki = read_twowiki(need(DATA / "twowiki" / "2wiki_dev500_agenticrag.json"))
    sets = {
        "SQuAD v1.1 dev (every 10th)": (False, [q.question for q in squad[::SQUAD_EVERY]]),
        "PubMedQA PQA-L": (False, [p.question for p in pubmed]),
        "MuSiQue-Ans": (True, [q.question for q in musique]),
    }
    for kind in sorted({q.kind for q in twowiki}):
        sets[f"2Wiki {kind}"] = (True, [q.question for q in twowiki if q.kind == kind])
    return sets


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", default="current rules")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rows = []
    tp = fp = fn = 0
    for name, (multi, questions) in labelled().items():
        got = [classify_intent(q)[0] for q in questions]
        counts = collections.Counter(got)
        said_multi = counts["multi_hop"]
        correct = said_multi if multi else len(got) - said_multi
        tp += said_multi if multi else 0
        fp += 0 if multi else said_multi
        fn += len(got) - said_multi if multi else 0
        rows.append(
            {
                "set": name,
                "label": "multi-hop" if multi else "single-hop",
                "n": len(got),
                **{i: counts[i] / len(got) for i in INTENTS},
                "correct": correct / len(got),
            }
        )
    precision, recall = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
    f1 = 2 * precision * recall / max(precision + recall, 1e-12)
    report = "\n".join(
        [
            header(
                f"Intent classifier on labelled questions ({args.label})",
                "SQuAD v1.1 dev (every 10th question), PubMedQA PQA-L, MuSiQue-Ans (100), "
                "2WikiMultihopQA dev sample (500, by type)",
            ),
            "",
            table(rows, ["set", "label", "n", *INTENTS, "correct"]),
            "",
            f"multi_hop intent over all sets: precision {precision:.3f}, recall {recall:.3f}, "
            f"F1 {f1:.3f}.",
            "",
        ]
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
