"""Which retriever for these questions? Recall of the answering documents, with intervals.

:func:`evaluate_retrievers` asks every question of every retriever and scores the
documents found, in order, each counted once (a retriever that returns three chunks of
one document spends one place on it):

* ``R@k``: the share of the question's documents (those its excerpts are in) among the
  first ``k`` distinct documents found (HippoRAG's recall@k);
* ``full@k``: 1 when all of them are there, else 0 (full-support recall).

Against a named ``baseline`` each row also has the difference of the means and its 95%
paired bootstrap interval (the questions resampled with replacement, both retrievers
scored on the same resample): a difference whose interval holds 0 is not one the data
can tell from noise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from semrag.errors import ConfigError
from semrag.eval.bridges import first
from semrag.eval.metrics import multihop_recall
from semrag.eval.questions import EvalQuestion
from semrag.eval.table import ResultTable
from semrag.types import ScoredChunk

__all__ = ["as_retriever", "evaluate_retrievers", "paired_bootstrap"]


@runtime_checkable
class Retriever(Protocol):
    """A semrag retriever: a question in, scored chunks out."""

    def retrieve(self, query: str) -> list[ScoredChunk]:
        """The best chunks for ``query``."""
        ...


@runtime_checkable
class Corpus(Protocol):
    """What the evaluation reads of an index: the ids of its documents."""

    @property
    def doc_ids(self) -> list[str]:
        """Every indexed document's id."""
        ...


def as_retriever(obj: Any) -> Callable[[str], list[str]]:
    """A function from a question to the ids of the documents found, best first.

    Takes a semrag retriever, a LangChain ``BaseRetriever`` or a LlamaIndex retriever
    (through the adapters' bridges), or a function returning document ids.

    Raises:
        ConfigError: for anything else.
    """
    bridged = first("retriever", obj)  # first: a LlamaIndex retriever has retrieve() too
    if bridged is not None:
        return bridged
    if isinstance(obj, Retriever):
        return lambda q: [h.chunk.doc_id for h in obj.retrieve(q)]
    if callable(obj):
        return lambda q: [str(x) for x in obj(q)]
    raise ConfigError(
        f"{type(obj).__name__} is not a retriever semrag can run: give a semrag retriever, "
        "a LangChain or LlamaIndex retriever (with its adapter installed), or a function "
        "from a question to document ids"
    )


def evaluate_retrievers(
    index: Corpus,
    questions: Sequence[EvalQuestion],
    retrievers: Mapping[str, Any],
    ks: Sequence[int] = (1, 2, 5, 10),
    *,
    baseline: str | Sequence[str] | None = None,
    resamples: int = 2000,
    seed: int = 0,
) -> ResultTable:
    """Score each retriever by the documents it finds for each question.

    Args:
        index: the indexed corpus the retrievers search (its ``doc_ids`` are checked
            against the questions').
        questions: the questions (their excerpts' documents are what should be found).
        retrievers: name -> retriever (see :func:`as_retriever`).
        ks: the cut-offs.
        baseline: the name of the retriever every other is compared with, or several
            names (each gets its columns); default: the first retriever.
        resamples: bootstrap resamples of the questions.
        seed: the bootstrap's seed.

    Returns:
        One row per retriever: ``R@k`` and ``full@k`` for each ``k``, and against each
        baseline ``R@k - <baseline>`` with its ``95% CI`` (likewise ``full@k``).

    Raises:
        ConfigError: on no questions or retrievers, a bad ``k``, an unknown baseline, or
            a question whose documents are not all indexed.
    """
    if not questions or not retrievers:
        raise ConfigError("evaluate_retrievers needs questions and retrievers")
    if not ks or min(ks) < 1:
        raise ConfigError(f"every k must be >= 1, got {list(ks)}")
    if baseline is None:
        bases = [next(iter(retrievers))]
    else:
        bases = [baseline] if isinstance(baseline, str) else list(baseline)
    for base in bases:
        if base not in retrievers:
            raise ConfigError(f"baseline {base!r} is not one of the retrievers {list(retrievers)}")
    indexed = set(index.doc_ids)
    for q in questions:
        missing = [d for d in q.doc_ids if d not in indexed]
        if missing:
            raise ConfigError(f"the question {q.question!r} needs documents not indexed: {missing}")
    data = {"questions": len(questions), "ks": list(ks), "baseline": bases[0], "baselines": bases}
    table = ResultTable([], "retriever", data=data)
    for name, obj in retrievers.items():
        retrieve = as_retriever(obj)
        found = [retrieve(q.question) for q in questions]
        per: dict[str, list[float]] = {}
        for k in ks:
            scores = [
                multihop_recall(f, q.doc_ids, k) for f, q in zip(found, questions, strict=True)
            ]
            per[f"R@{k}"] = [s[1] for s in scores]
            per[f"full@{k}"] = [s[0] for s in scores]
        table.per_question[name] = per
        table.rows.append({"retriever": name, **{m: float(np.mean(v)) for m, v in per.items()}})
    for row, base in ((r, b) for b in bases for r in table.rows):
        if row["retriever"] == base:
            continue
        for metric in table.per_question[base]:
            ours, theirs = (
                table.per_question[row["retriever"]][metric],
                table.per_question[base][metric],
            )
            diff, low, high = paired_bootstrap(ours, theirs, resamples=resamples, seed=seed)
            row[f"{metric} - {base}"] = diff
            row[f"{metric} - {base} 95% CI"] = f"[{low:+.3f}, {high:+.3f}]"
    return table


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
