"""An embedder that records every text it embeds: for tests that count what a step embeds."""

from __future__ import annotations

from semrag.testing import FakeEmbedder


class CountingEmbedder(FakeEmbedder):
    """:class:`FakeEmbedder` that appends each text it embeds to :attr:`embedded`."""

    def __init__(self, dim: int = 256) -> None:
        super().__init__(dim=dim)
        self.embedded: list[str] = []

    def _embed_batch(self, texts: list[str]):  # noqa: ANN202 - the parent's return
        self.embedded.extend(texts)
        return super()._embed_batch(texts)


class OtherFake(FakeEmbedder):
    """Another model of the same size: words hashed with a salt, so another vector space."""

    def _bucket(self, word: str) -> int:
        return super()._bucket("salt:" + word)

    @property
    def model_name(self) -> str:
        return f"OtherFake(dim={self._dim})"

    def __repr__(self) -> str:
        return f"OtherFake(dim={self._dim})"
