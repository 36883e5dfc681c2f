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
   :class:`SemanticIndex`'s documents, or ``sources``); the chunk's sentences plus the
   sentence before (a start-side signal) or after (an end-side signal) must stay, and up to
   ``neighbours`` sentences each side may join; then compress to ``budget`` tokens. Without
   an LLM compression is extractive and contiguous (:func:`~semrag.postprocess.stitch.best_window`,
   by query similarity), so the repaired chunk is an exact span of the source; with an LLM
   the stitched text is rewritten (``exact: False`` in its provenance). A chunk whose source
   is not available is kept as it is, and the report says so: SPC never invents neighbours.
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
import logging
import numbers
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from semrag._steps import adrive, drive
from semrag._validation import HasMethods, Interval, Options, check_query, validate_params
from semrag.embeddings import as_embedder
from semrag.errors import LLMOutputError
from semrag.llm import LLM, acomplete_json, complete_json, llm_failure
from semrag.postprocess.coverage import (
    follow_up_query,
    key_elements,
    support_scores,
    unsupported_words,
)
from semrag.postprocess.detect import Completeness, assess, sentence_edges
from semrag.postprocess.stitch import best_window, covering_sentences
from semrag.text.phrases import content_words
from semrag.text.sentences import split_sentences
from semrag.text.tokens import WhitespaceTokenizer
from semrag.types import Chunk, ScoredChunk, Span

if TYPE_CHECKING:  # postprocess is below index: the protocol is only a type here
    from semrag.index.reader import CorpusReader

__all__ = ["SPC", "Repair", "SPCResult"]

logger = logging.getLogger(__name__)

Sources = Mapping[str, str] | Callable[[str], "str | None"]

_REFINE_PROMPT = """Rate how useful each passage is for answering the query, from 0 (useless)
to 10 (answers it).
QUERY: {query}
PASSAGES:
{passages}
Reply with JSON only: {{"scores": [<one number 0-10 per passage, in order>]}}
Your response:"""
_REFINE_SCHEMA = {
    "type": "object",
    "required": ["scores"],
    "properties": {
        "scores": {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 10}}
    },
}
_DAMAGE_PROMPT = """Is this passage semantically complete on its own? Look for a sentence cut
off, a pronoun or "this"/"these" whose referent is missing, a conclusion without its premise,
or a list that is announced but not given.
PASSAGE:
{text}
Reply with JSON only: {{"score": <0 = badly fragmented ... 1 = complete>, "problems": ["..."]}}
Your response:"""
_DAMAGE_SCHEMA = {
    "type": "object",
    "required": ["score"],
    "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "problems": {"type": "array", "items": {"type": "string"}},
    },
}
_COMPRESS_PROMPT = """Rewrite the text below into at most {budget} words that keep every fact
needed to answer the query, with pronouns replaced by what they refer to. Use only facts
from the text.
QUERY: {query}
TEXT:
{text}
Reply with JSON only: {{"text": "..."}}
Your response:"""
_COMPRESS_SCHEMA = {
    "type": "object",
    "required": ["text"],
    "properties": {"text": {"type": "string", "minLength": 1}},
}
_ELEMENTS_PROMPT = """List the key information elements a complete answer to the query must
be supported by (entities, relations, attributes), each in a few words.
QUERY: {query}
Reply with JSON only: {{"elements": ["...", "..."]}}
Your response:"""
_ELEMENTS_SCHEMA = {
    "type": "object",
    "required": ["elements"],
    "properties": {"elements": {"type": "array", "items": {"type": "string"}, "maxItems": 12}},
}
_ENTAIL_PROMPT = """For each element, rate from 0 to 1 how well the evidence supports it
(1 = stated in the evidence, 0 = absent). Also give a search query that would find what is
missing.
QUERY: {query}
ELEMENTS:
{elements}
EVIDENCE:
{evidence}
Reply with JSON only:
{{"scores": [<0-1 per element, in order>], "follow_up": ["<query per element>"]}}
Your response:"""
_ENTAIL_SCHEMA = {
    "type": "object",
    "required": ["scores"],
    "properties": {
        "scores": {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 1}},
        "follow_up": {"type": "array", "items": {"type": "string"}},
    },
}


