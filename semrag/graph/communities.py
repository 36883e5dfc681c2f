"""Hierarchical communities of the knowledge graph and their reports (SemRAG §3.2.3, eq. 3).

:func:`detect_communities` partitions the entity graph (relations as undirected weighted
edges) with Leiden (``leidenalg``, the ``graph`` extra) or, when it is not installed, with
networkx's Louvain; each coarser level partitions the graph of the level below's
communities. Level 0 is the finest. :func:`community_reports` writes each community's
title and summary: an LLM summarises its entities and relations (eq. 3), or, without one,
the report is extractive (its most central entities and the evidence sentences of its
strongest relations). A community's ``rank`` is its members' share of PageRank, scaled so
the most central community of its level has rank 1.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import networkx as nx

from semrag._validation import Options, check_param
from semrag.errors import ConfigError
from semrag.graph.types import Community, Entity, Relation
from semrag.llm import LLM, LLMFailed, ask_json

__all__ = ["community_reports", "detect_communities", "report_text"]

logger = logging.getLogger(__name__)


def report_text(community: Community) -> str:
    """The text of a community's report that global search embeds: title and summary."""
    return f"{community.title}. {community.summary}"


def relation_order(r: Relation) -> tuple[str, str, str, str, float]:
    """A total order of relations, so sums and ties never depend on how a store lists them."""
    return (r.source, r.target, r.type, r.evidence, float(r.weight))


def _graph(entity_ids: Sequence[str], relations: Sequence[Relation]) -> nx.Graph:
    """The undirected weighted graph, built in a canonical order.

    A graph that followed changes and one built fresh from the same records then give the
    same communities.
    """
    g = nx.Graph()
    g.add_nodes_from(sorted(entity_ids))
    weight: dict[tuple[str, str], float] = {}
    for r in sorted(relations, key=relation_order):
        if r.source != r.target:
            edge = (min(r.source, r.target), max(r.source, r.target))
            weight[edge] = weight.get(edge, 0.0) + float(r.weight)
    g.add_weighted_edges_from((a, b, w) for (a, b), w in sorted(weight.items()))
    return g


def _leiden_levels(g: nx.Graph, levels: int, resolution: float, seed: int) -> list[list[set[str]]]:
    import igraph
    import leidenalg

    names = list(g.nodes)
    pos = {n: i for i, n in enumerate(names)}
    ig = igraph.Graph(n=len(names), edges=[(pos[a], pos[b]) for a, b in g.edges])
    ig.es["weight"] = [d["weight"] for _, _, d in g.edges(data=True)]
    groups: list[set[str]] = [{n} for n in names]
    out: list[list[set[str]]] = []
    graph = ig
    for _ in range(levels):
        part = leidenalg.find_partition(
            graph,
            leidenalg.RBConfigurationVertexPartition,
            weights="weight" if graph.ecount() else None,
            resolution_parameter=resolution,
            seed=seed,
        )
        merged = [set().union(*(groups[v] for v in members)) for members in part]
        if out and len(merged) == len(out[-1]):
            break
        out.append(merged)
        if len(merged) <= 1:
            break
        graph = part.cluster_graph(combine_edges={"weight": "sum"})
        groups = merged
    return out


def _louvain_levels(g: nx.Graph, levels: int, resolution: float, seed: int) -> list[list[set[str]]]:
    parts = nx.community.louvain_partitions(g, weight="weight", resolution=resolution, seed=seed)
    return [[set(c) for c in p] for _, p in zip(range(levels), parts, strict=False)]


def detect_communities(
    entity_ids: Sequence[str],
    relations: Sequence[Relation],
    *,
    algorithm: str = "auto",
    levels: int = 2,
    resolution: float = 1.0,
    min_size: int = 2,
    seed: int = 42,
) -> tuple[list[Community], str]:
    """Hierarchical communities (no summaries yet) and the algorithm that found them.

    Args:
        entity_ids: the graph's entities.
        relations: its relations (direction ignored, weights summed).
        algorithm: ``"leiden"``, ``"louvain"`` or ``"auto"`` (Leiden when ``leidenalg`` is
            installed, else Louvain).
        levels: most levels of the hierarchy.
        resolution: modularity resolution (higher = smaller communities).
        min_size: communities with fewer members are dropped.
        seed: random seed (results are reproducible).

    Examples:
        >>> rels = [Relation("a", "b"), Relation("b", "c"), Relation("x", "y"), Relation("y", "z")]
        >>> comms, _ = detect_communities(list("abcxyz"), rels, algorithm="louvain", levels=1)
        >>> sorted(sorted(c.entity_ids) for c in comms)
        [['a', 'b', 'c'], ['x', 'y', 'z']]
    """
    if algorithm not in ("auto", "leiden", "louvain"):
        raise ConfigError(f"algorithm must be 'auto', 'leiden' or 'louvain', got {algorithm!r}")
    if levels < 1:
        raise ConfigError(f"levels must be >= 1, got {levels}")
    g = _graph(entity_ids, relations)
    if g.number_of_nodes() == 0:
        return [], algorithm
    if algorithm == "auto":
        try:
            import leidenalg  # noqa: F401

            algorithm = "leiden"
        except ImportError:
            algorithm = "louvain"
    if algorithm == "leiden":
        try:
            partitions = _leiden_levels(g, levels, resolution, seed)
        except ImportError as exc:
            from semrag.errors import missing_dependency

            raise missing_dependency("leidenalg", "graph") from exc
    else:
        partitions = _louvain_levels(g, levels, resolution, seed)
    pagerank = nx.pagerank(g, weight="weight") if g.number_of_edges() else {}
    out: list[Community] = []
    ids_by_level: list[dict[str, str]] = []
    for level, groups in enumerate(partitions):
        kept = sorted((c for c in groups if len(c) >= min_size), key=lambda c: (-len(c), min(c)))
        member_of: dict[str, str] = {}
        ranks = [sum(pagerank.get(e, 0.0) for e in c) for c in kept]
        top = max(ranks, default=0.0) or 1.0
        for i, (members, rank) in enumerate(zip(kept, ranks, strict=True)):
            cid = f"L{level}-{i}"
            for e in members:
                member_of[e] = cid
            out.append(Community(cid, level, tuple(sorted(members)), None, rank=rank / top))
        ids_by_level.append(member_of)
    # parents: the community one level up that holds the members
    with_parents = []
    for c in out:
        up = ids_by_level[c.level + 1] if c.level + 1 < len(ids_by_level) else {}
        parent = next((up[e] for e in c.entity_ids if e in up), None)
        with_parents.append(
            Community(c.id, c.level, c.entity_ids, parent, c.summary, c.title, c.rank)
        )
    return with_parents, algorithm


