"""One base for a retriever over an index: it writes its steps, the base does the rest.

:class:`IndexRetriever` owns, once, what a retriever over an index repeats: the reader it
reads (any index or reader, checked to offer
:class:`~semrag.index.reader.CorpusReader`), its default ``k``, the checks of a call's
query and ``k``, the query's vector, one version of the index (and of the knowledge graph
that follows it) for the whole query, and driving the steps sync or async. A subclass
writes :meth:`IndexRetriever.steps`, a generator that yields each read that may be a
round trip (:class:`~semrag._steps.Call`, :class:`~semrag._steps.Together`) and returns the
hits; :meth:`~IndexRetriever.retrieve` answers the reads with blocking calls,
:meth:`~IndexRetriever.aretrieve` awaits them on a database's async driver, or runs the
whole query in a worker thread over an index in process: the event loop is never blocked.
See ``docs/architecture.md``, "Adding a retriever".
"""

from __future__ import annotations

import asyncio
import numbers
from abc import ABCMeta, abstractmethod
from collections.abc import Generator
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from semrag._rwlock import ProvidesReader, as_reader, reading
from semrag._steps import Call, Together, acall, adrive, call, drive
from semrag._validation import Interval, Params, check_k, check_param, check_query, offers
from semrag.index.reader import AsyncReads, CorpusReader, aquery_vector, query_vector, require
from semrag.types import ScoredChunk

__all__ = ["Call", "IndexRetriever", "Interval", "Steps", "Together"]
# Call and Together (the reads a step asks for) and Interval (a parameter's constraint)
# are what a retriever of your own needs besides the base: importable from here.

Steps = Generator[Call | Together, Any, list[ScoredChunk]]
"""What :meth:`IndexRetriever.steps` is: reads asked, their replies sent back, hits returned."""


class IndexRetriever(Params, metaclass=ABCMeta):
    """Base of a retriever over an index: subclass it and write :meth:`steps`.

    Args:
        index: the index or reader to read.
        k: results returned by default (a call's ``k=`` overrides it).

    Examples:
        >>> from semrag import Document, SemanticIndex
        >>> from semrag.testing import FakeEmbedder
        >>> from semrag.types import ScoredChunk
        >>> class Nearest(IndexRetriever):
        ...     def steps(self, query, q, k):
        ...         sims, ids = yield Call(self.index.dense_search, (q, k))
        ...         chunks = yield Call(self.index.chunks_of, (ids.tolist(),))
        ...         return [ScoredChunk(c, float(s)) for c, s in zip(chunks, sims)]
        >>> index = SemanticIndex(embedder=FakeEmbedder())
        >>> index.add_documents([Document("a", "Bees dance. Bees make honey.")])
        >>> [h.chunk.doc_id for h in Nearest(index, k=1).retrieve("bees")]
        ['a']
    """

    follows_graph: bool = False
    """Read the index's followers (its knowledge graph) at the index's version too."""
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "index": [object],
        "k": [Interval(numbers.Integral, 1, None)],
    }

    def __init__(self, index: CorpusReader | ProvidesReader, *, k: int = 10) -> None:
        name = type(self).__name__
        self.index: Any = as_reader(index)
        require(self.index, CorpusReader, by=name)
        self.k: int = check_param(name, "k", k, [Interval(numbers.Integral, 1, None)])

    @abstractmethod
    def steps(self, query: str, q: npt.NDArray[np.float32], k: int) -> Steps:
        """The retrieval of ``k`` hits for ``query`` (its vector ``q``), one read at a time.

        Yield a :class:`~semrag._steps.Call` for each read that may be a round trip (or a
        :class:`~semrag._steps.Together` for reads that do not depend on each other) and
        receive its reply (a read that fails raises its error at the ``yield``); return
        the hits. Everything runs at one version of the index. A retriever that
        :meth:`asks <ask>` first takes the reply as a fourth argument.
        """
        ...

    def ask(self, query: str) -> Call | None:
        """A request answered before the index is read (an LLM naming the query's entities).

        ``None`` (the default): nothing. Otherwise its reply is passed to :meth:`steps`
        after ``k``. It is answered outside the index's read, so a slow LLM never keeps a
        writer (and the readers queued behind it) waiting.
        """
        return None

    def retrieve(self, query: str, *, k: int | None = None) -> list[ScoredChunk]:
        """The ``k`` best hits for ``query`` (the retriever's own ``k`` when ``None``)."""
        name = type(self).__name__
        k, query = check_k(name, k, self.k), check_query(name, query)
        return self._read(query, query_vector(self.index, query), k, self._asked(query))

    async def aretrieve(self, query: str, *, k: int | None = None) -> list[ScoredChunk]:
        """Async twin of :meth:`retrieve`.

        Over a reader with async reads (:class:`~semrag.index.reader.AsyncReads`, e.g.
        :class:`~semrag.neo4j.Neo4jIndex`) each read is awaited and the steps' own work
        runs between them in worker threads; over an index in process (whose read lock
        one thread holds) the steps run in one worker thread. The request :meth:`ask`
        makes is awaited with the query's vector.
        """
        name, reader = type(self).__name__, self.index
        k, query = check_k(name, k, self.k), check_query(name, query)
        asked, q = await asyncio.gather(self._aasked(query), aquery_vector(reader, query))
        if not offers(reader, AsyncReads):
            return await asyncio.to_thread(self._read, query, q, k, asked)
        with reading(reader, followers=self.follows_graph):
            return await adrive(self._steps(query, q, k, asked), acall)

    def _read(
        self, query: str, q: npt.NDArray[np.float32], k: int, asked: object
    ) -> list[ScoredChunk]:
        with reading(self.index, followers=self.follows_graph):
            return drive(self._steps(query, q, k, asked), call)

    def _steps(self, query: str, q: npt.NDArray[np.float32], k: int, asked: object) -> Steps:
        if asked is None:  # nothing asked: the three-argument steps of any retriever
            return self.steps(query, q, k)
        return self.steps(query, q, k, asked)  # type: ignore[call-arg]

    def _asked(self, query: str) -> object:
        """The reply to the request :meth:`ask` makes (``None`` when it makes none)."""
        request = self.ask(query)
        return None if request is None else call(request)

    async def _aasked(self, query: str) -> object:
        """Async twin of :meth:`_asked` (the request's async twin awaited)."""
        request = self.ask(query)
        return None if request is None else await acall(request)
