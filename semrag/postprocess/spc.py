"""SPC: refine, detect damage, repair from the source, audit coverage (InSemRAG §3.2.2).

:class:`SPC` takes a query and retrieved chunks and returns fewer, whole chunks plus a
report of what it did:

1. **Refine**: rescore every chunk against the query and keep the top ``k``. Without an
   LLM the score is the mean of the chunk's and its best sentence's cosine similarity to
   the query; with one, the LLM rates each chunk 0-10 in one call.
2. **Detect damage**: a completeness score in [0, 1] per chunk
   (:func:`semrag.postprocess.detect.assess`, or an LLM rating); below ``delta`` (0.5) the
   chunk is damaged.
3. **Repair**: back to the source document through the chunk's offsets (the
   :class:`SemanticIndex`'s documents, or ``sources``). A repair *grows* a hit, it never
   moves or trims it (the result contains the hit's own span). With ``context=`` (a budget
   of characters or tokens: what the prompt gets) the hits fill one context: each hit's own
   text first, in order, then the sentences around the hits that are worth the most
   (completing a cut sentence or the one a damage signal asks for is worth as much as the
   hit; a sentence further away, its own relevance or the hit's times 0.8 per sentence),
   never pushing out a later hit worth more; regions of one document that touch merge, so
   no character is counted twice (:func:`~semrag.postprocess.budget.allocate`). Without a
   budget the same choice comes as an **anytime order**: each hit's own text and each
   sentence added around it, in the order they were chosen (what follows on the chunk
   before it joins it; a sentence alone is a ``"context"`` chunk of its hit), so every prefix of
   the list is the context of its size, whatever the budget a prompt, a response
   synthesizer or a "stuff" chain cuts it to; it stops growing at :data:`ANYTIME` times
   the hits' own size. With an LLM and no budget, the paper's repair: each damaged hit
   grown in place to whole sentences, and by a sentence on a side a cut signal stays at
   (at most ``neighbours`` per side, within ``budget`` tokens), the stitched text possibly
   rewritten (``exact: False`` in its provenance). A chunk whose source is not available
   is kept as it is, and the report says so: SPC never invents neighbours.
4. **Coverage audit**: the query's key information elements
   (:func:`~semrag.postprocess.coverage.key_elements`, or the LLM's), each scored against
   the evidence sentences (:func:`~semrag.postprocess.coverage.support_scores`, or an LLM
   entailment rating); below ``epsilon`` (0.6) an element is missing and becomes a
   follow-up query.

Every LLM step falls back to the rule-based step when the reply is invalid (after one
retry), and the report notes it; ``on_llm_error="raise"`` raises instead.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import numbers
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from semrag._rwlock import ProvidesReader, as_reader
from semrag._steps import adrive, drive
from semrag._validation import HasMethods, Interval, Options, Params, check_query, with_options
from semrag.embeddings import Embedder, as_embedder
from semrag.errors import LLMOutputError
from semrag.llm import LLM, acomplete_json, complete_json, llm_failure
from semrag.postprocess.coverage import (
    distinct_queries,
    follow_up_query,
    key_elements,
    support_scores,
)
from semrag.postprocess.detect import Completeness, assess, sentence_edges
from semrag.postprocess.stitch import covering_sentences
from semrag.text.sentences import split_sentences
from semrag.text.tokens import Tokenizer, WhitespaceTokenizer, as_tokenizer
from semrag.types import Chunk, ScoredChunk, Span

if TYPE_CHECKING:  # postprocess is below index: the protocol is only a type here
    from semrag.index.reader import CorpusReader
from semrag.postprocess._spc_prompts import (
    COMPRESS_PROMPT,
    COMPRESS_SCHEMA,
    DAMAGE_PROMPT,
    DAMAGE_SCHEMA,
    ELEMENTS_PROMPT,
    ELEMENTS_SCHEMA,
    ENTAIL_PROMPT,
    ENTAIL_SCHEMA,
    REFINE_PROMPT,
    REFINE_SCHEMA,
)
from semrag.postprocess._spc_records import Ask, Repair, SPCResult
from semrag.postprocess._spc_repair import (
    apply_llm_compression,
    assemble,
    budgeted,
    repair_plan,
)
from semrag.postprocess._spc_sources import SourceLookup

__all__ = ["ADAPTER_FIELDS", "SPC", "Repair", "SPCResult", "from_fields"]

logger = logging.getLogger(__name__)

Sources = Mapping[str, str] | Callable[[str], "str | None"]

STEP = 0.07
"""How a hit's context is valued beyond its own relevance: a sentence ``n`` sentences
from a hit is worth at least the hit's cosine less ``n * STEP`` (see
:func:`~semrag.postprocess.budget.allocate`). Chosen on the development sets of
``benchmarks/context_repair.py``: short answers in long articles, conclusions of
abstracts and whole sections of long articles (steps 0.03 to 0.1 and the earlier
``0.8 ** n`` compared)."""

ANYTIME = 3
"""Without a context budget (and without an LLM), SPC's order stops growing at this many
times the hits' own size (a hit and a neighbour each side, as a neighbour window gives)."""

