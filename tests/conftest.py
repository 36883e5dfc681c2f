from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

settings.register_profile(
    "default",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("ci", parent=settings.get_profile("default"), max_examples=120)
settings.load_profile("ci" if os.environ.get("CI") else "default")


@pytest.fixture(scope="session")
def minilm():
    """The packaged MiniLM, loaded once per session (offline)."""
    from semrag.embeddings import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder()
    _ = emb.model
    return emb


@pytest.fixture(scope="session")
def minilm_tokenizer(minilm):
    return minilm.tokenizer


@pytest.fixture()
def fake():
    from semrag.testing import FakeEmbedder

    return FakeEmbedder()


@pytest.fixture(scope="session")
def neo4j_server():
    """A real Neo4j 5.26 Community server on a free loopback port, for the whole session."""
    from tests.neo4j_server.server import Neo4jTestServer

    server = Neo4jTestServer()
    server.start()
    yield server
    server.cleanup()


def pytest_sessionfinish(session, exitstatus):
    """In CI, a skipped Neo4j test is a failure: the real server must have run them."""
    if not os.environ.get("CI"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    neo4j = [r for r in skipped if "neo4j" in getattr(r, "keywords", {})]
    if neo4j:
        reporter.write_line(f"CI: {len(neo4j)} Neo4j test(s) were skipped; failing the run")
        session.exitstatus = 1
