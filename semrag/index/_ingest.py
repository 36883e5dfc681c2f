"""Adding and deleting documents: chunk, embed, theme, then one change.

The sync and the async method drive the same steps.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections import Counter
from collections.abc import Generator, Iterable, Mapping, Sequence
from typing import Any

from semrag._steps import Call, acall, adrive, call, drive
from semrag.chunking.base import as_documents
from semrag.errors import ConfigError, DocumentConflictError
from semrag.identity import OnConflict, check_on_conflict
from semrag.index._ssg_view import mean_of, normalise
from semrag.index.change import Floats, IndexedDocument
from semrag.index.prepared import PreparedBatch, PreparedDocument, check_settings, ingest_settings
from semrag.index.presplit import place_chunks, whole_document_chunk
from semrag.index.ssg import keyword_themes, window_ranges
from semrag.llm import LLM, acomplete_json, complete_json, llm_failure
from semrag.types import Chunk, Document, MetadataFilter, Span, as_filter

_WHOLE = "whole"  # add_documents(split=False): each document is one chunk
_Given = dict[str, list[Chunk]] | str | None  # chunks not made by the chunker

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
    """Writes of a :class:`~semrag.SemanticIndex`: ``add_documents``, ``add_chunks``, ``delete``."""

    # -- building ---------------------------------------------------------------------------
    def _validate(self, documents: Iterable[Document | str]) -> list[Document]:
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
    ) -> list[str]:
        texts: list[str] = []
        for (doc, spans), chunks, theme in zip(block, chunk_lists, themes, strict=True):
            if self.chunk_vectors == "embed":
                embedding_text = getattr(self.chunker, "embedding_text", None)
                texts += [embedding_text(c) if embedding_text else c.text for c in chunks]
            if self.ssg_config is not None and self.ssg_config.node_pooling == "concat":
                ranges = window_ranges(len(spans), self.ssg_config.window, self.ssg_config.step)
                texts += [doc.text[spans[a].start : spans[b - 1].end] for a, b in ranges]
            texts.append(", ".join(theme) if theme else doc.text[:500])
        return texts

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

    def _conflicts(self, docs: list[Document], on_conflict: OnConflict) -> list[Document]:
        """The documents to add under ``on_conflict`` (see :mod:`semrag.identity`).

        Raises:
            DocumentConflictError: with ``"error"``, if any id is already indexed.
        """
        taken = [d.id for d in docs if d.id in self._corpus]
        if not taken or on_conflict == "replace":
            return docs
        if on_conflict == "error":
            raise DocumentConflictError(
                f"{len(taken)} document id(s) already indexed: {taken[:5]}; nothing was "
                "added. Pass on_conflict='replace' to replace them (an upsert) or "
                "'skip' to keep the indexed ones",
                ids=taken,
            )
        self.notes.append(f"add: skipped {len(taken)} already indexed: {taken[:20]}")
        return [d for d in docs if d.id not in self._corpus]

    def _store(self, computed: list[PreparedDocument], on_conflict: OnConflict) -> None:
        """Commit the documents of one ``add_documents`` call as one change."""
        with self._corpus.commit_lock:  # ids are taken in commit order
            # checked again here: another add may have committed an id since the call began
            kept = {d.id for d in self._conflicts([c.doc for c in computed], on_conflict)}
            computed = [c for c in computed if c.id in kept]
            if not computed:
                return
            # one change per call (with "replace", re-added ids replace)
            self._commit(self._corpus.assign_ids(computed))

    def _keyword_themes(self, block: list[tuple[Document, list[Span]]]) -> list[list[str]]:
        n = self.ssg_config.n_themes if self.ssg_config else 5
        return keyword_themes([d.text for d, _ in block], n)

    def _theme_prompt(self, doc: Document) -> str:
        n = self.ssg_config.n_themes if self.ssg_config else 5
        return _THEME_PROMPT.format(n=n, text=" ".join(doc.text.split()[:500]))

    def add_documents(
        self, documents: Iterable[Any], *, split: bool = True, on_conflict: OnConflict = "error"
    ) -> None:
        """Index documents.

        ``documents`` may be semrag :class:`Document` objects, strings, LangChain
        ``Document`` objects or LlamaIndex documents and nodes; text and metadata are
        kept. Each is named by the rule of :mod:`semrag.identity` (explicit id, else
        ``metadata["source"]`` with its page or row, else a hash of the text; never the
        position in the call).

        Sentences of a block of documents are embedded in one call; the chunker then finds
        them in the embedder's cache; chunk, window and theme texts go in a second call.
        A block is stored only once everything for it is computed, so an error (a failing
        embedder or LLM) leaves the documents already indexed, old versions included, as
        they were.

        Args:
            documents: the documents.
            split: ``False`` indexes each document as one chunk, as it is (what a vector
                store does with what it is given; the graph still has its sentences).
            on_conflict: for an id that is already indexed: ``"error"`` (nothing is
                added), ``"replace"`` (the indexed document is replaced, in the same
                change) or ``"skip"`` (the new one is left out; :attr:`notes` says so).

        Raises:
            TypeError: if an item is none of those.
            DocumentConflictError: on an id given twice in the call, or already indexed
                with ``on_conflict="error"``; it names the ids.
            ConfigError: on metadata that is not JSON, or a bad ``on_conflict``.
            EmbeddingError: if the embedder misbehaves (nothing is added then).
        """
        docs = self._admit(self._validate(documents), on_conflict)
        self._add(docs, None if split else _WHOLE, on_conflict)

    def _admit(self, docs: list[Document], on_conflict: Any) -> list[Document]:
        """Fail fast, before any embedding, on a conflict the commit would refuse."""
        return self._conflicts(docs, check_on_conflict(on_conflict))

    def add_chunks(
        self,
        chunks: Iterable[Any],
        documents: Iterable[Any] | None = None,
        *,
        on_conflict: OnConflict = "error",
    ) -> None:
        """Index chunks made elsewhere, as they are (no re-chunking).

        For a splitter's output: LangChain ``Document`` chunks, LlamaIndex nodes or semrag
        :class:`Chunk` objects. Each chunk names its document
        (:func:`semrag.identity.chunk_document_id`: the ``semrag_doc_id`` a semrag
        splitter wrote, a node's ``ref_doc_id``, ``doc_id``, or ``source`` with its page)
        and, when it can, its offset (``start_index``, ``start_char_idx``); the table in
        :mod:`semrag.index.presplit` lists what is read. Chunks of one document are
        indexed together; a document that is already indexed is handled by
        ``on_conflict`` as in :meth:`add_documents`.

        With ``documents`` (the texts that were split, any kind :meth:`add_documents`
        takes), each chunk is found in its document's text and its offsets index that
        text. Without them, a document's text is rebuilt from its chunks: placed at their
        offsets (characters between chunks become spaces), or, for chunks without
        offsets, joined by blank lines.

        Chunk metadata is kept per chunk; the document's metadata is the metadata all its
        chunks share (or the given document's). Chunks may overlap (a splitter's
        ``chunk_overlap``); a chunk of whitespace only is skipped.

        Examples:
            >>> from semrag import Chunk, Document, SemanticIndex
            >>> from semrag.testing import FakeEmbedder
            >>> index = SemanticIndex(embedder=FakeEmbedder())
            >>> text = "Bees find flowers. They dance. Rockets reach orbit."
            >>> pieces = [Chunk("a", 0, 30, text[:30], 6), Chunk("a", 31, 51, text[31:], 3)]
            >>> index.add_chunks(pieces)
            >>> [c.text for c in index.chunks("a")]
            ['Bees find flowers. They dance.', 'Rockets reach orbit.']

        Raises:
            ConfigError: if a chunk names no document, or one that is not in
                ``documents``; if a chunk is not where its offset says; if ``documents``
                holds a document without chunks.
            DocumentConflictError: as in :meth:`add_documents`.
            TypeError: on an item of an unsupported kind.
        """
        docs, chunk_lists = self._place(chunks, documents)
        self._add(self._admit(docs, on_conflict), chunk_lists, on_conflict)

    def _place(
        self, chunks: Iterable[Any], documents: Iterable[Any] | None
    ) -> tuple[list[Document], dict[str, list[Chunk]]]:
        if isinstance(chunks, (str, Chunk)):
            raise ConfigError("pass a list of chunks")
        given = self._validate(documents) if documents is not None else None
        docs, chunk_lists = place_chunks(
            chunks, given, self.chunker.sentences, self.chunker.tokenizer.count
        )
        return self._validate(docs), chunk_lists

    def _chunk_lists(
        self, block: list[tuple[Document, list[Span]]], given: _Given
    ) -> list[list[Chunk]] | None:
        """The block's chunks when they are given (not the chunker's to make)."""
        if given is None:
            return None
        if given is _WHOLE:
            counts = self.chunker.tokenizer.count([d.text.strip() for d, _ in block])
            return [
                whole_document_chunk(d, spans, n)
                for (d, spans), n in zip(block, counts, strict=True)
            ]
        return [given[d.id] for d, _ in block]

    def _ingest(
        self, docs: list[Document], given: _Given, on_conflict: OnConflict
    ) -> Generator[Call, Any, None]:
        """Ingestion, written once: it yields the embedder's, chunker's and LLM's work.

        :meth:`_add` answers with blocking calls, :meth:`_aadd` with their async twins
        (and runs the steps between them in a worker thread). Blocks bound the embedder's
        batches; the call is one change (one commit), so a bulk load costs every part one
        application, and a failure adds nothing.
        """
        computed = yield from self._compute(docs, given)
        self._store(computed, on_conflict)

    def _compute(
        self,
        docs: list[Document],
        given: _Given,
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
        for block in self._blocks(docs, kept):
            sentence_texts = [s.of(d.text) for d, spans in block for s in spans]
            svecs = yield Call("embed", (sentence_texts,), on=self.embedder)
            chunk_lists = self._chunk_lists(block, given)
            if chunk_lists is None:
                docs_of_block = [d for d, _ in block]
                results = yield Call(
                    "chunk_with_stats",
                    (docs_of_block,),
                    on=self.chunker,
                    kwargs={"sentences": [spans for _, spans in block]},  # split once
                )
                chunk_lists = [r.chunks for r in results]
            themes = (
                self._keyword_themes(block)
                if kept is None
                else [kept[d.id].themes for d, _ in block]
            )
            if self.theme_llm is not None and kept is None:
                prompts = [self._theme_prompt(d) for d, _ in block]
                replies = yield Call("ask", (prompts,), on=_ThemeAsker(self.theme_llm))
                replies = [
                    self._theme_failed(d, r) if isinstance(r, Exception) else r
                    for (d, _), r in zip(block, replies, strict=True)
                ]
                themes = self._merge_themes(block, replies, themes)
            texts = self._second_pass_texts(block, chunk_lists, themes)
            second = yield Call("embed", (texts,), on=self.embedder)
            computed += self._vectors_of_block(block, svecs, chunk_lists, themes, second)
            if bar is not None:
                bar.update(len(block))
        if bar is not None:
            bar.close()
        return computed

    def prepare_documents(self, documents: Iterable[Any], *, split: bool = True) -> PreparedBatch:
        """Chunk and embed documents as :meth:`add_documents` does, without indexing them.

        For a worker process (see :mod:`semrag.ingest`): the returned
        :class:`~semrag.index.prepared.PreparedBatch` (picklable) goes to the writing
        index's :meth:`add_prepared`, which embeds nothing. This index is left unchanged.

        Raises:
            DocumentConflictError: on an id given twice in the call.
            ConfigError: on metadata that is not JSON.
        """
        docs = self._validate(documents)
        computed = drive(
            self._compute(docs, None if split else _WHOLE), functools.partial(call, None)
        )
        return PreparedBatch(ingest_settings(self), tuple(computed))

    def add_prepared(self, batch: PreparedBatch, *, on_conflict: OnConflict = "error") -> None:
        """Index a batch another process prepared (:meth:`prepare_documents`): one change.

        Nothing is chunked or embedded here; the batch's vectors are the index's.

        Raises:
            ConfigError: if the batch was prepared with other settings (chunker, chunk
                vectors, similarity graph, or another embedding model), by another
                semrag version (another layout), or holds vectors that do not fit its
                documents.
            DocumentConflictError: as :meth:`add_documents`, by ``on_conflict``.
        """
        if not isinstance(batch, PreparedBatch):
            raise ConfigError(f"add_prepared takes a PreparedBatch, got {type(batch).__name__}")
        batch.check()
        check_settings(ingest_settings(self), batch.settings)
        self._admit([d.doc for d in batch.documents], on_conflict)
        self._store(list(batch.documents), on_conflict)

    def _add(self, docs: list[Document], given: _Given, on_conflict: OnConflict) -> None:
        drive(self._ingest(docs, given, on_conflict), functools.partial(call, None))

    async def aadd_documents(
        self, documents: Iterable[Any], *, split: bool = True, on_conflict: OnConflict = "error"
    ) -> None:
        """Async twin of :meth:`add_documents`.

        Theme LLM calls run concurrently; the CPU work runs in worker threads, so the event
        loop is never blocked.
        """
        docs = await asyncio.to_thread(self._validate, documents)
        docs = self._admit(docs, on_conflict)
        await self._aadd(docs, None if split else _WHOLE, on_conflict)

    async def aadd_chunks(
        self,
        chunks: Iterable[Any],
        documents: Iterable[Any] | None = None,
        *,
        on_conflict: OnConflict = "error",
    ) -> None:
        """Async twin of :meth:`add_chunks`."""
        docs, chunk_lists = await asyncio.to_thread(self._place, chunks, documents)
        await self._aadd(self._admit(docs, on_conflict), chunk_lists, on_conflict)

    async def _aadd(self, docs: list[Document], given: _Given, on_conflict: OnConflict) -> None:
        await adrive(self._ingest(docs, given, on_conflict), functools.partial(acall, None))

    def _theme_failed(self, doc: Document, exc: Exception) -> None:
        if self.on_llm_error == "raise":
            raise exc
        self.notes.append(f"{doc.id}: themes: {llm_failure(exc)}; keyword themes used")

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
        if not self.show_progress:
            return None
        from tqdm.auto import tqdm

        return tqdm(total=total, desc="Indexing", unit="doc")

    def delete(self, ids: str | Iterable[str]) -> bool:
        """Remove one document or several (in one change), with their chunks and graph nodes.

        Returns ``True`` when every id was indexed; an id that was not is reported by
        ``False`` and in :attr:`notes` (the others are removed all the same).

        Examples:
            >>> from semrag import Chunk, Document, SemanticIndex
            >>> from semrag.testing import FakeEmbedder
            >>> index = SemanticIndex(embedder=FakeEmbedder(), ssg=False)
            >>> index.add_documents([Document("a", "Bees."), Document("b", "Ants.")])
            >>> index.delete(["a", "zz"]), index.doc_ids, index.notes
            (False, ['b'], ["delete: not indexed: ['zz']"])

        Raises:
            ConfigError: if ``ids`` is not a string or an iterable of strings.
        """
        wanted = _id_list(ids)
        removed = self._commit((), wanted).removed
        gone = {d.id for d in removed}
        unknown = [i for i in dict.fromkeys(wanted) if i not in gone]
        if unknown:
            self.notes.append(f"delete: not indexed: {unknown[:20]}")
        return not unknown

    async def adelete(self, ids: str | Iterable[str]) -> bool:
        """Async twin of :meth:`delete` (the commit runs in a worker thread)."""
        return await asyncio.to_thread(self.delete, ids)

    def doc_ids_where(
        self, filter: MetadataFilter, among: Iterable[str] | None = None
    ) -> list[str]:
        """Ids of the documents (of ``among``, default all) whose metadata ``filter`` accepts.

        Examples:
            >>> from semrag import Chunk, Document, SemanticIndex
            >>> from semrag.testing import FakeEmbedder
            >>> index = SemanticIndex(embedder=FakeEmbedder(), ssg=False)
            >>> index.add_documents([Document("a", "Bees.", {"n": 1}), Document("b", "Ants.")])
            >>> index.doc_ids_where({"n": 1}), index.doc_ids_where(lambda m: True, ["b", "x"])
            (['a'], ['b'])
        """
        accept = as_filter(filter)
        entries = self._corpus.by_id()
        wanted = entries if among is None else [i for i in among if i in entries]
        return [i for i in wanted if accept(entries[i].doc.metadata)]

    def delete_many(self, doc_ids: Iterable[str]) -> int:
        """Remove several documents in one change; returns how many were indexed.

        Absent ids are ignored (the vector stores' ``delete`` semantics; :meth:`delete`
        reports them).
        """
        if isinstance(doc_ids, str):
            raise ConfigError("pass a list of document ids, or use delete() for one")
        return len(self._commit((), _id_list(doc_ids)).removed)


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


def _id_list(ids: Any) -> list[str]:
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
