"""Bridges between LlamaIndex models and semrag's Embedder / LLM protocols."""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM as LIBaseLLM

from semrag.embeddings import BaseEmbedder

__all__ = ["LlamaIndexEmbedder", "LlamaIndexLLM", "to_embedder"]


class LlamaIndexEmbedder(BaseEmbedder):
    """Use any LlamaIndex ``BaseEmbedding`` as a semrag embedder (validated and cached).

    Args:
        embed_model: the LlamaIndex embedding model.
        cache_size: size of this bridge's embedding cache.
    """

    def __init__(self, embed_model: BaseEmbedding, *, cache_size: int = 10_000) -> None:
        if not isinstance(embed_model, BaseEmbedding):
            raise TypeError(
                f"expected a LlamaIndex BaseEmbedding, got {type(embed_model).__name__}"
            )
        super().__init__(cache_size=cache_size)
        self.embed_model = embed_model
        self.name = type(embed_model).__name__

    def _embed_batch(self, texts: list[str]) -> Any:
        return self.embed_model.get_text_embedding_batch(texts)

    async def _aembed_batch(self, texts: list[str]) -> Any:
        # BaseEmbedding's default async path calls the sync single-text method once per
        # text on the event loop; only a model that overrides an async method is awaited.
        if _has_native_async(self.embed_model):
            return await self.embed_model.aget_text_embedding_batch(texts)
        return await asyncio.to_thread(self.embed_model.get_text_embedding_batch, texts)

    def __repr__(self) -> str:
        return f"LlamaIndexEmbedder({self.name})"


def _has_native_async(model: BaseEmbedding) -> bool:
    cls = type(model)
    return any(
        getattr(cls, name) is not getattr(BaseEmbedding, name)
        for name in ("_aget_text_embedding", "_aget_text_embeddings")
    )


def to_embedder(obj: Any) -> Any:
    """Wrap a LlamaIndex ``BaseEmbedding``; pass anything else through to the core."""
    return LlamaIndexEmbedder(obj) if isinstance(obj, BaseEmbedding) else obj


class LlamaIndexLLM:
    """Use a LlamaIndex LLM as a semrag :class:`~semrag.llm.LLM`.

    Args:
        llm: any LlamaIndex ``LLM`` (e.g. ``MockLLM``, ``OpenAI``).
    """

    def __init__(self, llm: LIBaseLLM) -> None:
        if not isinstance(llm, LIBaseLLM):
            raise TypeError(f"expected a LlamaIndex LLM, got {type(llm).__name__}")
        self.llm = llm

    def complete(self, prompt: str) -> str:
        """Send ``prompt`` and return the completion's text."""
        return self.llm.complete(prompt).text

    async def acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`complete`."""
        return (await self.llm.acomplete(prompt)).text

    def __repr__(self) -> str:
        return f"LlamaIndexLLM({type(self.llm).__name__})"


def to_llm(obj: Any) -> Any:
    """Wrap a LlamaIndex LLM; pass a semrag LLM (or ``None``) through."""
    return LlamaIndexLLM(obj) if isinstance(obj, LIBaseLLM) else obj
