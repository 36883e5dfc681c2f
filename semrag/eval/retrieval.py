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

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from semrag.errors import ConfigError
from semrag.eval.bridges import first
from semrag.eval.checks import identical_candidates, too_few_questions, warn_once
from semrag.eval.cost import Meter, latency_columns, spent
from semrag.eval.metrics import multihop_recall
from semrag.eval.questions import EvalQuestion
from semrag.eval.table import ResultTable
from semrag.types import ScoredChunk

__all__ = ["as_retriever", "evaluate_retrievers"]


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


def as_retriever(obj: object) -> Callable[[str], list[str]]:
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
    difference: float = 0.02,
    meters: Mapping[str, Meter] | None = None,
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
        difference: the smallest difference worth telling apart; a warning says when the
            questions are too few for it (and how many would do).
        meters: name -> a :class:`~semrag.eval.cost.Meter` (a
            :class:`~semrag.eval.cost.MeteredEmbedder` or
            :class:`~semrag.eval.cost.MeteredLLM` the retrievers use): each row gets what
            it spent while it ran.

    Returns:
        One row per retriever: ``R@k`` and ``full@k`` for each ``k``; against each
        baseline ``R@k - <baseline>`` with its ``95% CI`` (likewise ``full@k``); cost:
        ``first query ms``, ``query p50 ms``, ``query p95 ms`` and the meters' counts.
        :attr:`~semrag.eval.table.ResultTable.verdicts` says where each is better, worse,
        or cannot be told apart, and ``warnings`` why the data may not tell.

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
    meters = dict(meters or {})
    results: dict[str, list[list[str]]] = {}
    for name, obj in retrievers.items():
        retrieve = as_retriever(obj)
        before = {m: dict(meter.snapshot()) for m, meter in meters.items()}
        found, seconds = [], []
        for q in questions:
            t0 = time.perf_counter()
            found.append(retrieve(q.question))
            seconds.append(time.perf_counter() - t0)
        results[name] = [f[: max(ks)] for f in found]
        per: dict[str, list[float]] = {}
        for k in ks:
            scores = [
                multihop_recall(f, q.doc_ids, k) for f, q in zip(found, questions, strict=True)
            ]
            per[f"R@{k}"] = [s[1] for s in scores]
            per[f"full@{k}"] = [s[0] for s in scores]
        table.per_question[name] = per
        table.rows.append(
            {
                "retriever": name,
                **{m: float(np.mean(v)) for m, v in per.items()},
                **latency_columns(seconds),
                **spent(meters, before),
            }
        )
    metrics = [m for k in ks for m in (f"R@{k}", f"full@{k}")]
    table.judge(bases, metrics, resamples=resamples, seed=seed)
    table.warnings = [
        w
        for w in [too_few_questions(table.verdicts, difference)]
        + identical_candidates(results, f"results (the first {max(ks)} documents)")
        if w
    ]
    warn_once(table.warnings)
    return table
