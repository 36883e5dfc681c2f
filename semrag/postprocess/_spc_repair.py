"""SPC's repair steps: the plan for a damaged chunk, its cut, and the assembled result."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from semrag.errors import LLMOutputError
from semrag.postprocess._spc_records import Repair, Source
from semrag.postprocess._spc_sources import SourceLookup
from semrag.postprocess.coverage import (
    unsupported_words,
)
from semrag.postprocess.detect import Completeness, assess
from semrag.postprocess.stitch import best_window, covering_sentences
from semrag.text.phrases import content_words
from semrag.types import Chunk, ScoredChunk


def repair_plan(
    hit: ScoredChunk,
    found: Completeness,
    q: np.ndarray,
    lookup: SourceLookup,
    *,
    delta: float,
    neighbours: int,
    budget: int | None,
    tokenizer: Any,
    embedder: Any,
    keep_stitched: bool,
) -> RepairPlan:
    """What SPC does to one retrieved chunk: nothing, or its repair from its source.

    ``budget``: the repaired chunk's token cap (``None``: twice the chunk's, at least 64).
    """
    chunk = hit.chunk
    here = (chunk.start, chunk.end)
    if not found.damaged(delta):
        return RepairPlan("source_mismatch" if lookup.mismatched(chunk) else "intact", here)
    source, why = lookup.source(chunk)
    if source is None:
        return RepairPlan(why, here)
    return plan_repair(
        chunk,
        found,
        q,
        source,
        neighbours=neighbours,
        budget=budget if budget is not None else max(2 * chunk.token_count, 64),
        tokenizer=tokenizer,
        embedder=embedder,
        keep_stitched=keep_stitched,
    )


def apply_llm_compression(plan: RepairPlan, reply: Any, notes: list[str], tokenizer: Any) -> None:
    """Take an LLM's compression of the plan's window if it keeps to the budget and source."""
    if isinstance(reply, LLMOutputError):
        notes.append("compress: LLM reply invalid; extractive repair kept")
        return
    text = " ".join(reply["text"].split())
    if plan.budget is None or tokenizer.count([text])[0] > plan.budget:
        notes.append("compress: LLM text over the budget; extractive repair kept")
        return
    new_words = unsupported_words(content_words(text), plan.stitched or "")
    if new_words:  # a compression leaves words out or inflects them; more is invented
        shown = ", ".join(new_words[:3])
        notes.append(
            f"compress: LLM text has words not in the source ({shown}); extractive repair kept"
        )
        return
    plan.method, plan.llm_text = "llm", text


def assemble(
    kept: list[ScoredChunk],
    found: list[Completeness],
    plans: list[RepairPlan],
    lookup: SourceLookup,
    *,
    tokenizer: Any,
    rate: Callable[[Chunk], Completeness],
) -> tuple[list[ScoredChunk], list[Repair]]:
    """The chunks as repaired (``rate`` scores a repaired one again) and what was done."""
    chunks: list[ScoredChunk] = []
    actions: list[Repair] = []
    for hit, comp, plan in zip(kept, found, plans, strict=True):
        chunk = hit.chunk
        after_score = None
        rewritten = plan.llm_text is not None
        if plan.action == "repaired":
            start, end = plan.span
            text = (plan.llm_text or "") if rewritten else (plan.source_text or "")[start:end]
            if rewritten:  # rewritten text: the source span no longer matches it
                start = end = -1
            chunk = replace(
                chunk,
                start=start,
                end=end,
                text=text,
                token_count=int(tokenizer.count([text])[0]),
            )
            after_score = None if rewritten else rate(chunk).score
        repair = Repair(
            hit.chunk.doc_id,
            (hit.chunk.start, hit.chunk.end),
            plan.span,
            comp.to_metadata(),
            plan.action,
            plan.method if plan.action == "repaired" else "",
            after_score,
            plan.note,
        )
        prov = {
            "step": "spc",
            **repair.to_metadata(),
            "exact": not rewritten,
            **(
                {"offsets": None, "note": "LLM-compressed text; offsets unknown"}
                if rewritten
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
    return drop_contained(chunks, actions, lookup)


def drop_contained(
    chunks: list[ScoredChunk], actions: list[Repair], lookup: SourceLookup
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
        ok = lookup.verified(c.chunk)
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


@dataclass(slots=True)
class RepairPlan:
    """What SPC does to one retrieved chunk, decided before anything is assembled.

    ``action``: ``"intact"``, ``"repaired"``, ``"unchanged"`` (damaged, but the best window
    is the chunk itself), ``"source_mismatch"`` or why no source could be read; ``span``:
    the source offsets of the result; ``budget``: its token cap; ``method``:
    ``"extractive"`` or, once an LLM compression is accepted, ``"llm"`` (with
    ``llm_text``); ``stitched``: the window an LLM may compress (only when one is given).
    """

    action: str
    span: tuple[int, int]
    budget: int | None = None
    note: str = ""
    method: str = ""
    stitched: str | None = None
    source_text: str | None = None
    llm_text: str | None = None


def plan_repair(
    chunk: Chunk,
    found: Completeness,
    q: np.ndarray,
    source: Source,
    *,
    neighbours: int,
    budget: int,
    tokenizer: Any,
    embedder: Any,
    keep_stitched: bool = False,
) -> RepairPlan:
    """The repair of a damaged chunk from its source: whole sentences, then the best window.

    The chunk's covering sentences grow while a cut signal stays at an edge (at most
    ``neighbours`` times per side); then the window of at most ``budget`` tokens among
    ``neighbours`` more sentences each side that is most relevant to ``q`` (the sentence
    vectors the index keeps, else ``embedder``'s) is kept, cut to the budget if one
    sentence alone exceeds it.
    """
    spans = source.sentences
    ra, rb = covering_sentences(spans, chunk.start, chunk.end)
    if not found.signals:  # an LLM said "damaged" without saying where: both sides
        ra, rb = max(0, ra - 1), min(len(spans), rb + 1)
    for _ in range(max(1, neighbours)):
        core = source.text[spans[ra].start : spans[rb - 1].end]
        sides = assess(core, starts_sentence=True, ends_sentence=True).sides
        grow_a = "start" in sides and ra > 0
        grow_b = "end" in sides and rb < len(spans)
        if not (grow_a or grow_b):
            break
        ra, rb = ra - grow_a, rb + grow_b
    lo, hi = max(0, ra - neighbours), min(len(spans), rb + neighbours)
    texts = [spans[i].of(source.text) for i in range(lo, hi)]
    tokens = tokenizer.count(texts)
    vecs = source.vectors[lo:hi] if source.vectors is not None else embedder.embed(texts)
    relevance = np.asarray(vecs, dtype=np.float64) @ q
    wa, wb = best_window(tokens, relevance, (ra - lo, rb - lo), budget)
    start, end = spans[lo + wa].start, spans[lo + wb - 1].end
    note = ""
    if sum(tokens[wa:wb]) > budget:
        start, end = cut_to_budget(source.text, start, end, budget, tokenizer)
        note = "cut to the budget"
    action = "repaired" if (start, end) != (chunk.start, chunk.end) else "unchanged"
    stitched = None
    if keep_stitched and action == "repaired":
        stitched = source.text[spans[lo].start : spans[hi - 1].end]
    return RepairPlan(
        action,
        (start, end),
        budget=budget,
        note=note,
        method="extractive",
        stitched=stitched,
        source_text=source.text,
    )


def cut_to_budget(text: str, start: int, end: int, budget: int, tokenizer: Any) -> tuple[int, int]:
    """``(start, end)`` cut after its first ``budget`` tokens (unchanged if it holds fewer)."""
    offsets = tokenizer.offsets(text[start:end])
    if len(offsets) <= budget:
        return start, end
    return start, start + offsets[budget - 1][1]
