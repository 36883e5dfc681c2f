"""One front door to every graph retrieval strategy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from semrag._rwlock import ProvidesReader, as_reader
from semrag._validation import Options, check_param
from semrag.errors import ConfigError
from semrag.index.reader import CorpusReader
from semrag.retrieval.community import CommunityRetriever
from semrag.retrieval.ppr import PPRRetriever
from semrag.retrieval.sketch import SketchRetriever
from semrag.retrieval.ssg import ALGORITHMS, SSGRetriever
from semrag.types import ScoredChunk

if TYPE_CHECKING:
    from semrag.graph.knowledge import KnowledgeGraph
__all__ = ["STRATEGIES", "GraphRetriever"]

STRATEGIES = ("ppr", "sketch", "local", "global", *(f"ssg:{a}" for a in ALGORITHMS))
"""Every value ``strategy`` accepts."""


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
        **options: Any,
    ) -> None:
        index = as_reader(index)
        strategy = check_param("GraphRetriever", "strategy", strategy, [Options(*STRATEGIES)])
        self.strategy = strategy
        if strategy.startswith("ssg:"):
            self.retriever: Any = SSGRetriever(index, strategy=strategy[4:], k=k, **options)
            return
        if strategy == "ppr":
            self.retriever = PPRRetriever(index, graph, k=k, **options)
            return
        if graph is None:
            raise ConfigError(f"strategy {strategy!r} needs a KnowledgeGraph (graph=...)")
        if strategy == "sketch":
            self.retriever = SketchRetriever(index, graph, k=k, **options)
        else:
            self.retriever = CommunityRetriever(index, graph, strategy=strategy, k=k, **options)

    def retrieve(self, query: str, *, k: int | None = None) -> list[ScoredChunk]:
        """The chosen retriever's results."""
        return self.retriever.retrieve(query, k=k)

    async def aretrieve(self, query: str, *, k: int | None = None) -> list[ScoredChunk]:
        """Async twin of :meth:`retrieve`."""
        return await self.retriever.aretrieve(query, k=k)

    def __repr__(self) -> str:
        return f"GraphRetriever(strategy={self.strategy!r}, retriever={self.retriever!r})"
