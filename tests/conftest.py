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
