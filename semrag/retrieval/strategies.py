"""The strategies :class:`~semrag.retrieval.GraphRetriever` builds, by name: one table.

A retriever class becomes a strategy by one registration, beside its class::

    @register("keywords")
    class KeywordRetriever:
        def __init__(self, index, *, k=10, boost=2.0): ...
        def retrieve(self, query, *, k=None): ...
        async def aretrieve(self, query, *, k=None): ...

``GraphRetriever(index, strategy="keywords", boost=3.0)`` then builds it (each keyword
checked against the class's signature), and so do ``langchain_semrag.GraphRetriever`` and
``llama_index_semrag.GraphRetriever``, which pass ``strategy`` and the keywords on. The
built-in strategies register themselves the same way (``"ppr"``, ``"sketch"``,
``"local"``, ``"global"``, ``"ssg:<algorithm>"``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, KeysView, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

from semrag._validation import Options, check_param
from semrag.errors import ConfigError

__all__ = ["STRATEGIES", "Strategy", "named_parameters", "register", "strategy"]

_R = TypeVar("_R", bound=type)


def named_parameters(cls: type) -> list[inspect.Parameter]:
    """A class's constructor parameters, its ``*args`` / ``**kwargs`` catch-alls left out."""
    return [
        p
        for p in inspect.signature(cls).parameters.values()
        if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    ]


@dataclass(frozen=True, slots=True)
class Strategy:
    """A registered strategy: the retriever class it builds and what it fixes."""

    name: str
    retriever: type
    """The class built, as ``retriever(index, [graph=graph,] k=k, **fixed, **options)``."""
    needs_graph: bool
    """It cannot run without a :class:`~semrag.graph.KnowledgeGraph` (``graph=``)."""
    fixed: Mapping[str, object]
    """Keyword arguments the strategy sets (``"local"``: ``strategy="local"``)."""

    def options(self) -> set[str]:
        """The keywords a caller may pass on (the class's, less what the strategy sets)."""
        return {p.name for p in named_parameters(self.retriever)} - {
            "index",
            "graph",
            "k",
            *self.fixed,
        }

    def build(self, index: Any, graph: Any, k: int, options: Mapping[str, object]) -> Any:
        """The retriever, over ``index`` (and ``graph`` where the class takes one).

        One graph can be handed to every strategy; those that read none leave it.

        Raises:
            ConfigError: if the strategy needs a graph and has none.
        """
        takes_graph = "graph" in {p.name for p in named_parameters(self.retriever)}
        if graph is None and self.needs_graph:
            raise ConfigError(f"strategy {self.name!r} needs a KnowledgeGraph (graph=...)")
        with_graph = {"graph": graph} if takes_graph else {}
        return self.retriever(index, **with_graph, k=k, **self.fixed, **options)


_TABLE: dict[str, Strategy] = {}

STRATEGIES: KeysView[str] = _TABLE.keys()
"""Every value ``GraphRetriever(strategy=)`` accepts (a live view: registrations join it)."""


def register(name: str, *, needs_graph: bool = False, **fixed: object) -> Callable[[_R], _R]:
    """A class decorator: the class is the strategy ``name`` of ``GraphRetriever``.

    Args:
        name: the strategy's name (``GraphRetriever(strategy=name)``).
        needs_graph: the class cannot run without ``graph=``.
        **fixed: keyword arguments the strategy passes to the class (a caller may not).

    Raises:
        ConfigError: if ``name`` is another class's strategy already.
    """

    def add(cls: _R) -> _R:
        known = _TABLE.get(name)
        if known is not None and known.retriever is not cls:
            raise ConfigError(
                f"strategy {name!r} is {known.retriever.__name__}'s; pick another name"
            )
        _TABLE[name] = Strategy(name, cls, needs_graph, MappingProxyType(dict(fixed)))
        return cls

    return add


def strategy(name: str) -> Strategy:
    """The strategy registered as ``name``.

    Raises:
        ConfigError: naming the registered strategies, if none is.
    """
    return _TABLE[check_param("GraphRetriever", "strategy", name, [Options(*_TABLE)])]
