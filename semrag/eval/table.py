"""A table of evaluation results: printed, written as JSON and CSV."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from semrag.errors import ConfigError
from semrag.eval.verdict import Verdict, compare, verdict_lines

__all__ = ["ResultTable"]


@dataclass
class ResultTable:
    """Rows of results, one per splitter or retriever, in the order they were given.

    Attributes:
        rows: one mapping per row: its name under ``key``, then its numbers.
        key: the name column (``"splitter"`` or ``"retriever"``).
        data: what was evaluated (documents, questions, settings), for the record.
        per_question: per row name and metric, the value of each question (the means in
            ``rows`` are their averages; intervals are drawn from them).
        verdicts: every row against each baseline, per compared metric (:meth:`judge`).
        warnings: why the data may not tell the rows apart (:mod:`semrag.eval.checks`).
    """

    rows: list[dict[str, Any]]
    key: str
    data: dict[str, Any] = field(default_factory=dict)
    per_question: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def judge(
        self, baselines: Sequence[str], metrics: Sequence[str], *, resamples: int, seed: int
    ) -> None:
        """Compare every other row with each baseline at ``metrics`` (paired bootstrap).

        Each row gets ``<metric> - <baseline>`` and its ``95% CI`` column, and
        :attr:`verdicts` one :class:`~semrag.eval.verdict.Verdict` per row and metric.
        """
        for base in baselines:
            for row in self.rows:
                name = row[self.key]
                if name == base:
                    continue
                found = compare(
                    self.per_question[name],
                    self.per_question[base],
                    candidate=name,
                    baseline=base,
                    metrics=metrics,
                    resamples=resamples,
                    seed=seed,
                )
                for v in found:
                    row[f"{v.metric} - {base}"] = v.difference
                    row[f"{v.metric} - {base} 95% CI"] = v.interval
                self.verdicts += found

    def summary(self) -> str:
        """The verdict lines, then the warnings (``warning:`` in front), one a line."""
        lines = verdict_lines(self.verdicts)
        return "\n".join([*lines, *(f"warning: {w}" for w in self.warnings)])

    @property
    def columns(self) -> list[str]:
        """Every column, in the order the rows first name them."""
        return list(dict.fromkeys(k for row in self.rows for k in row))

    def row(self, name: str) -> dict[str, Any]:
        """The row of ``name``.

        Raises:
            ConfigError: if no row has that name.
        """
        for r in self.rows:
            if r[self.key] == name:
                return r
        names = [r[self.key] for r in self.rows]
        raise ConfigError(f"no {self.key} named {name!r}; the rows are {names}")

    def to_markdown(self, columns: Sequence[str] | None = None) -> str:
        """A Markdown table of ``columns`` (default: all)."""
        cols = list(columns or self.columns)
        lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for r in self.rows:
            lines.append("| " + " | ".join(_cell(r.get(c)) for c in cols) + " |")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the data, rows, per-question values, verdicts and warnings."""
        return {
            "data": self.data,
            "rows": self.rows,
            "per_question": self.per_question,
            "verdicts": [{**asdict(v), "outcome": v.outcome} for v in self.verdicts],
            "verdict_lines": verdict_lines(self.verdicts),
            "warnings": self.warnings,
        }

    def to_json(self, path: str | Path) -> Path:
        """Write :meth:`to_dict` as JSON."""
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=1, ensure_ascii=False), encoding="utf-8")
        return path

    def to_csv(self, path: str | Path) -> Path:
        """Write the rows as CSV (one column per metric)."""
        path = Path(path)
        with open(path, "w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=self.columns)
            writer.writeheader()
            writer.writerows(self.rows)
        return path

    def __str__(self) -> str:
        return self.to_markdown()


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
