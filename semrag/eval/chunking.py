"""Which splitter for these documents? Chunking judged by retrieval, at an equal budget.

:func:`evaluate_splitters` runs every splitter over the same documents, embeds every
chunk with one embedder, and lets each question retrieve from the pooled chunks by cosine
similarity. The retrieved text is cut to a *budget* of characters: chunks in rank order
until it is spent (the last one cut to fit), so a splitter of small chunks gets more of
them and one of large chunks fewer, and the comparison is fair to both. The scores are
over the characters of each question's excerpts (Chroma's chunking evaluation, at a
budget rather than at ``k``):

* recall = share of the excerpts' characters inside the retrieved text;
* precision = excerpt characters retrieved / characters spent;
* IoU = excerpt characters retrieved / (characters spent + excerpt characters missed).

``@k`` columns are the same at ``k`` chunks, whatever their size. Each splitter's row also
has ``lost`` (chunks whose text is not found in the document: they retrieve nothing) and
its cost, measured in the same run: ``split seconds`` (after a warm-up split that loads
the splitter's model), ``embed seconds``, ``index build seconds`` (the two), ``texts
embedded`` and ``chars embedded`` (what a hosted embedding bills), ``vector bytes`` and the
search's ``query p50 ms`` / ``query p95 ms``. Against the baseline (the first splitter by
default) every recall column gets its paired interval and a verdict
(:mod:`semrag.eval.verdict`); :mod:`semrag.eval.checks` warns when the data cannot tell.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag._progress import bar as progress_bar
from semrag.embeddings import BaseEmbedder, Embedder, as_embedder
from semrag.errors import ConfigError
from semrag.eval.bridges import first
from semrag.eval.checks import (
    identical_candidates,
    long_excerpts,
    short_documents,
    too_few_questions,
    warn_once,
)
from semrag.eval.cost import Meter, spent
from semrag.eval.questions import EvalQuestion
from semrag.eval.splitters import Located, as_splitter, locate
from semrag.eval.table import ResultTable
from semrag.identity import as_documents
from semrag.types import Document

__all__ = ["embedder_for", "evaluate_splitters", "score_located"]

_WARM_UP = "A short text loads a splitter's model. It has two sentences."


def embedder_for(obj: Any) -> BaseEmbedder:
    """A semrag embedder for ``obj``: ours, or a framework's embedding model (its bridge)."""
    bridged = first("embedder", obj) if obj is not None else None
    return bridged if bridged is not None else as_embedder(obj)


def evaluate_splitters(
    documents: Iterable[Any],
    questions: Sequence[EvalQuestion],
    splitters: Mapping[str, Any],
    *,
    embedder: Embedder | None = None,
    budgets: Sequence[int] = (1000, 4000),
    k: int = 5,
    show_progress: bool | None = None,
    baseline: str | None = None,
    difference: float = 0.02,
    resamples: int = 2000,
    seed: int = 0,
    meters: Mapping[str, Meter] | None = None,
) -> ResultTable:
    """Score each splitter by what its chunks let the questions retrieve.

    Args:
        documents: the corpus: semrag, LangChain or LlamaIndex documents, or strings.
        questions: the questions with their excerpts (:func:`~semrag.eval.read_questions`,
            :func:`~semrag.eval.generate_questions`).
        splitters: name -> splitter: a semrag chunker, a LangChain ``TextSplitter``, a
            LlamaIndex ``NodeParser``, or a function from a text to its chunks.
        embedder: embeds every splitter's chunks and the questions: a semrag embedder,
            a LangChain ``Embeddings`` or a LlamaIndex embedding; default the packaged
            all-MiniLM-L6-v2.
        budgets: context budgets, in characters.
        k: the chunk count of the ``@k`` columns.
        show_progress: a progress bar over the splitters (``None``: on a terminal, outside CI).
        baseline: the splitter the others are judged against (default: the first).
        difference: the smallest difference worth telling apart; a warning says when the
            questions are too few for it (and how many would do).
        resamples: bootstrap resamples of the questions.
        seed: the bootstrap's seed.
        meters: name -> a :class:`~semrag.eval.cost.Meter` the splitters use (an LLM
            splitter's :class:`~semrag.eval.cost.MeteredLLM`): each row gets its counts.

    Returns:
        A :class:`~semrag.eval.table.ResultTable`: one row per splitter (``recall 1000``,
        ``precision 1000``, ``IoU 1000``, ..., ``recall @5``, ``chunks``, ``mean chars``,
        ``lost``, the cost columns, ``recall 1000 - <baseline>`` and its ``95% CI``), its
        verdicts and warnings, with every question's scores kept.

    Raises:
        ConfigError: on no documents, no questions, no splitters, a budget or ``k`` below
            1, an unknown baseline, or a question whose excerpt names a document not given.
    """
    docs = as_documents(documents)
    if not docs or not questions or not splitters:
        raise ConfigError("evaluate_splitters needs documents, questions and splitters")
    if k < 1 or any(b < 1 for b in budgets):
        raise ConfigError(f"k and every budget must be >= 1, got k={k}, budgets={budgets}")
    base = next(iter(splitters)) if baseline is None else baseline
    if base not in splitters:
        raise ConfigError(f"baseline {base!r} is not one of the splitters {list(splitters)}")
    position = {d.id: i for i, d in enumerate(docs)}
    for q in questions:
        missing = [d for d in q.doc_ids if d not in position]
        if missing:
            raise ConfigError(f"the question {q.question!r} names documents not given: {missing}")
    model = embedder_for(embedder)
    query_vectors = np.asarray(model.embed([q.question for q in questions]), np.float32)
    table = ResultTable(
        [],
        "splitter",
        data={
            "documents": len(docs),
            "characters": sum(len(d.text) for d in docs),
            "questions": len(questions),
            "embedder": model.model_name,
            "budgets": list(budgets),
            "k": k,
            "baseline": base,
        },
    )
    meters = dict(meters or {})
    chunks: dict[str, list[list[tuple[int, int]]]] = {}
    bar = progress_bar(len(splitters), "Evaluating splitters", "splitter", show_progress)
    for name, splitter in splitters.items():
        split = as_splitter(splitter)
        split(_WARM_UP)  # load its model outside the timing: split seconds are the work's
        before = {m: dict(meter.snapshot()) for m, meter in meters.items()}
        t0 = time.perf_counter()
        located = [locate(d.text, split(d.text)) for d in docs]
        seconds = time.perf_counter() - t0
        chunks[name] = [[(x.start, x.end) for x in spans] for spans in located]
        row, per_question = score_located(
            docs, located, questions, query_vectors, model, budgets=budgets, k=k, positions=position
        )
        row["index build seconds"] = seconds + row["embed seconds"]  # split, then embed
        table.rows.append({"splitter": name, **row, "split seconds": seconds})
        table.rows[-1].update(spent(meters, before))
        table.per_question[name] = per_question
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    recall = [f"recall {b}" for b in budgets] + [f"recall @{k}"]
    table.judge([base], recall, resamples=resamples, seed=seed)
    found = [
        too_few_questions(table.verdicts, difference),
        short_documents(docs, budgets),
        long_excerpts(docs, questions),
        *identical_candidates(chunks, "chunks"),
    ]
    table.warnings = [w for w in found if w]
    warn_once(table.warnings)
    return table


