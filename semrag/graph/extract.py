"""Knowledge-graph extraction from chunks: rules without an LLM, or an LLM with validated JSON.

:class:`HeuristicGraphExtractor` (no LLM) takes the entities of each sentence
(:func:`semrag.text.phrases.entities`: proper-noun runs and quoted titles) and, optionally,
its multi-word noun phrases, and links every pair that occurs in one sentence with a
``CO_OCCURS`` relation whose evidence is that sentence.

:class:`LLMGraphExtractor` asks an LLM for entities (name, type, description) and
relations (source, target, type, evidence) per chunk, through
:func:`semrag.llm.complete_json` (schema-validated, one retry), concurrently up to a limit
and cached by chunk text. A chunk whose reply stays invalid falls back to the heuristic
extractor and the fallback is counted (or raises with ``on_error="raise"``).

:func:`resolve_entities` merges entities whose name vectors are closer than a threshold.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Protocol

import numpy as np

from semrag._validation import INT, HasMethods, Interval, Options, validate_params
from semrag.errors import ConfigError
from semrag.graph.types import ChunkRef, Entity, Mention, Relation, entity_key
from semrag.llm import LLM, acomplete_json, complete_json, llm_failed
from semrag.text.phrases import entities as find_entities
from semrag.text.phrases import key_phrases
from semrag.text.sentences import split_sentences
from semrag.types import Chunk

__all__ = [
    "Extraction",
    "GraphExtractor",
    "HeuristicGraphExtractor",
    "LLMGraphExtractor",
    "merge_extractions",
    "resolve_entities",
]

logger = logging.getLogger(__name__)


class GraphExtractor(Protocol):
    """What a knowledge graph asks of an extractor: one chunk's graph, and a look ahead."""

    def extract(self, chunk: Chunk) -> Extraction:
        """The chunk's entities, relations and mentions."""
        ...

    async def aprefetch(self, chunks: Sequence[Chunk]) -> None:
        """Fetch ahead, concurrently, what :meth:`extract` will need for ``chunks``."""
        ...


@dataclass(slots=True)
class Extraction:
    """Entities, relations and mentions found in some chunks."""

    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def merge_extractions(parts: Sequence[Extraction]) -> Extraction:
    """One extraction from many.

    Entities by id (first name and description kept, a missing type filled in), relations
    by (source, type, target) with weights added, mentions by (entity, chunk) with counts
    added.
    """
    ents: dict[str, Entity] = {}
    rels: dict[tuple[str, str, str], Relation] = {}
    ments: dict[tuple[str, str], Mention] = {}
    notes: list[str] = []
    for part in parts:
        for e in part.entities:
            old = ents.get(e.id)
            if old is None:
                ents[e.id] = e
            elif (not old.type and e.type) or (not old.description and e.description):
                ents[e.id] = Entity(
                    old.id, old.name, old.type or e.type, old.description or e.description
                )
        for r in part.relations:
            key = (r.source, r.type, r.target)
            old_r = rels.get(key)
            rels[key] = (
                r
                if old_r is None
                else Relation(
                    r.source,
                    r.target,
                    r.type,
                    old_r.evidence or r.evidence,
                    old_r.weight + r.weight,
                )
            )
        for m in part.mentions:
            mk = (m.entity_id, m.chunk.key)
            old_m = ments.get(mk)
            ments[mk] = m if old_m is None else Mention(m.entity_id, m.chunk, old_m.count + m.count)
        notes.extend(part.notes)
    return Extraction(list(ents.values()), list(rels.values()), list(ments.values()), notes)


def _is_title_line(text: str, start: int, end: int) -> bool:
    line = text[start:end]
    before, after = text[:start].rstrip(" \t"), text[end:].lstrip(" \t")
    return (
        (not before or before.endswith("\n"))
        and (not after or after.startswith("\n"))
        and line[:1].isupper()
        and line[-1:] not in ".!?;:,"
        and len(line.split()) <= 10
    )


