"""The knowledge graph: extraction, stores, records, communities (the SSG is in ``semrag.index``).

The Neo4j backend is :mod:`semrag.neo4j`; ``semrag.graph.Neo4jGraphStore`` and the other
Neo4j names still resolve there, with a ``DeprecationWarning``, until 0.3.
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
    GraphReads,
    GraphStore,
    GraphWrites,
    Mention,
    Relation,
    Subgraph,
)

__all__ = [
    "ChunkRef",
    "Community",
    "Entity",
    "Extraction",
    "GraphReads",
    "GraphStore",
    "GraphWrites",
    "HeuristicGraphExtractor",
    "InMemoryGraphStore",
    "KnowledgeGraph",
    "LLMGraphExtractor",
    "Mention",
    "Relation",
    "Subgraph",
    "community_reports",
    "detect_communities",
    "merge_extractions",
    "resolve_entities",
]


_MOVED = {"Neo4jGraphStore", "Neo4jIndex", "Neo4jIndexStore", "Neo4jVectorClient"}


def __getattr__(name: str) -> Any:
    if name in _MOVED:  # moved to semrag.neo4j in 0.3.0.dev
        import importlib
        import warnings

        warnings.warn(
            f"semrag.graph.{name} moved to semrag.neo4j.{name}; import it from there",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module("semrag.neo4j"), name)
    raise AttributeError(f"module 'semrag.graph' has no attribute {name!r}")