def score_located(
    docs: Sequence[Document],
    located: Sequence[Sequence[Located]],
    questions: Sequence[EvalQuestion],
    query_vectors: npt.NDArray[np.float32],
    embedder: BaseEmbedder,
    *,
    budgets: Sequence[int],
    k: int,
    positions: Mapping[str, int] | None = None,
) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """The scores of one splitter's located chunks (see the module docs).

    Returns:
        The row (means over the questions, chunk count, mean size, lost chunks) and, per
        metric, each question's value.
    """
    positions = positions or {d.id: i for i, d in enumerate(docs)}
    owners = [(d, x.start, x.end) for d, spans in enumerate(located) for x in spans if not x.lost]
    texts = [
        x.embed_text or docs[d].text[x.start : x.end]
        for d, spans in enumerate(located)
        for x in spans
        if not x.lost
    ]
    lengths = np.array([e - s for _, s, e in owners], dtype=np.int64)
    t0 = time.perf_counter()
    vectors = np.asarray(embedder.embed(texts), np.float32) if owners else None
    embed_seconds = time.perf_counter() - t0
    order = np.zeros((len(questions), 0), np.int64)  # every chunk lost: nothing to retrieve
    searched: list[float] = []
    if vectors is not None:
        order = np.empty((len(questions), len(owners)), np.int64)
        for qi in range(len(questions)):  # one search per question, timed
            t0 = time.perf_counter()
            order[qi] = np.argsort(-(vectors @ query_vectors[qi]))
            searched.append(time.perf_counter() - t0)
    per: dict[str, list[float]] = {}
    for qi, q in enumerate(questions):
        refs = [(positions[e.doc_id], e.start, e.end) for e in q.excerpts]
        ref_len = _covered(refs, refs)
        ranked = order[qi]
        for label, budget in [*((f"{b}", b) for b in budgets), (f"@{k}", None)]:
            taken: list[tuple[int, int, int]] = []
            spent = 0
            for j in ranked[:k] if budget is None else ranked:
                d, s, e = owners[j]
                length = int(lengths[j]) if budget is None else min(int(lengths[j]), budget - spent)
                spent += length
                taken.append((d, s, s + length))
                if budget is not None and spent >= budget:
                    break
            hit = _covered(taken, refs)
            per.setdefault(f"recall {label}", []).append(hit / ref_len)
            per.setdefault(f"precision {label}", []).append(hit / max(spent, 1))
            per.setdefault(f"IoU {label}", []).append(hit / (spent + ref_len - hit))
    row: dict[str, Any] = {key: float(np.mean(values)) for key, values in per.items()}
    row["chunks"] = len(owners)
    row["mean chars"] = float(lengths.mean()) if owners else 0.0
    row["lost"] = sum(1 for spans in located for x in spans if x.lost)
    row["embed seconds"] = embed_seconds
    row["texts embedded"] = len(texts)
    row["chars embedded"] = sum(map(len, texts))
    row["vector bytes"] = 0 if vectors is None else int(vectors.nbytes)
    if searched:
        row["query p50 ms"] = float(np.percentile(searched, 50) * 1000)
        row["query p95 ms"] = float(np.percentile(searched, 95) * 1000)
    return row, per


def _covered(spans: Sequence[tuple[int, int, int]], refs: Sequence[tuple[int, int, int]]) -> int:
    """Characters of the references (document, start, end) that ``spans`` cover."""
    total = 0
    by_doc: dict[int, list[tuple[int, int]]] = {}
    for d, a, b in refs:
        by_doc.setdefault(d, []).append((a, b))
    for d, ranges in by_doc.items():
        lo, hi = min(a for a, _ in ranges), max(b for _, b in ranges)
        wanted = np.zeros(hi - lo, dtype=bool)
        for a, b in ranges:
            wanted[a - lo : b - lo] = True
        got = np.zeros(hi - lo, dtype=bool)
        for sd, s, e in spans:
            if sd == d:
                a, b = max(s, lo), min(e, hi)
                if a < b:
                    got[a - lo : b - lo] = True
        total += int((wanted & got).sum())
    return total
