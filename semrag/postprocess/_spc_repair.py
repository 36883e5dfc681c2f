"""SPC's repair steps: the plan for a damaged chunk, its cut, and the assembled result."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from semrag.embeddings import Embedder
from semrag.errors import LLMOutputError
from semrag.postprocess._spc_records import Repair, Source
from semrag.postprocess._spc_sources import SourceLookup
from semrag.postprocess.budget import Region, SentenceMap, allocate
from semrag.postprocess.coverage import (
    unsupported_words,
)
from semrag.postprocess.detect import Completeness, assess
from semrag.postprocess.stitch import covering_sentences
from semrag.text.phrases import content_words
from semrag.text.tokens import Tokenizer
from semrag.types import Chunk, ScoredChunk


def repair_plan(
    hit: ScoredChunk,
    found: Completeness,
    lookup: SourceLookup,
    *,
    delta: float,
    neighbours: int,
    budget: int | None,
    tokenizer: Tokenizer,
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
        source,
        neighbours=neighbours,
        budget=budget if budget is not None else max(2 * chunk.token_count, 64),
        tokenizer=tokenizer,
    )


def apply_llm_compression(
    plan: RepairPlan, reply: Any, notes: list[str], tokenizer: Tokenizer
) -> None:
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
    tokenizer: Tokenizer,
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
    ``llm_text``); ``stitched``: the window the LLM may compress.
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
    source: Source,
    *,
    neighbours: int,
    budget: int,
    tokenizer: Tokenizer,
) -> RepairPlan:
    """The repair of a damaged chunk from its source: it grows, it never moves or trims.

    The chunk's covering sentences (whole sentences: a cut one is completed) grow by one
    sentence on a side while a cut signal stays at that edge, at most ``neighbours`` times
    per side and while the result keeps within ``budget`` tokens (the covering sentences
    are kept whatever they hold). The result always contains the chunk's own span.
    """
    spans = source.sentences
    ra, rb = covering_sentences(spans, chunk.start, chunk.end)

    def tokens(a: int, b: int) -> int:
        return int(tokenizer.count([source.text[spans[a].start : spans[b - 1].end]])[0])

    if not found.signals and tokens(max(0, ra - 1), min(len(spans), rb + 1)) <= budget:
        ra, rb = max(0, ra - 1), min(len(spans), rb + 1)  # an LLM said "damaged": both sides
    for _ in range(max(1, neighbours)):
        core = source.text[spans[ra].start : spans[rb - 1].end]
        sides = assess(core, starts_sentence=True, ends_sentence=True).sides
        grow_a = "start" in sides and ra > 0
        grow_b = "end" in sides and rb < len(spans)
        if not (grow_a or grow_b) or tokens(ra - grow_a, rb + grow_b) > budget:
            break
        ra, rb = ra - grow_a, rb + grow_b
    start, end = min(spans[ra].start, chunk.start), max(spans[rb - 1].end, chunk.end)
    action = "repaired" if (start, end) != (chunk.start, chunk.end) else "unchanged"
    stitched = None
    if action == "repaired":
        lo, hi = max(0, ra - neighbours), min(len(spans), rb + neighbours)
        stitched = source.text[spans[lo].start : spans[hi - 1].end]
    return RepairPlan(
        action,
        (start, end),
        budget=budget,
        method="extractive",
        stitched=stitched,
        source_text=source.text,
    )


def budgeted(
    kept: list[ScoredChunk],
    found: list[Completeness],
    values: list[float],
    q: np.ndarray,
    lookup: SourceLookup,
    *,
    delta: float,
    budget: int,
    cost_of: Callable[[str], int],
    tokens_of: Callable[[str], int],
    embedder: Embedder,
    step: float | None,
    anytime: bool = False,
) -> tuple[list[ScoredChunk], list[Repair], list[Repair]]:
    """The hits as one context of at most ``budget`` (:func:`~semrag.postprocess.budget.allocate`).

    ``anytime``: the context in the order it was chosen instead (``budget`` is where it
    stops growing): each hit's own text and each extension a chunk of its own (one
    following on the chunk before it joins it); an extension alone is a ``"context"``
    chunk of the hit it extends.

    ``cost_of(text)`` is what a text spends (characters or tokens); ``tokens_of(text)`` its
    tokens. A hit whose source
    cannot be read (or whose text is not at its offsets) is kept as it is and cannot grow.
    Each result is a region of its source: one or more hits (their spans whole) and the
    sentences chosen around them; ``action`` is ``"intact"`` (the hit alone),
    ``"repaired"`` (a damaged hit grown), ``"expanded"`` (an intact one grown),
    ``"merged"`` (inside another hit's region: no result of its own) or why its source
    was unavailable. Returns the chunks, every hit's action, and each chunk's.
    """
    texts: dict[str, str] = {}
    sources: dict[str, Source] = {}
    spans: list[tuple[str, int, int]] = []
    why: list[str] = []
    for rank, hit in enumerate(kept):
        source, reason = lookup.source(hit.chunk)
        chunk = hit.chunk
        if source is None:  # kept as it is, under a key of its own
            key = f"\0{rank}"
            texts[key] = chunk.text
            spans.append((key, 0, len(chunk.text)))
        else:
            texts.setdefault(chunk.doc_id, source.text)
            sources.setdefault(chunk.doc_id, source)
            spans.append((chunk.doc_id, chunk.start, chunk.end))
        why.append(reason)
    maps = _sentence_maps(sources, spans, q, embedder)
    asks = [
        (c.damaged(delta) and "start" in c.sides, c.damaged(delta) and "end" in c.sides)
        for c in found
    ]
    costs: dict[tuple[str, int, int], int] = {}

    def cost(doc_id: str, start: int, end: int) -> int:
        key = (doc_id, start, end)
        if key not in costs:
            costs[key] = cost_of(texts[doc_id][start:end])
        return costs[key]

    def holds(region: Region) -> list[int]:  # the hits whole inside ``region``
        return [r for r in region.hits if region.start <= spans[r][1] and spans[r][2] <= region.end]

    regions = []
    for got in allocate(spans, values, maps.get, asks, budget, cost, step=step, anytime=anytime):
        piece = texts[got.doc_id][got.start : got.end]
        if anytime and piece.strip() and not holds(got):
            regions.append(got)  # an extension alone, with the space that joins it
        elif piece.strip():  # a region ends on a character
            regions.append(replace(got, end=got.start + len(piece.rstrip())))

    extended = {r.hits[0] for r in regions if anytime and not holds(r)}  # grown by a context
    chunks: list[ScoredChunk] = []
    actions: dict[int, Repair] = {}
    by_chunk: list[Repair] = []
    for region in regions:
        source_text = texts[region.doc_id]
        chunk = kept[region.hits[0]].chunk
        if region.doc_id in maps and (region.start, region.end) != (chunk.start, chunk.end):
            sentences = maps[region.doc_id]
            chunk = replace(
                chunk,
                start=region.start,
                end=region.end,
                text=source_text[region.start : region.end],
                token_count=tokens_of(source_text[region.start : region.end]),
                sentence_start=int(np.searchsorted(sentences.ends, region.start, side="right")),
                sentence_end=int(np.searchsorted(sentences.starts, region.end, side="left")),
            )
        own = holds(region)
        if anytime and not own:  # an extension alone: the context of the hit it extends
            rank = region.hits[0]
            by_chunk.append(
                Repair(
                    region.doc_id,
                    spans[rank][1:],
                    (region.start, region.end),
                    found[rank].to_metadata(),
                    "context",
                    "extractive",
                    None,
                    f"context of hit {rank}",
                )
            )
            chunks.append(_with_repair(kept[rank], chunk, by_chunk[-1], [], found[rank]))
            continue
        if anytime:
            region = replace(region, hits=tuple(own))
        beyond = np.ones(region.end - region.start, dtype=bool)
        for r in region.hits:  # what the region holds beyond its hits' own text
            _, a, b = spans[r]
            beyond[max(a - region.start, 0) : max(b - region.start, 0)] = False
        extra = "".join(
            c for c, out in zip(source_text[region.start : region.end], beyond, strict=True) if out
        )
        grown = bool(extra.strip()) or region.hits[0] in extended
        cut = {  # the last hit, at the budget (not a hit's own trailing space)
            r for r in region.hits if source_text[region.end : spans[r][2]].strip()
        }
        if region.doc_id not in maps and region.end < len(chunk.text):  # no source: cut
            end = chunk.end - len(chunk.text) + region.end if chunk.has_offsets else chunk.end
            chunk = replace(chunk, text=chunk.text[: region.end], end=end)
            cut = {region.hits[0]}
        for n, rank in enumerate(region.hits):
            hit, comp = kept[rank], found[rank]
            action = why[rank] or (  # a hit not whole in its region says so, merged or not
                "cut_at_budget"
                if rank in cut
                else "merged"
                if n
                else ("repaired" if comp.damaged(delta) else "expanded")
                if grown
                else "intact"
            )
            actions[rank] = Repair(
                hit.chunk.doc_id,
                (hit.chunk.start, hit.chunk.end),
                (chunk.start, chunk.end),
                comp.to_metadata(),
                action,
                "extractive" if grown else "",
                None,
                f"inside the region of hit {region.hits[0]}" if n else "",
            )
        by_chunk.append(actions[region.hits[0]])
        hits = [[kept[r].chunk.start, kept[r].chunk.end] for r in region.hits]
        chunks.append(
            _with_repair(kept[region.hits[0]], chunk, by_chunk[-1], hits, found[region.hits[0]])
        )
    dropped = [
        Repair(
            kept[r].chunk.doc_id,
            (kept[r].chunk.start, kept[r].chunk.end),
            (kept[r].chunk.start, kept[r].chunk.end),
            found[r].to_metadata(),
            "merged" if anytime else "over_budget",
            "",
            None,
            "its text is in the chunks around it" if anytime else "no room left in the context",
        )
        for r in range(len(kept))
        if r not in actions
    ]
    ordered = dict.fromkeys(r for region in regions for r in region.hits if r in actions)
    return chunks, [actions[r] for r in ordered] + dropped, by_chunk


def _with_repair(
    hit: ScoredChunk, chunk: Chunk, repair: Repair, hits: list[list[int]], found: Completeness
) -> ScoredChunk:
    """``hit`` as ``chunk``, its completeness and what SPC did in its provenance."""
    prov = {"step": "spc", **repair.to_metadata(), "hits": hits, "exact": True}
    return replace(
        hit,
        chunk=chunk,
        channel_scores={**hit.channel_scores, "completeness": found.score},
        provenance=(*hit.provenance, prov),
    )


NEAR = 8
"""Sentences each side of a hit whose relevance is computed when a source has no vectors."""


def _sentence_maps(
    sources: dict[str, Source],
    spans: list[tuple[str, int, int]],
    q: np.ndarray,
    embedder: Embedder,
) -> dict[str, SentenceMap]:
    """Each source's sentences and their cosine with the query: what an extension is worth.

    From the index's sentence vectors; a source without them (``sources=``) has only the
    sentences within :data:`NEAR` of its hits embedded, all documents in one call (the
    others are unknown, ``-inf``: only a hit's own value, less its distance, can bring them in).
    """
    maps: dict[str, SentenceMap] = {}
    todo: list[tuple[str, int]] = []
    for doc_id, source in sources.items():
        sentences = source.sentences
        relevance = np.full(len(sentences), -np.inf)
        if source.vectors is not None:
            relevance = np.asarray(source.vectors, np.float32) @ np.asarray(q, np.float32)
        else:
            near: set[int] = set()
            for d, start, end in spans:
                if d == doc_id:
                    a, b = covering_sentences(sentences, start, end)
                    near.update(range(max(0, a - NEAR), min(len(sentences), b + NEAR)))
            todo += [(doc_id, i) for i in sorted(near)]
        maps[doc_id] = SentenceMap(
            np.asarray([s.start for s in sentences], np.int64),
            np.asarray([s.end for s in sentences], np.int64),
            np.asarray(relevance, np.float64),
        )
    if todo:
        texts = [sources[d].sentences[i].of(sources[d].text) for d, i in todo]
        sims = np.asarray(embedder.embed(texts), np.float32) @ np.asarray(q, np.float32)
        for (doc_id, i), sim in zip(todo, sims.tolist(), strict=True):
            maps[doc_id].relevance[i] = sim
    return maps
