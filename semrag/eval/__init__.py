"""Evaluation on your own documents, and the metrics and data readers of the benchmarks.

* :func:`evaluate_splitters`: which splitter for these documents (recall, precision and
  IoU of the answering excerpts at equal context budgets);
* :func:`evaluate_retrievers`: which retriever for these questions (``R@k``, ``full@k``
  and paired bootstrap intervals against a baseline);
* both give verdicts (better, worse or "cannot tell", per rank or budget:
  :mod:`semrag.eval.verdict`), cost beside quality (:mod:`semrag.eval.cost`), warnings
  when the data cannot tell (:mod:`semrag.eval.checks`) and an HTML report
  (:mod:`semrag.eval.report`);
* :func:`read_questions` / :func:`write_questions`: questions with their excerpts, from
  and to JSONL; :func:`generate_questions`: written by your LLM, every excerpt verified;
* segmentation metrics (:func:`pk`, :func:`window_diff`) and readers of public data sets
  (:mod:`semrag.eval.datasets`).

LangChain and LlamaIndex splitters, retrievers, embeddings and LLMs are accepted as they
are, through the adapter packages' bridges (:mod:`semrag.eval.bridges`).
"""

from __future__ import annotations

from semrag.eval.checks import EvalDataWarning
from semrag.eval.chunking import evaluate_splitters
from semrag.eval.cost import MeteredEmbedder, MeteredLLM
from semrag.eval.generate import Generated, generate_questions
from semrag.eval.metrics import boundaries_from_offsets, pk, window_diff
from semrag.eval.questions import EvalQuestion, Excerpt, read_questions, write_questions
from semrag.eval.report import write_report
from semrag.eval.retrieval import evaluate_retrievers
from semrag.eval.splitters import Split
from semrag.eval.table import ResultTable
from semrag.eval.verdict import Verdict, paired_bootstrap, questions_needed, verdict_lines

__all__ = [
    "EvalDataWarning",
    "EvalQuestion",
    "Excerpt",
    "Generated",
    "MeteredEmbedder",
    "MeteredLLM",
    "ResultTable",
    "Split",
    "Verdict",
    "boundaries_from_offsets",
    "evaluate_retrievers",
    "evaluate_splitters",
    "generate_questions",
    "paired_bootstrap",
    "pk",
    "questions_needed",
    "read_questions",
    "verdict_lines",
    "window_diff",
    "write_questions",
    "write_report",
]
