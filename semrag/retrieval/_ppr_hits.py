"""From one query's walk to hits: the score that keeps what dense search is sure of.

:class:`~semrag.retrieval.PPRRetriever` walks passages (documents or sections); a hit is
a chunk. :func:`rank` scores each candidate chunk by its passage's PageRank mass times
``exp(similarity_weight * (cosine - 1))`` of the chunk and the query (at most its mass)
and keeps at most ``per_passage`` per passage: that score orders the hits, and
:func:`follow_titles` then moves behind each passage the passage whose title it names.
:func:`as_hits` writes the trail of each (hop, entity, the passage it came from, the
walk's score) and gives each hit its *relevance* as its score: the chunk's cosine with the
query in [0, 1], what a vector store's relevance threshold reads.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from semrag.index.parts._passage_graph import PassageGraph
from semrag.types import Chunk, Floats, Ints, ScoredChunk

__all__ = ["Walk", "as_hits", "dense_passages", "follow_titles", "rank", "similarities"]


class Walk(NamedTuple):
    """One query's walk: the chunks ranked, the mass, the seeds it started from."""

    ranked: list[tuple[int, int, float]]
    """The first ``k`` hits: ``(passage node, chunk position, score)``, best first."""
    passage: npt.NDArray[np.float64]
    phrase_mass: npt.NDArray[np.float64]
    linked: dict[int, str]
    """Phrase number -> the query entity it was linked from."""
    dense: dict[int, float]
    """Passage node -> its best chunk's dense score, best first."""
    dense_chunks: dict[int, float]
    """Chunk position -> its dense score, best first."""
    similarity: dict[int, float]
    """Chunk position -> its cosine with the query, for every ranked hit."""
    followed: Mapping[int, int] = {}
    """Passage node -> the passage whose title link moved it up (:func:`follow_titles`)."""


def dense_passages(
    g: PassageGraph, found: tuple[Floats, Ints], limit: int
) -> tuple[dict[int, float], dict[int, float]]:
    """The dense hits by passage (its best chunk's score) and by chunk position, best first.

    At most ``limit`` passages.
    """
    scores, ids = found
    by_chunk: dict[int, float] = {}
    by_passage: dict[int, float] = {}
    positions = g.node_of.positions(ids)
    nodes = g.node_of.passages(np.maximum(positions, 0))
    for s, pos, node in zip(scores.tolist(), positions.tolist(), nodes.tolist(), strict=True):
        if pos < 0:
            continue
        by_chunk[pos] = s
        if s > by_passage.get(node, -np.inf):
            by_passage[node] = s
    best = sorted(by_passage.items(), key=lambda kv: -kv[1])[:limit]
    return dict(best), dict(sorted(by_chunk.items(), key=lambda kv: -kv[1]))


def rank(
    g: PassageGraph,
    passage: npt.NDArray[np.float64],
    phrase_mass: npt.NDArray[np.float64],
    dense_chunks: Mapping[int, float],
    k: int,
    *,
    similarity_weight: float,
    per_passage: int | None,
) -> list[tuple[int, int, float]]:
    """The ``k`` hits: chunks by passage mass times ``exp(similarity_weight * (cos - 1))``.

    Candidates are the chunks the dense search found (in a passage the walk reached)
    and, for each of the ``k`` passages with the most mass, its first ``per_passage``
    chunks (those the dense search found first, then by the walk's mass on the
    phrases they mention: the chunk that holds the bridge). A chunk the dense search
    did not return counts the least similarity it did return. At most ``per_passage``
    hits per passage.
    """
    reached = np.flatnonzero(passage > 0)  # the walk's mass is local: sort only where it is
    top = reached[np.argsort(-passage[reached], kind="stable")[:k]].tolist()
    floor = min(dense_chunks.values(), default=0.0)
    weight = similarity_weight

    def in_passage(pos: int) -> tuple[float, float, int]:
        mass = float(phrase_mass[g.chunk_phrases[pos]].sum())
        return (-dense_chunks.get(pos, -np.inf), -mass, pos)

    nodes = g.node_of.passages(np.fromiter(dense_chunks, np.int64, len(dense_chunks)))
    candidates = dict(zip(dense_chunks, nodes.tolist(), strict=True))
    limit = k if per_passage is None else per_passage
    for node in top:
        for pos in sorted(g.positions_of(node), key=in_passage)[:limit]:
            candidates.setdefault(pos, node)
    scored = [
        (node, pos, float(passage[node]) * math.exp(weight * (dense_chunks.get(pos, floor) - 1.0)))
        for pos, node in candidates.items()
        if passage[node] > 0
    ]
    scored.sort(key=lambda h: (-h[2], h[1]))
    taken: dict[int, int] = {}
    ranked = []
    for hit in scored:
        if taken.get(hit[0], 0) < limit:
            taken[hit[0]] = taken.get(hit[0], 0) + 1
            ranked.append(hit)
            if len(ranked) == k:
                break
    return ranked


