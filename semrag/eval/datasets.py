"""Readers for the sectioned data sets that train and measure the boundary models.

Each sectioned reader returns :class:`SectionedDocument` records: human-authored sections
of sentences, the text they make joined with single spaces, and where each section starts.
They serve both the boundary benchmarks and the training of the PSC/MFC models. Nothing is
copied into the package; pass the path of the data folder.
"""

from __future__ import annotations

import gzip
import json
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from semrag.errors import ConfigError

__all__ = [
    "PubMedQAItem",
    "SectionedDocument",
    "read_choi",
    "read_csabstruct",
    "open_data",
    "read_nicta",
    "read_pubmedqa",
    "read_sectioned_text",
    "read_squad_articles",
]


@dataclass(frozen=True, slots=True)
class SectionedDocument:
    """A document as human-authored sections of sentences.

    ``text`` joins every sentence with ``separator`` (one space by default; a newline gives
    one sentence per line); ``section_starts`` are the character offsets in ``text`` where
    sections begin (the first is 0).
    """

    id: str
    """Identifier within the data set."""
    sections: tuple[tuple[str, ...], ...]
    """Sections, each a tuple of sentences (gold sentence boundaries where the data has them)."""
    separator: str = " "
    """What joins consecutive sentences in :attr:`text`."""

    @property
    def text(self) -> str:
        """All sentences joined with :attr:`separator`."""
        return self.separator.join(s for section in self.sections for s in section)

    @property
    def section_starts(self) -> tuple[int, ...]:
        """Character offset of each section in :attr:`text`."""
        return tuple(self._starts(section_level=True))

    @property
    def sentence_starts(self) -> tuple[int, ...]:
        """Character offset of each sentence in :attr:`text`."""
        return tuple(self._starts(section_level=False))

    def _starts(self, *, section_level: bool) -> list[int]:
        starts, pos = [], 0
        for section in self.sections:
            if section_level:
                starts.append(pos)
            for sentence in section:
                if not section_level:
                    starts.append(pos)
                pos += len(sentence) + len(self.separator)
        return starts


def _clean(sentences: list[str]) -> tuple[str, ...]:
    return tuple(" ".join(s.split()) for s in sentences if s.strip())


def _sectioned(doc_id: str, sections: list[list[str]]) -> SectionedDocument:
    kept = tuple(c for c in (_clean(s) for s in sections) if c)
    return SectionedDocument(doc_id, kept)


def _split(text: str) -> list[str]:
    from semrag.text import split_sentences

    return [s.of(text) for s in split_sentences(text)]


def _runs(labels: list[str], sentences: list[str]) -> list[list[str]]:
    """Consecutive sentences with the same label form a section."""
    sections: list[list[str]] = []
    last = None
    for label, sentence in zip(labels, sentences, strict=True):
        if label != last or not sections:
            sections.append([])
        sections[-1].append(sentence)
        last = label
    return sections


def _need(path: Path) -> Path:
    if not path.exists():
        raise ConfigError(f"data set not found at {path}")
    return path


def open_data(path: str | Path) -> Any:
    """A data file opened as text (gzip-compressed when its name ends in ``.gz``).

    Raises:
        ConfigError: if there is no such file.
    """
    path = _need(Path(path))
    return (
        gzip.open(path, "rt", encoding="utf-8")
        if path.suffix == ".gz"
        else open(path, encoding="utf-8")
    )


def read_squad_articles(path: str | Path) -> list[SectionedDocument]:
    """SQuAD articles: each paragraph is a section (sentences by :func:`split_sentences`).

    Args:
        path: ``dev-v1.1.json`` or ``dev-v1.1.json.gz``.
    """
    with open_data(path) as f:
        data = json.load(f)["data"]
    return [_sectioned(a["title"], [_split(p["context"]) for p in a["paragraphs"]]) for a in data]