_REPORT_SCHEMA = {
    "type": "object",
    "required": ["title", "summary"],
    "properties": {"title": {"type": "string"}, "summary": {"type": "string", "minLength": 1}},
}
_REPORT_PROMPT = """Write a report on this community of a knowledge graph: a short title and
a summary of what its entities are and how they relate, using only the facts below.
ENTITIES:
{entities}
RELATIONS:
{relations}
Reply with JSON only: {{"title": "...", "summary": "..."}}
Your response:"""


def _extractive(
    members: Sequence[str],
    entities: dict[str, Entity],
    rels: list[Relation],
    degree: dict[str, float],
    n_sentences: int,
) -> tuple[str, str]:
    central = sorted(members, key=lambda e: (-degree.get(e, 0.0), e))
    names = [entities[e].name for e in central if e in entities]
    title = ", ".join(names[:3])
    sentences: list[str] = []
    for r in sorted(rels, key=lambda r: -r.weight):
        if r.evidence and r.evidence not in sentences:
            sentences.append(r.evidence)
        if len(sentences) >= n_sentences:
            break
    if not sentences:
        sentences = [
            entities[e].description for e in central if e in entities and entities[e].description
        ][:n_sentences]
    summary = f"Entities: {', '.join(names[:12])}." + (
        "" if not sentences else " " + " ".join(sentences)
    )
    return title, summary


def _relations_within(
    communities: Sequence[Community], relations: Sequence[Relation]
) -> list[list[Relation]]:
    """For each community, the relations with both ends among its members, in input order.

    One pass over the relations: an entity belongs to a few communities (one per level),
    so a relation meets only the communities of its source.
    """
    member_of: dict[str, list[int]] = {}
    for i, c in enumerate(communities):
        for e in dict.fromkeys(c.entity_ids):
            member_of.setdefault(e, []).append(i)
    within: list[list[Relation]] = [[] for _ in communities]
    for r in relations:
        sources = member_of.get(r.source)
        targets = member_of.get(r.target) if sources else None
        if targets:
            for i in sources:  # type: ignore[union-attr]
                if i in targets:
                    within[i].append(r)
    return within


def community_reports(
    communities: Sequence[Community],
    entities: Sequence[Entity],
    relations: Sequence[Relation],
    *,
    llm: LLM | None = None,
    n_sentences: int = 5,
    max_facts: int = 40,
    on_llm_error: str = "fallback",
) -> tuple[list[Community], list[str]]:
    """Titles and summaries for ``communities`` (LLM eq. 3, or extractive), and notes.

    With ``on_llm_error="fallback"`` an invalid LLM reply (after one retry) or a failed
    call falls back to the extractive report, and a note says so; with ``"raise"`` the
    error propagates.
    """
    check_param("community_reports", "on_llm_error", on_llm_error, [Options("fallback", "raise")])
    by_id = {e.id: e for e in entities}
    degree: dict[str, float] = {}
    for r in relations:
        degree[r.source] = degree.get(r.source, 0.0) + r.weight
        degree[r.target] = degree.get(r.target, 0.0) + r.weight
    out, notes = [], []
    for c, rels in zip(communities, _relations_within(communities, relations), strict=True):
        title, summary = _extractive(c.entity_ids, by_id, rels, degree, n_sentences)
        if llm is not None:
            prompt = _REPORT_PROMPT.format(
                entities="\n".join(
                    f"- {by_id[e].name} ({by_id[e].type}): {by_id[e].description}"
                    for e in c.entity_ids[:max_facts]
                    if e in by_id
                ),
                relations="\n".join(
                    f"- {by_id[r.source].name} {r.type} {by_id[r.target].name}: {r.evidence}"
                    for r in sorted(rels, key=lambda r: -r.weight)[:max_facts]
                    if r.source in by_id and r.target in by_id
                ),
            )
            reply = ask_json(llm, prompt, _REPORT_SCHEMA, on_error=on_llm_error)
            if isinstance(reply, LLMFailed):
                notes.append(f"{c.id}: report: {reply.reason}; extractive report used")
            else:
                title, summary = reply["title"].strip() or title, reply["summary"].strip()
        out.append(Community(c.id, c.level, c.entity_ids, c.parent, summary, title, c.rank))
    return out, notes
