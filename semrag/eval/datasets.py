"""Readers for the sectioned data sets used by the benchmarks (../shared/data).

Each reader returns :class:`SectionedDocument` records: a text built by joining units with
a single space, and the character offset where each gold section starts. Nothing is
copied into the package; pass the path of the data folder.
"""

from __future__ import annotations

import gzip
import json
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from semrag.errors import ConfigError

if TYPE_CHECKING:
    from semrag.types import Document

__all__ = [
    "MultiHopQuestion",
    "SectionedDocument",
    "read_choi",
    "read_musique",
    "read_squad_articles",
]


@dataclass(frozen=True, slots=True)
class SectionedDocument:
    """A document with gold section boundaries."""

    id: str
    """Identifier within the data set."""
    text: str
    """Sections joined with a single space."""
    section_starts: tuple[int, ...]
    """Character offset where each section starts (the first is 0)."""


def _join(doc_id: str, sections: list[str]) -> SectionedDocument:
    starts, parts, pos = [], [], 0
    for s in sections:
        starts.append(pos)
        parts.append(s)
        pos += len(s) + 1
    return SectionedDocument(doc_id, " ".join(parts), tuple(starts))


def _need(path: Path) -> Path:
    if not path.exists():
        raise ConfigError(f"data set not found at {path}")
    return path


def read_squad_articles(path: str | Path) -> list[SectionedDocument]:
    """SQuAD articles: paragraphs of an article joined with one space; paragraphs are sections.

    Args:
        path: ``dev-v1.1.json`` or ``dev-v1.1.json.gz``.
    """
    p = _need(Path(path))
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt", encoding="utf-8") as f:
        data = json.load(f)["data"]
    return [
        _join(article["title"], [para["context"].strip() for para in article["paragraphs"]])
        for article in data
    ]


def _choi_members(tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    members = [m for m in tar.getmembers() if m.isfile() and m.name.endswith(".ref")]

    # Stable order: folder, then numeric file name.
    def key(m: tarfile.TarInfo) -> tuple[str, int]:
        folder, _, name = m.name.rpartition("/")
        stem = name.split(".")[0]
        return folder, int(stem) if stem.isdigit() else 0

    yield from sorted(members, key=key)


def read_choi(
    path: str | Path, *, limit: int | None = None, every: int = 1
) -> list[SectionedDocument]:
    """Choi (2000) documents: one sentence per line, ``==========`` opens a segment.

    Args:
        path: ``choi.tar.gz``.
        limit: keep at most this many documents.
        every: keep every ``every``-th document (a spread over all folders).
    """
    docs: list[SectionedDocument] = []
    with tarfile.open(_need(Path(path)), "r:gz") as tar:
        for i, member in enumerate(_choi_members(tar)):
            if i % every:
                continue
            raw = tar.extractfile(member)
            assert raw is not None
            lines = raw.read().decode("utf-8", "replace").splitlines()
            sections: list[list[str]] = []
            for line in lines:
                if line.startswith("=========="):
                    sections.append([])
                elif line.strip() and sections:
                    sections[-1].append(line.strip())
            texts = [" ".join(s) for s in sections if s]
            docs.append(_join(member.name, texts))
            if limit is not None and len(docs) >= limit:
                break
    return docs


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


def read_musique(path: str | Path) -> tuple[list[Document], list[MultiHopQuestion]]:
    """MuSiQue-Ans: the corpus (all paragraphs of all questions, deduplicated) and questions.

    Each paragraph becomes a :class:`~semrag.types.Document` whose text is the title, a
    blank line and the paragraph (so the title is a sentence of its own); its id is a hash
    of title and text, so a paragraph shared by two questions is one document.
    """
    import hashlib

    from semrag.types import Document

    p = _need(Path(path))
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt", encoding="utf-8") as f:
        data = json.load(f)
    docs: dict[str, Document] = {}
    questions: list[MultiHopQuestion] = []
    for q in data:
        support = []
        for para in q["paragraphs"]:
            text = f"{para['title']}\n\n{para['paragraph_text']}"
            pid = hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]
            docs.setdefault(pid, Document(pid, text, {"title": para["title"]}))
            if para["is_supporting"]:
                support.append(pid)
        questions.append(MultiHopQuestion(q["id"], q["question"], tuple(support), q["answer"]))
    return list(docs.values()), questions