def _choi_members(tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    members = [m for m in tar.getmembers() if m.isfile() and m.name.endswith(".ref")]

    def key(m: tarfile.TarInfo) -> tuple[str, int]:
        folder, _, name = m.name.rpartition("/")
        stem = name.split(".")[0]
        return folder, int(stem) if stem.isdigit() else 0

    yield from sorted(members, key=key)


def read_choi(
    path: str | Path, *, limit: int | None = None, every: int = 1, offset: int = 0
) -> list[SectionedDocument]:
    """Choi (2000) documents: one sentence per line, ``==========`` opens a segment.

    Args:
        path: ``choi.tar.gz``.
        limit: keep at most this many documents.
        every: keep every ``every``-th document (a spread over all folders).
        offset: which of each ``every`` documents to keep (0: the first), so that
            ``every=10, offset=5`` and ``every=10`` are disjoint.
    """
    docs: list[SectionedDocument] = []
    with tarfile.open(_need(Path(path)), "r:gz") as tar:
        for i, member in enumerate(_choi_members(tar)):
            if i % every != offset % every:
                continue
            raw = tar.extractfile(member)
            if raw is None:
                continue
            docs.append(
                _sectioned(member.name, _choi_sections(raw.read().decode("utf-8", "replace")))
            )
            if limit is not None and len(docs) >= limit:
                break
    return docs


def _choi_sections(raw: str) -> list[list[str]]:
    """Sections of a Choi-format file: ``==========`` opens a section, one sentence a line."""
    sections: list[list[str]] = []
    for line in raw.splitlines():
        if line.startswith("=========="):
            sections.append([])
        elif line.strip() and sections:
            sections[-1].append(line.strip())
    return sections


def read_sectioned_text(
    folder: str | Path,
    *,
    suffixes: tuple[str, ...] = (".ref", ".dev"),
    separator: str = " ",
    split_lines: bool = False,
) -> list[SectionedDocument]:
    """Documents of a ``sectioned_text`` folder (Choi format, one file a document).

    Args:
        folder: e.g. ``shared/data/sectioned_text/wiki300_badjatiya``.
        suffixes: which files are documents (other files, such as model inputs, are skipped).
        separator: what joins sentences in each document's ``text``.
        split_lines: split each line into sentences with :func:`split_sentences` (for files
            with one paragraph per line, such as the novels, and to train on the units the
            chunkers see).

    Raises:
        ConfigError: if the folder is missing or holds no file with one of ``suffixes``.
    """
    root = _need(Path(folder))
    docs = []
    for path in sorted(p for p in root.iterdir() if p.is_file() and p.suffix in suffixes):
        raw = path.read_bytes().decode("utf-8", "replace")
        sections = _choi_sections(raw)
        if split_lines:
            sections = [[s for line in section for s in _split(line)] for section in sections]
        doc = _sectioned(path.name, sections)
        docs.append(SectionedDocument(doc.id, doc.sections, separator))
    if not docs:
        raise ConfigError(
            f"{root} holds no document files (names ending in {', '.join(suffixes)}); "
            "a sectioned folder has one Choi-format file per document"
        )
    return docs


def read_nicta(path: str | Path) -> list[SectionedDocument]:
    """NICTA-PIBOSO (PubMed-RCT format): runs of one label are a section."""
    docs: list[SectionedDocument] = []
    doc_id, labels, sentences = "", list[str](), list[str]()

    def flush() -> None:
        if doc_id and sentences:
            docs.append(_sectioned(doc_id, _runs(labels, sentences)))

    with open_data(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("###"):
                flush()
                doc_id, labels, sentences = line[3:].strip(), [], []
            elif "\t" in line:
                label, sentence = line.split("\t", 1)
                labels.append(label)
                sentences.append(sentence)
    flush()
    return docs


def read_csabstruct(path: str | Path) -> list[SectionedDocument]:
    """CSAbstruct (JSON lines): runs of one label are a section.

    The file's ``abstract_id`` is 0 on every line, so a document's id is its line number
    (``"line-N"``), unique within the file.
    """
    docs = []
    with open_data(path) as f:
        for number, line in enumerate(f):
            if line.strip():
                r = json.loads(line)
                doc_id = f"line-{number}"
                docs.append(_sectioned(doc_id, _runs(r["labels"], r["sentences"])))
    return docs


@dataclass(frozen=True, slots=True)
class PubMedQAItem:
    """One PubMedQA PQA-L question with its abstract."""

    pmid: str
    """PubMed id; also the document id."""
    question: str
    """The question (the article's title)."""
    document: SectionedDocument
    """The abstract: each labelled context is a section."""
    contexts: tuple[str, ...]
    """The gold context passages (each a labelled part of the abstract)."""


def read_pubmedqa(path: str | Path) -> list[PubMedQAItem]:
    """PubMedQA PQA-L: abstracts whose labelled contexts are sections, with their questions."""
    with open_data(path) as f:
        data = json.load(f)
    items = []
    for pmid, r in data.items():
        contexts = [" ".join(c.split()) for c in r["CONTEXTS"]]
        items.append(
            PubMedQAItem(
                pmid,
                r["QUESTION"],
                _sectioned(pmid, [_split(c) for c in contexts]),
                tuple(contexts),
            )
        )
    return items
