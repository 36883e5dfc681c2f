"""A self-contained HTML report of an evaluation: one file, openable offline.

:func:`write_report` writes the verdict lines, the warnings, the table (quality and cost),
the recall plot (against the context budget for splitters, against the rank for
retrievers), one interval plot per compared metric, what was evaluated and the
environment. The plots are inline SVG drawn here (no plotting library, no script from
anywhere); a few lines of inline script only record, in ``<body data-plots=...>``, how
many plots the browser laid out (what the tests read from a headless browser).
"""

from __future__ import annotations

import datetime as _dt
import html
import math
import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from semrag.eval.table import ResultTable
from semrag.eval.verdict import BETTER, WORSE, Verdict, verdict_lines

__all__ = ["write_report"]

_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2")
_W, _H, _PAD = 560, 300, 48

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:3px 6px}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f3f3f3}
li.better{color:#1a7f37}li.worse{color:#b42318}li.mixed{color:#b42318;font-weight:bold}
.warn{background:#fff7d6;border:1px solid #e8c547;padding:.5em 1em}
.plots{display:flex;flex-wrap:wrap;gap:1em}svg{background:#fff;border:1px solid #ddd}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 1em}dt{color:#666}
"""

_SCRIPT = """
addEventListener('load', () => {
  const laid = [...document.querySelectorAll('svg.plot')]
    .filter(s => s.getBoundingClientRect().width > 0 && s.querySelector('polyline,line'));
  document.body.dataset.plots = String(laid.length);
});
"""


def write_report(table: ResultTable, path: str | Path) -> Path:
    """Write ``table`` as a self-contained HTML page at ``path`` (a folder gets ``report.html``).

    Returns:
        The file written.
    """
    path = Path(path)
    if path.is_dir() or not path.suffix:
        path = path / "report.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    what = "splitters" if table.key == "splitter" else "retrievers"
    parts = [
        f"<h1>Which {what}? {html.escape(_subtitle(table))}</h1>",
        "<h2>Verdicts</h2>",
        _verdicts(table.verdicts),
    ]
    if table.warnings:
        items = "".join(f"<li>{html.escape(w)}</li>" for w in table.warnings)
        parts += ["<h2>Warnings: the data may not tell</h2>", f"<ul class='warn'>{items}</ul>"]
    parts += [
        "<h2>Plots</h2>",
        "<div class='plots'>",
        _recall_plot(table),
        *(
            _interval_plot(table.verdicts, m)
            for m in dict.fromkeys(v.metric for v in table.verdicts)
        ),
        "</div>",
        "<h2>Results (quality and cost)</h2>",
        _table(table),
        "<h2>What was evaluated</h2>",
        _facts(table.data),
        "<h2>Environment</h2>",
        _facts(_environment()),
    ]
    page = (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>semrag evaluation: {what}</title><style>{_CSS}</style></head>"
        f"<body>{''.join(parts)}<script>{_SCRIPT}</script></body></html>"
    )
    path.write_text(page, encoding="utf-8")
    return path


def _subtitle(table: ResultTable) -> str:
    data = table.data
    bits = [f"{data['questions']} questions"] if "questions" in data else []
    if "documents" in data:
        bits.append(f"{data['documents']} documents")
    if data.get("baseline"):
        bits.append(f"baseline {data['baseline']}")
    return ", ".join(bits)


def _verdicts(verdicts: Sequence[Verdict]) -> str:
    if not verdicts:
        return "<p>Nothing compared: one row only.</p>"
    items = []
    for line in verdict_lines(verdicts):
        kind = "mixed" if line.startswith("MIXED") else ""
        if not kind:
            head = line.split(": ", 1)[-1]
            kind = BETTER if head.startswith(BETTER) else WORSE if head.startswith(WORSE) else ""
        items.append(f"<li class='{kind}'>{html.escape(line)}</li>")
    return f"<ul>{''.join(items)}</ul>"


def _table(table: ResultTable) -> str:
    cols = table.columns
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    rows = []
    for r in table.rows:
        cells = []
        for c in cols:
            v = r.get(c)
            numeric = isinstance(v, (int, float)) and not isinstance(v, bool)
            text = "" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)
            cells.append(f"<td{' class=n' if numeric else ''}>{html.escape(text)}</td>")
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _facts(facts: dict[str, Any]) -> str:
    items = "".join(
        f"<dt>{html.escape(str(k))}</dt><dd>{html.escape(str(v))}</dd>" for k, v in facts.items()
    )
    return f"<dl>{items}</dl>"


def _environment() -> dict[str, str]:
    from semrag._version import __version__

    return {
        "semrag": __version__,
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "platform": platform.platform(terse=True),
        "processor cores": str(os.cpu_count() or 1),
        "written": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def _recall_plot(table: ResultTable) -> str:
    """Recall against the budget (splitters) or the rank (retrievers), one line per row."""
    if table.key == "splitter":
        xs = [int(b) for b in table.data.get("budgets", [])]
        column, label = "recall {}", "context budget (characters)"
    else:
        xs = [int(k) for k in table.data.get("ks", [])]
        column, label = "R@{}", "rank k"
    if not xs:
        return ""
    log = max(xs) >= 4 * min(xs)
    lo, hi = (math.log(min(xs)), math.log(max(xs))) if log else (min(xs), max(xs))

    def x_of(x: float) -> float:
        v = math.log(x) if log else x
        return _PAD + (v - lo) / ((hi - lo) or 1) * (_W - 2 * _PAD)

    def y_of(y: float) -> float:
        return _H - _PAD - y * (_H - 2 * _PAD)

    body = [_axes(f"recall against the {label}", label, "recall")]
    for x in xs:
        body.append(_text(x_of(x), _H - _PAD + 16, f"{x:,}", anchor="middle"))
    for y in (0, 0.5, 1):
        body.append(_text(_PAD - 6, y_of(y) + 4, f"{y:g}", anchor="end"))
    for i, row in enumerate(table.rows):
        colour = _COLOURS[i % len(_COLOURS)]
        points = " ".join(f"{x_of(x):.1f},{y_of(row[column.format(x)]):.1f}" for x in xs)
        body.append(f"<polyline points='{points}' fill='none' stroke='{colour}' stroke-width='2'/>")
        body += [
            f"<circle cx='{x_of(x):.1f}' cy='{y_of(row[column.format(x)]):.1f}' r='{5 - i % 3}' "
            f"fill='none' stroke='{colour}'/>"
            for x in xs
        ]
        body.append(_text(_W - _PAD + 4, 20 + 14 * i, str(row[table.key]), colour=colour))
    return _svg(body, width=_W + 220)


def _interval_plot(verdicts: Sequence[Verdict], metric: str) -> str:
    """Each candidate's difference to its baseline at ``metric``, with its 95% interval."""
    found = [v for v in verdicts if v.metric == metric]
    span = max(0.05, *(max(abs(v.low), abs(v.high)) for v in found))
    height = _PAD + 24 * len(found) + 24

    def x_of(d: float) -> float:
        return 180 + (d + span) / (2 * span) * (_W - 220)

    body = [
        _text(8, 18, f"{metric}: difference to the baseline, 95% interval", size=13),
        f"<line x1='{x_of(0):.1f}' y1='28' x2='{x_of(0):.1f}' y2='{height - 20}' stroke='#999'/>",
        _text(x_of(-span), height - 6, f"{-span:+.2f}", anchor="start"),
        _text(x_of(span), height - 6, f"{span:+.2f}", anchor="end"),
    ]
    for i, v in enumerate(found):
        y = 44 + 24 * i
        colour = {BETTER: "#1a7f37", WORSE: "#b42318"}.get(v.outcome, "#555")
        body.append(_text(8, y + 4, f"{v.candidate} vs {v.baseline}"[:28]))
        body.append(
            f"<line x1='{x_of(v.low):.1f}' y1='{y}' x2='{x_of(v.high):.1f}' y2='{y}' "
            f"stroke='{colour}' stroke-width='3'/>"
        )
        body.append(f"<circle cx='{x_of(v.difference):.1f}' cy='{y}' r='4' fill='{colour}'/>")
    return _svg(body, width=_W, height=height)


def _axes(title: str, xlabel: str, ylabel: str) -> str:
    x0, x1, y0, y1 = _PAD, _W - _PAD, _H - _PAD, _PAD
    return (
        f"<line x1='{x0}' y1='{y0}' x2='{x1}' y2='{y0}' stroke='#333'/>"
        f"<line x1='{x0}' y1='{y0}' x2='{x0}' y2='{y1}' stroke='#333'/>"
        + _text(_W / 2, 20, title, anchor="middle", size=13)
        + _text(_W / 2, _H - 8, xlabel, anchor="middle")
        + _text(12, _H / 2, ylabel, anchor="middle", rotate=True)
    )


def _text(
    x: float,
    y: float,
    text: str,
    *,
    anchor: str = "start",
    size: int = 11,
    colour: str = "#222",
    rotate: bool = False,
) -> str:
    turn = f" transform='rotate(-90 {x:.1f} {y:.1f})'" if rotate else ""
    return (
        f"<text x='{x:.1f}' y='{y:.1f}' font-size='{size}' fill='{colour}' "
        f"text-anchor='{anchor}'{turn}>{html.escape(text)}</text>"
    )


def _svg(body: list[str], *, width: int = _W, height: int = _H) -> str:
    return (
        f"<svg class='plot' xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}'>{''.join(body)}</svg>"
    )
