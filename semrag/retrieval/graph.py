"""One front door to every graph retrieval strategy."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, TypeVar

from semrag._rwlock import ProvidesReader, as_reader
from semrag._validation import check_keywords
from semrag.index.reader import CorpusReader
from semrag.retrieval import community, sketch, ssg  # noqa: F401 - their strategies register
from semrag.retrieval.ppr import PPRRetriever
from semrag.retrieval.strategies import STRATEGIES, named_parameters
from semrag.retrieval.strategies import strategy as strategy_named
from semrag.types import Retriever, ScoredChunk

if TYPE_CHECKING:
    from semrag.graph.knowledge import KnowledgeGraph
__all__ = ["STRATEGIES", "GraphRetriever", "construct", "parameters"]

_R = TypeVar("_R")


def construct(retriever: type[_R], /, **kwargs: Any) -> _R:
    """``retriever(**kwargs)``, where an unknown keyword is a ``ConfigError`` (with a hint).

    What both adapters build their core retriever with. A class with a ``**`` catch-all
    (old spellings, a strategy's options) checks its keywords itself.
    """
    params = inspect.signature(retriever).parameters.values()
    if not any(p.kind is p.VAR_KEYWORD for p in params):
        check_keywords(f"{retriever.__name__}()", [p.name for p in params], kwargs)
    return retriever(**kwargs)


def parameters(retriever: type) -> tuple[inspect.Parameter, ...]:
    """The parameters a retriever class takes: what both adapters declare, with its defaults.

    A class's own named parameters (a ``**`` catch-all for old spellings left out); for
    :class:`GraphRetriever`, also those of the retriever its default strategy builds
    (:class:`PPRRetriever`), which it forwards. The adapters take each under the same
    name, with the same default and meaning.

    Examples:
        >>> [p.name for p in parameters(GraphRetriever)][:5]
        ['index', 'graph', 'strategy', 'k', 'damping']
    """
    own = named_parameters(retriever)
    if retriever is GraphRetriever:
        names = {p.name for p in own}
        own += [p for p in named_parameters(PPRRetriever) if p.name not in names]
    return tuple(own)


class GraphRetriever:
    """Graph retrieval by strategy: a thin façade over the graph retrievers.

    ``"ppr"`` (the default) -> :class:`PPRRetriever` (personalized PageRank over passages
    and the entities they mention; uses ``graph`` when given, else finds entities by
    rules; the best multi-hop strategy on the development sets, see
    ``benchmarks/RESULTS.md``), ``"sketch"`` -> :class:`SketchRetriever`,
    ``"local"``/``"global"`` ->
    :class:`CommunityRetriever`, ``"ssg:<algorithm>"`` -> :class:`SSGRetriever` (the
    semantic similarity graph; no knowledge graph needed). Extra keyword arguments go to
    the retriever chosen; :attr:`retriever` is that retriever.

    Examples:
        >>> from semrag import Document, SemanticIndex
        >>> from semrag.testing import FakeEmbedder
        >>> index = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
        >>> index.add_documents([Document("a", "Cats purr. Cats nap. Cats eat fish.")])
        >>> hits = GraphRetriever(index, strategy="ssg:query_traversal", k=1).retrieve("cats")
        >>> hits[0].chunk.doc_id
        'a'
    """

    def __init__(
        self,
        index: CorpusReader | ProvidesReader,
        graph: KnowledgeGraph | None = None,
        *,
        strategy: str = "ppr",
        k: int = 10,
        **options: object,
    ) -> None:
        chosen = strategy_named(strategy)
        check_keywords(f"GraphRetriever(strategy={strategy!r})", chosen.options(), options)
        self.strategy = strategy
        self.retriever: Retriever = chosen.build(as_reader(index), graph, k, options)

    def retrieve(self, query: str, *, k: int | None = None) -> list[ScoredChunk]:
        """The chosen retriever's results."""
        return self.retriever.retrieve(query, k=k)

    async def aretrieve(self, query: str, *, k: int | None = None) -> list[ScoredChunk]:
        """Async twin of :meth:`retrieve`."""
        return await self.retriever.aretrieve(query, k=k)

    def __repr__(self) -> str:
        return f"GraphRetriever(strategy={self.strategy!r}, retriever={self.retriever!r})"
