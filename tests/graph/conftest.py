"""Fixtures of the Neo4j index tests: a store on the suite's server, cleared around each test."""

from __future__ import annotations

import pytest


@pytest.fixture
def graph_store(neo4j_server):
    from semrag.neo4j import Neo4jGraphStore, Neo4jIndexStore

    store = Neo4jGraphStore(neo4j_server.uri, neo4j_server.user, neo4j_server.password)
    Neo4jIndexStore(store).clear()
    yield store
    Neo4jIndexStore(store).clear()
    store.close()
