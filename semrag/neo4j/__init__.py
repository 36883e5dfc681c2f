"""Neo4j as semrag's backend: the knowledge graph, the dense channel, an index's writer and reader.

Needs ``pip install "semrag[neo4j]"``. One package by role (the Cypher, the session with its
one error map, and one module per class a user builds):

* :class:`Neo4jGraphStore` (``graph_store``): a :class:`~semrag.graph.GraphStore` for the
  knowledge graph;
* :class:`Neo4jVectorClient` (``vector_client``): the dense channel of a
  :class:`~semrag.SemanticIndex` in Neo4j's vector index;
* :class:`Neo4jIndexStore` (``index_writer``): writes every change of an index to Neo4j;
* :class:`Neo4jIndex` (``index_reader``): serves that index (a
  :class:`~semrag.index.reader.CorpusReader`) with no corpus in process; its similarity
  graph is read node by node (``remote_ssg``).

Every class here talks through one :class:`~semrag.neo4j._session.Neo4jSession` (the
store's): driver errors become :class:`~semrag.errors.StoreUnavailableError` or
:class:`~semrag.errors.StoreError` in one place.
"""

from __future__ import annotations

from semrag.neo4j.graph_store import Neo4jGraphStore
from semrag.neo4j.index_reader import Neo4jIndex
from semrag.neo4j.index_writer import Neo4jIndexStore
from semrag.neo4j.vector_client import Neo4jVectorClient

__all__ = [
    "Neo4jGraphStore",
    "Neo4jIndex",
    "Neo4jIndexStore",
    "Neo4jVectorClient",
]
