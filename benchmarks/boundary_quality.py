"""Boundary quality: Pk and WindowDiff of semantic chunkers against human boundaries.

Gold boundaries: the paragraph breaks of SQuAD v1.1 dev articles (paragraphs joined with
one space) and the segment breaks of Choi (2000). Metrics are computed over word units
(k = half the mean gold segment length, per document) and averaged over documents.

Every contestant uses the same packaged all-MiniLM-L6-v2 and is run over a grid of its
own settings; the table reports each contestant's best setting (lowest mean Pk over the
two sets) and semrag's shipped defaults. No token cap interferes (caps set very high) and
the grid is the paper's threshold rule (``target_tokens=None``), except in the "default"
rows, which run ``SemanticChunker()`` and ``SemanticChunker(target_tokens=None)`` as shipped.

    python benchmarks/boundary_quality.py [--articles N] [--choi-every N] [--out FILE]
"""

from __future__ import annotations

import argparse
import itertools

from _common import DATA, Shared, emit, header, locate, need, segmentation_scores, table

from semrag import SemanticChunker
from semrag.embeddings import SentenceTransformerEmbedder
from semrag.eval.datasets import read_choi, read_squad_articles
from semrag.static_embedder import StaticEmbedder

THRESHOLDS = [
    ("percentile", 95),
    ("percentile", 90),
    ("percentile", 80),
    ("standard_deviation", 3),
    ("standard_deviation", 1),
    ("interquartile", 1.5),
    ("interquartile", 0.5),
    ("gradient", 95),
]
_OURS = {"standard_deviation": "std"}
BIG = 100_000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--articles", type=int, default=48)
    ap.add_argument("--choi-every", type=int, default=10)
    ap.add_argument("--out", default=None)
    ap.add_argument("--defaults-only", action="store_true", help="semrag's default rows alone")
    args = ap.parse_args()

    sets = {
        "SQuAD": read_squad_articles(need(DATA / "squad_dev" / "dev-v1.1.json.gz"))[
            : args.articles
        ],
        "Choi": read_choi(need(DATA / "choi_segmentation" / "choi.tar.gz"), every=args.choi_every),
    }
    model = SentenceTransformerEmbedder().model
    ours_emb = Shared(model).semrag

    from chonkie import SemanticChunker as ChonkieSemantic
    from langchain_experimental.text_splitter import SemanticChunker as LCSemantic
    from llama_index.core import Document as LIDocument
    from llama_index.core.node_parser import SemanticSplitterNodeParser

    results: list[dict] = []

    def record(family: str, setting: str, run) -> None:
        row = {"contestant": family, "setting": setting}
        for name, docs in sets.items():
            scores = segmentation_scores(docs, run(docs))
            row[f"{name} Pk"], row[f"{name} WD"] = scores["Pk"], scores["WD"]
        row["mean Pk"] = (row["SQuAD Pk"] + row["Choi Pk"]) / 2
        results.append(row)
        print(
            f"{family:12s} {setting:55s} "
            + " ".join(f"{k}={v:.3f}" for k, v in row.items() if isinstance(v, float)),
            flush=True,
        )

    def semrag_run(**kw):
        chunker = SemanticChunker(ours_emb, **kw)
        return lambda docs: [
            [c.start for c in r.chunks] for r in chunker.chunk_with_stats([d.text for d in docs])
        ]

    # semrag: mean pooling over a wide grid (cheap: one embedding per sentence), concat at b=1.
    grid = itertools.chain(
        itertools.product(["mean"], ["centered", "split"], [0, 1, 3, 5], THRESHOLDS),
        itertools.product(["concat"], ["centered", "split"], [1], THRESHOLDS),
    )
    for pooling, window, b, (kind, amount) in [] if args.defaults_only else grid:
        setting = f"pooling={pooling} window={window} buffer={b} {_OURS.get(kind, kind)} {amount}"
        record(
            "semrag",
            setting,
            semrag_run(
                pooling=pooling,
                window=window,
                buffer_size=b,
                threshold=_OURS.get(kind, kind),
                threshold_amount=amount,
                max_tokens=BIG,
                overlap_tokens=0,
                target_tokens=None,
            ),
        )
    for setting, kwargs in (
        ("default: SemanticChunker() as shipped (sized: 80 of 256 tokens)", {}),
        ("default: SemanticChunker(target_tokens=None), the paper's rule", {"target_tokens": None}),
        ("default, MiniLM boundaries: SemanticChunker(MiniLM)", {"embedder": ours_emb}),
        (
            "default, MiniLM boundaries: SemanticChunker(MiniLM, target_tokens=None)",
            {"embedder": ours_emb, "target_tokens": None},
        ),
        (
            "default, static boundaries: SemanticChunker(StaticEmbedder(), target_tokens=None)",
            {"embedder": StaticEmbedder(), "target_tokens": None},
        ),
    ):
        shipped = SemanticChunker(**kwargs)
        record(
            "semrag",
            setting,
            lambda docs, c=shipped: [
                [x.start for x in r.chunks] for r in c.chunk_with_stats([d.text for d in docs])
            ],
        )

    lc_emb = Shared(model).langchain
    for kind, amount in [] if args.defaults_only else THRESHOLDS:
        splitter = LCSemantic(
            lc_emb,
            buffer_size=1,
            breakpoint_threshold_type=kind,
            breakpoint_threshold_amount=amount,
        )
        record(
            "LangChain",
            f"buffer=1 {kind} {amount}",
            lambda docs, s=splitter: [locate(d.text, s.split_text(d.text)) for d in docs],
        )

    li_emb = Shared(model).llama_index
    for pct in () if args.defaults_only else (95, 90, 80, 70):
        parser = SemanticSplitterNodeParser(
            buffer_size=1, embed_model=li_emb, breakpoint_percentile_threshold=pct
        )
        record(
            "LlamaIndex",
            f"buffer=1 percentile {pct}",
            lambda docs, p=parser: [
                locate(
                    d.text,
                    [
                        n.get_content()
                        for n in p.get_nodes_from_documents([LIDocument(text=d.text)])
                    ],
                )
                for d in docs
            ],
        )

    ch_emb = Shared(model).chonkie
    for thr in () if args.defaults_only else (0.8, 0.7, 0.6, 0.5):
        chunker = ChonkieSemantic(embedding_model=ch_emb, threshold=thr, chunk_size=BIG)
        record(
            "chonkie",
            f"threshold={thr} similarity_window=3",
            lambda docs, c=chunker: [[ch.start_index for ch in c.chunk(d.text)] for d in docs],
        )

    best = []
    for family in ("semrag", "LangChain", "LlamaIndex", "chonkie"):
        rows = [r for r in results if r["contestant"] == family and "default" not in r["setting"]]
        if not rows:
            continue
        best.append({**min(rows, key=lambda r: r["mean Pk"]), "contestant": f"{family} (best)"})
    best += [r for r in results if "default" in r["setting"]]
    cols = ["contestant", "setting", "SQuAD Pk", "SQuAD WD", "Choi Pk", "Choi WD", "mean Pk"]
    top = sorted((r for r in results if r["contestant"] == "semrag"), key=lambda r: r["mean Pk"])
    docs_desc = (
        f"SQuAD v1.1 dev, {len(sets['SQuAD'])} articles; Choi (2000), "
        f"{len(sets['Choi'])} documents (every {args.choi_every}th file)"
    )
    report = "\n".join(
        [
            header(
                "Boundary quality of the shipped defaults, static and MiniLM boundaries (Pk)"
                if args.defaults_only
                else "Boundary quality (Pk / WindowDiff, lower is better)",
                docs_desc,
            ),
            "",
            table(best, cols),
            "",
        ]
        + (
            []
            if args.defaults_only
            else ["Ten best semrag settings:", "", table(top[:10], cols), ""]
        )
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
