"""A retriever defined in this file alone works in the core and in both frameworks.

It is written on :class:`semrag.retrieval.base.IndexRetriever` (its steps only) and
registered once (:func:`semrag.retrieval.register`): ``GraphRetriever(strategy=...)``
builds it in the core, in LangChain and in LlamaIndex, sync and async, and
``retriever_for`` makes it a class of either framework. Nothing else names it.
"""

from __future__ import annotations

import asyncio
import inspect
import numbers
import threading

import pytest
from langchain_core.documents import Document as LCDocument

import langchain_semrag as lcs
import llama_index_semrag as lis
from semrag import Document, SemanticIndex
from semrag.errors import ConfigError
from semrag.retrieval import STRATEGIES, GraphRetriever, register
from semrag.retrieval.base import Call, IndexRetriever, Interval
from semrag.testing import FakeEmbedder
from semrag.types import ScoredChunk


@register("test:shared_words")
class SharedWords(IndexRetriever):
    """Dense candidates re-ranked by the query words they share (ties: similarity)."""

    _parameter_constraints = {
        "index": [object],
        "k": [Interval(numbers.Integral, 1, None)],
        "min_shared": [Interval(numbers.Integral, 0, None)],
    }

    def __init__(self, index, *, k: int = 10, min_shared: int = 1) -> None:
        p = self._check_params(locals())
        super().__init__(index, k=p["k"])
        self.min_shared = p["min_shared"]

    def steps(self, query, q, k):
        sims, ids = yield Call(self.index.dense_search, (q, 20))
        chunks = yield Call(self.index.chunks_of, (ids.tolist(),))
        words = set(query.lower().split())
        scored = [
            (len(words & set(c.text.lower().rstrip(".").split())), float(s), c)
            for c, s in zip(chunks, sims, strict=True)
        ]
        kept = sorted((t for t in scored if t[0] >= self.min_shared), key=lambda t: t[:2])
        return [ScoredChunk(c, s, provenance=({"shared": n},)) for n, s, c in kept[::-1][:k]]


TEXTS = {
    "bees": "Bees dance to show flowers. Honey bees make honey in the hive.",
    "rockets": "Rockets burn fuel. The first stage falls away after two minutes.",
}


@pytest.fixture(scope="module")
def index() -> SemanticIndex:
    index = SemanticIndex(embedder=FakeEmbedder())
    index.add_documents([Document(d, t) for d, t in TEXTS.items()])
    return index


def core_hits(index, **options):
    return SharedWords(index, **options).retrieve("honey bees hive", k=2)


def test_the_registered_strategy_is_listed_and_built_by_the_front_door(index):
    assert "test:shared_words" in STRATEGIES
    front = GraphRetriever(index, strategy="test:shared_words", min_shared=2)
    assert isinstance(front.retriever, SharedWords) and front.retriever.min_shared == 2
    want = core_hits(index, min_shared=2)
    assert want and {h.chunk.doc_id for h in want} == {"bees"}
    assert front.retrieve("honey bees hive", k=2) == want
    assert asyncio.run(front.aretrieve("honey bees hive", k=2)) == want
    with pytest.raises(ConfigError, match="damping"):  # another strategy's parameter
        GraphRetriever(index, strategy="test:shared_words", damping=0.5)
    with pytest.raises(ConfigError, match="min_shared"):  # checked by the class
        GraphRetriever(index, strategy="test:shared_words", min_shared=-1)


def test_a_name_is_one_class_s(index):
    class Other(SharedWords):
        pass

    with pytest.raises(ConfigError, match="SharedWords"):
        register("test:shared_words")(Other)
    assert register("test:shared_words")(SharedWords) is SharedWords  # again: the same


def test_langchain_builds_it_by_strategy_and_as_a_class_of_its_own(index):
    want = [h.chunk.text for h in core_hits(index, min_shared=2)]
    by_strategy = lcs.GraphRetriever(index=index, strategy="test:shared_words", min_shared=2)
    docs = by_strategy.invoke("honey bees hive", k=2)
    assert all(isinstance(d, LCDocument) for d in docs)
    assert [d.page_content for d in docs] == want
    assert [d.metadata["semrag_provenance"][0]["shared"] for d in docs] == [3, 2][: len(docs)]
    Shared = lcs.retriever_for(SharedWords)
    assert {"index", "k", "min_shared"} <= set(Shared.model_fields)
    own = Shared(index=index, min_shared=2)
    assert [d.page_content for d in own.invoke("honey bees hive", k=2)] == want
    assert [d.page_content for d in asyncio.run(own.ainvoke("honey bees hive", k=2))] == want
    with pytest.raises(ConfigError, match="min_shared"):
        Shared(index=index, min_shared=-1)


