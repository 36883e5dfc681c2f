"""Ingestion: documents in, :class:`~semrag.index.ingest.prepared.PreparedDocument` records out.

:class:`Ingestion` owns what decides an index's chunks and vectors (the embedder, the
chunker, the chunk-vector and sentence-dtype settings, the graph's windows, the theme
LLM) and turns documents into frozen records, block by block, as one step generator
that the sync and the async writers drive (:mod:`semrag._steps`). It commits nothing:
:class:`~semrag.SemanticIndex` hands the records to its corpus as one change.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Generator, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from semrag._progress import bar
from semrag._steps import Call, call, drive
from semrag.chunking.base import BoundaryChunker
from semrag.embeddings import BaseEmbedder, PoolsSpans
from semrag.errors import ConfigError, DocumentConflictError
from semrag.identity import as_documents
from semrag.index.change import IndexedDocument
from semrag.index.ingest.prepared import PreparedDocument
from semrag.index.ingest.presplit import place_chunks, whole_document_chunk
from semrag.index.parts._ssg_view import mean_of, normalise
from semrag.index.parts.ssg import SSGConfig, keyword_themes, window_ranges
from semrag.llm import LLM, acomplete_json, complete_json, llm_failed
from semrag.types import Chunk, Document, Floats, Span

WHOLE = "whole"  # add_documents(split=False): each document is one chunk
Given = dict[str, list[Chunk]] | str | None  # chunks not made by the chunker

_THEME_SCHEMA = {
    "type": "object",
    "required": ["themes"],
    "properties": {"themes": {"type": "array", "items": {"type": "string", "minLength": 1}}},
}
_THEME_PROMPT = (
    "Read the start of a document and name its {n} main themes, each in a few words.\n"
    'Reply with JSON only: {{"themes": ["...", "..."]}}\n\nDOCUMENT:\n{text}\n'
)


class Ingestion:
    """Chunk, embed and theme documents into :class:`PreparedDocument` records.

    Args:
        embedder: embeds sentences, chunks, windows and themes.
        chunker: finds sentences and cuts chunks.
        ssg_config: the similarity graph's settings (its windows are embedded here), or
            ``None``.
        chunk_vectors: ``"embed"`` (each chunk's text) or ``"mean"`` (its sentences').
        theme_llm: names document themes; ``None`` for keyword themes.
        on_llm_error: ``"fallback"`` (keyword themes, noted) or ``"raise"``.
        sentence_dtype: how sentence vectors are held without a graph.
        show_progress: a progress bar over the documents (``None``: on a terminal or in a
            notebook, for work of more than two seconds, outside CI; see
            :mod:`semrag._progress`).
        notes: where fallbacks are recorded (the index's :attr:`notes`).
    """

    def __init__(
        self,
        embedder: BaseEmbedder,
        chunker: BoundaryChunker,
        *,
        ssg_config: SSGConfig | None,
        chunk_vectors: str,
        theme_llm: LLM | None,
        on_llm_error: str,
        sentence_dtype: str,
        show_progress: bool | None,
        notes: list[str],
    ) -> None:
        self.embedder = embedder
        self.chunker = chunker
        self.ssg_config = ssg_config
        self.chunk_vectors = chunk_vectors
        self.theme_llm = theme_llm
        self.on_llm_error = on_llm_error
        self.show_progress = show_progress
        self._sentence_dtype = sentence_dtype
        self._notes = notes

    @property
    def sentence_dtype(self) -> str:
        """How sentence vectors are held: the SSG's ``vector_dtype`` with a graph, else given."""
        return self.ssg_config.vector_dtype if self.ssg_config else self._sentence_dtype

    def use_ssg(self, config: SSGConfig) -> None:
        """Embed the windows of ``config``'s graph from now on (``enable("ssg")``)."""
        self.ssg_config = config

    def with_model(self, embedder: BaseEmbedder, chunker: BoundaryChunker) -> Ingestion:
        """The same settings with another model and chunker (a re-embedded index's)."""
        return Ingestion(
            embedder,
            chunker,
            ssg_config=self.ssg_config,
            chunk_vectors=self.chunk_vectors,
            theme_llm=self.theme_llm,
            on_llm_error=self.on_llm_error,
            sentence_dtype=self._sentence_dtype,
            show_progress=self.show_progress,
            notes=self._notes,
        )

    def prepare(self, documents: Iterable[Any], *, split: bool = True) -> list[PreparedDocument]:
        """Every document chunked and embedded (blocking calls; nothing committed)."""
        docs = self.validate(documents)
        return drive(self.compute(docs, None if split else WHOLE), call)

    def _blocks(
        self, docs: list[Document], kept: Mapping[str, IndexedDocument] | None = None
    ) -> list[list[tuple[Document, list[Span]]]]:
        """Group documents so each block's sentences fit the embedder's cache.

        ``kept``: indexed documents whose sentence spans are kept (a re-embedding).
        """
        budget = max(1, self.embedder.cache_size // 2)
        blocks: list[list[tuple[Document, list[Span]]]] = [[]]
        size = 0
        for d in docs:
            spans = kept[d.id].sentences if kept is not None else self.chunker.sentences(d.text)
            if blocks[-1] and size + len(spans) > budget:
                blocks.append([])
                size = 0
            blocks[-1].append((d, spans))
            size += len(spans)
        return [b for b in blocks if b]

    def _second_pass_texts(
        self,
        block: list[tuple[Document, list[Span]]],
        chunk_lists: list[list[Chunk]],
        themes: list[list[str]],
    ) -> tuple[list[str], list[int]]:
        """What the block's second call embeds, and where each document's chunks start in it."""
        texts: list[str] = []
        firsts: list[int] = []
        for (doc, spans), chunks, theme in zip(block, chunk_lists, themes, strict=True):
            firsts.append(len(texts))
            if self.chunk_vectors == "embed":
                embedding_text = getattr(self.chunker, "embedding_text", None)
                texts += [embedding_text(c) if embedding_text else c.text for c in chunks]
            if self.ssg_config is not None and self.ssg_config.node_pooling == "concat":
                ranges = window_ranges(len(spans), self.ssg_config.window, self.ssg_config.step)
                texts += [doc.text[spans[a].start : spans[b - 1].end] for a, b in ranges]
            texts.append(", ".join(theme) if theme else doc.text[:500])
        return texts, firsts

    @property
    def pools_sentences(self) -> bool:
        """Whether sentence vectors are read off the chunks' pass (late chunking).

        So when the embedder pools spans (:class:`~semrag.embeddings.PoolsSpans`), chunks
        are embedded whole, and the chunker does not cut on this embedder's sentence
        vectors (those it would need before the chunks exist).
        """
        return (
            isinstance(self.embedder, PoolsSpans)
            and self.chunk_vectors == "embed"
            and self.chunker.embedder is not self.embedder
        )

    def _pooled_pass(
        self,
        block: list[tuple[Document, list[Span]]],
        chunk_lists: list[list[Chunk]],
        texts: list[str],
        firsts: list[int],
    ) -> Generator[Call, Any, tuple[Floats, Floats]]:
        """The second call's vectors and the block's sentence vectors, from one pass.

        Each sentence is pooled inside the first chunk that holds it whole; a sentence no
        chunk holds whole (cut by the token cap) is embedded alone, in the same call.
        """
        spans: list[list[tuple[int, int]]] = [[] for _ in texts]
        owners: list[tuple[int, int]] = []  # per sentence: (text, span), or (its own text, -1)
        alone: list[str] = []
        for (doc, sentences), chunks, first in zip(block, chunk_lists, firsts, strict=True):
            owner: list[tuple[int, int] | None] = [None] * len(sentences)
            for t, c in enumerate(chunks, start=first):
                shift = len(texts[t]) - len(c.text)  # a heading path in front of the text
                if shift < 0 or not texts[t].endswith(c.text):
                    continue
                for i in range(c.sentence_start, c.sentence_end):
                    s = sentences[i]
                    if owner[i] is None and c.start <= s.start and s.end <= c.end:
                        owner[i] = (t, len(spans[t]))
                        spans[t].append((s.start - c.start + shift, s.end - c.start + shift))
            for i, o in enumerate(owner):
                if o is None:
                    o = (len(texts) + len(alone), -1)
                    alone.append(sentences[i].of(doc.text))
                owners.append(o)
        embedder = self.embedder
        assert isinstance(embedder, PoolsSpans)  # pools_sentences
        vectors, pooled = yield Call(
            embedder.embed_pooled,
            (texts + alone, spans + [[] for _ in alone]),
            twin=embedder.aembed_pooled,
        )
        dim = self.embedder.dim
        sentence_vectors = np.zeros((len(owners), dim), np.float32)
        for row, (t, k) in enumerate(owners):
            sentence_vectors[row] = vectors[t] if k < 0 else pooled[t][k]
        return vectors[: len(texts)], sentence_vectors

    def _vectors_of_block(
        self,
        block: list[tuple[Document, list[Span]]],
        sentence_vectors: Floats,
        chunk_lists: list[list[Chunk]],
        themes: list[list[str]],
        second: Floats,
    ) -> list[PreparedDocument]:
        """Each document of a block with its sentence, chunk, node and theme vectors."""
        s_pos = 0
        t_pos = 0
        cfg = self.ssg_config
        computed = []
        for (doc, spans), chunks, theme in zip(block, chunk_lists, themes, strict=True):
            svec = sentence_vectors[s_pos : s_pos + len(spans)]
            s_pos += len(spans)
            if self.chunk_vectors == "embed":
                cvec = second[t_pos : t_pos + len(chunks)]
                t_pos += len(chunks)
            else:
                ranges = [[c.sentence_start, c.sentence_end] for c in chunks]
                cvec = mean_of(svec, ranges, self.embedder.dim)
            ranges_n = window_ranges(len(spans), cfg.window, cfg.step) if cfg else []
            if cfg is not None and cfg.node_pooling == "concat":
                nvec = second[t_pos : t_pos + len(ranges_n)]
                t_pos += len(ranges_n)
            else:
                nvec = mean_of(svec, ranges_n, self.embedder.dim)
            if self.sentence_dtype != "float32":
                # the rows as the index (or its graph) holds them, rounded once, now: until
                # its commit a large add holds them in that many bytes (chunk and node
                # vectors: from the unrounded)
                svec, nvec = svec.astype(self.sentence_dtype), nvec.astype(self.sentence_dtype)
            theme_vec = normalise(second[t_pos : t_pos + 1])[0]
            computed.append(
                PreparedDocument(doc, spans, svec, chunks, cvec, ranges_n, nvec, theme, theme_vec)
            )
            t_pos += 1
        return computed

    def _keyword_themes(self, block: list[tuple[Document, list[Span]]]) -> list[list[str]]:
        n = self.ssg_config.n_themes if self.ssg_config else 5
        return keyword_themes([d.text for d, _ in block], n)

    def _theme_prompt(self, doc: Document) -> str:
        n = self.ssg_config.n_themes if self.ssg_config else 5
        return _THEME_PROMPT.format(n=n, text=" ".join(doc.text.split()[:500]))

    def _chunk_lists(
        self, block: list[tuple[Document, list[Span]]], given: Given
    ) -> list[list[Chunk]] | None:
        """The block's chunks when they are given (not the chunker's to make)."""
        if given is None:
            return None
        if isinstance(given, str):  # WHOLE
            counts = self.chunker.tokenizer.count([d.text.strip() for d, _ in block])
            return [
                whole_document_chunk(d, spans, n)
                for (d, spans), n in zip(block, counts, strict=True)
            ]
        return [given[d.id] for d, _ in block]

    def compute(
        self,
        docs: list[Document],
        given: Given,
        kept: Mapping[str, IndexedDocument] | None = None,
    ) -> Generator[Call, Any, list[PreparedDocument]]:
        """Every document's chunks and vectors, block by block (nothing committed).

        ``kept``: indexed documents embedded again (:meth:`reembed`): their sentence
        spans, chunks and themes are kept as they are; only the vectors are computed.
        """
        bar = self._progress(len(docs))
        computed: list[PreparedDocument] = []
        if kept is not None:
            given = {d.id: kept[d.id].chunks for d in docs}
        pools = self.pools_sentences
        for block in self._blocks(docs, kept):
            embedder = self.embedder
            if not pools:
                sentence_texts = [s.of(d.text) for d, spans in block for s in spans]
                svecs = yield Call(embedder.embed, (sentence_texts,), twin=embedder.aembed)
            chunk_lists = self._chunk_lists(block, given)
            if chunk_lists is None:
                docs_of_block = [d for d, _ in block]
                chunker = self.chunker
                results = yield Call(
                    chunker.chunk_with_stats,
                    (docs_of_block,),
                    {"sentences": [spans for _, spans in block]},  # split once
                    chunker.achunk_with_stats,
                )
                chunk_lists = [r.chunks for r in results]
            themes = (
                self._keyword_themes(block)
                if kept is None
                else [kept[d.id].themes for d, _ in block]
            )
            if self.theme_llm is not None and kept is None:
                prompts = [self._theme_prompt(d) for d, _ in block]
                asker = _ThemeAsker(self.theme_llm)
                replies = yield Call(asker.ask, (prompts,), twin=asker.aask)
                for i, ((d, _), reply) in enumerate(zip(block, replies, strict=True)):
                    if isinstance(reply, Exception):
                        self._theme_failed(d, reply)  # raises, or notes the fallback
                        replies[i] = None
                themes = self._merge_themes(block, replies, themes)
            texts, firsts = self._second_pass_texts(block, chunk_lists, themes)
            if pools:
                second, svecs = yield from self._pooled_pass(block, chunk_lists, texts, firsts)
            else:
                second = yield Call(embedder.embed, (texts,), twin=embedder.aembed)
            computed += self._vectors_of_block(block, svecs, chunk_lists, themes, second)
            if bar is not None:
                bar.update(len(block))
        if bar is not None:
            bar.close()
        return computed

    def _theme_failed(self, doc: Document, exc: Exception) -> None:
        why = llm_failed(exc, self.on_llm_error).reason
        self._notes.append(f"{doc.id}: themes: {why}; keyword themes used")

    def _merge_themes(
        self, block: list[Any], replies: list[Any], keywords: list[list[str]]
    ) -> list[list[str]]:
        """The LLM's themes per document, or its keyword themes where the LLM failed."""
        return [
            kw if reply is None else self._llm_themes(reply)
            for reply, kw in zip(replies, keywords, strict=True)
        ]

    def _llm_themes(self, reply: dict[str, Any]) -> list[str]:
        n = self.ssg_config.n_themes if self.ssg_config else 5
        return [t.strip() for t in reply["themes"] if t.strip()][:n]

    def _progress(self, total: int) -> Any:
        return bar(total, "Indexing", "doc", self.show_progress)

    def validate(self, documents: Iterable[Any]) -> list[Document]:
        """The documents as :class:`Document` objects, checked before anything is embedded.

        Raises:
            DocumentConflictError: on an id given twice.
            ConfigError: on metadata that is not JSON.
        """
        docs = as_documents(documents)
        twice = sorted(i for i, n in Counter(d.id for d in docs).items() if n > 1)
        if twice:
            raise DocumentConflictError(
                f"one call names {len(twice)} document id(s) more than once: {twice[:5]}; "
                "give each document its own id (Document.id, metadata 'doc_id' or "
                "'source'), or pass a splitter's chunks to add_chunks",
                ids=twice,
            )
        for d in docs:
            try:
                json.dumps(dict(d.metadata))
            except (TypeError, ValueError) as exc:
                raise ConfigError(
                    f"metadata of document {d.id!r} is not JSON-serialisable"
                ) from exc
        return docs

    def place(
        self, chunks: Iterable[Any], documents: Iterable[Any] | None
    ) -> tuple[list[Document], dict[str, list[Chunk]]]:
        """A splitter's chunks placed in their documents (:mod:`~semrag.index.ingest.presplit`)."""
        if isinstance(chunks, (str, Chunk)):
            raise ConfigError("pass a list of chunks")
        given = self.validate(documents) if documents is not None else None
        docs, chunk_lists = place_chunks(
            chunks, given, self.chunker.sentences, self.chunker.tokenizer.count
        )
        return self.validate(docs), chunk_lists


class _ThemeAsker:
    """The theme LLM for one block: a reply, or the exception it raised, per prompt."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm

    def ask(self, prompts: Sequence[str]) -> list[Any]:
        out: list[Any] = []
        for prompt in prompts:
            try:
                out.append(complete_json(self.llm, prompt, _THEME_SCHEMA))
            except Exception as exc:  # every LLM failure takes the documented path
                out.append(exc)
        return out

    async def aask(self, prompts: Sequence[str]) -> list[Any]:
        return list(
            await asyncio.gather(
                *(acomplete_json(self.llm, p, _THEME_SCHEMA) for p in prompts),
                return_exceptions=True,
            )
        )


def id_list(ids: object) -> list[str]:
    """``ids`` (one id or an iterable of ids) as a list of strings.

    Raises:
        ConfigError: on anything else (``None``, numbers, bytes, a mix).
    """
    if isinstance(ids, str):
        return [ids]
    if isinstance(ids, (bytes, Mapping)) or not isinstance(ids, Iterable):
        raise ConfigError(f"document ids must be a str or a list of str, got {type(ids).__name__}")
    out = list(ids)
    bad = [i for i in out if not isinstance(i, str)]
    if bad:
        raise ConfigError(f"document ids must be str; got {type(bad[0]).__name__} {bad[0]!r}")
    return out
