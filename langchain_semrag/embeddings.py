"""Bridges between LangChain models and semrag's Embedder / LLM protocols."""

from __future__ import annotations

from typing import Any

import numpy.typing as npt
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseLanguageModel
from langchain_core.language_models.llms import LLM as LCBaseLLM
from langchain_core.messages import BaseMessage

from semrag._validation import check_query
from semrag.embeddings import BaseEmbedder, Embedder, as_embedder
from semrag.errors import ConfigError
from semrag.llm import LLM

__all__ = ["LangChainEmbedder", "LangChainLLM", "SemragEmbeddings", "SemragLLM", "to_embedder"]


class LangChainEmbedder(BaseEmbedder):
    """Use any LangChain ``Embeddings`` as a semrag embedder (validated and cached).

    Args:
        embeddings: the LangChain embedding model.
        cache_size: size of this bridge's embedding cache.
    """

    def __init__(self, embeddings: Embeddings, *, cache_size: int = 10_000) -> None:
        if not isinstance(embeddings, Embeddings):
            raise ConfigError(f"expected a LangChain Embeddings, got {type(embeddings).__name__}")
        super().__init__(cache_size=cache_size)
        self.embeddings = embeddings
        self.name = type(embeddings).__name__

    def _embed_batch(self, texts: list[str]) -> npt.ArrayLike:
        return self.embeddings.embed_documents(texts)

    async def _aembed_batch(self, texts: list[str]) -> npt.ArrayLike:
        return await self.embeddings.aembed_documents(texts)

    @property
    def model_name(self) -> str:
        """The class and, where it names one, its model (``model_name`` or ``model``)."""
        # Embeddings declares no model field; the common integrations name it one of two ways
        model = getattr(self.embeddings, "model_name", None) or getattr(
            self.embeddings, "model", None
        )
        return f"{self.name}({model})" if isinstance(model, str) and model else self.name

    def __repr__(self) -> str:
        return f"LangChainEmbedder({self.name})"


class SemragEmbeddings(Embeddings):
    """semrag's embedder as LangChain ``Embeddings``: the packaged all-MiniLM-L6-v2 by default.

    Use it for a vector store next to semrag's components, so both embed with the same
    offline model (no OpenAI key, no download). Passed back to a semrag component it is
    unwrapped, so the component keeps the embedder's tokenizer and cache.

    Args:
        embedder: a semrag embedder; ``None`` for the packaged MiniLM (loaded on first use).

    Examples:
        >>> from semrag.testing import FakeEmbedder
        >>> len(SemragEmbeddings(FakeEmbedder(dim=8)).embed_query("bees"))
        8
    """

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = as_embedder(embedder)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Vectors of ``texts`` (unit length)."""
        return self.embedder.embed(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Vector of one query (empty, whitespace or invalid Unicode: ``ConfigError``)."""
        return self.embedder.embed([check_query("SemragEmbeddings", text)])[0].tolist()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents` (off the event loop)."""
        return (await self.embedder.aembed(texts)).tolist()

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query`."""
        return (await self.embedder.aembed([check_query("SemragEmbeddings", text)]))[0].tolist()

    def __repr__(self) -> str:
        return f"SemragEmbeddings({self.embedder!r})"


def to_embedder(obj: Embeddings | Embedder | None) -> Embedder | None:
    """The core embedder for ``obj``.

    :class:`SemragEmbeddings` is unwrapped, any other LangChain ``Embeddings`` wrapped, and
    anything else passed through to the core.
    """
    if isinstance(obj, SemragEmbeddings):
        return obj.embedder
    return LangChainEmbedder(obj) if isinstance(obj, Embeddings) else obj


def _text_of(reply: Any) -> str:
    if isinstance(reply, BaseMessage):
        content = reply.content
        if isinstance(content, str):
            return content
        parts = [p if isinstance(p, str) else p.get("text", "") for p in content]
        return "".join(parts)
    return str(reply)


class LangChainLLM:
    """Use a LangChain chat model or LLM as a semrag :class:`~semrag.llm.LLM`.

    Args:
        model: any ``BaseLanguageModel`` (chat models and completion LLMs alike).
    """

    def __init__(self, model: BaseLanguageModel) -> None:
        if not isinstance(model, BaseLanguageModel):
            raise ConfigError(f"expected a LangChain language model, got {type(model).__name__}")
        self.model = model

    def complete(self, prompt: str) -> str:
        """Send ``prompt`` and return the reply's text."""
        return _text_of(self.model.invoke(prompt))

    async def acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`complete`."""
        return _text_of(await self.model.ainvoke(prompt))

    def __repr__(self) -> str:
        return f"LangChainLLM({type(self.model).__name__})"


def _cut_at_stop(text: str, stop: list[str] | None) -> str:
    """``text`` up to the first of the ``stop`` strings (LangChain's stop-sequence rule)."""
    ends = [i for i in (text.find(s) for s in stop or []) if i >= 0]
    return text[: min(ends)] if ends else text


class SemragLLM(LCBaseLLM):
    """A semrag :class:`~semrag.llm.LLM` as a LangChain LLM.

    For a local model (:class:`semrag.local_llm.TransformersLLM`) in an LCEL chain; stop
    sequences cut the reply. Passed back to a semrag component it is unwrapped.

    Args:
        llm: the semrag LLM (``complete`` / ``acomplete``).

    Examples:
        >>> from semrag.testing import FakeLLM
        >>> SemragLLM(llm=FakeLLM(["hello. more"])).invoke("hi", stop=["."])
        'hello'
    """

    llm: Any  # a semrag LLM (a pydantic field: a Protocol has no schema)

    @property
    def _llm_type(self) -> str:
        return "semrag"

    def _call(
        self,
        prompt: str,
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> str:
        return _cut_at_stop(self.llm.complete(prompt), stop)

    async def _acall(
        self,
        prompt: str,
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> str:
        return _cut_at_stop(await self.llm.acomplete(prompt), stop)


def to_llm(obj: BaseLanguageModel | LLM | None) -> LLM | None:
    """Wrap a LangChain language model (a :class:`SemragLLM` is unwrapped); pass semrag LLMs."""
    if isinstance(obj, SemragLLM):
        return obj.llm
    return LangChainLLM(obj) if isinstance(obj, BaseLanguageModel) else obj
