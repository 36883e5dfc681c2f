"""Bridges between LlamaIndex models and semrag's Embedder / LLM protocols."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy.typing as npt
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.llms import LLM as LIBaseLLM
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback

from semrag._validation import check_query
from semrag.embeddings import BaseEmbedder, Embedder, as_embedder
from semrag.errors import ConfigError
from semrag.llm import LLM as CoreLLM

__all__ = ["LlamaIndexEmbedder", "LlamaIndexLLM", "SemragEmbedding", "SemragLLM", "to_embedder"]


class LlamaIndexEmbedder(BaseEmbedder):
    """Use any LlamaIndex ``BaseEmbedding`` as a semrag embedder (validated and cached).

    Args:
        embed_model: the LlamaIndex embedding model.
        cache_size: size of this bridge's embedding cache.
    """

    def __init__(self, embed_model: BaseEmbedding, *, cache_size: int = 10_000) -> None:
        if not isinstance(embed_model, BaseEmbedding):
            raise ConfigError(
                f"expected a LlamaIndex BaseEmbedding, got {type(embed_model).__name__}"
            )
        super().__init__(cache_size=cache_size)
        self.embed_model = embed_model
        self.name = type(embed_model).__name__

    def _embed_batch(self, texts: list[str]) -> npt.ArrayLike:
        return self.embed_model.get_text_embedding_batch(texts)

    async def _aembed_batch(self, texts: list[str]) -> npt.ArrayLike:
        # BaseEmbedding's default async path calls the sync single-text method once per
        # text on the event loop; only a model that overrides an async method is awaited.
        if _has_native_async(self.embed_model):
            return await self.embed_model.aget_text_embedding_batch(texts)
        return await asyncio.to_thread(self.embed_model.get_text_embedding_batch, texts)

    @property
    def model_name(self) -> str:
        """The class and its ``model_name`` (e.g. ``HuggingFaceEmbedding(BAAI/bge-small-en)``)."""
        return f"{self.name}({self.embed_model.model_name})"

    def __repr__(self) -> str:
        return f"LlamaIndexEmbedder({self.name})"


def _has_native_async(model: BaseEmbedding) -> bool:
    cls = type(model)
    return any(
        getattr(cls, name) is not getattr(BaseEmbedding, name)
        for name in ("_aget_text_embedding", "_aget_text_embeddings")
    )


class SemragEmbedding(BaseEmbedding):
    """semrag's embedder as a LlamaIndex ``BaseEmbedding``: the packaged all-MiniLM-L6-v2.

    Give it to ``VectorStoreIndex(..., embed_model=...)`` or ``Settings.embed_model`` so
    LlamaIndex embeds with the same offline model as semrag (no OpenAI key, no download).
    Passed back to a semrag component it is unwrapped, keeping the tokenizer and cache.

    Args:
        embedder: a semrag embedder; ``None`` for the packaged MiniLM (loaded on first use).
        **kwargs: ``BaseEmbedding`` fields (``embed_batch_size``, ``callback_manager``, ...).

    Examples:
        >>> from semrag.testing import FakeEmbedder
        >>> len(SemragEmbedding(FakeEmbedder(dim=8)).get_query_embedding("bees"))
        8
    """

    _embedder: BaseEmbedder = PrivateAttr()

    def __init__(self, embedder: Embedder | None = None, **kwargs: Any) -> None:
        core = as_embedder(embedder)
        super().__init__(model_name=core.name, **kwargs)
        self._embedder = core

    @property
    def embedder(self) -> BaseEmbedder:
        """The semrag embedder doing the work."""
        return self._embedder

    @classmethod
    def class_name(cls) -> str:
        """Name used by LlamaIndex serialisation."""
        return "SemragEmbedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embedder.embed([check_query("SemragEmbedding", query)])[0].tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embedder.embed([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._embedder.embed(texts).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return (await self._embedder.aembed([check_query("SemragEmbedding", query)]))[0].tolist()

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return (await self._embedder.aembed([text]))[0].tolist()

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return (await self._embedder.aembed(texts)).tolist()


def to_embedder(obj: BaseEmbedding | Embedder | None) -> Embedder | None:
    """The core embedder for ``obj``.

    :class:`SemragEmbedding` is unwrapped, any other LlamaIndex ``BaseEmbedding`` wrapped,
    and anything else passed through to the core.
    """
    if isinstance(obj, SemragEmbedding):
        return obj.embedder
    return LlamaIndexEmbedder(obj) if isinstance(obj, BaseEmbedding) else obj


class LlamaIndexLLM:
    """Use a LlamaIndex LLM as a semrag :class:`~semrag.llm.LLM`.

    Args:
        llm: any LlamaIndex ``LLM`` (e.g. ``MockLLM``, ``OpenAI``).
    """

    def __init__(self, llm: LIBaseLLM) -> None:
        if not isinstance(llm, LIBaseLLM):
            raise ConfigError(f"expected a LlamaIndex LLM, got {type(llm).__name__}")
        self.llm = llm

    def complete(self, prompt: str) -> str:
        """Send ``prompt`` and return the completion's text."""
        return self.llm.complete(prompt).text

    async def acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`complete`."""
        return (await self.llm.acomplete(prompt)).text

    def __repr__(self) -> str:
        return f"LlamaIndexLLM({type(self.llm).__name__})"


class SemragLLM(CustomLLM):
    """A semrag :class:`~semrag.llm.LLM` as a LlamaIndex ``LLM``.

    For a local model (:class:`semrag.local_llm.TransformersLLM`) in a LlamaIndex query
    engine or ``Settings.llm``. Passed back to a semrag component it is unwrapped.

    Args:
        llm: the semrag LLM (``complete`` / ``acomplete``).

    Examples:
        >>> from semrag.testing import FakeLLM
        >>> SemragLLM(FakeLLM(["hello"])).complete("hi").text
        'hello'
    """

    _llm: CoreLLM = PrivateAttr()

    def __init__(self, llm: Any, **kwargs: Any) -> None:
        if not isinstance(llm, CoreLLM):
            raise ConfigError(
                f"expected a semrag LLM (complete and acomplete), got {type(llm).__name__}"
            )
        super().__init__(**kwargs)
        self._llm = llm

    @property
    def llm(self) -> CoreLLM:
        """The semrag LLM."""
        return self._llm

    @property
    def metadata(self) -> LLMMetadata:
        """LlamaIndex's description of the model (a completion model)."""
        return LLMMetadata(model_name=repr(self._llm), is_chat_model=False)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """The model's reply."""
        return CompletionResponse(text=self._llm.complete(prompt))

    @llm_completion_callback()
    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        """Async twin of :meth:`complete`."""
        return CompletionResponse(text=await self._llm.acomplete(prompt))

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        """The reply as one chunk (the semrag protocol does not stream)."""
        text = self._llm.complete(prompt)
        yield CompletionResponse(text=text, delta=text)


def to_llm(obj: LIBaseLLM | CoreLLM | None) -> CoreLLM | None:
    """Wrap a LlamaIndex LLM (a :class:`SemragLLM` is unwrapped); pass semrag LLMs through."""
    if isinstance(obj, SemragLLM):
        return obj.llm
    return LlamaIndexLLM(obj) if isinstance(obj, LIBaseLLM) else obj
