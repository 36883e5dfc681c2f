"""Evaluation questions written by your LLM, each excerpt checked against the document.

:func:`generate_questions` shows the LLM a passage of one of the documents (chosen with
a seed, longer documents more often) and asks for a question the passage answers, with
the sentences that answer it copied word for word. Nothing the LLM says is trusted:

* every excerpt must occur verbatim in the document (inside the passage shown when it
  occurs more than once), and be at least ``min_excerpt_chars`` long; others are dropped;
* a question left with no excerpt is dropped, and so is one that nearly repeats a kept
  question (the same words, Jaccard >= ``max_overlap``);
* a reply that is not the JSON asked for (after one retry), or a call that fails, is
  counted and skipped.

It stops at ``n`` questions or ``max_calls`` calls, and reports what it kept and why it
dropped the rest (:class:`Generated`).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from semrag._progress import bar as progress_bar
from semrag.errors import ConfigError, LLMOutputError
from semrag.eval.bridges import first
from semrag.eval.questions import EvalQuestion, Excerpt
from semrag.identity import as_documents
from semrag.llm import LLM, complete_json
from semrag.text import split_sentences
from semrag.types import Document

__all__ = ["Generated", "generate_questions"]

_SCHEMA = {
    "type": "object",
    "required": ["question", "excerpts"],
    "properties": {
        "question": {"type": "string", "minLength": 1},
        "excerpts": {"type": "array", "items": {"type": "string"}},
    },
}
_PROMPT = (
    "Read the passage. Write one question that the passage answers, and copy the sentence "
    "or sentences that answer it, word for word, from the passage.\n"
    'Reply with JSON only: {{"question": "...", "excerpts": ["...copied sentence..."]}}\n\n'
    "PASSAGE:\n{passage}\n"
)
_WORD = re.compile(r"\w+")


@dataclass
class Generated:
    """The questions kept, and what happened to the rest.

    Attributes:
        questions: the kept questions, each with verified excerpts.
        calls: LLM calls made (a retry after an invalid reply counts as one more).
        dropped: questions dropped, by reason.
        dropped_excerpts: excerpts dropped from kept or dropped questions, by reason.
    """

    questions: list[EvalQuestion] = field(default_factory=list)
    calls: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    dropped_excerpts: Counter[str] = field(default_factory=Counter)

    def summary(self) -> str:
        """One line: kept, calls, and each reason with its count."""
        why = ", ".join(f"{n} {r}" for r, n in self.dropped.most_common()) or "none"
        ex = ", ".join(f"{n} {r}" for r, n in self.dropped_excerpts.most_common()) or "none"
        return (
            f"kept {len(self.questions)} questions from {self.calls} LLM calls; dropped "
            f"questions: {why}; dropped excerpts: {ex}"
        )


class _Counting:
    """An LLM that counts its calls (retries included)."""

    def __init__(self, llm: LLM) -> None:
        self.llm, self.calls = llm, 0

    def complete(self, prompt: str) -> str:
        self.calls += 1
        return self.llm.complete(prompt)

    async def acomplete(self, prompt: str) -> str:
        self.calls += 1
        return await self.llm.acomplete(prompt)


def generate_questions(
    documents: Iterable[Any],
    llm: Any,
    *,
    n: int = 20,
    seed: int = 0,
    max_calls: int | None = None,
    passage_chars: int = 1200,
    min_excerpt_chars: int = 20,
    max_overlap: float = 0.8,
    show_progress: bool | None = None,
) -> Generated:
    """Ask ``llm`` for up to ``n`` questions about ``documents`` (see the module docs).

    Args:
        documents: the corpus (any kind :func:`~semrag.identity.as_documents` takes).
        llm: a semrag :class:`~semrag.llm.LLM`, a LangChain chat model or LLM, or a
            LlamaIndex LLM (through the adapters' bridges).
        n: questions wanted.
        seed: chooses the passages (the same seed, documents and replies give the same
            questions).
        max_calls: a cap on LLM calls (default ``3 * n``).
        passage_chars: about how much text each prompt shows (whole sentences).
        min_excerpt_chars: shorter excerpts are dropped (a word or two occurs anywhere).
        max_overlap: a question whose words overlap a kept one's this much is dropped.
        show_progress: a progress bar over the calls (``None``: on a terminal, outside CI).

    Raises:
        ConfigError: on no documents, ``n`` below 1, or an ``llm`` that is not a model.
    """
    docs = [d for d in as_documents(documents) if d.text.strip()]
    if not docs or n < 1:
        raise ConfigError("generate_questions needs a document with text and n >= 1")
    model = _as_llm(llm)
    counting = _Counting(model)
    cap = 3 * n if max_calls is None else max_calls
    rng = random.Random(seed)
    weights = [len(d.text) for d in docs]
    out = Generated()
    seen: list[set[str]] = []
    bar = progress_bar(cap, "Generating questions", "call", show_progress)
    while len(out.questions) < n and counting.calls < cap:
        doc = rng.choices(docs, weights=weights)[0]
        lo, hi = _passage(doc.text, rng, passage_chars)
        before = counting.calls
        try:
            reply = complete_json(counting, _PROMPT.format(passage=doc.text[lo:hi]), _SCHEMA)
        except LLMOutputError:
            out.dropped["reply not the JSON asked for"] += 1
            reply = None
        except Exception as exc:  # noqa: BLE001 - a failing model is counted, not fatal
            out.dropped[f"LLM call failed ({type(exc).__name__})"] += 1
            reply = None
        if bar is not None:
            bar.update(counting.calls - before)
        if reply is None:
            continue
        question = _keep(reply, doc, (lo, hi), min_excerpt_chars, out)
        if question is None:
            continue
        words = set(_WORD.findall(question.question.lower()))
        if any(_jaccard(words, s) >= max_overlap for s in seen):
            out.dropped["near-duplicate of a kept question"] += 1
            continue
        seen.append(words)
        out.questions.append(question)
    out.calls = counting.calls
    if bar is not None:
        bar.close()
    return out


def _keep(
    reply: dict[str, Any],
    doc: Document,
    window: tuple[int, int],
    min_chars: int,
    out: Generated,
) -> EvalQuestion | None:
    """The reply as a question with its verified excerpts, or ``None`` (counted)."""
    text = reply["question"].strip()
    if not text:
        out.dropped["no question"] += 1
        return None
    excerpts: list[Excerpt] = []
    for raw in reply["excerpts"]:
        excerpt = raw.strip() if isinstance(raw, str) else ""
        if len(excerpt) < min_chars:
            out.dropped_excerpts["shorter than min_excerpt_chars"] += 1
            continue
        at = _place(doc.text, excerpt, window)
        if at is None:
            out.dropped_excerpts["not verbatim in the document"] += 1
        elif at < 0:
            out.dropped_excerpts["occurs more than once"] += 1
        else:
            excerpts.append(Excerpt(doc.id, at, at + len(excerpt)))
    if not excerpts:
        out.dropped["no verbatim excerpt"] += 1
        return None
    return EvalQuestion(text, tuple(dict.fromkeys(excerpts)))


def _place(text: str, excerpt: str, window: tuple[int, int]) -> int | None:
    """Where ``excerpt`` is: ``None`` if absent, ``-1`` if it cannot be told where."""
    spots = []
    at = text.find(excerpt)
    while at >= 0:
        spots.append(at)
        at = text.find(excerpt, at + 1)
    if not spots:
        return None
    if len(spots) == 1:
        return spots[0]
    inside = [s for s in spots if window[0] <= s and s + len(excerpt) <= window[1]]
    return inside[0] if len(inside) == 1 else -1


def _passage(text: str, rng: random.Random, chars: int) -> tuple[int, int]:
    """Whole sentences from a random one, about ``chars`` long."""
    sentences = split_sentences(text)
    if not sentences:
        return 0, len(text)
    first_ = rng.randrange(len(sentences))
    lo = sentences[first_].start
    hi = sentences[first_].end
    for s in sentences[first_ + 1 :]:
        if s.end - lo > chars:
            break
        hi = s.end
    return lo, hi


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _as_llm(obj: object) -> LLM:
    bridged = first("llm", obj)  # first: a LlamaIndex LLM has complete() too
    if bridged is not None:
        return bridged
    if isinstance(obj, LLM):
        return obj
    raise ConfigError(
        f"{type(obj).__name__} is not an LLM semrag can call: give a semrag LLM (complete / "
        "acomplete), a LangChain or a LlamaIndex model (with its adapter installed)"
    )
