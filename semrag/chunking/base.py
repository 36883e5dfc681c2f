"""The pipeline every boundary-based chunker shares.

A chunker here decides, for each gap between two sentences, whether to break. Subclasses
say which texts to embed and how to score the gaps; :class:`BoundaryChunker` does the rest
the same way for all of them:

1. split every document into sentences with offsets (pluggable splitter);
2. embed what the subclass asks for, **for all documents in one batched call**;
3. score the gaps and choose the breaks (subclass);
4. merge segments under ``min_tokens`` into their closer neighbour;
5. enforce ``max_tokens``: a segment over the cap is cut into pieces overlapping by
   ``overlap_tokens`` (a single over-long sentence too); no chunk exceeds the cap;
6. return chunks with exact offsets, and per-document :class:`ChunkingStats`.

The sync and async paths differ only in how embeddings are fetched.
"""

from __future__ import annotations

import asyncio
import bisect
import copy
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from semrag._gc import paused_collector
from semrag._validation import Interval, validate_params
from semrag.chunking._split import merge_small_segments, segments_from_breaks, split_with_overlap
from semrag.embeddings import BaseEmbedder, CountingEmbedder, Embedder, as_embedder
from semrag.errors import ConfigError
from semrag.identity import as_documents, content_id
from semrag.text.sentences import SentenceSplitter, normalize_sentence_spans, split_sentences
from semrag.text.tokens import SPACE_RUN, Tokenizer, WhitespaceTokenizer, as_tokenizer
from semrag.types import HEADINGS_KEY, Chunk, Document, Floats, Span

__all__ = ["BoundaryChunker", "Break", "ChunkingResult", "ChunkingStats", "GapDecision"]

_EMBED_BLOCK = 2048  # texts per embedding call when a progress bar is shown


@dataclass(frozen=True, slots=True)
class Break:
    """One place where a chunk ends, and why."""

    gap: int
    """Gap index: the break falls between sentence ``gap`` and ``gap + 1``."""
    offset: int
    """Character offset of the first sentence after the break."""
    score: float
    """The gap's score (cosine distance, or p(same section) for trained models)."""
    reason: str
    """Why the chunker broke here, in words."""


@dataclass(frozen=True, slots=True)
class GapDecision:
    """What a chunker decided about the gaps of one document (internal to subclasses)."""

    scores: Floats
    """One score per gap (length = sentences - 1)."""
    breaks: np.ndarray
    """Boolean mask over the gaps, true where to break."""
    threshold: float
    """The cut-off applied."""
    reasons: tuple[str, ...]
    """One reason per true entry of ``breaks``, in gap order."""
    distances: Floats
    """Dissimilarity per gap (lower = more alike), used to pick merge partners."""


@dataclass(frozen=True, slots=True)
class ChunkingStats:
    """What happened while chunking one document."""

    doc_id: str
    """The document's id."""
    sentences: tuple[Span, ...]
    """Sentence spans found in the document."""
    scores: Floats = field(compare=False)
    """The gap curve: one score per gap between consecutive sentences."""
    score_name: str
    """What ``scores`` measure, e.g. ``"cosine distance"``."""
    threshold: float
    """The cut-off actually applied to ``scores`` (NaN when the document has no gap)."""
    threshold_rule: str
    """How the cut-off was chosen, e.g. ``"percentile 95"``."""
    breaks: tuple[Break, ...]
    """Breaks kept after merging, in order."""
    merged_gaps: tuple[int, ...]
    """Gaps whose break was removed because a segment was under ``min_tokens``."""
    cap_splits: int
    """Extra cuts made by the token cap (0 if no segment was over ``max_tokens``)."""
    n_chunks: int
    """Chunks returned for the document."""


@dataclass(frozen=True, slots=True)
class ChunkingResult:
    """The chunks of one document and the statistics of how they were made."""

    chunks: list[Chunk]
    """Chunks in document order."""
    stats: ChunkingStats
    """Curve, threshold and the reason for each break."""


@dataclass(slots=True)
class Prepared:
    doc: Document
    sentences: list[Span]
    sentence_tokens: list[int]
    layout: Any = None
    """The document's :class:`~semrag.text.structure.Layout`, once a chunker reads it."""
    scores: Floats | None = None
    """The gap scores, when the chunker scored the batch in one pass (``_score_all``)."""


def _one(text: Any, doc_id: str | None, metadata: Mapping[str, Any] | None) -> Document:
    """The document :meth:`BoundaryChunker.chunk` chunks (``TypeError`` if not a text)."""
    if not isinstance(text, str):
        raise ConfigError(f"text must be str, got {type(text).__name__}")
    return Document(doc_id if doc_id is not None else content_id(text), text, dict(metadata or {}))


