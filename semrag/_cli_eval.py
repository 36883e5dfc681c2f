"""``semrag eval``: the evaluation of :mod:`semrag.eval` on the command line.

* ``semrag eval chunkers DOCS... --questions q.jsonl [--splitter SPEC ...] [--budgets 1000
  4000] [--k 5] [--out DIR]`` scores splitters on your documents; ``--generate N --llm
  MODULE:NAME`` writes the questions with your LLM first (kept in ``DIR/questions.jsonl``).
* ``semrag eval retrievers INDEX --questions q.jsonl [--retriever dense|sparse|ppr|iar ...]
  [--ks 1 2 5 10] [--baseline NAME] [--out DIR]`` scores retrievers on a saved index.

Both print the table, a verdict line per candidate against the baseline (better, worse, or
"cannot tell" per budget or rank) and any warning that the data cannot tell; with ``--out``
they write ``report.html`` (self-contained, offline: verdicts, warnings, plots, quality and
cost), ``results.json`` and ``results.csv`` (and for splitters ``recall.png``, with the
``viz`` extra). A splitter SPEC is ``semantic`` (the
default ``SemanticChunker()``), ``psc`` or ``mfc`` (the shipped boundary models),
``recursive:SIZE[:OVERLAP]`` (LangChain's ``RecursiveCharacterTextSplitter``),
``sentence:SIZE[:OVERLAP]`` (LlamaIndex's ``SentenceSplitter``), or ``MODULE:NAME`` (your
own splitter object or a factory of one).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from semrag.errors import MissingDependencyError, SemragError

if TYPE_CHECKING:
    from semrag.eval.table import ResultTable

__all__ = ["add_eval_parser"]

DEFAULT_SPLITTERS = ("semantic", "recursive:1000:200", "recursive:400:0", "sentence:1024:200")
DEFAULT_RETRIEVERS = ("dense", "sparse", "ppr", "iar")


def add_eval_parser(sub: Any, collect: Any, load_llm: Any) -> None:
    """Add ``eval chunkers`` and ``eval retrievers`` to the ``semrag`` parser."""
    ev = sub.add_parser("eval", help="evaluate splitters or retrievers on your documents")
    kinds = ev.add_subparsers(dest="what", required=True)

    ch = kinds.add_parser("chunkers", help="which splitter for these documents")
    ch.add_argument("paths", nargs="+", metavar="DOCS", help="text files or folders")
    ch.add_argument("--questions", metavar="JSONL", help="questions with their excerpts")
    ch.add_argument("--generate", type=int, metavar="N", help="write N questions with --llm")
    ch.add_argument("--llm", metavar="MODULE:NAME", help="the LLM of --generate")
    ch.add_argument("--seed", type=int, default=0)
    ch.add_argument("--splitter", action="append", metavar="SPEC", help="repeat for several")
    ch.add_argument("--budgets", type=int, nargs="+", default=[1000, 4000])
    ch.add_argument("--k", type=int, default=5)
    ch.add_argument("--baseline", default=None, help="default: the first splitter")
    ch.add_argument("--difference", type=float, default=0.02, help="smallest difference to tell")
    ch.add_argument("--out", metavar="DIR", help="write report.html, results.json, results.csv")
    ch.add_argument("--progress", action="store_true")
    ch.set_defaults(func=lambda args: _cmd_chunkers(args, collect, load_llm))

    rt = kinds.add_parser("retrievers", help="which retriever for these questions")
    rt.add_argument("index", metavar="INDEX", help="a saved SemanticIndex")
    rt.add_argument("--questions", metavar="JSONL", required=True)
    rt.add_argument(
        "--retriever", action="append", choices=DEFAULT_RETRIEVERS, help="repeat for several"
    )
    rt.add_argument("--ks", type=int, nargs="+", default=[1, 2, 5, 10])
    rt.add_argument("--baseline", default=None, help="default: the first retriever")
    rt.add_argument("--difference", type=float, default=0.02, help="smallest difference to tell")
    rt.add_argument("--out", metavar="DIR", help="write report.html, results.json, results.csv")
    rt.set_defaults(func=_cmd_retrievers)


def _cmd_chunkers(args: argparse.Namespace, collect: Any, load_llm: Any) -> int:
    from semrag.eval import evaluate_splitters, generate_questions, read_questions, write_questions

    docs = collect(args.paths)
    out = Path(args.out) if args.out else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    if args.generate:
        if not args.llm:
            raise SemragError("--generate needs --llm MODULE:NAME (an LLM object or factory)")
        made = generate_questions(
            docs, load_llm(args.llm), n=args.generate, seed=args.seed, show_progress=args.progress
        )
        print(made.summary(), file=sys.stderr)
        questions = made.questions
        if out is not None:
            write_questions(questions, out / "questions.jsonl", docs)
    elif args.questions:
        questions = read_questions(args.questions, docs)
    else:
        raise SemragError("give --questions JSONL, or --generate N with --llm MODULE:NAME")
    if not questions:
        raise SemragError("no question to evaluate with")
    specs = args.splitter or [s for s in DEFAULT_SPLITTERS if _available(s)]
    splitters = {spec: splitter_of(spec) for spec in specs}
    table = evaluate_splitters(
        docs,
        questions,
        splitters,
        budgets=args.budgets,
        k=args.k,
        show_progress=args.progress,
        baseline=args.baseline,
        difference=args.difference,
    )
    print(table.to_markdown(_chunk_columns(args.budgets, args.k)))
    _write(table, out)
    if out is not None:
        try:
            from semrag.viz import plot_budget_recall

            print(f"plot: {plot_budget_recall(table, out / 'recall.png')}", file=sys.stderr)
        except MissingDependencyError as exc:
            print(f"no plot: {exc}", file=sys.stderr)
    return 0


def _chunk_columns(budgets: list[int], k: int) -> list[str]:
    cols = ["splitter"]
    cols += [f"recall {b}" for b in budgets] + [f"IoU {b}" for b in budgets]
    return [*cols, f"recall @{k}", "chunks", "mean chars", "lost", "split seconds", "embed seconds"]


def _cmd_retrievers(args: argparse.Namespace) -> int:
    from semrag.eval import evaluate_retrievers, read_questions
    from semrag.index import SemanticIndex
    from semrag.retrieval import IntentAwareRetriever, PPRRetriever

    index = SemanticIndex.load(args.index)
    index_bytes = sum(f.stat().st_size for f in Path(args.index).rglob("*") if f.is_file())
    docs = [index.document(d) for d in index.doc_ids]
    questions = read_questions(args.questions, docs)
    deep = 4 * max(args.ks)  # chunks asked, so that max(ks) distinct documents come back
    make = {
        "dense": lambda: lambda q: [h.chunk.doc_id for h in index.search(q, k=deep)],
        "sparse": lambda: lambda q: [h.chunk.doc_id for h in index.search_sparse(q, k=deep)],
        "ppr": lambda: PPRRetriever(index, k=deep),
        "iar": lambda: IntentAwareRetriever(index, k=deep),
    }
    names = args.retriever or list(DEFAULT_RETRIEVERS)
    table = evaluate_retrievers(
        index,
        questions,
        {n: make[n]() for n in names},
        ks=args.ks,
        baseline=args.baseline,
        difference=args.difference,
    )
    table.data["index bytes on disk"] = index_bytes
    print(table.to_markdown())
    _write(table, Path(args.out) if args.out else None)
    return 0


def _write(table: ResultTable, out: Path | None) -> None:
    """Print the verdicts and warnings; with ``out``, write the report and the results."""
    from semrag.eval import write_report

    print(table.summary())
    if out is None:
        return
    out.mkdir(parents=True, exist_ok=True)
    table.to_json(out / "results.json")
    table.to_csv(out / "results.csv")
    print(f"report: {write_report(table, out / 'report.html')}", file=sys.stderr)


def splitter_of(spec: str) -> Any:
    """The splitter a command-line SPEC names (see the module docs).

    Raises:
        SemragError: for a spec that names nothing, or a framework that is not installed.
    """
    kind, _, rest = spec.partition(":")
    sizes = [int(x) for x in rest.split(":")] if rest and kind in ("recursive", "sentence") else []
    if kind == "semantic" and not rest:
        from semrag.chunking import SemanticChunker

        return SemanticChunker()
    if kind in ("psc", "mfc") and not rest:
        from semrag.chunking.boundary import MFCChunker, PSCChunker

        return PSCChunker() if kind == "psc" else MFCChunker()
    if kind == "recursive" and 1 <= len(sizes) <= 2:
        try:
            from langchain_semrag.eval import recursive_splitter
        except ImportError as exc:
            raise SemragError(f"{spec}: install semrag[langchain]") from exc
        return recursive_splitter(*sizes)
    if kind == "sentence" and 1 <= len(sizes) <= 2:
        try:
            from llama_index_semrag.eval import sentence_splitter
        except ImportError as exc:
            raise SemragError(f"{spec}: install semrag[llama-index]") from exc
        return sentence_splitter(*sizes)
    if rest and kind not in ("semantic", "psc", "mfc", "recursive", "sentence"):
        try:
            obj = getattr(importlib.import_module(kind), rest)
        except (ImportError, AttributeError) as exc:
            raise SemragError(f"--splitter {spec}: cannot import it ({exc})") from exc
        return obj() if isinstance(obj, type) else obj
    raise SemragError(
        f"--splitter {spec!r}: give semantic, psc, mfc, recursive:SIZE[:OVERLAP], "
        "sentence:SIZE[:OVERLAP] or MODULE:NAME"
    )


def _available(spec: str) -> bool:
    module = {"recursive": "langchain_text_splitters", "sentence": "llama_index.core"}.get(
        spec.partition(":")[0]
    )
    return module is None or importlib.util.find_spec(module) is not None
