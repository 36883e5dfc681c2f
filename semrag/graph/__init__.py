"""Graphs: the semantic similarity graph (SSG) and the knowledge graph (stores, records).

``Neo4jGraphStore`` and ``Neo4jVectorClient`` need ``pip install "semrag[neo4j]"``; they
are imported lazily.
"""

from __future__ import annotations

from typing import Any

from semrag.graph.communities import community_reports, detect_communities
from semrag.graph.extract import (
    Extraction,
    HeuristicGraphExtractor,
    LLMGraphExtractor,
    merge_extractions,
    resolve_entities,
)
from semrag.graph.knowledge import KnowledgeGraph
from semrag.graph.memory import InMemoryGraphStore
from semrag.graph.ssg import SemanticSimilarityGraph, SSGConfig, keyword_themes, window_ranges
from semrag.graph.types import (
    ChunkRef,
    Community,
    Entity,
    GraphStore,
    Mention,
    Relation,
    Subgraph,
    entity_key,
)

__all__ = [
    "ChunkRef",
    "Community",
    "Entity",
    "Extraction",
    "GraphStore",
    "HeuristicGraphExtractor",
    "InMemoryGraphStore",
    "KnowledgeGraph",
    "LLMGraphExtractor",
    "Mention",
    "Neo4jGraphStore",
    "Neo4jVectorClient",
    "Relation",
    "SSGConfig",
    "SemanticSimilarityGraph",
    "Subgraph",
    "community_reports",
    "detect_communities",
    "entity_key",
    "keyword_themes",
    "merge_extractions",
    "resolve_entities",
    "window_ranges",
]


def __getattr__(name: str) -> Any:
    if name == "Neo4jGraphStore":
        from semrag.graph.neo4j import Neo4jGraphStore

        return Neo4jGraphStore
    if name == "Neo4jVectorClient":
        from semrag.graph.neo4j import Neo4jVectorClient

        return Neo4jVectorClient
    raise AttributeError(f"module 'semrag.graph' has no attribute {name!r}")
