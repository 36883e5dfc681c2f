"""PSC and MFC against the other chunkers: boundary quality, PubMedQA retrieval, speed.

1. Boundary quality (Pk, WindowDiff, boundary F1 with a 3-word tolerance; lower Pk/WD is
   better) on test data never used for training: NICTA-PIBOSO test, CSAbstruct test,
   PubMedQA abstracts (labelled contexts are sections), SQuAD v1.1 dev articles
   (paragraphs), Choi (every 10th document). Contestants: PSC and MFC (shipped weights),
   semrag SemanticChunker (shipped defaults), LangChain SemanticChunker (its defaults, and
   its best setting from boundary_quality.py: standard_deviation 1), and fixed-size chunks
   of the data set's mean gold section length in words.
2. Retrieval in the paper's setting (Allamraju et al., Table 1): PubMedQA questions against
   the chunks of all 1,000 abstracts, dense retrieval with the same MiniLM; a hit is a
   chunk of the question's own abstract that overlaps a gold context. Hits@3, Hits@5, MRR.
3. Speed: characters per second of PSC and MFC next to SemanticChunker (mean pooling) on
   SQuAD articles, in one process, embeddings not cached between contestants.

    python benchmarks/boundary_models.py [--out FILE] [--squad-articles N] [--parts ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from functools import partial

import numpy as np
from _common import BATCH, DATA, Shared, emit, header, locate, need, segmentation_scores, table

from semrag import MFCChunker, PSCChunker, SemanticChunker
from semrag.chunking.boundary import shipped_weights
from semrag.chunking.boundary.rules import BREAK_RULES, gap_breaks
from semrag.embeddings import SentenceTransformerEmbedder
from semrag.eval.datasets import (
    read_choi,
    read_csabstruct,
    read_nicta,
    read_pubmedqa,
    read_squad_articles,
)
from semrag.eval.metrics import (
    boundaries_from_offsets,
    pk,
    word_starts,
)

BIG = 100_000


def fixed_size_starts(text: str, words_per_chunk: int) -> list[int]:
    ws = word_starts(text)
    return ws[::words_per_chunk]


SECTIONED = {
    "wiki300": "wiki300_badjatiya",
    "novels": "fiction82_gutenberg",
    "lectures (AI)": "lectures_ai_manual",
    "lectures (physics)": "lectures_physics_manual",
}


def sectioned_split(part: int, *, split_lines: bool = False) -> dict[str, list]:
    """The dev (1) or test (2) split of each sectioned set, as ``semrag train-boundary`` made it."""
    from semrag.chunking.boundary.data import split_documents
    from semrag.eval.datasets import read_sectioned_text

    out = {}
    for name, folder in SECTIONED.items():
        docs = read_sectioned_text(need(DATA / "sectioned_text" / folder), split_lines=split_lines)
        out[name] = split_documents(docs, f"sectioned:{folder}")[part]
    return out


def short_texts(docs, rng, n: int) -> list[tuple[str, set[int]]]:
    """``n`` texts of 2-4 consecutive gold sentences, half of them across a section boundary.

    Returns (text, character offsets where a new gold section starts) pairs.
    """
    crossing, inside = [], []
    for doc in docs:
        flat = [(s, k) for k, section in enumerate(doc.sections) for s in section]
        for start in range(0, max(len(flat) - 4, 0), 3):
            window = flat[start : start + int(rng.integers(2, 5))]
            text, starts, pos = " ".join(s for s, _ in window), set(), 0
            for (s, k), (_, k_next) in zip(window, window[1:], strict=False):
                pos += len(s) + 1
                if k != k_next:
                    starts.add(pos)
            (crossing if starts else inside).append((text, starts))
    k = min(n // 2, len(crossing), len(inside))
    pick = [crossing[i] for i in rng.permutation(len(crossing))[:k]]
    pick += [inside[i] for i in rng.permutation(len(inside))[:k]]
    return pick


def short_text_rows(emb, tok) -> list[dict]:
    """Boundary F1 of SemanticChunker's short-text rule over a grid, on the dev splits."""
    rng = np.random.default_rng(0)
    dev = sectioned_split(1, split_lines=True)
    texts = [t for docs in dev.values() for t in short_texts(docs, rng, 400)]
    rows = []
    grid = [None, *np.round(np.arange(0.40, 1.01, 0.05), 2).tolist()]
    for value in grid:
        chunker = SemanticChunker(
            emb, tokenizer=tok, max_tokens=BIG, overlap_tokens=0, short_text_distance=value
        )
        tp = fp = fn = 0
        results = chunker.chunk_with_stats([t for t, _ in texts])
        for (_, gold), result in zip(texts, results, strict=True):
            found = {c.start for c in result.chunks[1:]}
            tp += len(found & gold)
            fp += len(found - gold)
            fn += len(gold - found)
        p = tp / max(tp + fp, 1)
        r = tp / max(tp + fn, 1)
        rows.append(
            {
                "short_text_distance": "None (std only)" if value is None else value,
                "texts": len(texts),
                "precision": p,
                "recall": r,
                "F1": 2 * p * r / max(p + r, 1e-9),
            }
        )
        print(rows[-1], flush=True)
    return rows