class HeuristicGraphExtractor:
    """Entities and co-occurrence relations by rules (no LLM).

    Args:
        noun_phrases: also take multi-word lower-case noun phrases (content-word runs of 2
            to ``max_phrase_words`` words) as ``CONCEPT`` entities.
        numbers: also take numbers and years as entities.
        max_phrase_words: longest noun phrase kept.
        max_per_sentence: at most this many entities of a sentence are linked pairwise.
        titles: a line of its own without terminal punctuation, of at most 10 words and
            starting with a capital (a title or heading), is an entity as a whole, so
            titles with lower-case words ("Attics to Eden") stay one entity.

    Examples:
        >>> from semrag.types import Chunk
        >>> text = "Ada Lovelace worked with Charles Babbage in London."
        >>> out = HeuristicGraphExtractor().extract(Chunk("d", 0, len(text), text, 9))
        >>> sorted(e.name for e in out.entities)
        ['Ada Lovelace', 'Charles Babbage', 'London']
        >>> len(out.relations), out.relations[0].evidence == text
        (3, True)
    """

    def __init__(
        self,
        *,
        noun_phrases: bool = True,
        numbers: bool = False,
        max_phrase_words: int = 4,
        max_per_sentence: int = 8,
        titles: bool = True,
    ) -> None:
        p = validate_params(
            "HeuristicGraphExtractor",
            {
                "noun_phrases": [bool],
                "numbers": [bool],
                "max_phrase_words": [Interval(INT, 1, None)],
                "max_per_sentence": [Interval(INT, 1, None)],
                "titles": [bool],
            },
            {
                "noun_phrases": noun_phrases,
                "numbers": numbers,
                "max_phrase_words": max_phrase_words,
                "max_per_sentence": max_per_sentence,
                "titles": titles,
            },
        )
        noun_phrases, numbers, titles = p["noun_phrases"], p["numbers"], p["titles"]
        max_phrase_words, max_per_sentence = p["max_phrase_words"], p["max_per_sentence"]
        self.titles = titles
        self.noun_phrases = noun_phrases
        self.numbers = numbers
        self.max_phrase_words = max_phrase_words
        self.max_per_sentence = max_per_sentence

    def extract(self, chunk: Chunk) -> Extraction:
        """The chunk's entities, their co-occurrence relations and mentions."""
        ref = ChunkRef(chunk.doc_id, chunk.start, chunk.end)
        out = Extraction()
        counts: dict[str, int] = {}
        for span in split_sentences(chunk.text):
            sentence = span.of(chunk.text)
            found = self._sentence_entities(sentence)
            if self.titles and _is_title_line(chunk.text, span.start, span.end):
                title = Entity.of(sentence, "TITLE")
                found = [title] + [e for e in found if e.id != title.id]
            for e in found:
                counts[e.id] = counts.get(e.id, 0) + 1
                out.entities.append(Entity(e.id, e.name, e.type, sentence))
            ids = list(dict.fromkeys(e.id for e in found))[: self.max_per_sentence]
            for a, b in combinations(ids, 2):
                out.relations.append(Relation(a, b, "CO_OCCURS", sentence, 1.0))
        out.mentions = [Mention(eid, ref, n) for eid, n in counts.items()]
        return merge_extractions([out])

    async def aextract(self, chunk: Chunk) -> Extraction:
        """Async twin of :meth:`extract` (runs in a worker thread)."""
        return await asyncio.to_thread(self.extract, chunk)

    def extract_many(self, chunks: Sequence[Chunk]) -> list[Extraction]:
        """The extraction of each chunk, in order."""
        return [self.extract(c) for c in chunks]

    async def aextract_many(self, chunks: Sequence[Chunk]) -> list[Extraction]:
        """Async twin of :meth:`extract_many`: all chunks in one worker thread."""
        return await asyncio.to_thread(self.extract_many, chunks)

    async def aprefetch(self, chunks: Sequence[Chunk]) -> None:
        """Nothing: the heuristics read the text as :meth:`extract` goes."""

    def _sentence_entities(self, sentence: str) -> list[Entity]:
        found = []
        for p in find_entities(sentence):
            if p.kind == "number" and not self.numbers:
                continue
            kind = {"entity": "PROPER", "quoted": "TITLE", "number": "NUMBER"}[p.kind]
            if entity_key(p.text):
                found.append(Entity.of(p.text, kind))
        if self.noun_phrases:
            taken = {e.id for e in found}
            for p in key_phrases(sentence):
                words = p.text.split()
                if 2 <= len(words) <= self.max_phrase_words and p.text.islower():
                    e = Entity.of(p.text, "CONCEPT")
                    if e.id not in taken:
                        found.append(e)
        return found

    def __repr__(self) -> str:
        return f"HeuristicGraphExtractor(noun_phrases={self.noun_phrases})"


