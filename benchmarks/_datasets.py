"""Readers of the question-answering sets the retrieval benchmarks use (../shared/data).

Each returns the corpus as :class:`~semrag.types.Document` records and the questions with
their gold evidence; nothing is copied into the repository.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from semrag.eval.datasets import open_data
from semrag.types import Document


@dataclass(frozen=True, slots=True)
class SquadQuestion:
    """A SQuAD question with its gold answers located in its article's text."""

    id: str
    """Question id."""
    question: str
    """The question text."""
    doc_id: str
    """Id of the article (its title)."""
    answers: tuple[tuple[int, int], ...]
    """``(start, end)`` of each gold answer in the article's :class:`Document` text."""
    answer_texts: tuple[str, ...]
    """The gold answer strings."""


def read_squad_questions(
    path: str | Path, *, articles: int | None = None
) -> tuple[list[Document], list[SquadQuestion]]:
    """SQuAD v1.1 articles as documents (paragraphs joined by blank lines) and their questions.

    Answer offsets are moved from the paragraph into the article, so
    ``doc.text[start:end]`` is the answer text for every gold answer.

    Args:
        path: ``dev-v1.1.json`` or ``dev-v1.1.json.gz``.
        articles: keep the first ``articles`` articles only.
    """
    with open_data(path) as f:
        data = json.load(f)["data"][:articles]
    docs: list[Document] = []
    questions: list[SquadQuestion] = []
    for article in data:
        parts, pos = [], 0
        for para in article["paragraphs"]:
            context = para["context"]
            for qa in para["qas"]:
                spans = tuple(
                    (pos + a["answer_start"], pos + a["answer_start"] + len(a["text"]))
                    for a in qa["answers"]
                )
                texts = tuple(a["text"] for a in qa["answers"])
                questions.append(
                    SquadQuestion(qa["id"], qa["question"], article["title"], spans, texts)
                )
            parts.append(context)
            pos += len(context) + 2
        docs.append(Document(article["title"], "\n\n".join(parts)))
    return docs, questions


@dataclass(frozen=True, slots=True)
class MultiHopQuestion:
    """A question with the ids of the paragraphs that support its answer."""

    id: str
    """Question id."""
    question: str
    """The question text."""
    supporting: tuple[str, ...]
    """Ids of the supporting paragraphs (documents)."""
    answer: str
    """The gold answer."""
    kind: str = ""
    """The question's type as its data set names it (MuSiQue ``2hop``/``3hop``/``4hop``;
    2Wiki ``compositional``, ``comparison``, ``bridge_comparison``, ``inference``)."""


def _paragraph_document(docs: dict[str, Document], title: str, body: str) -> str:
    """Add a title + paragraph document to ``docs`` (once) and return its id."""
    text = f"{title}\n\n{body}"
    pid = hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]
    docs.setdefault(pid, Document(pid, text, {"title": title}))
    return pid


def read_musique(path: str | Path) -> tuple[list[Document], list[MultiHopQuestion]]:
    """MuSiQue-Ans: the corpus (all paragraphs of all questions, deduplicated) and questions.

    Each paragraph becomes a :class:`~semrag.types.Document` whose text is the title, a
    blank line and the paragraph (so the title is a sentence of its own); its id is a hash
    of title and text, so a paragraph shared by two questions is one document.
    """
    with open_data(path) as f:
        data = json.load(f)
    docs: dict[str, Document] = {}
    questions: list[MultiHopQuestion] = []
    for q in data:
        support = []
        for para in q["paragraphs"]:
            pid = _paragraph_document(docs, para["title"], para["paragraph_text"])
            if para["is_supporting"]:
                support.append(pid)
        kind = q["id"].split("__", 1)[0] if "__" in q["id"] else ""
        questions.append(
            MultiHopQuestion(q["id"], q["question"], tuple(support), q["answer"], kind)
        )
    return list(docs.values()), questions


def read_twowiki(path: str | Path) -> tuple[list[Document], list[MultiHopQuestion]]:
    """2WikiMultihopQA (original format): the corpus and the questions.

    Like :func:`read_musique`: every context paragraph (title, a blank line, its sentences
    joined by spaces) is one document, deduplicated by a hash of its text; a question's
    supporting paragraphs are the context paragraphs whose titles its supporting facts
    name, and :attr:`MultiHopQuestion.kind` is its ``type``.
    """
    with open_data(path) as f:
        data = json.load(f)
    docs: dict[str, Document] = {}
    questions: list[MultiHopQuestion] = []
    for q in data:
        gold = {title for title, _ in q["supporting_facts"]}
        support = []
        for title, sentences in q["context"]:
            pid = _paragraph_document(docs, title, " ".join(sentences))
            if title in gold and pid not in support:
                support.append(pid)
        questions.append(
            MultiHopQuestion(q["_id"], q["question"], tuple(support), q["answer"], q["type"])
        )
    return list(docs.values()), questions