def scored_gaps(chunker, sets: dict) -> dict[str, list]:
    """Per set: (word starts, gold boundaries, stats) of each document, scored once.

    The chunker scores every gap of every document (its own sentence splitting, no cap, no
    merging); any break rule can then be applied to those scores exactly as the chunker
    applies it (:func:`gap_breaks`), so a grid of rules costs one embedding pass.
    """
    scored = {}
    for set_name, docs in sets.items():
        results = chunker.chunk_with_stats([d.text for d in docs])
        scored[set_name] = [
            (words, boundaries_from_offsets(words, doc.section_starts), r.stats)
            for doc, r in zip(docs, results, strict=True)
            for words in (word_starts(doc.text),)
        ]
    return scored


def pk_of_rule(items: list, breaks_of) -> tuple[float, float]:
    """Mean Pk and mean breaks per document when ``breaks_of(p)`` picks the breaking gaps."""
    pks, counts = [], []
    for words, gold, stats in items:
        breaks = np.flatnonzero(breaks_of(np.asarray(stats.scores, dtype=np.float64)))
        starts = [0] + [stats.sentences[g + 1].start for g in breaks]
        pks.append(pk(gold, boundaries_from_offsets(words, starts)))
        counts.append(len(breaks))
    return float(np.mean(pks)), float(np.mean(counts))


GRID = np.round(np.arange(0.02, 0.61, 0.02), 2)


def choose_rows(chunkers: dict, sets: dict) -> list[dict]:
    """Mean dev Pk of each trained chunker over a (rule, threshold) grid, sets weighted equally."""
    rows = []
    for name, chunker in chunkers.items():
        scored = scored_gaps(chunker, sets)
        for rule in BREAK_RULES:
            for t in GRID:
                breaks_of = partial(gap_breaks, threshold=float(t), rule=rule)
                per_set = {
                    set_name: pk_of_rule(items, breaks_of)[0] for set_name, items in scored.items()
                }
                rows.append(
                    {
                        "chunker": name,
                        "rule": rule,
                        "threshold": float(t),
                        "mean dev Pk": float(np.mean(list(per_set.values()))),
                        **per_set,
                    }
                )
    return rows


def auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """Area under the ROC curve: the chance that a positive outscores a negative (ties: half)."""
    scores = np.concatenate([positive, negative])
    values, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    mid_rank = np.cumsum(counts) - (counts - 1) / 2.0  # 1-based rank, ties averaged
    ranks = mid_rank[inverse]
    n_pos, n_neg = len(positive), len(negative)
    return float((ranks[:n_pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def ranking_rows(chunkers: dict, sets: dict) -> list[dict]:
    """How well each chunker's gap scores rank the gold boundaries, before any break rule.

    A gap is gold when the next sentence (the chunker's own splitting) starts a section.
    The score is the cosine distance for ``SemanticChunker`` and 1 - p(same section) for
    the trained models, so higher always means "break"; AUC 0.5 is chance. This separates
    what a rule can fix (where to cut a score) from what it cannot (the score's ranking).
    """
    rows = []
    for name, chunker in chunkers.items():
        distance = isinstance(chunker, SemanticChunker)
        for set_name, items in scored_gaps(chunker, sets).items():
            positive, negative = [], []
            for words, gold, stats in items:
                scores = np.asarray(stats.scores, dtype=np.float64)
                scores = scores if distance else 1.0 - scores
                starts = {words[i + 1] for i in np.flatnonzero(gold)}
                label = np.array(
                    [stats.sentences[g + 1].start in starts for g in range(scores.size)]
                )
                positive.append(scores[label])
                negative.append(scores[~label])
            pos, neg = np.concatenate(positive), np.concatenate(negative)
            rows.append(
                {
                    "chunker": name,
                    "data": set_name,
                    "gaps": pos.size + neg.size,
                    "gold boundaries": pos.size,
                    "AUC": auc(pos, neg),
                }
            )
            print(rows[-1], flush=True)
    return rows


def _zscore_breaks(p: np.ndarray, t: float, c: float) -> np.ndarray:
    """Valley gaps below ``t`` that are also ``c`` standard deviations below the document's mean."""
    low = gap_breaks(p, t, "valley")
    if p.size < 2:
        return low
    return low & (p < p.mean() - c * p.std())


def _depth_breaks(p: np.ndarray, t: float, c: float) -> np.ndarray:
    """A depth cut (after TextTiling): valleys below ``t`` whose depth beats mean + c * std.

    A gap's depth is how far p falls below the highest p on its left plus on its right; the
    mean and standard deviation are over the document's valleys below ``t``.
    """
    low = gap_breaks(p, t, "valley")
    if p.size < 2 or not low.any():
        return low
    left = np.maximum.accumulate(p)  # highest p at or before each gap
    right = np.maximum.accumulate(p[::-1])[::-1]
    depth = (left - p) + (right - p)
    d = depth[low]
    return low & (depth > d.mean() + c * d.std())


def rule_study_rows(chunkers: dict, sets: dict) -> tuple[list[dict], list[dict]]:
    """Why one rule cannot fit every set: each set's own best threshold, and relative rules.

    First table: for each trained chunker and development set, the valley threshold with
    the lowest Pk on that set alone (thresholds 0.02-0.98), its breaks per document and the
    gold sections' boundaries per document. Second table: the best setting of each
    document-relative rule (a z-score cut or TextTiling's depth cut on the document's own
    curve, on top of the valley rule and a threshold), by mean Pk over the sets.
    """
    per_set_rows, relative_rows = [], []
    wide = np.round(np.arange(0.02, 0.99, 0.04), 2)
    for name, chunker in chunkers.items():
        scored = scored_gaps(chunker, sets)
        for set_name, items in scored.items():
            results = [
                (*pk_of_rule(items, partial(gap_breaks, threshold=float(t), rule="valley")), t)
                for t in wide
            ]
            best_pk, breaks, t = min(results)
            per_set_rows.append(
                {
                    "chunker": name,
                    "data": set_name,
                    "best threshold (this set alone)": float(t),
                    "Pk": best_pk,
                    "breaks / document": breaks,
                    "gold boundaries / document": float(
                        np.mean([int(np.sum(gold)) for _, gold, _ in items])
                    ),
                }
            )
        for rule, fn in (("z-score", _zscore_breaks), ("depth", _depth_breaks)):
            best = None
            for t in [*GRID[::2].tolist(), 0.7, 0.9, 1.01]:
                for c in (-0.5, 0.0, 0.5, 1.0, 1.5):
                    per_set = {
                        set_name: pk_of_rule(items, partial(fn, t=float(t), c=c))[0]
                        for set_name, items in scored.items()
                    }
                    mean = float(np.mean(list(per_set.values())))
                    if best is None or mean < best["mean dev Pk"]:
                        best = {
                            "chunker": name,
                            "rule": rule,
                            "threshold": t,
                            "c": c,
                            "mean dev Pk": mean,
                            **per_set,
                        }
            relative_rows.append(best)
    return per_set_rows, relative_rows


def apply_choice(weights: str, row: dict, argv: str) -> None:
    """Write the chosen rule and threshold into a model directory, and how they were chosen."""
    import json
    from pathlib import Path

    directory = Path(weights)
    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    config["threshold"], config["rule"] = row["threshold"], row["rule"]
    (directory / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    record_file = directory / "training.json"
    record = json.loads(record_file.read_text(encoding="utf-8")) if record_file.exists() else {}
    record["selection"] = {
        "command": f"python benchmarks/boundary_models.py {argv}",
        "what": "rule and threshold with the lowest mean Pk over the development sets of "
        "`--split dev` (each set weighted equally), replacing the training run's choice",
        **{k: v for k, v in row.items() if k != "chunker"},
    }
    record_file.write_text(json.dumps(record, indent=1), encoding="utf-8")
    print(f"{directory.name}: rule {row['rule']}, threshold {row['threshold']:g}", flush=True)


def pair_rows() -> list[dict]:
    """Dev accuracy per kind of pair of the shipped weights (read from their training.json)."""
    import json

    from semrag.chunking.boundary import shipped_weights

    rows = []
    for kind in ("psc", "mfc"):
        record = json.loads((shipped_weights(kind) / "training.json").read_text())
        best = min(record["history"], key=lambda h: h["dev_loss"])
        at = record["dev_accuracy_at_threshold"]
        chosen = record.get("selection", record["threshold"])
        rows.append(
            {
                "model": kind.upper(),
                "dev pairs": sum(record["dev_pairs"].values()),
                "accuracy @0.5": best["dev_acc"],
                "training threshold": record["threshold"]["threshold"],
                "dev Pk (sentence gaps)": record["threshold"]["pk"],
                **{
                    f"{k} @training threshold": at[k]
                    for k in ("positive", "boundary", "section", "document")
                },
                "shipped rule": chosen.get("rule", "threshold"),
                "shipped threshold": chosen["threshold"],
            }
        )
    return rows


def run_rows(directories: list[str]) -> list[dict]:
    """One row per training run (``semrag train-boundary --out DIR``), from its training.json.

    The epoch kept is the one with the lowest dev loss; the highest dev accuracy of any
    epoch is shown beside it, since the two disagree.
    """
    import json
    from pathlib import Path

    rows = []
    for directory in directories:
        record = json.loads((Path(directory) / "training.json").read_text(encoding="utf-8"))
        config, history = record["config"], record["history"]
        best = min(history, key=lambda h: h["dev_loss"])
        top = max(history, key=lambda h: h["dev_acc"])
        chosen = record["threshold"]
        rows.append(
            {
                "run": Path(directory).name,
                "model": record["model"].upper(),
                "window": ",".join(str(w) for w in np.atleast_1d(record["window"])),
                "proj_dim": config["proj_dim"],
                "weight average (decay)": config.get("average") or "none",
                "best epoch (dev loss)": best["epoch"],
                "dev loss": best["dev_loss"],
                "dev accuracy @0.5": best["dev_acc"],
                "highest dev accuracy, any epoch": f"{top['dev_acc']:.3f} (epoch {top['epoch']})",
                "rule and threshold (training run)": f"{chosen.get('rule', 'threshold')} "
                f"{chosen['threshold']:g}",
                "dev Pk": chosen["pk"],
            }
        )
    return rows


RECIPES = [
    # (model, window, proj_dim, lr, boundary share of the training negatives)
    ("psc", 3, 256, 3e-3, 0.5),  # the shipped PSC
    ("psc", 3, 64, 3e-3, 0.5),
    ("psc", 3, 64, 3e-3, 0.2),
    ("psc", 3, 64, 3e-3, 0.05),
    ("mfc", 3, 256, 1e-2, 0.5),  # the shipped MFC
    ("mfc", (1, 3, 8), 128, 3e-3, 0.5),
    ("mfc", (1, 3, 8), 128, 3e-3, 0.2),
    ("mfc", (1, 3, 8), 128, 3e-3, 0.05),
]
README_BREAKS = [2]  # the README example: bees | rocket


def recipe_rows(emb, cache_dir: str) -> list[dict]:
    """Train each recipe on the train splits; dev pair accuracy (fixed mix) and dev Pk.

    The data and splits are the shipped weights' (their training.json); the dev pairs always
    follow the default mix (half boundary gaps), whatever mix a recipe trains on, so the
    accuracies compare; the threshold is chosen for the lowest dev Pk, as shipped.
    """
    from semrag.chunking.boundary import PairModelChunker
    from semrag.chunking.boundary.data import sample_pairs, split_documents
    from semrag.chunking.boundary.models import fit_boundary_model
    from semrag.chunking.boundary.train import TrainConfig, accuracy_by_kind, choose_threshold
    from semrag.eval.datasets import read_sectioned_text

    sources = [
        (
            f"sectioned:{folder}",
            read_sectioned_text(need(DATA / "sectioned_text" / folder), split_lines=True),
        )
        for folder in SECTIONED.values()
    ]
    sources += [
        (
            "nicta:train_clean.txt@0:400",
            read_nicta(need(DATA / "nicta_piboso" / "train_clean.txt"))[:400],
        ),
        (
            "csabstruct:train.jsonl.gz@0:400",
            read_csabstruct(need(DATA / "csabstruct" / "train.jsonl.gz"))[:400],
        ),
    ]
    train_docs, dev_sources = [], []
    for name, docs in sources:
        train, dev, _test = split_documents(docs, name)
        train_docs += train
        dev_sources.append((name, dev))
    dev = sample_pairs([d for _, docs in dev_sources for d in docs], seed=1)
    readme = (
        "Honeybees live in colonies with a single queen. Workers build wax comb and store "
        "honey. Foragers collect pollen from flowers. The rocket lifted off from the launch "
        "pad. Its boosters separated two minutes later. The crew reached orbit safely."
    )
    rows = []
    for kind, window, proj_dim, lr, share in RECIPES:
        mix = {"boundary": share, "section": (1 - share) / 2, "document": (1 - share) / 2}
        train = sample_pairs(train_docs, seed=0, negative_mix=mix)
        config = TrainConfig(epochs=25, lr=lr, weight_decay=0.01, proj_dim=proj_dim, seed=0)
        model, history = fit_boundary_model(
            kind, train, dev, emb, config=config, window=window, cache_dir=cache_dir
        )
        chosen = choose_threshold(model, dev_sources, emb, cache_dir=cache_dir)
        model.threshold = 0.5
        at_half = accuracy_by_kind(model, dev, emb, cache_dir=cache_dir)
        model.threshold = chosen["threshold"]
        (result,) = PairModelChunker(emb, model=model).chunk_with_stats([readme])
        breaks = sorted(b.gap for b in result.stats.breaks)
        rows.append(
            {
                "model": kind.upper(),
                "window": ",".join(map(str, window)) if isinstance(window, tuple) else window,
                "proj_dim": proj_dim,
                "boundary share (train)": share,
                "train pairs": len(train),
                "best epoch": min(history, key=lambda h: h["dev_loss"])["epoch"],
                "dev accuracy @0.5": at_half["all"],
                "boundary @0.5": at_half["boundary"],
                "threshold": chosen["threshold"],
                "dev Pk": chosen["pk"],
                "README example": "two chunks" if breaks == README_BREAKS else f"breaks {breaks}",
            }
        )
        print(rows[-1], flush=True)
    return rows


def quality_data(sets: dict, args: argparse.Namespace, *, dev: bool) -> str:
    """The data line of a table over the test sets or (``dev``) the development sets."""
    every = f"every {args.choi_every}th file"
    if dev:
        sectioned = ", ".join(f"{k} {len(v)} documents" for k, v in sets.items() if " dev" in k)
        return (
            f"development data only: {sectioned} (the sectioned sets' dev splits; NICTA and "
            f"CSAbstruct dev files), SQuAD v1.1 dev articles after the first "
            f"{args.squad_articles} ({len(sets['SQuAD'])} articles), Choi ({len(sets['Choi'])} "
            f"documents, {every} from offset {args.choi_every // 2}, none of the test files)"
        )
    sectioned = ", ".join(
        f"{k} {len(v)} documents"
        for k, v in sets.items()
        if "test" in k and k.split(" test")[0] in SECTIONED
    )
    return (
        f"sectioned_text test splits (by document, as `semrag train-boundary` splits: "
        f"{sectioned}), NICTA-PIBOSO test (200 abstracts), CSAbstruct test (226), PubMedQA "
        f"PQA-L (1,000 abstracts), SQuAD v1.1 dev ({len(sets['SQuAD'])} articles), Choi "
        f"({len(sets['Choi'])} documents, {every})"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--squad-articles", type=int, default=48)
    ap.add_argument("--speed-articles", type=int, default=12)
    ap.add_argument(
        "--parts",
        nargs="+",
        default=["quality", "retrieval", "speed"],
        choices=[
            "pairs",
            "recipes",
            "runs",
            "short",
            "choose",
            "rules",
            "ranking",
            "quality",
            "retrieval",
            "speed",
        ],
    )
    ap.add_argument(
        "--runs",
        nargs="+",
        default=[],
        metavar="DIR",
        help="runs: the output directories of `semrag train-boundary` runs to tabulate",
    )
    ap.add_argument(
        "--cache",
        default=os.path.expanduser("~/.cache/semrag/boundary-emb"),
        help="sentence-embedding cache of the recipes part",
    )
    ap.add_argument("--choi-every", type=int, default=10)
    ap.add_argument(
        "--split",
        choices=["test", "dev"],
        default="test",
        help="quality: the test sets (default) or development data to choose on: the "
        "sectioned dev splits, NICTA and CSAbstruct dev, SQuAD articles after the test "
        "ones, Choi files between the test ones (offset every/2)",
    )
    ap.add_argument("--psc-model", default=None, help="PSC weights (default: shipped)")
    ap.add_argument("--mfc-model", default=None, help="MFC weights (default: shipped)")
    ap.add_argument(
        "--apply",
        action="store_true",
        help="choose: write each model's best rule and threshold into its directory",
    )
    ap.add_argument(
        "--both-rules",
        action="store_true",
        help="quality: PSC and MFC once with each break rule (threshold, valley)",
    )
    ap.add_argument(
        "--ours-only",
        action="store_true",
        help="quality: only PSC, MFC and SemanticChunker (new weights, without the peers' runs)",
    )
    args = ap.parse_args()
    if "runs" in args.parts and not args.runs:
        ap.error("--parts runs needs --runs DIR [DIR ...]")

    pubmed = read_pubmedqa(need(DATA / "pubmedqa" / "ori_pqal.json.gz"))
    squad = read_squad_articles(need(DATA / "squad_dev" / "dev-v1.1.json.gz"))
    choi = need(DATA / "choi_segmentation" / "choi.tar.gz")
    dev_sets = {
        **{f"{name} dev": docs for name, docs in sectioned_split(1).items() if docs},
        "NICTA dev": read_nicta(need(DATA / "nicta_piboso" / "dev_clean.txt")),
        "CSAbstruct dev": read_csabstruct(need(DATA / "csabstruct" / "dev.jsonl.gz")),
        "SQuAD": squad[args.squad_articles :],
        "Choi": read_choi(choi, every=args.choi_every, offset=args.choi_every // 2),
    }
    sets = {
        **{f"{name} test": docs for name, docs in sectioned_split(2).items()},
        "NICTA test": read_nicta(need(DATA / "nicta_piboso" / "test_clean.txt")),
        "CSAbstruct test": read_csabstruct(need(DATA / "csabstruct" / "test.jsonl.gz")),
        "PubMedQA": [item.document for item in pubmed],
        "SQuAD": squad[: args.squad_articles],
        "Choi": read_choi(choi, every=args.choi_every),
    }
    dev_used = {name: docs for name, docs in dev_sets.items() if docs}  # SQuAD may be empty
    if args.split == "dev":
        sets = dev_used
    base = SentenceTransformerEmbedder(batch_size=BATCH)
    model = base.model
    emb = Shared(model).semrag
    tok = base.tokenizer

    from langchain_experimental.text_splitter import SemanticChunker as LCSemantic

    lc_emb = Shared(model).langchain
    trained = {
        "PSC": (PSCChunker, args.psc_model),
        "MFC": (MFCChunker, args.mfc_model),
    }
    ours = {}
    for name, (cls, weights) in trained.items():
        label = "shipped" if weights is None else os.path.basename(weights.rstrip("/"))
        for rule in BREAK_RULES if args.both_rules else (None,):
            shown = label if rule is None else f"{label}, {rule} rule"
            ours[f"{name} ({shown})"] = cls(
                emb, model=weights, rule=rule, tokenizer=tok, max_tokens=BIG, overlap_tokens=0
            )
    ours["semrag SemanticChunker (defaults)"] = SemanticChunker(
        emb, tokenizer=tok, max_tokens=BIG, overlap_tokens=0
    )
    lc = {
        "LangChain SemanticChunker (defaults)": LCSemantic(lc_emb),
        "LangChain SemanticChunker (std 1)": LCSemantic(
            lc_emb, breakpoint_threshold_type="standard_deviation", breakpoint_threshold_amount=1
        ),
    }
    short_rows = short_text_rows(emb, tok) if "short" in args.parts else []
    chosen_rows = []
    if "choose" in args.parts:
        trained_chunkers = {k: v for k, v in ours.items() if "SemanticChunker" not in k}
        grid_rows = choose_rows(trained_chunkers, dev_used)
        for name in trained_chunkers:
            mine = [r for r in grid_rows if r["chunker"] == name]
            best = {
                rule: min((r for r in mine if r["rule"] == rule), key=lambda r: r["mean dev Pk"])
                for rule in BREAK_RULES
            }
            chosen_rows += list(best.values())
            if args.apply:
                kind = name.split()[0].lower()
                weights = getattr(args, f"{kind}_model") or str(shipped_weights(kind))
                winner = min(best.values(), key=lambda r: r["mean dev Pk"])
                portable = [os.path.basename(a) if os.sep in a else a for a in sys.argv[1:]]
                apply_choice(weights, winner, " ".join(portable))
        for r in chosen_rows:
            print(r, flush=True)
    per_set_rows, relative_rows = [], []
    if "rules" in args.parts:
        trained_chunkers = {k: v for k, v in ours.items() if "SemanticChunker" not in k}
        per_set_rows, relative_rows = rule_study_rows(trained_chunkers, dev_used)
        for r in per_set_rows + relative_rows:
            print(r, flush=True)
    ranked = ranking_rows(ours, dev_used) if "ranking" in args.parts else []
    recipes = recipe_rows(base, args.cache) if "recipes" in args.parts else []
    rows = []
    if "quality" in args.parts:
        from chonkie import SemanticChunker as ChonkieSemantic

        chonkie = ChonkieSemantic(embedding_model=Shared(model).chonkie)
        for set_name, docs in sets.items():
            texts = [d.text for d in docs]
            mean_words = max(
                1, round(np.mean([len(" ".join(s).split()) for d in docs for s in d.sections]))
            )
            results = {}
            for name, chunker in ours.items():
                results[name] = [
                    [c.start for c in r.chunks] for r in chunker.chunk_with_stats(texts)
                ]
            if not args.ours_only:
                for name, splitter in lc.items():
                    results[name] = [locate(t, splitter.split_text(t)) for t in texts]
                results["chonkie SemanticChunker (defaults)"] = [
                    [c.start_index for c in chonkie.chunk(t)] for t in texts
                ]
                results[f"fixed size ({mean_words} words)"] = [
                    fixed_size_starts(t, mean_words) for t in texts
                ]
            for name, starts in results.items():
                scores = segmentation_scores(docs, starts)
                scores.pop("starts")
                rows.append({"data": set_name, "chunker": name, **scores})
                print(rows[-1], flush=True)

    # 2. Retrieval on PubMedQA.
    ret_rows = []
    if "retrieval" in args.parts:
        from langchain_text_splitters import CharacterTextSplitter, RecursiveCharacterTextSplitter

        from semrag.text import split_sentences

        abstracts = [item.document.text for item in pubmed]
        size = round(float(np.mean([len(t) for t in abstracts])) / 3)
        overlap = round(size * 0.2)
        char = CharacterTextSplitter(separator="", chunk_size=size, chunk_overlap=overlap)
        recursive = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap)

        def spans_of(text: str, pieces: list[str]) -> list[tuple[int, int]]:
            return [
                (s, s + len(p.strip())) for s, p in zip(locate(text, pieces), pieces, strict=True)
            ]

        lc_default = lc["LangChain SemanticChunker (defaults)"]
        chunked = {
            f"character {size}/{overlap} (1000/200 scaled)": [
                spans_of(t, char.split_text(t)) for t in abstracts
            ],
            "sentence": [[(s.start, s.end) for s in split_sentences(t)] for t in abstracts],
            f"recursive {size}/{overlap}": [
                spans_of(t, recursive.split_text(t)) for t in abstracts
            ],
            "LangChain SemanticChunker": [spans_of(t, lc_default.split_text(t)) for t in abstracts],
        }
        for name in ("semrag SemanticChunker (defaults)", "PSC (shipped)", "MFC (shipped)"):
            results = ours[name].chunk_with_stats(abstracts)
            chunked[name] = [[(c.start, c.end) for c in r.chunks] for r in results]
        questions = base.embed([item.question for item in pubmed])
        gold = []
        for item in pubmed:
            text, spans, pos = item.document.text, [], 0
            for ctx in item.contexts:
                first = ctx.split(". ")[0][:60]
                at = text.find(first, pos)
                if at >= 0:
                    spans.append((at, at + len(ctx)))
                    pos = at
            gold.append(spans)
        for name, per_abstract in chunked.items():
            owner, chunk_texts, chunk_spans = [], [], []
            for d, (text, spans_d) in enumerate(zip(abstracts, per_abstract, strict=True)):
                for a, b in spans_d:
                    if b > a:
                        owner.append(d)
                        chunk_texts.append(text[a:b])
                        chunk_spans.append((a, b))
            vecs = np.stack(emb.embed(chunk_texts))
            owner_arr = np.asarray(owner)
            ranks = []
            for q, (qv, spans) in enumerate(zip(questions, gold, strict=True)):
                order = np.argsort(-(vecs @ qv))
                rank = None
                for r, c in enumerate(order[:100]):
                    if owner_arr[c] == q and any(
                        chunk_spans[c][0] < e and s < chunk_spans[c][1] for s, e in spans
                    ):
                        rank = r + 1
                        break
                ranks.append(rank)
            found = np.array([r if r is not None else 0 for r in ranks])
            ret_rows.append(
                {
                    "chunker": name,
                    "chunks": len(chunk_texts),
                    "Hits@3": float(np.mean((found > 0) & (found <= 3))),
                    "Hits@5": float(np.mean((found > 0) & (found <= 5))),
                    "MRR": float(np.mean(np.where(found > 0, 1.0 / np.maximum(found, 1), 0.0))),
                }
            )
            print(ret_rows[-1], flush=True)

    # 3. Speed (no shared cache: each contestant embeds for itself).
    speed_rows = []
    n_chars = 0
    if "speed" in args.parts:
        from semrag.embeddings import SentenceTransformerEmbedder as STE

        squad = [d.text for d in sets["SQuAD"][: args.speed_articles]]
        n_chars = sum(len(t) for t in squad)
        for name, cls in (
            ("semrag SemanticChunker (mean pooling)", SemanticChunker),
            ("PSC", PSCChunker),
            ("MFC", MFCChunker),
        ):
            fresh = STE(batch_size=BATCH, cache_size=0)
            chunker = cls(fresh)
            chunker.chunk("Warm up the model. Then measure.")
            t0 = time.perf_counter()
            chunker.chunk_documents(squad)
            secs = time.perf_counter() - t0
            speed_rows.append({"chunker": name, "seconds": secs, "chars/s": n_chars / secs})
        base_t = speed_rows[0]["seconds"]
        for r in speed_rows:
            r["x SemanticChunker"] = r["seconds"] / base_t

    parts = []
    if "pairs" in args.parts:
        prs = pair_rows()
        parts += [
            header(
                "PSC / MFC dev pair accuracy (shipped weights)",
                "dev splits of wiki300, novels, lectures, NICTA and CSAbstruct (by document); "
                "numbers read from each weights directory's training.json",
            ),
            "",
            table(prs, list(prs[0])),
            "",
        ]
    if "runs" in args.parts:
        runs = run_rows(args.runs)
        parts += [
            header(
                "PSC / MFC training runs",
                "train and dev splits of the shipped weights' data (wiki300, novels, lectures, "
                "400 abstracts each of NICTA and CSAbstruct), dev pairs at the default mix; "
                "numbers read from each run's training.json (the command of each is there)",
            ),
            "",
            table(runs, list(runs[0])),
            "",
        ]
    if recipes:
        parts += [
            header(
                "PSC / MFC training recipes: dev pair accuracy against dev Pk",
                "train and dev splits of the shipped weights' data (wiki300, novels, lectures, "
                "400 abstracts each of NICTA and CSAbstruct); dev pairs at the default mix "
                "(half boundary gaps) for every recipe; 25 epochs, seed 0",
            ),
            "",
            table(recipes, list(recipes[0])),
            "",
        ]
    if chosen_rows:
        parts += [
            header(
                "PSC / MFC: choosing the break rule and threshold on development data",
                quality_data(dev_sets, args, dev=True)
                + "; for each rule the threshold (grid 0.02-0.60) with the lowest mean Pk, "
                "every set weighted equally",
            ),
            "",
            table(chosen_rows, list(chosen_rows[0])),
            "",
        ]
    if ranked:
        parts += [
            header(
                "PSC / MFC and SemanticChunker: how well the gap scores rank the boundaries",
                quality_data(dev_sets, args, dev=True)
                + "; AUC of each gap's score (cosine distance; 1 - p for PSC and MFC) against "
                "the gold boundaries, before any break rule",
            ),
            "",
            table(ranked, list(ranked[0])),
            "",
        ]
    if per_set_rows:
        parts += [
            header(
                "PSC / MFC: each development set's own best threshold, and relative rules",
                quality_data(dev_sets, args, dev=True)
                + "; valley rule, thresholds 0.02-0.98 for each set alone; relative rules: "
                "threshold x c grid, lowest mean Pk over the sets",
            ),
            "",
            table(per_set_rows, list(per_set_rows[0])),
            "",
            table(relative_rows, list(relative_rows[0])),
            "",
        ]
    if short_rows:
        parts += [
            header(
                "SemanticChunker on short texts: choosing short_text_distance",
                "dev splits of the sectioned sets (wiki300, novels, lectures AI and physics; "
                "lines split into sentences): texts of 2-4 consecutive sentences, half of "
                "them across a section boundary, at most 400 per set",
            ),
            "",
            table(short_rows, ["short_text_distance", "texts", "precision", "recall", "F1"]),
            "",
        ]
    if rows:
        parts += [
            header(
                "PSC / MFC boundary quality"
                + (" on development data" if args.split == "dev" else ""),
                quality_data(sets, args, dev=args.split == "dev"),
            ),
            "",
            table(rows, ["data", "chunker", "Pk", "WD", "F1"]),
            "",
        ]
    if ret_rows:
        parts += [
            header(
                "PSC / MFC retrieval on PubMedQA (paper's Table 1 setting)",
                "PubMedQA PQA-L: 1,000 questions against the chunks of all 1,000 abstracts",
            ),
            "",
            table(ret_rows, ["chunker", "chunks", "Hits@3", "Hits@5", "MRR"]),
            "",
        ]
    if speed_rows:
        parts += [
            header(
                "PSC / MFC chunking speed",
                f"SQuAD v1.1 dev, {args.speed_articles} articles, {n_chars:,} characters",
            ),
            "",
            table(speed_rows, ["chunker", "seconds", "chars/s", "x SemanticChunker"]),
            "",
        ]
    report = "\n".join(parts)
    emit(report, args.out)


if __name__ == "__main__":
    main()
