"""The ``semrag`` command line.

``semrag chunk FILE... [--buffer-size N --threshold T --max-tokens N --json]`` prints the
chunks of each file (or JSON lines with offsets and token counts).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from semrag.errors import SemragError
from semrag.types import Document

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


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``semrag`` command."""
    parser = argparse.ArgumentParser(prog="semrag", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    chunk = sub.add_parser("chunk", help="split files into semantic chunks")
    chunk.add_argument("files", nargs="+", metavar="FILE", help="UTF-8 text files")
    chunk.add_argument("--buffer-size", type=int, default=1, help="sentences of context per side")
    chunk.add_argument("--window", choices=("centered", "split"), default="centered")
    chunk.add_argument("--pooling", choices=("mean", "concat"), default="mean")
    chunk.add_argument(
        "--threshold",
        type=_threshold,
        default="percentile",
        help="a cosine distance, or percentile|std|interquartile|gradient|target_chunks",
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
    return parser


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