_EXTRACT_SCHEMA = {
    "type": "object",
    "required": ["entities", "relations"],
    "properties": {
        "entities": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "type": {"type": "string"},
                    "description": {"type": "string"},
                },
            },
        },
        "relations": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["source", "target"],
                "properties": {
                    "source": {"type": "string", "minLength": 1},
                    "target": {"type": "string", "minLength": 1},
                    "type": {"type": "string"},
                    "evidence": {"type": "string"},
                },
            },
        },
    },
}

_EXTRACT_PROMPT = """Extract a knowledge graph from the text.
Entities: people, organisations, places, works, events, concepts; each with a type and a
one-sentence description from the text. Relations: between extracted entities, each with a
short UPPER_SNAKE_CASE type and the sentence of the text that states it.
TEXT:
{text}
Reply with JSON only:
{{"entities": [{{"name": "...", "type": "...", "description": "..."}}],
 "relations": [{{"source": "...", "target": "...", "type": "...", "evidence": "..."}}]}}
Your response:"""


def _occurs(name: str, folded_text: str) -> bool:
    """Whether ``name`` occurs in the text (case and runs of whitespace ignored)."""
    needle = " ".join(name.split()).casefold()
    return bool(needle) and needle in folded_text


def _quoted(evidence: str, sentences: Sequence[str], folded: str, a: Entity, b: Entity) -> str:
    """``evidence`` if the text contains it, else the text's first sentence naming both."""
    if evidence.strip() and _occurs(evidence, folded):
        return evidence.strip()
    for sentence in sentences:
        low = " ".join(sentence.split()).casefold()
        if _occurs(a.name, low) and _occurs(b.name, low):
            return sentence
    return ""


