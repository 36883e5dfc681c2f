"""The phrases of every passage: what the PPR passage graph is built from, as a part.

:class:`~semrag.retrieval.PPRRetriever` walks a graph of passages (the index's chunks) and
the entity phrases they mention. Finding the phrases of a chunk (rules over its text, plus
its document's title) and embedding each new phrase name is the costly part of building
that graph; the rest is array operations over the whole corpus. :class:`PassagePhrases`
does the costly part once per document, as a part of the index
(``SemanticIndex(passages=True)``): each change finds the phrases of its added documents
and embeds their new names while it is staged, and the part is saved and loaded with the
index. The part also keeps the assembled graph of its current version (:meth:`graph`,
assembled at most once per version, for every retriever) and saves it, so a retriever over
such an index, or a process that loads it, finds no phrase, embeds no name and assembles
nothing.

An index without the part (or a reader that cannot keep one) has it derived for its
retrievers by :mod:`semrag.index.derived`: the same part, brought to the reader's version
by :meth:`PassagePhrases.sync` on the first query after each change, held in process and
not saved.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from semrag._buffers import GrowingRows
from semrag._progress import over
from semrag.errors import StoreError
from semrag.index.change import Change, IndexedDocument, differences
from semrag.index.parts._passage_graph import (
    GRAPH_FILE,
    TITLE_WEIGHT,
    PassageGraph,
    graph_for,
    load_graph,
    save_graph,
)
from semrag.static_embedder import StaticEmbedder
from semrag.text.phrases import entities as find_entities
from semrag.types import Chunk, Ints

__all__ = [
    "NAMES",
    "DocPhrases",
    "NameRegistry",
    "PassagePhrases",
    "doc_phrases",
    "phrase_key",
]

_EMBED_BLOCK = 1 << 13  # names embedded at a time

NAMES = StaticEmbedder()
"""What embeds phrase names, those of passages and those of queries: the packaged static model.

A name is a few words out of context, which a static model embeds as a transformer does for
linking a query's entity to a passage's phrase: on the development sets (2Wiki, MuSiQue)
the walk's recall is the same or higher than with MiniLM's name vectors, and deriving the
phrases of 3,356 paragraphs takes 1 s instead of 54 s (``docs/retrievers.md``). The vectors
depend on the name alone, never on the index's embedder: a re-embedded index keeps them.
"""


@dataclass(frozen=True, slots=True)
class DocPhrases:
    """What one document contributes to every passage graph (computed once)."""

    record: Any
    """The index's record of the document (by identity: the document has not changed)."""
    chunk_ids: Ints
    chunks: list[Chunk]
    starts: Ints
    """Each chunk's start offset in the document (what cuts a long one into sections)."""
    counts: Ints
    """Phrases per chunk."""
    slots: Ints
    """The phrases' key slots (:attr:`NameRegistry.slot_of`), chunk by chunk."""
    names: Ints
    """The name id of each (the spelling in that chunk)."""
    title: int = -1
    """The slot of the document's title phrase (``-1``: none)."""


class NameRegistry:
    """Every phrase key and display name seen, each numbered once, with the names' vectors.

    It only grows, so a graph built at one version keeps reading the numbers it knows
    while a later change registers more.
    """

    def __init__(self) -> None:
        self.slot_of: dict[str, int] = {}
        self.keys: list[str] = []
        """Each key, at its slot."""
        self.name_of: dict[str, int] = {}
        self.names: list[str] = []
        self.vectors = GrowingRows(np.zeros((0, NAMES.dim), np.float32))

    def slot(self, key: str) -> int:
        """The number of a phrase key (a new one for a key not seen before)."""
        found = self.slot_of.get(key)
        if found is None:
            found = self.slot_of[key] = len(self.keys)
            self.keys.append(key)
        return found

    def name(self, text: str) -> int:
        """The number of a display name (a new one for a name not seen before)."""
        found = self.name_of.get(text)
        if found is None:
            found = self.name_of[text] = len(self.names)
            self.names.append(text)
        return found

    def embed_new(self) -> int:
        """Embed the names registered since the last call (:data:`NAMES`); returns how many.

        A block of names at a time, into rows reserved for them all: a change that
        brings a million names holds one block's vectors besides the registry's.
        """
        new = self.names[self.vectors.n :]
        self.vectors.reserve(len(new))
        for a in range(0, len(new), _EMBED_BLOCK):
            self.vectors.append(np.asarray(NAMES.embed(new[a : a + _EMBED_BLOCK]), np.float32))
        return len(new)


def phrase_key(name: str) -> str:
    """The key two spellings of one phrase share: lower case, single spaces."""
    return " ".join(name.lower().split())


def title_of(doc: Any) -> str:
    """A document's title: its ``title`` metadata, or a title line at its start."""
    title = doc.metadata.get("title") if isinstance(doc.metadata, Mapping) else None
    if isinstance(title, str) and title.strip():
        return " ".join(title.split())
    head = doc.text.lstrip()
    first = head.split("\n", 1)[0].strip()
    rest = head[len(first) :]
    if (
        first
        and rest.startswith("\n")
        and first[:1].isupper()
        and first[-1:] not in ".!?;:,"
        and len(first.split()) <= 10
    ):
        return first
    return ""


