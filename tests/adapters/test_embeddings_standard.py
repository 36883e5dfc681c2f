"""langchain-tests' standard Embeddings suites for SemragEmbeddings (unit and integration)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_tests.integration_tests import EmbeddingsIntegrationTests
from langchain_tests.unit_tests import EmbeddingsUnitTests

from langchain_semrag import SemragEmbeddings
from semrag.testing import FakeEmbedder


class TestSemragEmbeddingsUnit(EmbeddingsUnitTests):
    @property
    def embeddings_class(self) -> type[SemragEmbeddings]:
        return SemragEmbeddings

    @property
    def embedding_model_params(self) -> dict[str, Any]:
        return {"embedder": FakeEmbedder(dim=16)}


@pytest.mark.model
class TestSemragEmbeddingsIntegration(EmbeddingsIntegrationTests):
    """The packaged all-MiniLM-L6-v2, offline (no parameters: the default)."""

    @property
    def embeddings_class(self) -> type[SemragEmbeddings]:
        return SemragEmbeddings