def follow_titles(g: PassageGraph, walk: Walk, chunks: Sequence[Chunk]) -> tuple[Walk, list[Chunk]]:
    """The hits with, behind each passage's first hit, the first passage whose title it names.

    Going down the ranking, a passage's first hit is followed by the first hit of the
    best-ranked passage not yet placed whose document title it names (among its phrases,
    or in the text of its hits): the bridge of a two-hop question right behind the
    passage that names it (title mentions are the most precise edges of the graph:
    RESULTS "Edge families"). Hits are only reordered, none is dropped or added.
    ``chunks`` are the hits' chunks; the walk's ``followed`` says which passage named
    each one moved.
    """
    ranked = walk.ranked
    first: dict[int, int] = {}
    text: dict[int, list[str]] = {}
    for i, ((node, _, _), chunk) in enumerate(zip(ranked, chunks, strict=True)):
        first.setdefault(node, i)
        text.setdefault(node, []).append(chunk.text)
    placed: set[int] = set()
    followed: dict[int, int] = {}
    followed_at: set[int] = set()  # the hits placed behind the passage that named them
    order: list[int] = []
    for i, (node, _, _) in enumerate(ranked):
        if i in followed_at:
            continue
        order.append(i)
        if first[node] != i:
            continue
        placed.add(node)
        rest = [m for m in first if m not in placed]
        links = g.title_links(node, rest, " ".join(text[node]))
        if links:
            placed.add(links[0])
            followed[links[0]] = node
            order.append(first[links[0]])
            followed_at.add(first[links[0]])
    moved = walk._replace(ranked=[ranked[i] for i in order], followed=followed)
    return moved, [chunks[i] for i in order]


def as_hits(
    g: PassageGraph,
    walk: Walk | None,
    chunks: Sequence[Chunk],
    names: list[str],
    how: str,
    k: int,
    *,
    follow: bool = False,
) -> list[ScoredChunk]:
    """The ranked chunks as hits (``chunks``: those at their positions), with trails.

    ``follow``: title links followed first (:func:`follow_titles`).
    """
    if walk is None:
        return []
    if follow:
        walk, chunks = follow_titles(g, walk, chunks)
    ranked, passage, phrase_mass, linked, dense, dense_chunks, similarity, _ = walk
    first_chunk: dict[int, Chunk] = {}
    for (node, _, _), chunk in zip(ranked, chunks, strict=True):
        first_chunk.setdefault(node, chunk)
    order = list(first_chunk)
    rank_of = {node: r for r, node in enumerate(order)}
    dense_rank = {node: r for r, node in enumerate(dense)}  # dense is best first
    holders: dict[int, list[int]] = {}
    for node in order:
        for j in g.passage_phrases[node].tolist():
            holders.setdefault(j, []).append(node)
    hits = []
    for (node, pos, score), chunk in zip(ranked, chunks, strict=True):
        phrases = g.passage_phrases[node]
        seeded = [g.names[j] for j in phrases.tolist() if j in linked]
        trail: dict[str, Any]
        if node in walk.followed and not seeded:
            title = int(g.passage_title[node])
            trail = {
                "hop": 1,
                "link": "title",
                "via": g.names[title],
                "from": first_chunk[walk.followed[node]].doc_id,
            }
        elif seeded or dense_rank.get(node, k) < k:
            trail = {
                "hop": 0,
                "link": "query_entity" if seeded else "dense",
                "entities": seeded,
            }
        else:
            via = max(phrases.tolist(), key=lambda j: phrase_mass[j], default=-1)
            src = [m for m in holders.get(via, []) if rank_of[m] < rank_of[node]]
            trail = {
                "hop": 1,
                "link": "entity",
                "via": g.names[via] if via >= 0 else None,
                "from": first_chunk[src[0]].doc_id if src else None,
            }
        provenance = {
            "channel": "graph",
            "strategy": "ppr",
            **trail,
            "walk_score": score,
            "query_entities": list(names),
            "entity_source": how,
            "index_version": g.version,
        }
        channel = {"graph": float(passage[node])}
        if pos in dense_chunks:
            channel["dense"] = dense_chunks[pos]
        relevance = min(max(similarity[pos], 0.0), 1.0)
        hits.append(ScoredChunk(chunk, relevance, channel, (provenance,)))
    return hits


def similarities(
    g: PassageGraph,
    ranked: list[tuple[int, int, float]],
    dense_chunks: Mapping[int, float],
    vectors_of: Callable[[Sequence[int]], Floats],
    query: Floats,
) -> dict[int, float]:
    """Each ranked hit's cosine with the query: the dense search's, else from its vector."""
    found = {pos: dense_chunks[pos] for _, pos, _ in ranked if pos in dense_chunks}
    missing = [pos for _, pos, _ in ranked if pos not in found]
    if missing:
        vectors = vectors_of(g.chunk_ids[np.asarray(missing, np.int64)].tolist())
        found.update(zip(missing, (vectors @ query).tolist(), strict=True))
    return found