class BoundaryChunker:
    """Base class of the chunkers that break between sentences.

    Args:
        embedder: any :class:`~semrag.embeddings.Embedder`; ``None``: the subclass's
            default (:meth:`_default_embedder`), loaded on first use.
        max_tokens: cap on each chunk, in tokens counted by ``tokenizer``.
        overlap_tokens: tokens shared by consecutive pieces of a segment over the cap;
            default 128, or ``max_tokens // 4`` when that is smaller; at most
            ``max_tokens // 2``, so each piece moves on by at least half a cap (a larger
            overlap would turn one long text into thousands of near-copies).
        min_tokens: segments with fewer tokens merge into their more similar neighbour.
        tokenizer: token counter: a :class:`~semrag.text.Tokenizer`, or any length
            function ``(text) -> int`` / token-list function (e.g. ``len`` caps chunks in
            characters); default: the embedder's own (MiniLM word pieces), or whitespace
            words if it has none.
        sentence_splitter: callable returning sentence spans; default
            :func:`~semrag.text.split_sentences`.
        show_progress: show a progress bar while embedding and chunking.
    """

    score_name = "score"
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "max_tokens": [Interval(numbers.Integral, 8, None)],
        "overlap_tokens": [Interval(numbers.Integral, 0, None), None],
        "min_tokens": [Interval(numbers.Integral, 0, None)],
        "sentence_splitter": ["callable", None],
        "show_progress": [bool],
    }

    def __init__(
        self,
        embedder: Embedder | None = None,
        *,
        max_tokens: int = 1024,
        overlap_tokens: int | None = None,
        min_tokens: int = 0,
        tokenizer: Tokenizer | None = None,
        sentence_splitter: SentenceSplitter | None = None,
        show_progress: bool = False,
    ) -> None:
        owner = type(self).__name__
        p = validate_params(
            owner,
            self._parameter_constraints,
            {
                "max_tokens": max_tokens,
                "overlap_tokens": overlap_tokens,
                "min_tokens": min_tokens,
                "sentence_splitter": sentence_splitter,
                "show_progress": show_progress,
            },
        )
        max_tokens, overlap_tokens, min_tokens = (
            p["max_tokens"],
            p["overlap_tokens"],
            p["min_tokens"],
        )
        if overlap_tokens is None:
            overlap_tokens = min(128, max_tokens // 4)
        if overlap_tokens > max_tokens // 2:
            raise ConfigError(
                f"{owner}: overlap_tokens must be in [0, max_tokens // 2 = {max_tokens // 2}], "
                f"got {overlap_tokens}: each piece of an over-long span must move on by at "
                "least half the cap"
            )
        if min_tokens > max_tokens:
            raise ConfigError(
                f"{owner}: min_tokens must be in [0, max_tokens = {max_tokens}], got {min_tokens}"
            )
        tokenizer = as_tokenizer(tokenizer)
        self._embedder_arg = embedder
        self._embedder: BaseEmbedder | None = None
        self.max_tokens = max_tokens
        self.overlap_tokens = overlap_tokens
        self.min_tokens = min_tokens
        self._tokenizer_arg = tokenizer
        self.sentence_splitter = sentence_splitter
        self.show_progress = p["show_progress"]

    # -- components ---------------------------------------------------------------------
    @property
    def embedder(self) -> BaseEmbedder:
        """The validated, cached embedder (created on first use)."""
        if self._embedder is None:
            arg = self._embedder_arg
            self._embedder = self._default_embedder() if arg is None else as_embedder(arg)
        return self._embedder

    def _default_embedder(self) -> BaseEmbedder:
        """The encoder used when none is given: the packaged MiniLM."""
        return as_embedder(None)

    @property
    def tokenizer(self) -> Tokenizer:
        """The token counter used for ``max_tokens``, ``overlap_tokens`` and ``min_tokens``."""
        if self._tokenizer_arg is None:
            self._tokenizer_arg = self.embedder.tokenizer or WhitespaceTokenizer()
        return self._tokenizer_arg

    def with_embedder(self, embedder: Embedder) -> BoundaryChunker:
        """A copy of this chunker that embeds with ``embedder`` (the same settings).

        The token counter goes with the model when it was the old embedder's own; one
        given explicitly is kept.
        """
        old = self._embedder
        twin = copy.copy(self)
        twin._embedder_arg, twin._embedder = embedder, None
        if self._tokenizer_arg is None or (
            old is not None and self._tokenizer_arg is old.tokenizer
        ):
            twin._tokenizer_arg = None
        return twin

    # -- to implement -------------------------------------------------------------------
    def _texts_to_embed(self, doc: Prepared) -> list[str]:
        """Texts whose embeddings :meth:`_decide` needs for one document."""
        raise NotImplementedError

    def _decide(self, doc: Prepared, vectors: Floats) -> GapDecision:
        """Score the gaps of one document and choose the breaks."""
        raise NotImplementedError

    def _rule(self) -> str:
        """Describe the break rule for the statistics."""
        raise NotImplementedError

    # -- public API ---------------------------------------------------------------------
    def chunk(
        self, text: str, *, doc_id: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> list[Chunk]:
        """Chunk one text.

        Args:
            text: the text.
            doc_id: id written on every chunk; default the text's content id
                (:func:`semrag.identity.content_id`), as :meth:`chunk_documents` names it.
            metadata: copied onto every chunk.

        Returns:
            Chunks in order; ``text[c.start:c.end] == c.text`` for each.

        Raises:
            TypeError: if ``text`` is not a ``str``.
        """
        return self.chunk_with_stats([_one(text, doc_id, metadata)])[0].chunks

    async def achunk(
        self, text: str, *, doc_id: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> list[Chunk]:
        """Async twin of :meth:`chunk`."""
        doc = _one(text, doc_id, metadata)
        return (await self.achunk_with_stats([doc]))[0].chunks

    def chunk_documents(self, documents: Iterable[Document | str]) -> list[Chunk]:
        """Chunk many documents with one batched embedding pass.

        Args:
            documents: :class:`~semrag.types.Document` objects, strings (named by their
                content) or framework documents (named by :mod:`semrag.identity`).

        Returns:
            The chunks of all documents, document by document, in order.
        """
        return [c for r in self.chunk_with_stats(documents) for c in r.chunks]

    async def achunk_documents(self, documents: Iterable[Document | str]) -> list[Chunk]:
        """Async twin of :meth:`chunk_documents`."""
        return [c for r in await self.achunk_with_stats(documents) for c in r.chunks]

    def chunk_with_stats(
        self,
        documents: Iterable[Document | str],
        *,
        sentences: Sequence[list[Span]] | None = None,
    ) -> list[ChunkingResult]:
        """Chunk documents and report, per document, the curve, threshold and breaks.

        ``sentences``: each document's spans as :meth:`sentences` gives them, when the
        caller has them already (the index splits once for its embedding blocks).

        Returns:
            One :class:`ChunkingResult` per document, in input order.
        """
        prepared, counted = self._prepare(as_documents(documents), sentences)
        if counted is not None:
            return self._finish(prepared, *counted)
        texts, owners = self._collect(prepared)
        return self._finish(prepared, self._embed_blocks(texts), owners)

    async def achunk_with_stats(
        self,
        documents: Iterable[Document | str],
        *,
        sentences: Sequence[list[Span]] | None = None,
    ) -> list[ChunkingResult]:
        """Async twin of :meth:`chunk_with_stats`; CPU work runs in a worker thread."""
        docs = as_documents(documents)
        prepared, counted = await asyncio.to_thread(self._prepare, docs, sentences)
        if counted is not None:
            return await asyncio.to_thread(self._finish, prepared, *counted)
        texts, owners = await asyncio.to_thread(self._collect, prepared)
        vectors = await self._aembed_blocks(texts)
        return await asyncio.to_thread(self._finish, prepared, vectors, owners)

    def sentences(self, text: str) -> list[Span]:
        """The sentence spans this chunker works with (its splitter, normalised)."""
        if self.sentence_splitter is None:
            return split_sentences(text)
        return normalize_sentence_spans(text, self.sentence_splitter(text))

    # -- pipeline -----------------------------------------------------------------------
    @paused_collector
    def _prepare(
        self, docs: list[Document], sentences: Sequence[list[Span]] | None = None
    ) -> tuple[list[Prepared], tuple[Floats, list[tuple[int, int]]] | None]:
        """Every document's sentences and their token counts.

        When the chunker embeds sentences with a :class:`~semrag.embeddings.CountingEmbedder`
        that is also its token counter (the packaged static encoder), one pass gives both:
        the second item is then the sentence vectors and each document's rows of them
        (``None`` otherwise: the vectors are for :meth:`_collect` and the embedder).
        """
        if sentences is None:
            sentences = [self.sentences(doc.text) for doc in docs]
        elif len(sentences) != len(docs):
            raise ConfigError(f"{len(sentences)} sentence lists for {len(docs)} documents")
        prepared = [Prepared(doc, list(s), []) for doc, s in zip(docs, sentences, strict=True)]
        all_texts = [p.doc.text[s.start : s.end] for p in prepared for s in p.sentences]
        embedder = self.embedder if self._embeds_sentences() else None
        counted: tuple[Floats, list[tuple[int, int]]] | None = None
        if isinstance(embedder, CountingEmbedder) and self.tokenizer is embedder.tokenizer:
            vectors, counts = embedder.embed_counted(all_texts)
            counted = (vectors, [])
        else:
            counts = self.tokenizer.count(all_texts)
        pos = 0
        for p in prepared:
            p.sentence_tokens = counts[pos : pos + len(p.sentences)]
            if counted is not None:
                counted[1].append((pos, pos + len(p.sentences)))
            pos += len(p.sentences)
        return prepared, counted

    def _embeds_sentences(self) -> bool:
        """Whether :meth:`_texts_to_embed` is each sentence's text, in order."""
        return False

    def _score_all(
        self, prepared: list[Prepared], vectors: Floats, owners: list[tuple[int, int]]
    ) -> None:
        """Score the gaps of every document in one pass, into :attr:`Prepared.scores`.

        A chunker whose scores need only the vectors does it here, once for the batch,
        instead of once per document in :meth:`_decide` (numpy's cost per call, hundreds of
        times, is most of it). The default scores nothing here.
        """

    def _collect(self, prepared: list[Prepared]) -> tuple[list[str], list[tuple[int, int]]]:
        texts: list[str] = []
        owners: list[tuple[int, int]] = []
        for p in prepared:
            wanted = self._texts_to_embed(p) if len(p.sentences) > 1 else []
            owners.append((len(texts), len(texts) + len(wanted)))
            texts.extend(wanted)
        return texts, owners

    def _embed_blocks(self, texts: list[str]) -> Floats:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        if not self.show_progress:
            return self.embedder.embed(texts)
        from tqdm.auto import tqdm

        blocks = []
        with tqdm(total=len(texts), desc="Embedding", unit="text") as bar:
            for i in range(0, len(texts), _EMBED_BLOCK):
                blocks.append(self.embedder.embed(texts[i : i + _EMBED_BLOCK]))
                bar.update(len(blocks[-1]))
        return np.concatenate(blocks)

    async def _aembed_blocks(self, texts: list[str]) -> Floats:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        if not self.show_progress:
            return await self.embedder.aembed(texts)
        from tqdm.auto import tqdm

        blocks = []
        with tqdm(total=len(texts), desc="Embedding", unit="text") as bar:
            for i in range(0, len(texts), _EMBED_BLOCK):
                blocks.append(await self.embedder.aembed(texts[i : i + _EMBED_BLOCK]))
                bar.update(len(blocks[-1]))
        return np.concatenate(blocks)

    @paused_collector
    def _finish(
        self, prepared: list[Prepared], vectors: Floats, owners: list[tuple[int, int]]
    ) -> list[ChunkingResult]:
        self._score_all(prepared, vectors, owners)
        plans = []
        for p, (a, b) in zip(prepared, owners, strict=True):
            plans.append(self._plan(p, vectors[a:b]))
        counts = self._segment_counts(prepared, [segs for _, segs, _m in plans])
        results: list[ChunkingResult] = []
        pos = 0
        for p, (decision, segs, merged) in zip(prepared, plans, strict=True):
            spans = [Span(p.sentences[a].start, p.sentences[b - 1].end) for a, b in segs]
            chunk_spans: list[tuple[Span, int]] = []
            cap_splits = 0
            for span, n_tokens in zip(spans, counts[pos : pos + len(spans)], strict=True):
                if n_tokens <= self.max_tokens:
                    chunk_spans.append((span, n_tokens))
                    continue
                pieces = self._cap(p, span)
                cap_splits += len(pieces) - 1
                piece_counts = self.tokenizer.count([s.of(p.doc.text) for s in pieces])
                chunk_spans.extend(zip(pieces, piece_counts, strict=True))
            pos += len(spans)
            results.append(self._result(p, decision, chunk_spans, merged, cap_splits))
        return results

    def _segment_counts(
        self, prepared: list[Prepared], plans: list[list[tuple[int, int]]]
    ) -> list[int]:
        """Tokens of every candidate chunk (a run of sentences), to find those over the cap.

        With an additive tokenizer (no token spans whitespace: MiniLM's word pieces, the
        whitespace counter) a run whose sentences are separated by whitespace
        (:data:`~semrag.text.tokens.SPACE_RUN`) counts the sum of its sentences' counts,
        so the text is tokenized once; the other runs are counted in one batch.
        """
        additive = getattr(self.tokenizer, "additive", False)
        counts: list[int] = []
        todo: list[tuple[int, str]] = []
        for p, segs in zip(prepared, plans, strict=True):
            text, sents = p.doc.text, p.sentences
            prefix = np.concatenate([[0], np.cumsum(p.sentence_tokens, dtype=np.int64)])
            for a, b in segs:
                if additive and all(
                    SPACE_RUN.fullmatch(text, sents[i].end, sents[i + 1].start)
                    for i in range(a, b - 1)
                ):
                    counts.append(int(prefix[b] - prefix[a]))
                else:
                    todo.append((len(counts), text[sents[a].start : sents[b - 1].end]))
                    counts.append(-1)
        for (at, _), n in zip(todo, self.tokenizer.count([t for _, t in todo]), strict=True):
            counts[at] = n
        return counts

    def _plan(
        self, p: Prepared, vectors: Floats
    ) -> tuple[GapDecision | None, list[tuple[int, int]], list[int]]:
        """The gap decision, the runs of sentences ``[a, b)`` to chunk, the merged gaps."""
        n = len(p.sentences)
        if n == 0:
            return None, [], []
        if n == 1:
            return None, [(0, 1)], []
        decision = self._decide(p, vectors)
        segs = segments_from_breaks(n, decision.breaks)
        segs, merged = merge_small_segments(
            segs,
            p.sentence_tokens,
            decision.distances,
            min_tokens=self.min_tokens,
            max_tokens=self.max_tokens,
        )
        return decision, segs, merged

    contextual_headings: bool = False
    """Whether an index embeds each chunk with its heading path (see :meth:`embedding_text`)."""

    def embedding_text(self, chunk: Chunk) -> str:
        """The text an index embeds for one of this chunker's chunks (its own text)."""
        return chunk.text

    def _headings(self, p: Prepared) -> list[tuple[str, ...]] | None:
        """Per sentence, the headings it sits under (``None``: none recorded)."""
        return None

    def _cap(self, p: Prepared, span: Span) -> list[Span]:
        text = p.doc.text
        local = self.tokenizer.offsets(span.of(text))
        token_spans = [(span.start + s, span.start + e) for s, e in local]
        starts = [s.start for s in p.sentences if span.start < s.start < span.end]
        return split_with_overlap(
            text,
            span,
            token_spans,
            max_tokens=self.max_tokens,
            overlap_tokens=self.overlap_tokens,
            count=lambda t: self.tokenizer.count([t])[0],
            preferred_starts=starts,
        )

    def _result(
        self,
        p: Prepared,
        decision: GapDecision | None,
        chunk_spans: list[tuple[Span, int]],
        merged: list[int],
        cap_splits: int,
    ) -> ChunkingResult:
        doc = p.doc
        sentence_starts = [s.start for s in p.sentences]
        chunks = []
        headings = self._headings(p)
        for index, (span, n_tokens) in enumerate(chunk_spans):
            first = max(bisect.bisect_right(sentence_starts, span.start) - 1, 0)
            last = bisect.bisect_left(sentence_starts, span.end)
            metadata = doc.metadata
            if headings is not None and headings[first]:
                metadata = {**doc.metadata, HEADINGS_KEY: list(headings[first])}
            chunks.append(
                Chunk(
                    doc_id=doc.id,
                    start=span.start,
                    end=span.end,
                    text=span.of(doc.text),
                    token_count=n_tokens,
                    index=index,
                    sentence_start=first,
                    sentence_end=max(last, first + 1),
                    metadata=metadata,
                )
            )
        breaks: list[Break] = []
        if decision is not None:
            merged_set = set(merged)
            gaps = np.flatnonzero(decision.breaks).tolist()
            for gap, reason in zip(gaps, decision.reasons, strict=True):
                if gap in merged_set:
                    continue
                breaks.append(
                    Break(gap, p.sentences[gap + 1].start, float(decision.scores[gap]), reason)
                )
        stats = ChunkingStats(
            doc_id=doc.id,
            sentences=tuple(p.sentences),
            scores=decision.scores if decision is not None else np.zeros(0, dtype=np.float32),
            score_name=self.score_name,
            threshold=decision.threshold if decision is not None else float("nan"),
            threshold_rule=self._rule(),
            breaks=tuple(breaks),
            merged_gaps=tuple(merged),
            cap_splits=cap_splits,
            n_chunks=len(chunks),
        )
        return ChunkingResult(chunks, stats)

    def _config(self) -> dict[str, Any]:
        return {
            "max_tokens": self.max_tokens,
            "overlap_tokens": self.overlap_tokens,
            "min_tokens": self.min_tokens,
        }

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._config().items())
        return f"{type(self).__name__}({args})"
