"""What the evaluation needs of a framework's splitters, retrievers, embedders and LLMs.

The core imports no framework. Each adapter package declares a *bridge* under the
entry-point group ``semrag.eval_bridges`` (``pyproject.toml``): an object whose methods
turn one of its framework's objects into what :mod:`semrag.eval` runs, or return ``None``
for an object that is not its framework's. ``langchain_semrag`` bridges LangChain's
``TextSplitter``, ``BaseRetriever``, ``Embeddings`` and chat models; ``llama_index_semrag``
LlamaIndex's ``NodeParser``, retrievers, embeddings and LLMs. A bridge whose framework is not
installed is skipped (no object of that framework can exist then).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from typing import Any, Protocol

from semrag.embeddings import BaseEmbedder
from semrag.llm import LLM

__all__ = ["GROUP", "Bridge", "Piece", "bridges"]

GROUP = "semrag.eval_bridges"


class Piece(Protocol):
    """One chunk a splitter made: its text, and its offset in the document when known."""

    @property
    def text(self) -> str:
        """The chunk's text."""

    @property
    def start(self) -> int | None:
        """Its offset in the document, if the splitter says."""

    @property
    def embed_text(self) -> str | None:
        """What an index embeds for it, when that is not its text."""


class Bridge(Protocol):
    """Turns a framework's objects into the evaluation's (``None``: not this framework's)."""

    def splitter(self, obj: object) -> Callable[[str], Sequence[Piece]] | None:
        """A function from a text to its chunks."""

    def retriever(self, obj: object) -> Callable[[str], list[str]] | None:
        """A function from a question to the ids of the documents found, best first."""

    def embedder(self, obj: object) -> BaseEmbedder | None:
        """A semrag embedder over the framework's embedding model."""

    def llm(self, obj: object) -> LLM | None:
        """A semrag LLM over the framework's language model."""


@functools.cache
def bridges() -> tuple[Bridge, ...]:
    """The installed bridges (loaded once)."""
    found: list[Bridge] = []
    for point in sorted(entry_points(group=GROUP), key=lambda p: p.name):
        try:
            found.append(point.load())
        except ImportError:  # its framework is not installed: nothing to bridge
            continue
    return tuple(found)


def first(method: str, obj: object) -> Any:
    """What the first bridge that knows ``obj`` makes of it with ``method`` (or ``None``)."""
    for bridge in bridges():
        made = getattr(bridge, method)(obj)
        if made is not None:
            return made
    return None
