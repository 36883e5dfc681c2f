"""Evaluation questions on your own documents: a question and where its answer is written.

A question names one or more *excerpts*: character spans of the documents that hold what
answers it. They are given as offsets, or as text that is found in the document (it must
occur there exactly once: an absent or ambiguous excerpt is an error that names it, never
a silent guess). :func:`read_questions` reads them from JSONL or from Python; one line::

    {"question": "How do bees share where food is?",
     "excerpts": [{"doc_id": "bees.txt", "text": "Honey bees dance to show where flowers grow."}]}

An excerpt may give ``"start"`` and ``"end"`` instead of (or as well as) ``"text"``;
``"doc_id"`` may be left out when the text occurs in exactly one document. Questions can
also be written by your LLM: :func:`semrag.eval.generate_questions`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from semrag.errors import ConfigError
from semrag.types import Document

__all__ = ["EvalQuestion", "Excerpt", "read_questions", "write_questions"]


@dataclass(frozen=True, slots=True)
class Excerpt:
    """Characters ``start:end`` of document ``doc_id``: part of a question's answer."""

    doc_id: str
    start: int
    end: int

    def __len__(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class EvalQuestion:
    """A question and the excerpts that answer it.

    Attributes:
        question: the text a user would ask.
        excerpts: where the answer is written (at least one).
    """

    question: str
    excerpts: tuple[Excerpt, ...]

    def __post_init__(self) -> None:
        if not self.question.strip():
            raise ConfigError("a question needs text")
        if not self.excerpts:
            raise ConfigError(f"the question {self.question!r} names no excerpt")

    @property
    def doc_ids(self) -> list[str]:
        """The documents its excerpts are in (in order, once each)."""
        return list(dict.fromkeys(e.doc_id for e in self.excerpts))

    def to_dict(self, documents: Mapping[str, Document] | None = None) -> dict[str, Any]:
        """JSON-ready (with each excerpt's text when ``documents`` are given)."""
        out = []
        for e in self.excerpts:
            item: dict[str, Any] = {"doc_id": e.doc_id, "start": e.start, "end": e.end}
            if documents is not None:
                item["text"] = documents[e.doc_id].text[e.start : e.end]
            out.append(item)
        return {"question": self.question, "excerpts": out}


def read_questions(
    source: str | Path | Iterable[Mapping[str, Any]], documents: Sequence[Document]
) -> list[EvalQuestion]:
    """Questions from a JSONL file or from Python mappings, each excerpt checked.

    Args:
        source: a JSONL path (one question a line, see the module docs), or mappings of
            the same shape.
        documents: the documents the excerpts are in.

    Raises:
        ConfigError: naming the question and the excerpt, for an excerpt absent from its
            document, found there more than once (give its offsets), in no or in several
            documents (give its ``doc_id``), with offsets outside the document or text that
            is not at them; and for a line that is not such JSON.
    """
    by_id = {d.id: d for d in documents}
    if not by_id:
        raise ConfigError("no documents to find the questions' excerpts in")
    if isinstance(source, (str, Path)):
        items = list(_jsonl(Path(source)))
    else:
        items = [(f"item {i}", dict(x)) for i, x in enumerate(source)]
    out = []
    for where, item in items:
        question = item.get("question")
        excerpts = item.get("excerpts")
        if not isinstance(question, str) or not isinstance(excerpts, list) or not excerpts:
            raise ConfigError(
                f"{where}: a question is {{'question': str, 'excerpts': [...]}} with at least "
                f"one excerpt; got keys {sorted(item)}"
            )
        located = tuple(_excerpt(f"{where} ({question[:60]!r})", x, by_id) for x in excerpts)
        out.append(EvalQuestion(question, located))
    return out


def write_questions(
    questions: Iterable[EvalQuestion], path: str | Path, documents: Sequence[Document]
) -> Path:
    """Write questions as JSONL (offsets and excerpt texts), readable by :func:`read_questions`."""
    by_id = {d.id: d for d in documents}
    path = Path(path)
    with open(path, "w", encoding="utf-8") as f:
        for q in questions:
            f.write(json.dumps(q.to_dict(by_id), ensure_ascii=False) + "\n")
    return path


def _jsonl(path: Path) -> Iterable[tuple[str, dict[str, Any]]]:
    if not path.is_file():
        raise ConfigError(f"no questions file at {path}")
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path}:{n} is not JSON: {exc}") from exc
            if not isinstance(item, dict):
                raise ConfigError(f"{path}:{n} is not a JSON object")
            yield f"{path.name}:{n}", item


def _excerpt(where: str, item: Any, docs: Mapping[str, Document]) -> Excerpt:
    if not isinstance(item, Mapping):
        raise ConfigError(f"{where}: an excerpt is an object with doc_id and text or offsets")
    text, doc_id = item.get("text"), item.get("doc_id")
    start, end = item.get("start"), item.get("end")
    if doc_id is not None and doc_id not in docs:
        raise ConfigError(f"{where}: no document {doc_id!r} among the {len(docs)} given")
    if start is not None or end is not None:
        if doc_id is None or not isinstance(start, int) or not isinstance(end, int):
            raise ConfigError(f"{where}: offsets need doc_id, and start and end as integers")
        body = docs[doc_id].text
        if not 0 <= start < end <= len(body):
            raise ConfigError(
                f"{where}: excerpt {start}:{end} is outside {doc_id!r} ({len(body)} characters)"
            )
        if text is not None and body[start:end] != text:
            raise ConfigError(
                f"{where}: {doc_id!r}[{start}:{end}] is {body[start:end][:60]!r}, not the "
                f"excerpt's text {str(text)[:60]!r}"
            )
        return Excerpt(doc_id, start, end)
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"{where}: an excerpt needs its text or its offsets")
    text = text.strip()
    candidates = [docs[doc_id]] if doc_id is not None else list(docs.values())
    found = [(d.id, at) for d in candidates for at in _occurrences(d.text, text)]
    if not found:
        place = f"document {doc_id!r}" if doc_id is not None else "any document"
        raise ConfigError(f"{where}: the excerpt {text[:80]!r} is not in {place}")
    if len(found) > 1:
        places = ", ".join(f"{d}@{at}" for d, at in found[:5])
        raise ConfigError(
            f"{where}: the excerpt {text[:80]!r} occurs {len(found)} times ({places}); "
            "give its doc_id and start/end offsets"
        )
    ((doc, at),) = found
    return Excerpt(doc, at, at + len(text))


def _occurrences(body: str, text: str, limit: int = 5) -> list[int]:
    out: list[int] = []
    at = body.find(text)
    while at >= 0 and len(out) < limit:
        out.append(at)
        at = body.find(text, at + 1)
    return out