def test_llama_index_builds_it_by_strategy_and_as_a_class_of_its_own(index):
    want = [h.chunk.text for h in core_hits(index, min_shared=2)]
    by_strategy = lis.GraphRetriever(index=index, strategy="test:shared_words", min_shared=2)
    assert [n.node.get_content() for n in by_strategy.retrieve("honey bees hive", k=2)] == want
    Shared = lis.retriever_for(SharedWords)
    params = inspect.signature(Shared).parameters
    assert params["min_shared"].default == 1 and params["min_shared"].kind is params["k"].kind
    own = Shared(index=index, min_shared=2)
    assert [n.node.get_content() for n in own.retrieve("honey bees hive", k=2)] == want
    nodes = asyncio.run(own.aretrieve("honey bees hive", k=2))
    assert [n.node.get_content() for n in nodes] == want
    with pytest.raises(ConfigError, match="min_shared"):
        Shared(index=index, min_shared=-1)


@pytest.mark.parametrize("framework", ["langchain", "llama_index"])
def test_both_frameworks_take_the_index_by_position_as_the_core_does(index, framework):
    mod = lcs if framework == "langchain" else lis

    def texts(retriever, query="bees"):
        got = retriever.invoke if framework == "langchain" else retriever.retrieve
        return [getattr(d, "page_content", None) or d.node.get_content() for d in got(query)]

    want = [h.chunk.text for h in GraphRetriever(index, k=2).retrieve("bees")]
    assert want and texts(mod.GraphRetriever(index, k=2)) == want
    assert texts(mod.GraphRetriever(index, None, k=2)) == want  # (index, graph), as the core
    own = [h.chunk.text for h in core_hits(index, min_shared=2)]
    shared = mod.retriever_for(SharedWords)(index, k=2, min_shared=2)
    assert texts(shared, "honey bees hive") == own
    with pytest.raises(ConfigError, match=r"takes 2 positional arguments \(index, graph\)"):
        mod.GraphRetriever(index, None, "ppr")
    with pytest.raises(ConfigError, match="multiple values for argument 'index'"):
        mod.GraphRetriever(index, index=index)
    with pytest.raises(TypeError, match="takes .* positional argument"):
        mod.RetrieveAndCheckRetriever(index)  # its parameters are keywords


def test_llama_index_signatures_keep_the_core_s_positional_parameters():
    params = list(inspect.signature(lis.GraphRetriever).parameters.values())
    assert [p.name for p in params[:3]] == ["index", "graph", "strategy"]
    assert [p.kind for p in params[:3]] == [
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    ]


class FirstWordOnly(SharedWords):
    """Asks for the query's first word before reading; keeps the hits that hold it."""

    def ask(self, query):
        return Call(self.answer, (query,))

    def answer(self, query):  # an LLM's call in a real retriever: slow, and no index read
        return query.split()[0]

    def steps(self, query, q, k, asked=None):
        hits = yield from super().steps(query, q, k)
        return [h for h in hits if asked in h.chunk.text.lower()]


def test_what_a_retriever_asks_is_answered_outside_the_index_read_and_reaches_its_steps():
    index = SemanticIndex(embedder=FakeEmbedder())
    index.add_documents([Document(d, t) for d, t in TEXTS.items()])
    written = []  # whether each writer started while asking had finished when asked

    class WritesWhileAsked(FirstWordOnly):
        def answer(self, query):
            # a writer waits for every reader: it finishes only if nothing reads now
            writer = threading.Thread(
                target=lambda: index.add_documents([Document(query, "Honey.")])
            )
            writer.start()
            writer.join(timeout=10)
            written.append(not writer.is_alive())
            return super().answer(query)

    retriever = WritesWhileAsked(index, k=5, min_shared=0)
    hits = retriever.retrieve("honey bees")
    assert written == [True], "the request was answered while the index was read"
    assert hits and all("honey" in h.chunk.text.lower() for h in hits)
    assert {h.chunk.doc_id for h in hits} >= {"bees", "honey bees"}  # the written one too
    ahits = asyncio.run(retriever.aretrieve("honey rockets"))
    assert written == [True, True] and all("honey" in h.chunk.text.lower() for h in ahits)