@dataclass(frozen=True, slots=True)
class Repair:
    """What SPC did to one chunk."""

    doc_id: str
    """The chunk's document."""
    before: tuple[int, int]
    """The chunk's ``(start, end)`` as retrieved."""
    after: tuple[int, int]
    """The repaired chunk's source span (equal to ``before`` when not repaired)."""
    completeness: Mapping[str, Any]
    """The damage assessment (score, source, signals)."""
    action: str
    """``"intact"``, ``"repaired"``, ``"source_unavailable"``, ``"offsets_unknown"``,
    ``"source_mismatch"`` or ``"unchanged"`` (damaged, but no better window fit)."""
    method: str = ""
    """``"extractive"`` or ``"llm"`` for repaired chunks."""
    completeness_after: float | None = None
    """The repaired chunk's completeness score."""
    note: str = ""
    """Fallbacks and truncations."""

    def to_metadata(self) -> dict[str, Any]:
        """Plain values for metadata."""
        return {
            "doc_id": self.doc_id,
            "before": list(self.before),
            "after": list(self.after),
            "completeness": dict(self.completeness),
            "action": self.action,
            "method": self.method,
            "completeness_after": self.completeness_after,
            **({"note": self.note} if self.note else {}),
        }


@dataclass(slots=True)
class SPCResult:
    """The repaired evidence and the report."""

    chunks: list[ScoredChunk]
    """The refined, repaired chunks, best first."""
    actions: list[Repair]
    """One entry per kept chunk, aligned with :attr:`chunks`."""
    missing: list[str]
    """Key elements whose support is below ``epsilon``."""
    coverage: dict[str, float] = field(default_factory=dict)
    """Support score of every key element."""
    follow_up_queries: list[str] = field(default_factory=list)
    """One query per missing element."""
    llm_calls: int = 0
    """LLM calls made."""
    notes: list[str] = field(default_factory=list)
    """LLM fallbacks and other remarks."""

    @property
    def repaired(self) -> list[Repair]:
        """The actions that changed a chunk."""
        return [a for a in self.actions if a.action == "repaired"]

    def to_metadata(self) -> dict[str, Any]:
        """The query-level report as plain values."""
        return {
            "missing": list(self.missing),
            "coverage": dict(self.coverage),
            "follow_up_queries": list(self.follow_up_queries),
            "repaired": len(self.repaired),
            "llm_calls": self.llm_calls,
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class _Ask:
    prompt: str
    schema: Mapping[str, Any]


@dataclass(slots=True)
class _Source:
    text: str
    sentences: list[Span]
    vectors: np.ndarray | None  # sentence vectors when the index has them


class SPC:
    """Semantic-preserving chunk repair and coverage audit (InSemRAG §3.2.2).

    Args:
        index: the :class:`~semrag.index.SemanticIndex` the chunks came from (their
            source documents, sentence spans, vectors and tokenizer); optional when
            ``sources`` and ``embedder`` are given.
        k: chunks kept by refinement.
        delta: damage threshold on the completeness score.
        epsilon: coverage threshold on element support.
        budget: most tokens in a repaired chunk; default twice the chunk's tokens, at
            least 64.
        neighbours: sentences on each side of a damaged chunk that may join it.
        llm: an :class:`~semrag.llm.LLM` for refinement, damage scoring, compression and
            the audit; without one every step is rule-based.
        sources: ``doc_id -> text`` (mapping or callable) for chunks whose documents are
            not in ``index``.
        embedder: embedder for queries, sentences and elements; default the index's, or
            the packaged MiniLM (the splitters' default too) when there is no index.
        tokenizer: token counter for budgets; default the index chunker's (or the
            embedder's, or whitespace).
        refine: ``True`` to rescore and cut to ``k``; ``False`` keeps the given order
            (still cut to ``k``).
        audit: run the coverage audit.
        max_concurrency: LLM calls in flight at once in :meth:`aprocess`.
        on_llm_error: ``"fallback"`` (rule-based step, noted) or ``"raise"``.

    Examples:
        >>> from semrag import Document, SemanticIndex
        >>> from semrag.testing import FakeEmbedder
        >>> index = SemanticIndex(embedder=FakeEmbedder())
        >>> text = "Jane Smith led the inquiry. She resigned in May. Rain fell."
        >>> index.add_documents([Document("a", text)])
        >>> chunk = Chunk("a", 28, 48, text[28:48], 4, sentence_start=1, sentence_end=2)
        >>> result = SPC(index).process("Why did Jane Smith resign?", [ScoredChunk(chunk, 1.0)])
        >>> result.actions[0].action, result.chunks[0].chunk.text
        ('repaired', 'Jane Smith led the inquiry. She resigned in May.')
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
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
    }

    def __init__(
        self,
        index: CorpusReader | None = None,
        *,
        k: int = 10,
        delta: float = 0.5,
        epsilon: float = 0.6,
        budget: int | None = None,
        neighbours: int = 2,
        llm: LLM | None = None,
        sources: Sources | None = None,
        embedder: Any = None,
        tokenizer: Any = None,
        refine: bool = True,
        audit: bool = True,
        max_concurrency: int = 8,
        on_llm_error: str = "fallback",
    ) -> None:
        p = validate_params(
            "SPC",
            self._parameter_constraints,
            {
                "k": k,
                "delta": delta,
                "epsilon": epsilon,
                "budget": budget,
                "neighbours": neighbours,
                "llm": llm,
                "refine": refine,
                "audit": audit,
                "max_concurrency": max_concurrency,
                "on_llm_error": on_llm_error,
            },
        )
        k, delta, epsilon, budget = p["k"], p["delta"], p["epsilon"], p["budget"]
        neighbours, refine, audit = p["neighbours"], p["refine"], p["audit"]
        max_concurrency = p["max_concurrency"]
        self.index = index
        self.k = k
        self.delta = delta
        self.epsilon = epsilon
        self.budget = budget
        self.neighbours = neighbours
        self.llm = llm
        self.sources = sources
        if embedder is None and index is not None:
            self.embedder = index.embedder
        else:
            self.embedder = as_embedder(embedder)  # None: the packaged MiniLM, loaded on use
        if tokenizer is None:
            tokenizer = (
                index.tokenizer
                if index is not None
                else getattr(self.embedder, "tokenizer", None) or WhitespaceTokenizer()
            )
        self.tokenizer = tokenizer
        self.refine = refine
        self.audit = audit
        self.max_concurrency = max_concurrency
        self.on_llm_error = on_llm_error

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

    def _drive(self, gen: Generator[list[_Ask], list[Any], SPCResult]) -> SPCResult:
        return drive(gen, lambda asks: [self._ask(a) for a in asks])

    async def _adrive(self, gen: Generator[list[_Ask], list[Any], SPCResult]) -> SPCResult:
        limit = asyncio.Semaphore(self.max_concurrency)

        async def ask(a: _Ask) -> Any:
            async with limit:
                return await self._aask(a)

        async def answer(asks: list[_Ask]) -> list[Any]:
            return list(await asyncio.gather(*(ask(a) for a in asks)))

        return await adrive(gen, answer)

    def assess(self, chunk: Chunk) -> Completeness:
        """Rule-based completeness of ``chunk``, using its source's sentences when known."""
        source, _ = self._source(chunk)
        if source is None:
            return assess(chunk.text)
        starts, ends = sentence_edges(source.sentences, chunk.start, chunk.end)
        return assess(chunk.text, starts_sentence=starts, ends_sentence=ends)

    # -- LLM plumbing ---------------------------------------------------------------------------
    def _ask(self, ask: _Ask) -> Any:
        assert self.llm is not None
        try:
            return complete_json(self.llm, ask.prompt, ask.schema)
        except Exception as exc:  # every LLM failure takes the documented path
            return self._failed(exc)

    async def _aask(self, ask: _Ask) -> Any:
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
    ) -> Generator[list[_Ask], list[Any], SPCResult]:
        check_query("SPC", query)
        result = SPCResult(list(hits), [], [])
        yield from self._audit(query, result)
        return result

    def _pipeline(
        self, query: str, hits: Sequence[ScoredChunk], audit: bool
    ) -> Generator[list[_Ask], list[Any], SPCResult]:
        check_query("SPC", query)
        notes: list[str] = []
        calls = 0
        q = self.embedder.embed([query])[0]
        kept = self._refine_rules(q, list(hits))
        if self.llm is not None and self.refine and len(hits) > 1:
            passages = "\n".join(f"[{i + 1}] {h.chunk.text[:1200]}" for i, h in enumerate(hits))
            (reply,) = yield [
                _Ask(_REFINE_PROMPT.format(query=query, passages=passages), _REFINE_SCHEMA)
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
        kept = [self._locate(h) for h in kept]
        rule = [self.assess(h.chunk) for h in kept]
        found = rule
        if self.llm is not None:
            replies = yield [
                _Ask(_DAMAGE_PROMPT.format(text=h.chunk.text), _DAMAGE_SCHEMA) for h in kept
            ]
            calls += len(kept)
            found = []
            for r, c in zip(replies, rule, strict=True):
                if isinstance(r, LLMOutputError):
                    notes.append("damage: LLM reply invalid; rules used for one chunk")
                    found.append(c)
                else:
                    found.append(Completeness(float(r["score"]), c.signals, "llm"))
        plans = [self._repair_plan(h, c, q) for h, c in zip(kept, found, strict=True)]
        to_compress = [i for i, p in enumerate(plans) if p.get("stitched") is not None]
        if self.llm is not None and to_compress:
            asks = [
                _Ask(
                    _COMPRESS_PROMPT.format(
                        budget=plans[i]["budget"], query=query, text=plans[i]["stitched"]
                    ),
                    _COMPRESS_SCHEMA,
                )
                for i in to_compress
            ]
            replies = yield asks
            calls += len(asks)
            for i, r in zip(to_compress, replies, strict=True):
                self._apply_llm_compression(plans[i], r, notes)
        chunks, actions = self._assemble(kept, found, plans)
        result = SPCResult(chunks, actions, [], llm_calls=calls, notes=notes)
        if audit:
            yield from self._audit(query, result)
        return result

    def _refine_rules(self, q: np.ndarray, hits: list[ScoredChunk]) -> list[ScoredChunk]:
        if not self.refine or len(hits) <= 1:
            return hits[: self.k]
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
        score = (chunk_sim + np.asarray(best_sentence)) / 2
        order = np.argsort(-score, kind="stable")[: self.k]
        return [
            replace(hits[i], channel_scores={**hits[i].channel_scores, "refine": float(score[i])})
            for i in order
        ]

    def _stored_chunk_vector(self, chunk: Chunk) -> np.ndarray | None:
        """The index's vector of ``chunk`` when it is one of the index's chunks."""
        if self.index is None or chunk.doc_id not in self.index or chunk.start < 0:
            return None
        for cid in self.index.overlapping_chunks(chunk.doc_id, chunk.start, chunk.end):
            c = self.index.chunk(cid)
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
        source, _ = self._source(chunk)
        if source is None or source.vectors is None or not source.sentences:
            return None
        a, b = covering_sentences(source.sentences, chunk.start, chunk.end)
        if source.sentences[a].start < chunk.start or source.sentences[b - 1].end > chunk.end:
            return None
        return source.sentences[a:b], source.vectors[a:b], source.text

    # -- sources ----------------------------------------------------------------------------------
    def _source_text(self, doc_id: str) -> tuple[str | None, bool]:
        if self.index is not None and doc_id in self.index:
            return self.index.document(doc_id).text, True
        if self.sources is None:
            return None, False
        if callable(self.sources):
            return self.sources(doc_id), False
        return self.sources.get(doc_id), False

    def _source(self, chunk: Chunk) -> tuple[_Source | None, str]:
        """The chunk's source and ``""``, or ``None`` and why not."""
        text, indexed = self._source_text(chunk.doc_id)
        if text is None:
            return None, "source_unavailable"
        if chunk.start < 0:
            return None, "offsets_unknown"
        if text[chunk.start : chunk.end] != chunk.text:
            return None, "source_mismatch"
        if indexed:
            return _Source(
                text, self.index.sentences(chunk.doc_id), self.index.sentence_vectors(chunk.doc_id)
            ), ""
        return _Source(text, split_sentences(text), None), ""

    def _locate(self, hit: ScoredChunk) -> ScoredChunk:
        """Offsets for a chunk without them (``start < 0``), if its text is unique in the source."""
        if hit.chunk.start >= 0:
            return hit
        text, _ = self._source_text(hit.chunk.doc_id)
        at = -1 if text is None else text.find(hit.chunk.text)
        if at < 0 or text.find(hit.chunk.text, at + 1) >= 0:
            return hit
        chunk = replace(hit.chunk, start=at, end=at + len(hit.chunk.text))
        return replace(
            hit, chunk=chunk, provenance=(*hit.provenance, {"step": "spc_locate", "start": at})
        )

    # -- repair -----------------------------------------------------------------------------------
    def _budget(self, chunk: Chunk) -> int:
        return self.budget if self.budget is not None else max(2 * chunk.token_count, 64)

    def _repair_plan(self, hit: ScoredChunk, found: Completeness, q: np.ndarray) -> dict[str, Any]:
        chunk = hit.chunk
        plan: dict[str, Any] = {"action": "intact", "span": (chunk.start, chunk.end)}
        if not found.damaged(self.delta):
            if self._mismatched(chunk):
                plan["action"] = "source_mismatch"
            return plan
        source, why = self._source(chunk)
        if source is None:
            plan["action"] = why
            return plan
        spans = source.sentences
        ra, rb = covering_sentences(spans, chunk.start, chunk.end)
        if not found.signals:  # an LLM said "damaged" without saying where: both sides
            ra, rb = max(0, ra - 1), min(len(spans), rb + 1)
        # Whole sentences fix a cut; a signal that remains at an edge asks for the
        # sentence beyond it (at most ``neighbours`` times per side).
        for _ in range(max(1, self.neighbours)):
            core = source.text[spans[ra].start : spans[rb - 1].end]
            sides = assess(core, starts_sentence=True, ends_sentence=True).sides
            grow_a = "start" in sides and ra > 0
            grow_b = "end" in sides and rb < len(spans)
            if not (grow_a or grow_b):
                break
            ra, rb = ra - grow_a, rb + grow_b
        lo, hi = max(0, ra - self.neighbours), min(len(spans), rb + self.neighbours)
        texts = [spans[i].of(source.text) for i in range(lo, hi)]
        tokens = self.tokenizer.count(texts)
        vecs = source.vectors[lo:hi] if source.vectors is not None else self.embedder.embed(texts)
        relevance = np.asarray(vecs, dtype=np.float64) @ q
        budget = self._budget(chunk)
        wa, wb = best_window(tokens, relevance, (ra - lo, rb - lo), budget)
        start, end = spans[lo + wa].start, spans[lo + wb - 1].end
        note = ""
        if sum(tokens[wa:wb]) > budget:
            start, end, note = *self._cut(source.text, start, end, budget), "cut to the budget"
        plan.update(budget=budget, span=(start, end), note=note, method="extractive")
        plan["action"] = "repaired" if (start, end) != (chunk.start, chunk.end) else "unchanged"
        if self.llm is not None and plan["action"] == "repaired":
            plan["stitched"] = source.text[spans[lo].start : spans[hi - 1].end]
        plan["source_text"] = source.text
        return plan

    def _cut(self, text: str, start: int, end: int, budget: int) -> tuple[int, int]:
        offsets = self.tokenizer.offsets(text[start:end])
        if len(offsets) <= budget:
            return start, end
        return start, start + offsets[budget - 1][1]

    def _apply_llm_compression(self, plan: dict[str, Any], reply: Any, notes: list[str]) -> None:
        if isinstance(reply, LLMOutputError):
            notes.append("compress: LLM reply invalid; extractive repair kept")
            return
        text = " ".join(reply["text"].split())
        if self.tokenizer.count([text])[0] > plan["budget"]:
            notes.append("compress: LLM text over the budget; extractive repair kept")
            return
        new_words = unsupported_words(content_words(text), plan["stitched"])
        if new_words:  # a compression leaves words out or inflects them; more is invented
            shown = ", ".join(new_words[:3])
            notes.append(
                f"compress: LLM text has words not in the source ({shown}); extractive repair kept"
            )
            return
        plan["method"] = "llm"
        plan["llm_text"] = text

    def _assemble(
        self, kept: list[ScoredChunk], found: list[Completeness], plans: list[dict[str, Any]]
    ) -> tuple[list[ScoredChunk], list[Repair]]:
        chunks: list[ScoredChunk] = []
        actions: list[Repair] = []
        for hit, comp, plan in zip(kept, found, plans, strict=True):
            chunk = hit.chunk
            after_score = None
            if plan["action"] == "repaired":
                start, end = plan["span"]
                text = plan.get("llm_text") or plan["source_text"][start:end]
                if "llm_text" in plan:  # rewritten text: the source span no longer matches it
                    start = end = -1
                chunk = replace(
                    chunk,
                    start=start,
                    end=end,
                    text=text,
                    token_count=int(self.tokenizer.count([text])[0]),
                )
                after_score = self.assess(chunk).score if "llm_text" not in plan else None
            repair = Repair(
                hit.chunk.doc_id,
                (hit.chunk.start, hit.chunk.end),
                tuple(plan["span"]),
                comp.to_metadata(),
                plan["action"],
                plan.get("method", "") if plan["action"] == "repaired" else "",
                after_score,
                plan.get("note", ""),
            )
            prov = {
                "step": "spc",
                **repair.to_metadata(),
                "exact": "llm_text" not in plan,
                **(
                    {"offsets": None, "note": "LLM-compressed text; offsets unknown"}
                    if "llm_text" in plan
                    else {}
                ),
            }
            chunks.append(
                replace(
                    hit,
                    chunk=chunk,
                    channel_scores={**hit.channel_scores, "completeness": comp.score},
                    provenance=(*hit.provenance, prov),
                )
            )
            actions.append(repair)
        return self._drop_contained(chunks, actions)

    def _mismatched(self, chunk: Chunk) -> bool:
        """True when the chunk's source is known and its text is not at its offsets."""
        if not chunk.has_offsets:
            return False
        text, _ = self._source_text(chunk.doc_id)
        return text is not None and text[chunk.start : chunk.end] != chunk.text

    def _verified(self, chunk: Chunk) -> bool:
        """True when the chunk's text is exactly at its offsets in its known source."""
        if not chunk.doc_id or not chunk.has_offsets:
            return False
        text, _ = self._source_text(chunk.doc_id)
        return text is not None and text[chunk.start : chunk.end] == chunk.text

    def _drop_contained(
        self, chunks: list[ScoredChunk], actions: list[Repair]
    ) -> tuple[list[ScoredChunk], list[Repair]]:
        """Drop chunks provably inside a better-ranked chunk: both verified in one source.

        A chunk is dropped only when it and the better-ranked chunk have known offsets,
        the same non-empty document id, and texts that match that document at those
        offsets; a chunk without offsets, without a known source, or whose text differs
        from its source is always kept.
        """
        keep_c: list[ScoredChunk] = []
        keep_a: list[Repair] = []
        verified: list[bool] = []
        for c, a in zip(chunks, actions, strict=True):
            ok = self._verified(c.chunk)
            inside = ok and any(
                v
                and k.chunk.doc_id == c.chunk.doc_id
                and k.chunk.start <= c.chunk.start
                and c.chunk.end <= k.chunk.end
                for k, v in zip(keep_c, verified, strict=True)
            )
            if not inside:
                keep_c.append(c)
                keep_a.append(a)
                verified.append(ok)
        return keep_c, keep_a

    # -- coverage audit ---------------------------------------------------------------------------
    def _audit(self, query: str, result: SPCResult) -> Generator[list[_Ask], list[Any], None]:
        elements = key_elements(query)
        if self.llm is not None:
            (reply,) = yield [_Ask(_ELEMENTS_PROMPT.format(query=query), _ELEMENTS_SCHEMA)]
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
            ask = _ENTAIL_PROMPT.format(
                query=query,
                elements="\n".join(f"[{i + 1}] {e}" for i, e in enumerate(elements)),
                evidence="\n".join(h.chunk.text for h in result.chunks),
            )
            (reply,) = yield [_Ask(ask, _ENTAIL_SCHEMA)]
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
        if len(follow) == len(elements):
            by_element = dict(zip(elements, follow, strict=True))
            result.follow_up_queries = [
                by_element[e] or follow_up_query(e, query, covered) for e in result.missing
            ]
        else:
            result.follow_up_queries = [follow_up_query(e, query, covered) for e in result.missing]

    def __repr__(self) -> str:
        return (
            f"SPC(k={self.k}, delta={self.delta}, epsilon={self.epsilon}, "
            f"llm={self.llm is not None})"
        )