_TIE = 1e-3  # cosines this close are a tie (float16 vectors, another search's rounding)


class SPC(Params):
    """Semantic-preserving chunk repair and coverage audit (InSemRAG §3.2.2).

    Args:
        index: the :class:`~semrag.index.SemanticIndex` the chunks came from (their
            source documents, sentence spans, vectors and tokenizer); optional when
            ``sources`` and ``embedder`` are given.
        k: chunks kept by refinement.
        delta: damage threshold on the completeness score.
        epsilon: coverage threshold on element support.
        budget: with an LLM and no ``context``, the most tokens a repair in place grows a
            chunk to (a chunk's own whole sentences are kept whatever they hold); default
            twice the chunk's tokens, at least 64.
        neighbours: with an LLM and no ``context``, sentences on each side of a damaged
            chunk that may join it.
        llm: an :class:`~semrag.llm.LLM` for refinement, damage scoring, compression and
            the audit; without one every step is rule-based.
        sources: ``doc_id -> text`` (mapping or callable) for chunks whose documents are
            not in ``index``.
        embedder: embedder for queries, sentences and elements; default the index's, or
            the packaged MiniLM (the splitters' default too) when there is no index.
        tokenizer: token counter for budgets (a :class:`~semrag.text.tokens.Tokenizer` or a
            length function such as ``len``); default the index chunker's (or the
            embedder's, or whitespace).
        refine: ``True`` to rescore and cut to ``k``; ``False`` keeps the given order
            (still cut to ``k``). Without an LLM the rescoring (each hit's cosine with the
            query, averaged with its best sentence's) reorders only hits that come ranked
            by that cosine, a dense search: another order (a graph walk, fused channels,
            a reranker, another embedding model) is the retriever's judgement and is
            kept, since cosine with the query cannot see a second hop.
        audit: run the coverage audit on every call (off by default: without an LLM it
            changes no evidence and, re-queried by :class:`~semrag.retrieval.RetrieveAndCheck`,
            it helped only where the budget had room, ``benchmarks/context_repair.py
            --audit``; ``process(..., audit=True)`` runs it for one call).
        max_concurrency: LLM calls in flight at once in :meth:`aprocess`.
        on_llm_error: ``"fallback"`` (rule-based step, noted) or ``"raise"``.
        context: the context budget: the most the result holds, in ``unit``s (the
            prompt's share for evidence). The hits and the best sentences around them
            fill it (see the module docs); ``None``: the anytime order, which a reader
            cuts to its own budget (with an LLM: each damaged hit repaired in place, the
            paper's). On the development sets either is what makes SPC beat a neighbour
            window (``benchmarks/context_repair.py``, docs/spc.md).
        unit: ``"chars"`` or ``"tokens"`` (counted by ``tokenizer``). With a context budget
            an LLM still refines and rates damage; nothing is rewritten (every result is an
            exact span of its source).

    Examples:
        >>> from semrag import Document, SemanticIndex
        >>> from semrag.testing import FakeEmbedder
        >>> index = SemanticIndex(embedder=FakeEmbedder())
        >>> text = "Jane Smith led the inquiry. She resigned in May. Rain fell."
        >>> index.add_documents([Document("a", text)])
        >>> chunk = Chunk("a", 28, 48, text[28:48], 4, sentence_start=1, sentence_end=2)
        >>> hits = [ScoredChunk(chunk, 1.0)]
        >>> result = SPC(index, context=48).process("Why did Jane Smith resign?", hits)
        >>> result.actions[0].action, result.chunks[0].chunk.text
        ('repaired', 'Jane Smith led the inquiry. She resigned in May.')
        >>> ordered = SPC(index).process("Why did Jane Smith resign?", hits)  # no budget
        >>> [h.chunk.text for h in ordered.chunks]  # the hit, what it asks for, then the rest
        ['She resigned in May.', 'Jane Smith led the inquiry. ', ' Rain fell.']
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "index": [object],
        "sources": [object],
        "embedder": [object],
        "tokenizer": [object],
        "k": [Interval(numbers.Integral, 1, None)],
        "delta": [Interval(numbers.Real, 0, 1)],
        "epsilon": [Interval(numbers.Real, 0, 1)],
        "budget": [Interval(numbers.Integral, 1, None), None],
        "neighbours": [Interval(numbers.Integral, 0, None)],
        "llm": [HasMethods("complete", "acomplete"), None],
        "refine": [bool],
        "audit": [bool],
        "max_concurrency": [Interval(numbers.Integral, 1, None)],
        "on_llm_error": [Options("fallback", "raise")],
        "context": [Interval(numbers.Integral, 1, None), None],
        "unit": [Options("chars", "tokens")],
    }

    def __init__(
        self,
        index: CorpusReader | ProvidesReader | None = None,
        *,
        k: int = 10,
        delta: float = 0.5,
        epsilon: float = 0.6,
        budget: int | None = None,
        neighbours: int = 2,
        llm: LLM | None = None,
        sources: Sources | None = None,
        embedder: Embedder | None = None,
        tokenizer: Tokenizer | Callable[[str], Any] | None = None,
        refine: bool = True,
        audit: bool = False,
        max_concurrency: int = 8,
        on_llm_error: str = "fallback",
        context: int | None = None,
        unit: str = "chars",
    ) -> None:
        p = self._check_params(locals())
        k, delta, epsilon, budget = p["k"], p["delta"], p["epsilon"], p["budget"]
        neighbours, refine, audit = p["neighbours"], p["refine"], p["audit"]
        max_concurrency = p["max_concurrency"]
        self.index = None if index is None else as_reader(index)
        self.k = k
        self.delta = delta
        self.epsilon = epsilon
        self.budget = budget
        self.neighbours = neighbours
        self.llm = llm
        self.sources = sources
        if embedder is None and self.index is not None:
            embedder = self.index.embedder  # a BaseEmbedder is kept as it is
        self.embedder = as_embedder(embedder)  # None: the packaged MiniLM, loaded on use
        self.tokenizer: Tokenizer = as_tokenizer(tokenizer) or (
            self.index.tokenizer
            if self.index is not None
            else self.embedder.tokenizer or WhitespaceTokenizer()
        )
        self.refine = refine
        self.audit = audit
        self.max_concurrency = max_concurrency
        self.on_llm_error = on_llm_error
        self.context = p["context"]
        self.unit = unit

    def _cost_of(self, text: str) -> int:
        """What ``text`` spends of the context: its characters, or its tokens."""
        return len(text) if self.unit == "chars" else int(self.tokenizer.count([text])[0])

    # -- public -------------------------------------------------------------------------------
    def process(
        self, query: str, hits: Sequence[ScoredChunk], *, audit: bool | None = None
    ) -> SPCResult:
        """Refine, repair and (unless ``audit=False``) audit ``hits`` for ``query``."""
        return self._drive(self._pipeline(query, hits, self.audit if audit is None else audit))

    async def aprocess(
        self, query: str, hits: Sequence[ScoredChunk], *, audit: bool | None = None
    ) -> SPCResult:
        """Async twin of :meth:`process`; the LLM calls of each step run concurrently."""
        gen = self._pipeline(query, hits, self.audit if audit is None else audit)
        return await self._adrive(gen)

    def audit_coverage(self, query: str, hits: Sequence[ScoredChunk]) -> SPCResult:
        """Only the coverage audit of ``hits`` (kept as they are) for ``query``."""
        return self._drive(self._audit_only(query, hits))

    async def aaudit_coverage(self, query: str, hits: Sequence[ScoredChunk]) -> SPCResult:
        """Async twin of :meth:`audit_coverage`."""
        return await self._adrive(self._audit_only(query, hits))

    def _drive(self, gen: Generator[list[Ask], list[Any], SPCResult]) -> SPCResult:
        return drive(gen, lambda asks: [self._ask(a) for a in asks])

    async def _adrive(self, gen: Generator[list[Ask], list[Any], SPCResult]) -> SPCResult:
        limit = asyncio.Semaphore(self.max_concurrency)

        async def ask(a: Ask) -> Any:
            async with limit:
                return await self._aask(a)

        async def answer(asks: list[Ask]) -> list[Any]:
            return list(await asyncio.gather(*(ask(a) for a in asks)))

        return await adrive(gen, answer)

    def assess(self, chunk: Chunk) -> Completeness:
        """Rule-based completeness of ``chunk``, using its source's sentences when known."""
        source, _ = self._lookup().source(chunk)
        if source is None:
            return assess(chunk.text)
        starts, ends = sentence_edges(source.sentences, chunk.start, chunk.end)
        return assess(chunk.text, starts_sentence=starts, ends_sentence=ends)

    # -- LLM plumbing ---------------------------------------------------------------------------
    def _ask(self, ask: Ask) -> Any:
        assert self.llm is not None
        try:
            return complete_json(self.llm, ask.prompt, ask.schema)
        except Exception as exc:  # every LLM failure takes the documented path
            return self._failed(exc)

    async def _aask(self, ask: Ask) -> Any:
        assert self.llm is not None
        try:
            return await acomplete_json(self.llm, ask.prompt, ask.schema)
        except Exception as exc:  # every LLM failure takes the documented path
            return self._failed(exc)

    def _failed(self, exc: Exception) -> LLMOutputError:
        """Raise (``on_llm_error="raise"``) or turn any LLM failure into a noted fallback."""
        if self.on_llm_error == "raise":
            raise exc
        if not isinstance(exc, LLMOutputError):
            why = llm_failure(exc)
            exc = LLMOutputError(why, problem=why)
        logger.warning("SPC: invalid LLM reply, using the rule-based step: %s", exc.problem)
        return exc

    # -- the pipeline ---------------------------------------------------------------------------
    def _audit_only(
        self, query: str, hits: Sequence[ScoredChunk]
    ) -> Generator[list[Ask], list[Any], SPCResult]:
        check_query("SPC", query)
        result = SPCResult(list(hits), [], [])
        yield from self._audit(query, result)
        return result

    def _pipeline(
        self, query: str, hits: Sequence[ScoredChunk], audit: bool
    ) -> Generator[list[Ask], list[Any], SPCResult]:
        check_query("SPC", query)
        notes: list[str] = []
        calls = 0
        q = self.embedder.embed([query])[0]
        kept = self._refine_rules(q, list(hits))
        if self.llm is not None and self.refine and len(hits) > 1:
            passages = "\n".join(f"[{i + 1}] {h.chunk.text[:1200]}" for i, h in enumerate(hits))
            (reply,) = yield [
                Ask(REFINE_PROMPT.format(query=query, passages=passages), REFINE_SCHEMA)
            ]
            calls += 1
            if isinstance(reply, LLMOutputError) or len(reply["scores"]) != len(hits):
                notes.append("refine: LLM reply invalid; embedding similarity used")
            else:
                order = np.argsort(-np.asarray(reply["scores"], dtype=float), kind="stable")
                kept = [
                    replace(
                        hits[i],
                        channel_scores={
                            **hits[i].channel_scores,
                            "refine": float(reply["scores"][i]) / 10,
                        },
                    )
                    for i in order[: self.k]
                ]
        lookup = self._lookup()
        kept = [lookup.locate(h) for h in kept]
        rule = [self.assess(h.chunk) for h in kept]
        found = rule
        if self.llm is not None:
            replies = yield [
                Ask(DAMAGE_PROMPT.format(text=h.chunk.text), DAMAGE_SCHEMA) for h in kept
            ]
            calls += len(kept)
            found = []
            for r, c in zip(replies, rule, strict=True):
                if isinstance(r, LLMOutputError):
                    notes.append("damage: LLM reply invalid; rules used for one chunk")
                    found.append(c)
                else:
                    found.append(Completeness(float(r["score"]), c.signals, "llm"))
        if self.context is not None or self.llm is None:  # one context for every hit
            own = sum(self._cost_of(h.chunk.text) for h in kept)
            chunks, actions, by_chunk = budgeted(
                kept,
                found,
                self._relevance(q, kept).tolist(),
                q,
                lookup,
                delta=self.delta,
                budget=self.context if self.context is not None else ANYTIME * own,
                cost_of=self._cost_of,
                tokens_of=lambda text: int(self.tokenizer.count([text])[0]),
                embedder=self.embedder,
                step=STEP,
                anytime=self.context is None,
            )
            result = SPCResult(chunks, actions, [], llm_calls=calls, notes=notes, by_chunk=by_chunk)
            if audit:
                yield from self._audit(query, result)
            return result
        plans = [
            repair_plan(
                h,
                c,
                lookup,
                delta=self.delta,
                neighbours=self.neighbours,
                budget=self.budget,
                tokenizer=self.tokenizer,
            )
            for h, c in zip(kept, found, strict=True)
        ]
        to_compress = [i for i, p in enumerate(plans) if p.stitched is not None]
        if self.llm is not None and to_compress:
            asks = [
                Ask(
                    COMPRESS_PROMPT.format(
                        budget=plans[i].budget, query=query, text=plans[i].stitched
                    ),
                    COMPRESS_SCHEMA,
                )
                for i in to_compress
            ]
            replies = yield asks
            calls += len(asks)
            for i, r in zip(to_compress, replies, strict=True):
                apply_llm_compression(plans[i], r, notes, self.tokenizer)
        chunks, actions = assemble(
            kept, found, plans, lookup, tokenizer=self.tokenizer, rate=self.assess
        )
        result = SPCResult(chunks, actions, [], llm_calls=calls, notes=notes)
        if audit:
            yield from self._audit(query, result)
        return result

    def _refine_rules(self, q: np.ndarray, hits: list[ScoredChunk]) -> list[ScoredChunk]:
        if not self.refine or len(hits) <= 1:
            return hits[: self.k]
        similarity, score = self._similarities(q, hits)
        # a retriever that ranked by this similarity (a dense search) is refined by its best
        # sentences; any other order (a graph walk, fused channels, a reranker) is kept
        ranked = bool(np.all(np.diff(similarity) <= _TIE))
        order = (np.argsort(-score, kind="stable") if ranked else np.arange(len(hits)))[: self.k]
        return [
            replace(hits[i], channel_scores={**hits[i].channel_scores, "refine": float(score[i])})
            for i in order
        ]

    def _relevance(self, q: np.ndarray, hits: list[ScoredChunk]) -> np.ndarray:
        """Each hit's relevance: the mean of its and its best sentence's cosine with ``q``."""
        return self._similarities(q, hits)[1]

    def _similarities(
        self, q: np.ndarray, hits: list[ScoredChunk]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each hit's cosine with ``q``, and its relevance (see :meth:`_relevance`)."""
        if not hits:
            return np.zeros(0), np.zeros(0)
        chunk_vecs: list[np.ndarray | None] = [self._stored_chunk_vector(h.chunk) for h in hits]
        todo_chunks = [i for i, v in enumerate(chunk_vecs) if v is None]
        if todo_chunks:
            fresh = self.embedder.embed([hits[i].chunk.text for i in todo_chunks])
            for i, v in zip(todo_chunks, fresh, strict=True):
                chunk_vecs[i] = v
        chunk_sim = np.asarray(chunk_vecs) @ q
        best_sentence = np.empty(len(hits))
        todo: list[tuple[int, list[str]]] = []
        for i, h in enumerate(hits):
            block = self._aligned_sentences(h.chunk)
            if block is not None:
                best_sentence[i] = float((block[1] @ q).max())
                continue
            spans = split_sentences(h.chunk.text)
            todo.append((i, [sp.of(h.chunk.text) for sp in spans] or [h.chunk.text]))
        if todo:  # one embedding call for every sentence the index does not hold
            flat = [t for _, sents in todo for t in sents]
            sims = self.embedder.embed(flat) @ q
            pos = 0
            for i, sents in todo:
                best_sentence[i] = float(sims[pos : pos + len(sents)].max())
                pos += len(sents)
        return chunk_sim, np.asarray((chunk_sim + np.asarray(best_sentence)) / 2)

    def _stored_chunk_vector(self, chunk: Chunk) -> np.ndarray | None:
        """The index's vector of ``chunk`` when it is one of the index's chunks."""
        if self.index is None or chunk.start < 0:
            return None
        span = (chunk.doc_id, chunk.start, chunk.end)
        cids = self.index.overlapping_chunks_many([span])[0]  # none: not the index's
        for cid, c in zip(cids, self.index.chunks_of(cids), strict=True):
            if (c.start, c.end) == (chunk.start, chunk.end) and c.text == chunk.text:
                return self.index.vectors_of([cid])[0]
        return None

    def _evidence(self, hits: Sequence[ScoredChunk]) -> tuple[list[str], list[np.ndarray | None]]:
        """Evidence sentences, with the index's vectors where it holds them."""
        texts: list[str] = []
        vecs: list[np.ndarray | None] = []
        for h in hits:
            block = self._aligned_sentences(h.chunk)
            if block is not None:
                spans, vectors, doc = block
                texts += [sp.of(doc) for sp in spans]
                vecs += list(vectors)
                continue
            for sp in split_sentences(h.chunk.text):
                texts.append(sp.of(h.chunk.text))
                vecs.append(None)
        return texts, vecs

    def _aligned_sentences(self, chunk: Chunk) -> tuple[list[Span], np.ndarray, str] | None:
        """The index's sentences making up ``chunk``, their vectors and the document text.

        ``None`` unless the chunk is an exact span of an indexed document on sentence
        boundaries.
        """
        source, _ = self._lookup().source(chunk)
        if source is None or source.vectors is None or not source.sentences:
            return None
        a, b = covering_sentences(source.sentences, chunk.start, chunk.end)
        if source.sentences[a].start < chunk.start or source.sentences[b - 1].end > chunk.end:
            return None
        return source.sentences[a:b], source.vectors[a:b], source.text

    # -- sources ----------------------------------------------------------------------------------
    def _lookup(self) -> SourceLookup:
        """Where this call reads the chunks' documents (the index, else ``sources``)."""
        return SourceLookup(self.index, self.sources)

    # -- repair -----------------------------------------------------------------------------------
    # -- coverage audit ---------------------------------------------------------------------------
    def _audit(self, query: str, result: SPCResult) -> Generator[list[Ask], list[Any], None]:
        elements = key_elements(query)
        if self.llm is not None:
            (reply,) = yield [Ask(ELEMENTS_PROMPT.format(query=query), ELEMENTS_SCHEMA)]
            result.llm_calls += 1
            if isinstance(reply, LLMOutputError):
                result.notes.append("audit: LLM elements invalid; key phrases used")
            else:
                elements = [e for e in reply["elements"] if e.strip()] or elements
        if not elements:
            return
        sentences, stored = self._evidence(result.chunks)
        scores: list[float] | None = None
        follow: list[str] = []
        if self.llm is not None and sentences:
            ask = ENTAIL_PROMPT.format(
                query=query,
                elements="\n".join(f"[{i + 1}] {e}" for i, e in enumerate(elements)),
                evidence="\n".join(h.chunk.text for h in result.chunks),
            )
            (reply,) = yield [Ask(ask, ENTAIL_SCHEMA)]
            result.llm_calls += 1
            if isinstance(reply, LLMOutputError) or len(reply["scores"]) != len(elements):
                result.notes.append("audit: LLM entailment invalid; embedding support used")
            else:
                scores = [float(s) for s in reply["scores"]]
                follow = list(reply.get("follow_up", []))
        if scores is None:
            element_vecs = self.embedder.embed(elements)
            missing = [i for i, v in enumerate(stored) if v is None]
            if missing:  # embed only the sentences the index does not hold
                for i, v in zip(
                    missing, self.embedder.embed([sentences[i] for i in missing]), strict=True
                ):
                    stored[i] = v
            sentence_vecs = (
                np.asarray(stored) if sentences else np.zeros((0, element_vecs.shape[1]))
            )
            scores, _ = support_scores(elements, sentences, element_vecs, sentence_vecs)
        result.coverage = dict(zip(elements, scores, strict=True))
        result.missing = [e for e, s in result.coverage.items() if s < self.epsilon]
        covered = [e for e, s in result.coverage.items() if s >= self.epsilon]
        by_element = (
            dict(zip(elements, follow, strict=True)) if len(follow) == len(elements) else {}
        )
        asked = [by_element.get(e) or follow_up_query(e, query, covered) for e in result.missing]
        result.follow_up_queries = distinct_queries(asked)


ADAPTER_FIELDS: dict[str, Any] = {
    p.name: p.default
    for p in inspect.signature(SPC).parameters.values()
    if p.kind is p.KEYWORD_ONLY and p.name not in ("embedder", "llm")
}
"""SPC's keyword parameters and their defaults, but the embedder and the LLM: each a field of
the adapters' SPC post-processors, under the same name (SPC checks the values)."""


def from_fields(
    owner: str,
    index: Any,
    *,
    llm: LLM | None,
    embedder: Embedder | None,
    fields: Mapping[str, Any],
    given: Iterable[str],
    options: Mapping[str, Any],
) -> SPC:
    """The SPC an adapter builds: its fields ``given`` by name, and its ``options`` dict.

    Raises:
        ConfigError: a parameter given both by name and in ``options``, or SPC's own check.
    """
    named = {n: fields[n] for n in set(given) & ADAPTER_FIELDS.keys()}
    return SPC(index, llm=llm, embedder=embedder, **with_options(owner, named, options))