class LLMGraphExtractor:
    """Entities and relations per chunk from an LLM (validated JSON, concurrent, cached).

    Args:
        llm: an :class:`~semrag.llm.LLM` (LangChain/LlamaIndex models through the adapters'
            bridges).
        max_concurrency: chunks in flight at once in :meth:`aextract_many`.
        cache_size: replies kept by chunk text (LRU).
        on_error: ``"fallback"`` (heuristic extraction for that chunk, noted) or ``"raise"``.
        fallback: the extractor used on invalid replies.
    """

    def __init__(
        self,
        llm: LLM,
        *,
        max_concurrency: int = 8,
        cache_size: int = 10_000,
        on_error: str = "fallback",
        fallback: HeuristicGraphExtractor | None = None,
    ) -> None:
        p = validate_params(
            "LLMGraphExtractor",
            {
                "llm": [HasMethods("complete", "acomplete")],
                "max_concurrency": [Interval(INT, 1, None)],
                "cache_size": [Interval(INT, 0, None)],
                "on_error": [Options("fallback", "raise")],
            },
            {
                "llm": llm,
                "max_concurrency": max_concurrency,
                "cache_size": cache_size,
                "on_error": on_error,
            },
        )
        max_concurrency, cache_size = p["max_concurrency"], p["cache_size"]
        self.llm = llm
        self.max_concurrency = max_concurrency
        self.cache_size = cache_size
        self.on_error = on_error
        self.fallback = fallback or HeuristicGraphExtractor()
        self._cache: OrderedDict[str, Any] = OrderedDict()
        self.calls = 0

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def _cached(self, text: str) -> Any:
        key = self._key(text)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        return None

    def _remember(self, text: str, reply: Any) -> None:
        self._cache[self._key(text)] = reply
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    def extract(self, chunk: Chunk) -> Extraction:
        """Ask the LLM about one chunk (cached by its text)."""
        reply = self._cached(chunk.text)
        if reply is None:
            try:
                self.calls += 1
                reply = complete_json(
                    self.llm, _EXTRACT_PROMPT.format(text=chunk.text), _EXTRACT_SCHEMA
                )
            except Exception as exc:  # every LLM failure takes the documented path
                return self._failed(chunk, exc)
            self._remember(chunk.text, reply)
        return self._parse(chunk, reply)

    async def aextract(self, chunk: Chunk) -> Extraction:
        """Async twin of :meth:`extract`."""
        reply = self._cached(chunk.text)
        if reply is None:
            try:
                self.calls += 1
                reply = await acomplete_json(
                    self.llm, _EXTRACT_PROMPT.format(text=chunk.text), _EXTRACT_SCHEMA
                )
            except Exception as exc:  # every LLM failure takes the documented path
                return await asyncio.to_thread(self._failed, chunk, exc)
            self._remember(chunk.text, reply)
        return await asyncio.to_thread(self._parse, chunk, reply)

    async def aextract_many(self, chunks: Sequence[Chunk]) -> list[Extraction]:
        """Extract from many chunks, at most ``max_concurrency`` LLM calls at once."""
        limit = asyncio.Semaphore(self.max_concurrency)

        async def one(c: Chunk) -> Extraction:
            async with limit:
                return await self.aextract(c)

        return list(await asyncio.gather(*(one(c) for c in chunks)))

    async def aprefetch(self, chunks: Sequence[Chunk]) -> None:
        """Ask the LLM about ``chunks`` concurrently, so that :meth:`extract` finds its replies."""
        await self.aextract_many(chunks)

    def _failed(self, chunk: Chunk, exc: Exception) -> Extraction:
        why = llm_failed(exc, self.on_error).reason
        logger.warning("LLM extraction for %s: %s; heuristic used", chunk.doc_id, why)
        out = self.fallback.extract(chunk)
        out.notes.append(f"{chunk.doc_id}:{chunk.start}: {why}; heuristic used")
        return out

    def _parse(self, chunk: Chunk, reply: dict[str, Any]) -> Extraction:
        """The reply's graph, grounded in the chunk: nothing the text does not say is kept.

        An entity whose name does not occur in the text is dropped (with its relations);
        a relation's evidence is kept only if it is quoted from the text, else it becomes
        the text's first sentence naming both entities (or nothing). If nothing grounded
        is left of a reply that named entities, the heuristic extractor is used (noted).
        """
        ref = ChunkRef(chunk.doc_id, chunk.start, chunk.end)
        text = " ".join(chunk.text.split()).casefold()
        out = Extraction()
        dropped: list[str] = []
        for item in reply["entities"]:
            e = Entity.of(
                item["name"].strip(),
                item.get("type", "").strip(),
                item.get("description", "").strip(),
            )
            if not e.id:
                continue
            if _occurs(e.name, text):
                out.entities.append(e)
            else:
                dropped.append(e.name)
        known = {e.id: e for e in out.entities}
        sentences: list[str] | None = None
        for item in reply["relations"]:
            ends = []
            for name in (item["source"], item["target"]):
                key = entity_key(name)
                if key and key not in known and _occurs(name.strip(), text):
                    known[key] = Entity.of(name.strip())  # a relation may name an unlisted one
                    out.entities.append(known[key])
                ends.append(key if key in known else "")
            a, b = ends
            if a and b and a != b:
                rtype = (item.get("type") or "RELATED_TO").strip() or "RELATED_TO"
                if sentences is None:  # split once per chunk, not once per relation
                    sentences = [span.of(chunk.text) for span in split_sentences(chunk.text)]
                evidence = _quoted(item.get("evidence", ""), sentences, text, known[a], known[b])
                out.relations.append(Relation(a, b, rtype, evidence))
        if dropped:
            out.notes.append(
                f"{chunk.doc_id}:{chunk.start}: {len(dropped)} LLM entities not in the text "
                f"dropped ({', '.join(dropped[:3])})"
            )
        if reply["entities"] and not out.entities:
            fallback = self.fallback.extract(chunk)
            fallback.notes.extend(out.notes)
            fallback.notes.append(
                f"{chunk.doc_id}:{chunk.start}: no LLM entity occurs in the text; heuristic used"
            )
            return fallback
        out.mentions = [
            Mention(e.id, ref, max(1, text.count(" ".join(e.name.split()).casefold())))
            for e in out.entities
        ]
        return merge_extractions([out])

    def __repr__(self) -> str:
        return f"LLMGraphExtractor(llm={self.llm!r}, max_concurrency={self.max_concurrency})"


