"""Graphs: the semantic similarity graph (SSG) and the knowledge graph (stores, records).

``Neo4jGraphStore`` needs ``pip install "semrag[neo4j]"``; it is imported lazily.
"""

from __future__ import annotations

from typing import Any

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
    "GraphStore",
    "InMemoryGraphStore",
    "Mention",
    "Neo4jGraphStore",
    "Relation",
    "SSGConfig",
    "SemanticSimilarityGraph",
    "Subgraph",
    "entity_key",
    "keyword_themes",
    "window_ranges",
]


def __getattr__(name: str) -> Any:
    if name == "Neo4jGraphStore":
        from semrag.graph.neo4j import Neo4jGraphStore

        return Neo4jGraphStore
    raise AttributeError(f"module 'semrag.graph' has no attribute {name!r}")
