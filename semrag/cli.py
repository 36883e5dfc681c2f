"""The ``semrag`` command line.

* ``semrag chunk FILE... [--buffer-size N --threshold T --max-tokens N --json]`` prints the
  chunks of each file (or JSON lines with offsets and token counts).
* ``semrag index DIR_OR_FILES... --out INDEX [--ssg] [--graph memory|neo4j
  --extractor heuristic|llm --llm MODULE:NAME --neo4j-uri URI ...]`` builds and saves a
  SemanticIndex (the default index with the passage phrases ``ppr`` reads; ``--ssg`` adds
  the similarity graph) and, with ``--graph``, its knowledge graph (in memory: saved in
  ``INDEX/graph``; on Neo4j: the connection, never the password, in ``INDEX/graph.json``).
* ``semrag query INDEX "question" [--retriever ppr|iar|ssg|sketch|local|global --algorithm A
  --k K --plot PNG --json]`` retrieves (``GraphRetriever()``'s personalized PageRank by
  default; ``--algorithm`` an SSG traversal, on an index built with ``--ssg``, or ``dense`` /
  ``sparse``) and prints provenance. The Neo4j password comes from
  ``--neo4j-password`` or the ``NEO4J_PASSWORD`` environment variable.
* ``semrag eval chunkers DOCS... --questions q.jsonl [--splitter SPEC ...] [--out DIR]`` and
  ``semrag eval retrievers INDEX --questions q.jsonl [--retriever ...]`` evaluate splitters
  and retrievers on your documents (see :mod:`semrag._cli_eval`).
* ``semrag train-boundary --data KIND:PATH[@START:STOP]... [--dev ...] --model psc|mfc --out DIR
  [--window N|N,N,... --negative-mix boundary=.05,section=.475,document=.475
  --dev-negative-mix boundary=.5,section=.25,document=.25 --edge-share S --threshold auto
  --rule auto|threshold|valley]`` trains
  a PSC or MFC boundary model on sectioned data (KIND: sectioned (a folder of Choi-format
  files), nicta, csabstruct, pubmedqa, squad, choi; ``@24:40`` keeps documents 24 to 39).
  Without ``--dev`` each source is split by document (``--split 0.8/0.1/0.1``) and the dev
  parts choose the epoch and the threshold; the dev pairs follow ``--dev-negative-mix`` (the
  default mix unless told), so dev accuracy compares recipes that train on other mixes;
  ``training.json`` records the command.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from semrag._cli_eval import add_eval_parser
from semrag._cli_train import cmd_train_boundary, parse_negative_mix, split_fractions, window_sizes
from semrag._validation import offers
from semrag.errors import SemragError
from semrag.llm import LLM
from semrag.types import Document

if TYPE_CHECKING:
    from semrag.graph import KnowledgeGraph
    from semrag.index import SemanticIndex
    from semrag.neo4j import Neo4jGraphStore

__all__ = ["main"]


def _threshold(value: str) -> str | float:
    try:
        return float(value)
    except ValueError:
        return value


def _read(path: str) -> Document:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise SemragError(f"{path}: no such file") from exc
    except UnicodeDecodeError as exc:
        raise SemragError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    return Document(id=str(p), text=text, metadata={"source": str(p)})


def _cmd_chunk(args: argparse.Namespace) -> int:
    from semrag.chunking import SemanticChunker

    docs = [_read(f) for f in args.files]
    chunker = SemanticChunker(
        buffer_size=args.buffer_size,
        window=args.window,
        pooling=args.pooling,
        threshold=args.threshold,
        threshold_amount=args.threshold_amount,
        max_tokens=args.max_tokens,
        overlap_tokens=args.overlap_tokens,
        min_tokens=args.min_tokens,
        show_progress=args.progress,
    )
    results = chunker.chunk_with_stats(docs)
    for result in results:
        for c in result.chunks:
            if args.json:
                record = {
                    "doc_id": c.doc_id,
                    "index": c.index,
                    "start": c.start,
                    "end": c.end,
                    "token_count": c.token_count,
                    "text": c.text,
                }
                print(json.dumps(record, ensure_ascii=False))
            else:
                print(f"--- {c.doc_id} #{c.index} [{c.start}:{c.end}] {c.token_count} tokens")
                print(c.text)
        if args.plot:
            from semrag.viz import plot_breakpoints

            if len(result.stats.sentences) > 1:
                name = Path(result.stats.doc_id).name + ".breakpoints.png"
                out = plot_breakpoints(result.stats, Path(args.plot) / name)
                print(f"plot: {out}", file=sys.stderr)
    return 0


_TEXT_SUFFIXES = {".txt", ".md", ".rst", ".text"}


def _collect(paths: Sequence[str]) -> list[Document]:
    files: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            files += sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in _TEXT_SUFFIXES)
        else:
            files.append(p)
    if not files:
        raise SemragError("no text files found (looked for .txt, .md, .rst)")
    return [_read(str(f)) for f in files]


def _cmd_index(args: argparse.Namespace) -> int:
    from semrag.chunking import SemanticChunker
    from semrag.index import SemanticIndex

    docs = _collect(args.paths)
    chunker = SemanticChunker(  # the default index's: static boundaries, no torch
        buffer_size=args.buffer_size, max_tokens=args.max_tokens, show_progress=args.progress
    )
    index = SemanticIndex(chunker, ssg=args.ssg, passages=True, show_progress=args.progress)
    index.add_documents(docs)
    out = index.save(args.out, overwrite=True)  # a build from the sources replaces a save
    n_chunks = len(index.chunks())
    print(f"indexed {len(docs)} documents, {n_chunks} chunks -> {out}")
    if args.graph != "none":
        _build_graph(args, index, Path(out))
    return 0


def _load_llm(spec: str | None) -> LLM:
    """``module:name`` -> the object (called if it is a class or factory)."""
    if not spec:
        raise SemragError("--extractor llm needs --llm MODULE:NAME (an LLM object or factory)")
    import importlib

    module, _, name = spec.partition(":")
    try:
        obj = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise SemragError(f"--llm {spec}: cannot import it ({exc})") from exc
    if callable(obj) and not hasattr(obj, "complete"):
        obj = obj()
    if not hasattr(obj, "complete"):
        try:  # a LangChain model
            from langchain_semrag import LangChainLLM

            obj = LangChainLLM(obj)
        except (ImportError, TypeError) as exc:
            raise SemragError(f"--llm {spec}: not an LLM (needs complete/acomplete)") from exc
    if not offers(obj, LLM):
        raise SemragError(f"--llm {spec}: not an LLM (needs complete and acomplete)")
    return obj


def _neo4j_store(args: argparse.Namespace, info: dict | None = None) -> Neo4jGraphStore:
    import os

    from semrag.neo4j import Neo4jGraphStore

    info = info or {}
    password = args.neo4j_password or os.environ.get("NEO4J_PASSWORD", "")
    return Neo4jGraphStore(
        info.get("uri", args.neo4j_uri),
        info.get("user", args.neo4j_user),
        password,
        database=info.get("database", args.neo4j_database),
    )


def _build_graph(args: argparse.Namespace, index: SemanticIndex, out: Path) -> None:
    from semrag.graph import HeuristicGraphExtractor, InMemoryGraphStore, KnowledgeGraph
    from semrag.graph.extract import LLMGraphExtractor

    if args.extractor == "llm":
        extractor: LLMGraphExtractor | HeuristicGraphExtractor = LLMGraphExtractor(
            _load_llm(args.llm)
        )
    else:
        extractor = HeuristicGraphExtractor()
    store = InMemoryGraphStore() if args.graph == "memory" else _neo4j_store(args)
    kg = KnowledgeGraph.build(index, extractor=extractor, store=store, show_progress=args.progress)
    counts = kg.store.counts()
    if isinstance(store, InMemoryGraphStore):
        store.save(out / "graph")
    else:
        info = {"uri": args.neo4j_uri, "user": args.neo4j_user, "database": args.neo4j_database}
        (out / "graph.json").write_text(json.dumps(info), encoding="utf-8")
        store.close()
    print(
        f"graph ({args.graph}): {counts['entities']} entities, {counts['relations']} relations, "
        f"{counts['communities']} communities"
    )


def _open_graph(args: argparse.Namespace, index: SemanticIndex) -> KnowledgeGraph:
    from semrag.graph import InMemoryGraphStore, KnowledgeGraph

    root = Path(args.index)
    if (root / "graph").is_dir():
        return KnowledgeGraph(InMemoryGraphStore.load(root / "graph"), index=index)
    if (root / "graph.json").exists():
        info = json.loads((root / "graph.json").read_text(encoding="utf-8"))
        return KnowledgeGraph(_neo4j_store(args, info), index=index)
    raise SemragError(f"{root} has no knowledge graph: index it with --graph memory|neo4j")


def _cmd_query(args: argparse.Namespace) -> int:
    from semrag.index import SemanticIndex
    from semrag.retrieval import SSGRetriever

    index = SemanticIndex.load(args.index)
    if args.algorithm and args.retriever not in (None, "ssg"):
        raise SemragError(
            f"--algorithm picks an SSG traversal or a channel, not a {args.retriever} option: "
            "drop one of them"
        )
    if args.retriever is None:  # an SSG algorithm asks for the SSG; else the default retriever
        args.retriever = "ssg" if args.algorithm else "ppr"
    if args.retriever in ("sketch", "local", "global"):
        from semrag.retrieval import GraphRetriever

        kg = _open_graph(args, index)
        hits = GraphRetriever(index, kg, strategy=args.retriever, k=args.k).retrieve(args.question)
    elif args.retriever == "ppr":
        from semrag.retrieval import PPRRetriever

        hits = PPRRetriever(index, k=args.k).retrieve(args.question)
    elif args.retriever == "iar":
        from semrag.retrieval import IntentAwareRetriever

        hits = IntentAwareRetriever(index, k=args.k).retrieve(args.question)
    elif args.algorithm == "dense":
        hits = index.search(args.question, k=args.k)
    elif args.algorithm == "sparse":
        hits = index.search_sparse(args.question, k=args.k)
    else:
        algorithm = args.algorithm or "query_traversal"
        hits = SSGRetriever(index, strategy=algorithm, k=args.k).retrieve(args.question)
    for rank, hit in enumerate(hits, 1):
        c = hit.chunk
        if args.json:
            record = {
                "rank": rank,
                "doc_id": c.doc_id,
                "start": c.start,
                "end": c.end,
                "score": hit.score,
                "channels": dict(hit.channel_scores),
                "provenance": [dict(p) for p in hit.provenance],
                "text": c.text,
            }
            print(json.dumps(record, ensure_ascii=False))
            continue
        p = hit.provenance[0] if hit.provenance else {}
        how = ""
        if p.get("channel") == "sketch":
            ents = ", ".join(e["name"] for e in p["entities"][:4])
            how = f" {p['side']}" + (f" via {ents}" if ents else "")
        elif p.get("channel") == "community":
            how = f" {p['mode']}" + (f" community {p['community']}" if "community" in p else "")
        elif p.get("strategy") == "ppr":
            how = f" hop {p['hop']}: " + (
                f"via {p['via']} from {p['from']}"
                if p["hop"]
                else (", ".join(p["entities"]) if p["entities"] else "dense")
            )
        elif p.get("channel") == "ssg":
            how = f" hop {p['hop']}: " + (
                "anchor" if p["from"] is None else f"{p['edge']} edge from node {p['from']}"
            )
        print(f"#{rank} {hit.score:.3f} {c.doc_id} [{c.start}:{c.end}]{how}")
        print(f"    {c.text[:300]}")
    if args.plot:
        if args.algorithm in ("dense", "sparse") or args.retriever != "ssg":
            raise SemragError("--plot draws SSG traversals; pick an SSG algorithm")
        from semrag.viz import plot_traversal

        print(f"plot: {plot_traversal(hits, args.plot, index=index)}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``semrag`` command."""
    from semrag._version import __version__

    parser = argparse.ArgumentParser(
        prog="semrag",
        description="Semantic chunking, indexing and graph retrieval from the command line.",
    )
    parser.add_argument("--version", action="version", version=f"semrag {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    chunk = sub.add_parser("chunk", help="split files into semantic chunks")
    chunk.add_argument("files", nargs="+", metavar="FILE", help="UTF-8 text files")
    chunk.add_argument("--buffer-size", type=int, default=1, help="sentences of context per side")
    chunk.add_argument("--window", choices=("centered", "split"), default="split")
    chunk.add_argument("--pooling", choices=("mean", "concat"), default="mean")
    chunk.add_argument(
        "--threshold",
        type=_threshold,
        default="std",
        help="a cosine distance, or std|percentile|interquartile|gradient|target_chunks",
    )
    chunk.add_argument("--threshold-amount", type=float, default=None)
    chunk.add_argument("--max-tokens", type=int, default=1024)
    chunk.add_argument(
        "--overlap-tokens", type=int, default=None, help="default: 128, at most max-tokens/4"
    )
    chunk.add_argument("--min-tokens", type=int, default=0)
    chunk.add_argument("--json", action="store_true", help="print one JSON object per chunk")
    chunk.add_argument("--plot", metavar="DIR", help="write a breakpoint plot per file to DIR")
    chunk.add_argument("--progress", action="store_true", help="show a progress bar")
    chunk.set_defaults(func=_cmd_chunk)

    index = sub.add_parser("index", help="build and save a SemanticIndex")
    index.add_argument("paths", nargs="+", metavar="DIR_OR_FILE")
    index.add_argument("--out", required=True, metavar="INDEX", help="directory to write")
    index.add_argument("--chunker", choices=("semantic",), default="semantic")
    index.add_argument("--buffer-size", type=int, default=1)
    index.add_argument("--max-tokens", type=int, default=1024)
    index.add_argument(
        "--ssg", action="store_true", help="also build the similarity graph (SSG traversals)"
    )
    index.add_argument("--no-ssg", action="store_true", help=argparse.SUPPRESS)  # the default
    index.add_argument("--progress", action="store_true")
    index.add_argument(
        "--graph",
        choices=("none", "memory", "neo4j"),
        default="none",
        help="also build the knowledge graph, in memory or on Neo4j",
    )
    index.add_argument("--extractor", choices=("heuristic", "llm"), default="heuristic")
    index.add_argument("--llm", metavar="MODULE:NAME", help="the LLM of --extractor llm")
    _neo4j_options(index)
    index.set_defaults(func=_cmd_index)

    from semrag.retrieval.ssg import ALGORITHMS

    query = sub.add_parser("query", help="retrieve from a saved index")
    query.add_argument("index", metavar="INDEX")
    query.add_argument("question")
    query.add_argument(
        "--algorithm",
        choices=[a for a in ALGORITHMS if a != "llm_guided_traversal"] + ["dense", "sparse"],
        help="an SSG traversal (the index needs --ssg), or the dense or sparse channel",
    )
    query.add_argument(
        "--retriever",
        choices=("ppr", "iar", "ssg", "sketch", "local", "global"),
        help="ppr (the default: personalized PageRank, multi-hop); ssg uses --algorithm "
        "(query_traversal unless told); sketch, local and global need --graph",
    )
    query.add_argument("--k", type=int, default=5)
    _neo4j_options(query)
    query.add_argument("--json", action="store_true")
    query.add_argument("--plot", metavar="PNG", help="draw the traversal to this PNG")
    query.set_defaults(func=_cmd_query)

    add_eval_parser(sub, _collect, _load_llm)

    tb = sub.add_parser("train-boundary", help="train a PSC or MFC boundary model")
    tb.add_argument(
        "--data",
        nargs="+",
        required=True,
        metavar="KIND:PATH",
        help="KIND: sectioned (a folder of Choi-format files), nicta, csabstruct, pubmedqa, "
        "squad, choi; PATH may end in @START:STOP to keep those documents",
    )
    tb.add_argument(
        "--dev",
        nargs="+",
        default=None,
        metavar="KIND:PATH",
        help="development data; default: the dev part of --split of every --data source",
    )
    tb.add_argument("--split", type=split_fractions, default=(0.8, 0.1, 0.1), metavar="TR/DEV/TEST")
    tb.add_argument("--model", choices=("psc", "mfc"), required=True)
    tb.add_argument("--out", required=True, metavar="DIR")
    tb.add_argument("--encoder", default=None, help="sentence-transformers model directory")
    tb.add_argument(
        "--window",
        type=window_sizes,
        default=(1,),
        metavar="N[,N...]",
        help="sentences per side of a gap; several (1,3,8) concatenate the means of each",
    )
    tb.add_argument("--negative-ratio", type=float, default=1.0, help="negatives per positive")
    tb.add_argument(
        "--edge-share",
        type=float,
        default=0.0,
        help="share of training pairs whose sides are cut to 1..EDGE_REACH sentences, as "
        "near a document's edge (default 0)",
    )
    tb.add_argument(
        "--edge-reach",
        type=int,
        default=None,
        help="most sentences per side of a cut pair (default: the largest window - 1)",
    )
    tb.add_argument(
        "--negative-mix",
        type=parse_negative_mix,
        default=None,
        metavar="KIND=SHARE,...",
        help="shares of boundary, section and document negatives in the training pairs "
        "(default 0.5, 0.25, 0.25)",
    )
    tb.add_argument(
        "--dev-negative-mix",
        type=parse_negative_mix,
        default=None,
        metavar="KIND=SHARE,...",
        help="the same shares for the dev pairs (default 0.5, 0.25, 0.25)",
    )
    tb.add_argument(
        "--threshold",
        default="auto",
        help="p(same section) below which to break; auto: lowest Pk on the dev documents",
    )
    tb.add_argument(
        "--rule",
        choices=("auto", "threshold", "valley"),
        default="auto",
        help="break at every gap below the threshold, or only at local minima (valley); "
        "auto: chosen with an auto threshold on the dev documents, else threshold",
    )
    tb.add_argument("--epochs", type=int, default=8)
    tb.add_argument("--lr", type=float, default=1e-3)
    tb.add_argument("--weight-decay", type=float, default=0.01)
    tb.add_argument("--proj-dim", type=int, default=256)
    tb.add_argument(
        "--average",
        type=float,
        default=None,
        metavar="DECAY",
        help="keep a moving average of the weights (decay per step, e.g. 0.995) and "
        "evaluate and keep it instead of the trained weights",
    )
    tb.add_argument("--seed", type=int, default=0)
    tb.add_argument("--cache", default=None, metavar="DIR", help="sentence-embedding cache")
    tb.set_defaults(func=cmd_train_boundary)
    return parser


def _neo4j_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--neo4j-uri", default="bolt://localhost:7687")
    p.add_argument("--neo4j-user", default="neo4j")
    p.add_argument("--neo4j-password", default=None, help="default: $NEO4J_PASSWORD")
    p.add_argument("--neo4j-database", default=None)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (SemragError, ValueError) as exc:
        print(f"semrag: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
