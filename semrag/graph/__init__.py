"""The knowledge graph: extraction, stores, records, communities (the SSG is in ``semrag.index``).

``Neo4jGraphStore``, ``Neo4jVectorClient``, ``Neo4jIndexStore`` and ``Neo4jIndex`` need
``pip install "semrag[neo4j]"``; they are imported lazily.
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
from semrag.graph.types import (
    ChunkRef,
    Community,
    Entity,
    GraphStore,
    Mention,
    Relation,
    Subgraph,
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
    "Neo4jIndex",
    "Neo4jIndexStore",
    "Neo4jVectorClient",
    "Relation",
    "Subgraph",
    "community_reports",
    "detect_communities",
    "merge_extractions",
    "resolve_entities",
]


_LAZY = {  # need the neo4j driver: imported on first use
    "Neo4jGraphStore": "semrag.graph.neo4j",
    "Neo4jVectorClient": "semrag.graph.neo4j",
    "Neo4jIndex": "semrag.graph.neo4j_index",
    "Neo4jIndexStore": "semrag.graph.neo4j_index",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'semrag.graph' has no attribute {name!r}")
