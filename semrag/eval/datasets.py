"""Readers for the sectioned data sets used by the benchmarks (../shared/data).

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
from semrag.types import Document

__all__ = [
    "MultiHopQuestion",
    "PubMedQAItem",
    "SectionedDocument",
    "read_choi",
    "read_csabstruct",
    "read_musique",
    "read_nicta",
    "read_pubmedqa",
    "read_sectioned_text",
    "SquadQuestion",
    "read_squad_articles",
    "read_squad_questions",
    "read_twowiki",
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


def _open_text(path: Path) -> Any:
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
    with _open_text(_need(Path(path))) as f:
        data = json.load(f)["data"]
    return [_sectioned(a["title"], [_split(p["context"]) for p in a["paragraphs"]]) for a in data]


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
    from semrag.types import Document

    with _open_text(_need(Path(path))) as f:
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

    with _open_text(_need(Path(path))) as f:
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
    with _open_text(_need(Path(path))) as f:
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
    with _open_text(_need(Path(path))) as f:
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
    import hashlib

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
    with _open_text(_need(Path(path))) as f:
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
    with _open_text(_need(Path(path))) as f:
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