def doc_phrases(record: IndexedDocument, registry: NameRegistry, *, titles: bool) -> DocPhrases:
    """The phrases of each chunk of one indexed document (rules), registered by name.

    A chunk's phrases are the entities and quoted titles its text names, plus the
    document's title when ``titles``; each key counts once per chunk, spelled as the chunk
    first spells it.
    """
    title = title_of(record.doc) if titles else ""
    counts, slots, names = [], [], []
    for chunk in record.chunks:
        pairs = [
            (phrase_key(p.text), p.text)
            for p in find_entities(chunk.text)
            if p.kind in ("entity", "quoted")
        ]
        if title:
            pairs.append((phrase_key(title), title))
        first: dict[str, str] = {}
        for key, name in pairs:
            first.setdefault(key, name)
        counts.append(len(first))
        slots += [registry.slot(key) for key in first]
        names += [registry.name(name) for name in first.values()]
    return DocPhrases(
        record,
        np.asarray(record.chunk_ids, np.int64),
        list(record.chunks),
        np.asarray([c.start for c in record.chunks], np.int64),
        np.asarray(counts, np.int64),
        np.asarray(slots, np.int64),
        np.asarray(names, np.int64),
        registry.slot(phrase_key(title)) if title else -1,
    )


class PassagePhrases:
    """Each indexed document's passage phrases and every phrase name's vector.

    A part of the index (``SemanticIndex(passages=True)``): it follows every change, and is
    saved and loaded with the index.

    Args:
        titles: a document's title is a phrase of each of its passages (as
            ``PPRRetriever(titles=)``; a retriever with the other setting finds its own).
    """

    embedder = None
    """Its vectors are not the index's (:data:`NAMES`): a re-embedded index keeps them."""

    def __init__(self, *, titles: bool = True) -> None:
        self.titles = bool(titles)
        self.registry = NameRegistry()
        self._docs: dict[str, DocPhrases] = {}
        self._held = 0  # phrases of the documents held, and of those that left (see sync)
        self._left = 0
        self.version = 0
        """The index version the phrases are of."""
        self._graph: PassageGraph | None = None
        self._graph_lock = threading.Lock()

    def graph(
        self,
        doc_ids: Sequence[str],
        *,
        synonym_k: int = 0,
        synonym_threshold: float = 0.8,
        title_weight: float = TITLE_WEIGHT,
    ) -> PassageGraph:
        """The passage graph of the current version (no relations).

        ``doc_ids``: the index's documents in its order (read under the index's read
        lock, so they are of :attr:`version`). With the default edges, it is assembled at
        most once per version and shared by every retriever, and saved with the part; with
        others (``synonym_k > 0``, another ``title_weight``), assembled for the caller.
        """
        docs = [self._docs[d] for d in doc_ids]
        with self._graph_lock:
            g, self._graph = graph_for(
                self._graph,
                self.version,
                docs,
                self.registry,
                synonym_k=synonym_k,
                synonym_threshold=synonym_threshold,
                title_weight=title_weight,
            )
            return g

    def of(self, doc_id: str) -> DocPhrases:
        """The phrases of an indexed document."""
        return self._docs[doc_id]

    def __len__(self) -> int:
        return len(self._docs)

    # -- following the index --------------------------------------------------------------
    def stage(self, change: Change) -> Callable[[], None]:
        """Find the added documents' phrases and embed their new names; returns the publish.

        The registry only grows, so what a reader of the current version looks up stays
        where it was.
        """
        return self._staged(change.added, change.removed_ids, change.version)

    def apply(self, change: Change) -> None:
        """Bring the phrases up to ``change.version``."""
        self.stage(change)()

    def sync(self, live: Sequence[IndexedDocument], version: int) -> None:
        """Bring the phrases to the index's documents ``live`` at ``version``.

        How a reader that keeps no part gets one (:mod:`semrag.index.derived`): the
        phrases of a document no longer there, or of an older version of it, leave; a
        document not seen yet has its phrases found and its new names embedded. When the
        names of documents that left outnumber the names of the documents held, the
        registry starts afresh (every phrase is found again once) instead of growing
        with names no passage mentions.
        """
        if self._left > self._held + 1024:
            self.registry, self._docs = NameRegistry(), {}
            self._held = self._left = 0
        added, removed = differences({d: p.record for d, p in self._docs.items()}, live)
        self._staged(added, removed, version)()

    def _staged(
        self, added: Sequence[IndexedDocument], removed: Sequence[str], version: int
    ) -> Callable[[], None]:
        docs = over(added, len(added), "Passage phrases", "doc", None)
        found = [doc_phrases(d, self.registry, titles=self.titles) for d in docs]
        self.registry.embed_new()

        def publish() -> None:
            for doc_id in removed:
                if (left := self._docs.pop(doc_id, None)) is not None:
                    self._held -= left.names.size
                    self._left += left.names.size
            self._docs.update((p.record.id, p) for p in found)
            self._held += sum(p.names.size for p in found)
            self.version = version

        return publish

    # -- persistence ----------------------------------------------------------------------
    def save(self, directory: Path) -> list[str]:
        """Write ``passages.json`` (keys, names) and ``passages.npz`` (phrases, vectors).

        The documents' arrays are written in the order the index lists them, and the
        assembled graph (``passage_graph.npz``) when it is of the current version.
        """
        reg = self.registry
        meta = {
            "titles": self.titles,
            "keys": reg.keys,
            "names": reg.names,
            "docs": list(self._docs),
            "version": self.version,
            "names_model": NAMES.weights_fingerprint(),
        }
        (directory / "passages.json").write_text(json.dumps(meta), encoding="utf-8")
        docs = list(self._docs.values())
        empty = np.zeros(0, np.int64)
        np.savez(
            directory / "passages.npz",
            counts=np.concatenate([empty, *(d.counts for d in docs)]),
            slots=np.concatenate([empty, *(d.slots for d in docs)]),
            names=np.concatenate([empty, *(d.names for d in docs)]),
            titles=np.asarray([d.title for d in docs], np.int64),
            vectors=reg.vectors.view,
        )
        files = ["passages.json", "passages.npz"]
        with self._graph_lock:
            g = self._graph
        if g is not None and g.version == self.version:
            files.append(save_graph(g, directory))
        return files

    @classmethod
    def load(
        cls,
        directory: Path,
        documents: Sequence[IndexedDocument],
        *,
        version: int = 0,
    ) -> PassagePhrases:
        """Read what :meth:`save` wrote; ``documents`` are the loaded index's.

        ``version``: the loaded index's version (a loaded index numbers its versions
        afresh); the saved graph is of it when it was of the saved phrases' version. Name
        vectors of another model (an index saved before 0.4 holds its embedder's) are
        embedded again with :data:`NAMES`.

        Raises:
            StoreError: if the phrases do not match the documents, or the vectors the names.
        """
        meta = json.loads((directory / "passages.json").read_text(encoding="utf-8"))
        arrays = np.load(directory / "passages.npz")
        out = cls(titles=meta["titles"])
        reg = out.registry
        reg.keys = list(meta["keys"])
        reg.slot_of = {k: i for i, k in enumerate(reg.keys)}
        reg.names = list(meta["names"])
        reg.name_of = {n: i for i, n in enumerate(reg.names)}
        vectors = np.asarray(arrays["vectors"], np.float32)
        if meta.get("names_model") != NAMES.weights_fingerprint():
            reg.embed_new()
        elif vectors.shape == (len(reg.names), NAMES.dim):
            reg.vectors.append(vectors)
        else:
            raise StoreError(
                f"{directory}: {vectors.shape[0]} name vectors for {len(reg.names)} names"
            )
        by_id = {d.id: d for d in documents}
        if sorted(meta["docs"]) != sorted(by_id):
            raise StoreError(f"{directory}: the passage phrases name other documents")
        counts, slots, names = arrays["counts"], arrays["slots"], arrays["names"]
        titles = arrays["titles"].tolist() if "titles" in arrays else None  # before 0.4: found
        at_chunk = at_phrase = 0
        for at_doc, doc_id in enumerate(meta["docs"]):
            record = by_id[doc_id]
            n = len(record.chunk_ids)
            mine = counts[at_chunk : at_chunk + n]
            m = int(mine.sum())
            if mine.size != n:
                raise StoreError(f"{directory}: the passage phrases do not match {doc_id!r}")
            out._docs[doc_id] = DocPhrases(
                record,
                np.asarray(record.chunk_ids, np.int64),
                list(record.chunks),
                np.asarray([c.start for c in record.chunks], np.int64),
                np.asarray(mine, np.int64),
                np.asarray(slots[at_phrase : at_phrase + m], np.int64),
                np.asarray(names[at_phrase : at_phrase + m], np.int64),
                reg.slot_of.get(phrase_key(title_of(record.doc)) if out.titles else "", -1)
                if titles is None
                else int(titles[at_doc]),
            )
            at_chunk, at_phrase = at_chunk + n, at_phrase + m
        out._held = at_phrase
        if at_chunk != counts.size or at_phrase != slots.size:
            raise StoreError(f"{directory}: the passage phrases do not match the index")
        out.version = version
        if (directory / GRAPH_FILE).exists():
            try:
                g = load_graph(directory, list(out._docs.values()), reg)
                if g is not None and g.version == meta.get("version"):  # saved current: current
                    out._graph = dataclasses.replace(g, version=version)
            except (KeyError, ValueError) as exc:
                raise StoreError(
                    f"{directory}/{GRAPH_FILE} does not match the index: {exc}"
                ) from exc
        return out

    def __repr__(self) -> str:
        return (
            f"PassagePhrases(documents={len(self._docs)}, names={len(self.registry.names)}, "
            f"titles={self.titles})"
        )
