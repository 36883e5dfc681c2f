"""Verdicts: is a candidate better than the baseline, per rank or budget, or can the data not tell?

Every comparison is paired: both rows were scored on the same questions, so the difference
of each question's scores is resampled (:func:`paired_bootstrap`). A candidate is

* **better** at a metric when the 95% interval of the mean difference lies above 0,
* **worse** when it lies below 0,
* **cannot tell** when it holds 0: the data do not separate the two.

:func:`verdict_lines` turns them into one line per candidate that a user can act on, and
flags a candidate that is better at one cut-off and worse at another.
:func:`questions_needed` says how many questions an interval as narrow as a chosen
difference would take at the variance these questions show.

Examples:
    >>> v = compare({"a": [1.0, 0.0, 1.0, 1.0] * 10}, {"a": [0.0, 0.0, 1.0, 0.0] * 10},
    ...             candidate="new", baseline="old")
    >>> v[0].outcome, round(v[0].difference, 2)
    ('better', 0.5)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from semrag.errors import ConfigError

__all__ = [
    "BETTER",
    "CANNOT_TELL",
    "WORSE",
    "Verdict",
    "compare",
    "paired_bootstrap",
    "questions_needed",
    "verdict_lines",
]

BETTER, WORSE, CANNOT_TELL = "better", "worse", "cannot tell"


@dataclass(frozen=True, slots=True)
class Verdict:
    """A candidate against the baseline at one metric."""

    candidate: str
    baseline: str
    metric: str
    difference: float
    """Mean of the candidate's per-question scores minus the baseline's."""
    low: float
    """Lower end of the 95% paired bootstrap interval of ``difference``."""
    high: float
    """Upper end of the interval."""
    questions: int
    """How many questions were paired."""
    spread: float
    """Standard deviation of the per-question differences (what :func:`questions_needed` reads)."""

    @property
    def outcome(self) -> str:
        """``"better"``, ``"worse"`` or ``"cannot tell"`` (the interval holds 0)."""
        if self.low > 0:
            return BETTER
        if self.high < 0:
            return WORSE
        return CANNOT_TELL

    @property
    def interval(self) -> str:
        """The interval as ``[+0.010, +0.070]``."""
        return f"[{self.low:+.3f}, {self.high:+.3f}]"


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], *, resamples: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """The mean of ``a - b`` and its 95% paired bootstrap interval.

    Examples:
        >>> d, low, high = paired_bootstrap([1, 1, 1, 0], [0, 0, 1, 0], resamples=500)
        >>> d, low <= d <= high
        (0.5, True)
    """
    x = np.asarray(a, np.float64) - np.asarray(b, np.float64)
    if x.size == 0:
        raise ConfigError("no paired values to compare")
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    return float(x.mean()), float(low), float(high)


def compare(
    candidate_scores: Mapping[str, Sequence[float]],
    baseline_scores: Mapping[str, Sequence[float]],
    *,
    candidate: str,
    baseline: str,
    metrics: Sequence[str] | None = None,
    resamples: int = 2000,
    seed: int = 0,
) -> list[Verdict]:
    """One :class:`Verdict` per metric, from each question's scores of the two rows.

    Args:
        candidate_scores: metric -> the candidate's score on each question.
        baseline_scores: metric -> the baseline's, on the same questions in the same order.
        candidate: the candidate's name.
        baseline: the baseline's name.
        metrics: which metrics (default: every metric of the baseline).
        resamples: the bootstrap's resamples of the questions.
        seed: the bootstrap's seed.

    Raises:
        ConfigError: if a metric is missing or the two rows scored different questions.
    """
    out = []
    for metric in metrics if metrics is not None else list(baseline_scores):
        if metric not in candidate_scores or metric not in baseline_scores:
            raise ConfigError(f"{metric!r} is not scored for both {candidate!r} and {baseline!r}")
        ours, theirs = candidate_scores[metric], baseline_scores[metric]
        if len(ours) != len(theirs):
            raise ConfigError(
                f"{candidate!r} and {baseline!r} scored {len(ours)} and {len(theirs)} questions"
            )
        diff, low, high = paired_bootstrap(ours, theirs, resamples=resamples, seed=seed)
        spread = float(np.std(np.asarray(ours, np.float64) - np.asarray(theirs, np.float64)))
        out.append(Verdict(candidate, baseline, metric, diff, low, high, len(ours), spread))
    return out


def verdict_lines(verdicts: Sequence[Verdict]) -> list[str]:
    r"""One line per candidate: where it is better, worse, and where the data cannot tell.

    A candidate better at one metric and worse at another is flagged with ``MIXED``.

    Examples:
        >>> vs = [Verdict("b", "a", "R@2", -0.1, -0.2, -0.05, 50, 0.3),
        ...       Verdict("b", "a", "R@10", 0.1, 0.05, 0.2, 50, 0.3)]
        >>> print(verdict_lines(vs)[0].replace("; ", ";\n"))
        MIXED: b against a: better at R@10 (+0.100 [+0.050, +0.200]);
        worse at R@2 (-0.100 [-0.200, -0.050])
    """
    by_candidate: dict[tuple[str, str], list[Verdict]] = {}
    for v in verdicts:
        by_candidate.setdefault((v.candidate, v.baseline), []).append(v)
    lines = []
    for (candidate, baseline), found in by_candidate.items():
        parts = []
        for outcome in (BETTER, WORSE):
            hits = [v for v in found if v.outcome == outcome]
            if hits:
                said = ", ".join(f"{v.metric} ({v.difference:+.3f} {v.interval})" for v in hits)
                parts.append(f"{outcome} at {said}")
        unclear = [v.metric for v in found if v.outcome == CANNOT_TELL]
        if unclear:
            parts.append(f"cannot tell at {', '.join(unclear)}")
        mixed = {v.outcome for v in found} >= {BETTER, WORSE}
        lines.append(
            f"{'MIXED: ' if mixed else ''}{candidate} against {baseline}: " + "; ".join(parts)
        )
    return lines


def questions_needed(verdict: Verdict, difference: float = 0.02) -> int:
    """Questions for a 95% interval of half-width ``difference``, at this spread.

    The interval's half-width shrinks as ``1.96 * spread / sqrt(n)``; this solves it for
    ``n`` with the spread of the per-question differences the evaluation measured.

    Examples:
        >>> questions_needed(Verdict("b", "a", "R@5", 0.0, -0.1, 0.1, 40, 0.3), 0.02)
        865
    """
    if difference <= 0:
        raise ConfigError(f"difference must be > 0, got {difference}")
    return max(1, math.ceil((1.96 * verdict.spread / difference) ** 2))
