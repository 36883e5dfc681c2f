"""Deterministic stand-ins for an embedding model and an LLM."""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from semrag.embeddings import BaseEmbedder

__all__ = ["FakeEmbedder", "FakeLLM"]

_WORD = re.compile(r"\w+")


class FakeEmbedder(BaseEmbedder):
    """Bag-of-words vectors from hashed, lower-cased words.

    Two texts' cosine similarity is (roughly) the overlap of their word multisets; a
    text with no word maps to a fixed unit vector. Deterministic across runs and machines.

    Args:
        dim: vector dimension.
        cache_size: size of the instance's cache.

    Examples:
        >>> e = FakeEmbedder(dim=64)
        >>> float(e.embed(["red apple", "red apple"]).prod(axis=0).sum().round(3))
        1.0
    """

    name = "FakeEmbedder"

    def __init__(self, dim: int = 256, *, cache_size: int = 10_000) -> None:
        super().__init__(cache_size=cache_size, dim=dim)
        self.calls = 0

    def _bucket(self, word: str) -> int:
        digest = hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        return int.from_bytes(digest, "little") % (self.dim - 1) + 1

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        assert self._dim is not None
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _WORD.findall(text.lower())
            if not words:
                out[row, 0] = 1.0
            for w in words:
                out[row, self._bucket(w)] += 1.0
        return out

    @property
    def model_name(self) -> str:
        """``FakeEmbedder(dim=N)``: every fake of one dimension is the same model."""
        return repr(self)

    def __repr__(self) -> str:
        return f"FakeEmbedder(dim={self._dim})"


class FakeLLM:
    """An LLM that replays scripted replies.

    Args:
        replies: replies returned in order, or a callable ``prompt -> reply``.
        cycle: start again from the first reply when the script runs out; otherwise an
            exhausted script raises ``RuntimeError``.

    Attributes:
        prompts: every prompt received, in order.
    """

    def __init__(self, replies: Iterable[str] | Callable[[str], str], *, cycle: bool = False):
        self._fn = replies if callable(replies) else None
        self._replies: Sequence[str] = [] if callable(replies) else list(replies)
        self._cycle = cycle
        self.prompts: list[str] = []

    def complete(self, prompt: str) -> str:
        """Return the next scripted reply."""
        return self._reply(prompt)

    def _reply(self, prompt: str) -> str:
        # A list lookup (or the script function): nothing here waits, so both twins use it.
        self.prompts.append(prompt)
        if self._fn is not None:
            return self._fn(prompt)
        i = len(self.prompts) - 1
        if i >= len(self._replies):
            if not self._cycle or not self._replies:
                raise RuntimeError(f"FakeLLM script exhausted after {len(self._replies)} replies")
            i %= len(self._replies)
        return self._replies[i]

    async def acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`complete`."""
        await asyncio.sleep(0)
        return self._reply(prompt)

    def __repr__(self) -> str:
        return f"FakeLLM(replies={len(self._replies)}, cycle={self._cycle})"


def boundary_model_for(embedder: BaseEmbedder, kind: str = "psc") -> Any:
    """The shipped PSC or MFC weights, declared to be for ``embedder``.

    Shipped weights check that they run on the encoder they were trained on, so a test that
    drives the PSC/MFC pipeline with a fake embedder of the same dimension passes this as
    ``model=``. The probabilities mean nothing for a fake embedder; the pipeline (batching,
    offsets, caps, adapters) is what such a test exercises.

    Raises:
        ConfigError: if the embedder's dimension is not the weights' (384).
    """
    from semrag.chunking.boundary import shipped_weights
    from semrag.chunking.boundary.models import encoder_identity, load_boundary_model

    model = load_boundary_model(shipped_weights(kind), expected_dim=embedder.dim)
    model.encoder = encoder_identity(embedder)
    return model
