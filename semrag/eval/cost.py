"""What an evaluated splitter or retriever costs, measured in the same run as its quality.

The evaluators time every step themselves (split, embed, each query). What a model is paid
for is counted by wrapping it: :class:`MeteredEmbedder` (calls, texts, characters: what a
hosted embedding bills) and :class:`MeteredLLM` (calls, and tokens in and out, counted in
the packaged encoder's word pieces: close to, not equal to, a provider's tokens). Give the
wrapped model to the retriever, and the wrapper to the evaluator's ``meters``: each row
gets the counts spent while it ran.

Examples:
    >>> from semrag.testing import FakeEmbedder
    >>> m = MeteredEmbedder(FakeEmbedder())
    >>> _ = m.embed(["one text", "two"])
    >>> m.snapshot()
    {'embed calls': 1, 'texts embedded': 2, 'chars embedded': 11}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from semrag.embeddings import Embedder, Vectors, as_embedder
from semrag.llm import LLM

__all__ = ["Meter", "MeteredEmbedder", "MeteredLLM", "latency_columns", "spent"]


@runtime_checkable
class Meter(Protocol):
    """Anything that counts what it spent: cumulative counts by name."""

    def snapshot(self) -> Mapping[str, float]:
        """The counts so far."""
        ...


class MeteredEmbedder:
    """An embedder that counts its calls, texts and characters.

    Args:
        embedder: a semrag embedder or anything :func:`~semrag.embeddings.as_embedder` takes.
    """

    def __init__(self, embedder: Embedder) -> None:
        self.inner = as_embedder(embedder)
        self.calls = self.texts = self.chars = 0

    def _count(self, texts: Sequence[str]) -> None:
        self.calls += 1
        self.texts += len(texts)
        self.chars += sum(map(len, texts))

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` with the wrapped embedder, counting them."""
        self._count(texts)
        return self.inner.embed(texts)

    async def aembed(self, texts: Sequence[str]) -> Vectors:
        """Async twin of :meth:`embed`."""
        self._count(texts)
        return await self.inner.aembed(texts)

    @property
    def model_name(self) -> str:
        """The wrapped embedder's name."""
        return self.inner.model_name

    def snapshot(self) -> dict[str, float]:
        """``embed calls``, ``texts embedded``, ``chars embedded`` so far."""
        return {
            "embed calls": self.calls,
            "texts embedded": self.texts,
            "chars embedded": self.chars,
        }


class MeteredLLM:
    """A semrag :class:`~semrag.llm.LLM` that counts its calls and tokens.

    Args:
        llm: the LLM (``complete`` and ``acomplete``).
        count_tokens: texts -> token counts; default the packaged static encoder's word
            pieces (MiniLM's), no network.
    """

    def __init__(self, llm: LLM, count_tokens: Callable[[Sequence[str]], list[int]] | None = None):
        self.inner = llm
        self._count_tokens = count_tokens
        self.calls = self.tokens_in = self.tokens_out = 0

    def _tokens(self, text: str) -> int:
        if self._count_tokens is None:
            from semrag.static_embedder import StaticEmbedder

            self._count_tokens = StaticEmbedder().tokenizer.count
        return int(self._count_tokens([text])[0])

    def _record(self, prompt: str, reply: str) -> str:
        self.calls += 1
        self.tokens_in += self._tokens(prompt)
        self.tokens_out += self._tokens(reply)
        return reply

    def complete(self, prompt: str) -> str:
        """The wrapped LLM's reply, counted."""
        return self._record(prompt, self.inner.complete(prompt))

    async def acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`complete`."""
        return self._record(prompt, await self.inner.acomplete(prompt))

    def snapshot(self) -> dict[str, float]:
        """``LLM calls``, ``LLM tokens in``, ``LLM tokens out`` so far."""
        return {
            "LLM calls": self.calls,
            "LLM tokens in": self.tokens_in,
            "LLM tokens out": self.tokens_out,
        }


def spent(
    meters: Mapping[str, Meter], before: Mapping[str, Mapping[str, float]]
) -> dict[str, float]:
    """Each meter's counts since ``before`` (its snapshots), as ``"<meter> <count>"`` columns."""
    out: dict[str, float] = {}
    for name, meter in meters.items():
        for key, value in meter.snapshot().items():
            out[f"{name} {key}"] = value - before[name].get(key, 0)
    return out


def latency_columns(seconds: Sequence[float]) -> dict[str, float]:
    """``query p50 ms`` and ``query p95 ms`` of per-query times, and ``first query ms``.

    The first query is kept apart, since a retriever may build its state on it.
    """
    if not seconds:
        return {}
    rest = np.asarray(seconds[1:] or seconds, np.float64) * 1000
    return {
        "first query ms": float(seconds[0] * 1000),
        "query p50 ms": float(np.percentile(rest, 50)),
        "query p95 ms": float(np.percentile(rest, 95)),
    }
