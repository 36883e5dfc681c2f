"""``benchmarks/RESULTS.md`` from the records the benchmarks write; nothing pasted by hand.

Each benchmark run with ``--out`` saves one JSON record per table it reports in
``benchmarks/results/`` (title, command, data, commit, date, machine, then its tables and
notes, as :func:`parse` reads them from the report it printed) and calls :func:`build`,
which writes ``RESULTS.md``: one page of the current record of every table, grouped by
topic. A new run of a table replaces its record; what changed and why goes in the
CHANGELOG.

    python benchmarks/report.py            # rewrite RESULTS.md from benchmarks/results/
    python benchmarks/report.py --check    # exit 1 if RESULTS.md is not what the records give
    python benchmarks/report.py --record F # keep the tables of a report a run printed to F

A run with ``--out benchmarks/RESULTS.md`` keeps its records itself; ``--record`` keeps those
of a run written to a scratch file (``--out F``), e.g. the two reports ``scale.py
--exponents`` compares. The record's command is the run's own (it names the scratch file).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RECORDS = HERE / "results"
RESULTS = HERE / "RESULTS.md"

# topic, and the scripts whose records it holds, in page order
TOPICS: list[tuple[str, tuple[str, ...]]] = [
    (
        "Chunking",
        (
            "chunk_retrieval",
            "eval_speed",
            "splitting_speed",
            "chunking_speed",
            "boundary_quality",
            "line_structured",
            "sentence_splitting",
        ),
    ),
    ("Trained boundary chunkers (PSC, MFC)", ("boundary_models",)),
    ("Corpus shapes: the front door against a vector store", ("corpus_shapes",)),
    ("Multi-hop retrieval", ("multihop", "edge_families", "intent")),
    ("Intent-aware retrieval and SPC", ("context_repair", "iar_fusion", "spc_fragmentation")),
    ("Semantic similarity graph (SSG)", ("ssg_retrieval", "ssg_scaling", "ssg_float16")),
    ("Knowledge graph, SKETCH and community search", ("graph_multihop",)),
    ("The living index", ("living_index",)),
    ("Several processes, one saved index", ("shared_directory",)),
    ("Building the index", ("index_build",)),
    ("Scale", ("scale", "hnsw_storage", "hnsw_growth", "bm25_scale", "sentence_dtype")),
    ("Neo4j", ("neo4j_backend", "neo4j_scale", "neo4j_serving")),
    ("Ingestion on Ray", ("ray_ingest",)),
    ("A real local LLM", ("local_llm",)),
]

_FIELD = re.compile(r"- (command|data|commit|date): (.*)")


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:80]


def script_of(command: str) -> str:
    m = re.search(r"benchmarks/(\w+)\.py", command)
    return m.group(1) if m else "other"


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def parse(markdown: str) -> dict[str, Any]:
    """One record from a benchmark's report: ``### title``, ``- field:`` lines, then tables
    (kept as columns and rows) and text (kept as paragraphs)."""
    lines = markdown.strip("\n").split("\n")
    title = re.sub(r"^#+\s*", "", lines[0]).strip()
    record: dict[str, Any] = {"title": title, "blocks": []}
    i = 1
    while i < len(lines) and (not lines[i].strip() or _FIELD.fullmatch(lines[i])):
        if m := _FIELD.fullmatch(lines[i]):
            key, value = m.groups()
            if key == "command":
                value = value.strip("`")
            if key == "date" and "; machine: " in value:
                value, machine = value.split("; machine: ", 1)
                record["machine"] = machine.strip()
            record[key] = value.strip()
        i += 1
    text: list[str] = []

    def flush() -> None:
        if any(t.strip() for t in text):
            record["blocks"].append({"text": "\n".join(text).strip("\n")})
        text.clear()

    while i < len(lines):
        if (
            lines[i].startswith("|")
            and i + 1 < len(lines)
            and re.match(r"\|[-: |]+\|?$", lines[i + 1])
        ):
            flush()
            columns = _cells(lines[i])
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            record["blocks"].append({"columns": columns, "rows": rows})
            continue
        text.append(lines[i])
        i += 1
    flush()
    record["script"] = script_of(record.get("command", ""))
    return record


def render(record: dict[str, Any], level: int = 3) -> str:
    out = [f"{'#' * level} {record['title']}", ""]
    out.append(f"- command: `{record.get('command', '')}`")
    for key in ("data", "commit"):
        if record.get(key):
            out.append(f"- {key}: {record[key]}")
    when = record.get("date", "")
    if record.get("machine"):
        when += f"; machine: {record['machine']}"
    out.append(f"- date: {when}")
    for block in record["blocks"]:
        out.append("")
        if "text" in block:
            out.append(block["text"])
            continue
        out.append("| " + " | ".join(block["columns"]) + " |")
        out.append("|" + "---|" * len(block["columns"]))
        out += ["| " + " | ".join(row) + " |" for row in block["rows"]]
    return "\n".join(out) + "\n"


def commit() -> str:
    """The commit the run measured (``-dirty`` when the tree had changes).

    What earlier runs wrote (``RESULTS.md``, ``results/``) is not a change of the code.
    """
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE
        ).stdout.strip()
        outputs = [":(exclude,top)benchmarks/RESULTS.md", ":(exclude,top)benchmarks/results"]
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ":/", *outputs],
            capture_output=True,
            text=True,
            cwd=HERE,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return (head or "unknown") + ("-dirty" if dirty else "")


def save(markdown: str) -> Path:
    """Keep the record of one printed report (replacing the earlier run of that table)."""
    record = parse(markdown)
    record.setdefault("commit", commit())
    RECORDS.mkdir(exist_ok=True)
    path = RECORDS / f"{record['script']}--{slug(record['title'])}.json"
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def page() -> str:
    records = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(RECORDS.glob("*.json"))]
    by_script: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_script.setdefault(r["script"], []).append(r)
    out = [
        "# Benchmark results",
        "",
        "Current numbers only. This page is written by `python benchmarks/report.py` from the",
        "records in `benchmarks/results/`, which each benchmark saves when it runs with `--out`:",
        "never edit it by hand. Above each table: the command that printed it, its data, the",
        "commit it measured and the machine. What changed between runs is in the CHANGELOG.",
        "",
    ]
    placed = set()
    for topic, scripts in TOPICS:
        chosen = [r for s in scripts for r in by_script.get(s, [])]
        if not chosen:
            continue
        out += [f"## {topic}", ""]
        for r in chosen:
            out.append(render(r))
            placed.add(id(r))
    rest = [r for r in records if id(r) not in placed]
    if rest:
        out += ["## Other", ""] + [render(r) for r in rest]
    return "\n".join(out).rstrip("\n") + "\n"


def record_report(report: str) -> None:
    """Keep every ``### `` section of a printed report as a record."""
    for section in re.split(r"(?m)^(?=### )", report):
        if section.startswith("### "):
            print(f"saved {save(section)}")


def build() -> None:
    RESULTS.write_text(page(), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="fail if RESULTS.md is out of date")
    ap.add_argument("--record", nargs="+", metavar="REPORT", help="keep these reports' tables")
    args = ap.parse_args()
    for path in args.record or []:
        record_report(Path(path).read_text(encoding="utf-8"))
    if args.check:
        if RESULTS.read_text(encoding="utf-8") != page():
            sys.exit("benchmarks/RESULTS.md is not what benchmarks/results/ gives: run report.py")
        return
    build()


if __name__ == "__main__":
    main()
