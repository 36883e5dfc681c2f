"""Warnings when the data cannot tell splitters or retrievers apart.

An evaluation can look decisive and say nothing: with few questions every interval holds 0;
with documents shorter than the context budget every splitter hands back whole documents;
with excerpts as long as their documents any chunk that finds the document finds the answer;
two candidates that produce the same chunks differ only by noise. Each check returns one
message with the number behind it, or nothing; :func:`warn_once` shows each message once.
"""

from __future__ import annotations

import statistics
import warnings
from collections.abc import Mapping, Sequence

from semrag.eval.questions import EvalQuestion
from semrag.eval.verdict import CANNOT_TELL, Verdict, questions_needed
from semrag.types import Document

__all__ = [
    "EvalDataWarning",
    "identical_candidates",
    "long_excerpts",
    "short_documents",
    "too_few_questions",
    "warn_once",
]

SHORT_SHARE = 0.5
"""Documents no longer than a budget, as a share of all, above which it is warned about."""
LONG_EXCERPT = 0.5
"""An excerpt this share of its document or more "spans most of it"."""
LONG_EXCERPT_SHARE = 0.25
"""Excerpts spanning most of their document, as a share of all, above which it is warned about."""


class EvalDataWarning(UserWarning):
    """The evaluation's data cannot tell the candidates apart (see :mod:`semrag.eval.checks`)."""


def too_few_questions(verdicts: Sequence[Verdict], difference: float) -> str | None:
    """Warn when an interval that holds 0 is wider than ``difference`` on either side.

    Names the widest such comparison and how many questions an interval of half-width
    ``difference`` would take at the spread measured (:func:`questions_needed`).
    """
    unclear = [
        v for v in verdicts if v.outcome == CANNOT_TELL and (v.high - v.low) / 2 > difference
    ]
    if not unclear:
        return None
    widest = max(unclear, key=lambda v: v.spread)
    need = questions_needed(widest, difference)
    return (
        f"{widest.questions} questions are too few to tell a difference of {difference:g}: "
        f"{widest.candidate} against {widest.baseline} at {widest.metric} has the interval "
        f"{widest.interval}; at the spread these questions show it takes about {need:,} "
        "questions"
    )


def short_documents(docs: Sequence[Document], budgets: Sequence[int]) -> str | None:
    """Warn when most documents fit in a budget: there every splitter returns whole documents."""
    lengths = [len(d.text) for d in docs]
    fitting = [
        b for b in sorted(budgets) if sum(n <= b for n in lengths) > SHORT_SHARE * len(lengths)
    ]
    if not fitting:
        return None
    b = fitting[0]
    n = sum(x <= b for x in lengths)
    return (
        f"{n} of {len(lengths)} documents (median {statistics.median(lengths):,.0f} characters) "
        f"are no longer than the budget of {b:,} characters"
        + (f" (and so at {', '.join(f'{x:,}' for x in fitting[1:])})" if len(fitting) > 1 else "")
        + ": there every splitter can return whole documents, so chunking hardly matters; "
        "compare at smaller budgets or on longer documents"
    )


def long_excerpts(docs: Sequence[Document], questions: Sequence[EvalQuestion]) -> str | None:
    """Warn when many excerpts span most of their document (finding it is finding them)."""
    length = {d.id: len(d.text) for d in docs}
    excerpts = [e for q in questions for e in q.excerpts]
    long = [e for e in excerpts if e.end - e.start >= LONG_EXCERPT * max(length[e.doc_id], 1)]
    if not excerpts or len(long) <= LONG_EXCERPT_SHARE * len(excerpts):
        return None
    return (
        f"{len(long)} of {len(excerpts)} excerpts span at least {LONG_EXCERPT:.0%} of their "
        "document: any chunk of the right document holds much of the answer, so the scores "
        "measure finding documents more than chunking"
    )


def identical_candidates(outputs: Mapping[str, object], what: str) -> list[str]:
    """One message per group of candidates whose outputs are equal (chunks, or results)."""
    groups: dict[str, list[str]] = {}
    first: list[tuple[object, str]] = []
    for name, out in outputs.items():
        for seen, leader in first:
            if seen == out:
                groups[leader].append(name)
                break
        else:
            first.append((out, name))
            groups[name] = [name]
    return [
        f"{', '.join(names[:-1])} and {names[-1]} produce identical {what}: their rows differ "
        "by nothing the data can show"
        for names in groups.values()
        if len(names) > 1
    ]


def warn_once(messages: Sequence[str]) -> None:
    """Issue each message as an :class:`EvalDataWarning` (Python shows each text once)."""
    for message in messages:
        warnings.warn(message, EvalDataWarning, stacklevel=3)