def resolve_entities(
    extraction: Extraction, vectors: np.ndarray, *, threshold: float = 0.92
) -> Extraction:
    """Merge entities whose name vectors have cosine similarity >= ``threshold``.

    Each group keeps the id and name of its most mentioned member (ties: the longest
    name); relations and mentions are re-pointed, self-loops dropped, duplicates merged.

    Args:
        extraction: what to resolve.
        vectors: unit vectors of ``extraction.entities`` (same order).
        threshold: cosine similarity needed to merge.
    """
    ents = extraction.entities
    if len(ents) < 2:
        return extraction
    vecs = np.asarray(vectors, dtype=np.float32)
    if vecs.shape[0] != len(ents):
        raise ConfigError(f"{vecs.shape[0]} vectors for {len(ents)} entities")
    from semrag.index.parts.dense import DenseIndex

    index = DenseIndex(vecs.shape[1])
    index.add(np.arange(len(ents)), vecs)
    scores, ids = index.search(vecs, min(10, len(ents)))
    parent = list(range(len(ents)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(ents)):
        for s, j in zip(scores[i], ids[i], strict=True):
            if j >= 0 and j != i and s >= threshold:
                a, b = find(i), find(int(j))
                if a != b:
                    parent[max(a, b)] = min(a, b)
    mentioned: dict[str, int] = {}
    for m in extraction.mentions:
        mentioned[m.entity_id] = mentioned.get(m.entity_id, 0) + m.count
    groups: dict[int, list[int]] = {}
    for i in range(len(ents)):
        groups.setdefault(find(i), []).append(i)
    rename: dict[str, str] = {}
    keep: list[Entity] = []
    for members in groups.values():
        best = max(members, key=lambda i: (mentioned.get(ents[i].id, 0), len(ents[i].name), -i))
        keep.append(ents[best])
        for i in members:
            rename[ents[i].id] = ents[best].id
    rels = [
        Relation(rename[r.source], rename[r.target], r.type, r.evidence, r.weight)
        for r in extraction.relations
        if rename[r.source] != rename[r.target]
    ]
    ments = [Mention(rename[m.entity_id], m.chunk, m.count) for m in extraction.mentions]
    return merge_extractions([Extraction(keep, rels, ments, list(extraction.notes))])


def graph_documents_extraction(graph_documents: Iterable[Any]) -> tuple[Extraction, int]:
    """LangChain ``GraphDocument``s as one :class:`Extraction`, and how many there were.

    Nodes become entities (``id`` as the name, ``type``, a ``description`` property if
    any); relationships become relations (``type``, an ``evidence`` property if any);
    each document's source (``metadata["doc_id"]`` or ``"source"``, and
    ``start_index``) gives the chunk every node is mentioned in. Duck-typed: the core
    does not import LangChain.
    """
    parts = []
    n = 0
    for gd in graph_documents:
        n += 1
        src = getattr(gd, "source", None)
        meta = dict(getattr(src, "metadata", {}) or {})
        text = getattr(src, "page_content", "") or ""
        doc_id = str(meta.get("doc_id", meta.get("source", "")))
        start = meta.get("start_index")
        start = int(start) if isinstance(start, int) else 0
        ref = ChunkRef(doc_id, start, start + len(text))
        ents = []
        for node in gd.nodes:
            props = dict(getattr(node, "properties", {}) or {})
            ents.append(
                Entity.of(str(node.id), str(node.type or ""), str(props.get("description", "")))
            )
        rels = []
        for rel in gd.relationships:
            props = dict(getattr(rel, "properties", {}) or {})
            a, b = entity_key(str(rel.source.id)), entity_key(str(rel.target.id))
            if a and b and a != b:
                rels.append(
                    Relation(a, b, str(rel.type or "RELATED_TO"), str(props.get("evidence", "")))
                )
        ments = [Mention(e.id, ref) for e in ents] if doc_id else []
        parts.append(Extraction(ents, rels, ments))
    return merge_extractions(parts), n
