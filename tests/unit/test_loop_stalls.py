"""Every public async method, in the core and both adapters, leaves the event loop free.

Each method runs with slow fakes (an embedder and an LLM whose sync calls block for
``DELAY`` seconds, as real models do) while a ticker task measures the longest gap
between its ticks; a sync call or CPU work on the loop shows up as a gap of at least
``DELAY``. The limit is ``MAX_STALL``; on a busy machine it is calibrated in the same run
against the same wait done off the loop, never above ``0.6 * DELAY``, so a timed limit
cannot fail for load alone while a blocking call still does. The set of async methods is
found by introspection of the public packages, so a new async method without a case here
fails :func:`test_every_async_method_has_a_case`.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import importlib
import inspect
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.documents import Document as LCDocument
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake import FakeListLLM
from llama_index.core import Document as LIDocument
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.schema import (
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode

import langchain_semrag as lcs
import llama_index_semrag as lis
from semrag import Document, SemanticChunker, SemanticIndex
from semrag.chunking.boundary import PSCChunker
from semrag.graph import HeuristicGraphExtractor, KnowledgeGraph, LLMGraphExtractor
from semrag.index.reader import aquery_vector
from semrag.llm import acomplete_json
from semrag.minilm import MiniLMEmbedder
from semrag.postprocess import SPC
from semrag.retrieval import (
    CommunityRetriever,
    GraphRetriever,
    IntentAwareRetriever,
    PPRRetriever,
    RetrieveAndCheck,
    SketchRetriever,
    SSGRetriever,
)
from semrag.retrieval.base import Call, IndexRetriever
from semrag.testing import FakeEmbedder, boundary_model_for
from semrag.types import Chunk, ScoredChunk

DELAY = 0.15
MAX_STALL = 0.05
PUBLIC = [
    "semrag",
    "semrag.retrieval",
    "semrag.postprocess",
    "semrag.graph",
    "semrag.neo4j",
    "semrag.neo4j._graph_reads",  # Neo4jGraphStore's reads are CypherGraphReads' own methods
    "semrag.neo4j._stored",  # and Neo4jIndex's document and chunk reads these classes'
    "semrag.index",
    "semrag.index.reader",  # what retrievers share over a reader (aquery_vector)
    "semrag.chunking",
    "semrag.chunking.boundary",
    "semrag.embeddings",
    "semrag.minilm",
    "semrag.llm",
    "langchain_semrag",
    "llama_index_semrag",
]
HOOKS = {
    "_aget_relevant_documents",
    "_aretrieve",
    "_apostprocess_nodes",
    "_aparse_nodes",
    "_aget_query_embedding",
    "_aget_text_embedding",
    "_aget_text_embeddings",
}
BRIDGES = {"_aembed_batch"}  # how an embedder bridge awaits the framework's model
OURS = ("semrag", "langchain_semrag", "llama_index_semrag")


def every_retriever(adapters: Any) -> tuple[Callable[[Any], Any], ...]:
    """Makers of each retriever of an adapter package (LangChain's or LlamaIndex's)."""
    return (
        lambda e: adapters.SSGRetriever(index=e.index),
        lambda e: adapters.IntentAwareRetriever(index=e.index),
        lambda e: adapters.SketchRetriever(index=e.index, graph=e.kg),
        lambda e: adapters.CommunityRetriever(index=e.index, graph=e.kg),
        lambda e: adapters.GraphRetriever(index=e.index, graph=e.kg),
        lambda e: adapters.RetrieveAndCheckRetriever(index=e.index, k=1),
    )


TEXTS = {
    "pm": "Prime Minister John Smith faced an inquiry into party funding. He then resigned "
    "after the investigation concluded. The election was held in June.",
    "bees": "Honey bees dance to tell the hive where flowers grow. The queen lays the eggs. "
    "Workers make honey from nectar.",
}


class SlowEmbedder(FakeEmbedder):
    """Blocks like a real model on every sync call."""

    def _embed_batch(self, texts: list[str]) -> Any:
        time.sleep(DELAY)
        return super()._embed_batch(texts)


SLOW_384 = SlowEmbedder(dim=384)


# Shipped weights declared for the fake encoder, built here so no measured call builds them.
FAKE_MODELS = {kind: boundary_model_for(SLOW_384, kind) for kind in ("psc", "mfc")}


def lc_store() -> Any:
    store = lcs.SemanticVectorStore(lcs.SemragEmbeddings(SlowEmbedder(dim=64)))
    store.add_texts(list(TEXTS.values()), ids=list(TEXTS))
    return store


def li_store() -> Any:
    store = lis.SemanticVectorStore(SlowEmbedder(dim=64))
    source = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id="src")}
    store.add([TextNode(id_=k, text=v, relationships=source) for k, v in TEXTS.items()])
    return store


def on(make_store: Callable[[], Any], call: Callable[[Any, Any], Awaitable[Any]]) -> Any:
    """A case on a store filled before anything is measured."""
    return lambda e: (lambda store: lambda: call(store, e))(make_store())


def filled_index() -> SemanticIndex:
    index = SemanticIndex(embedder=FakeEmbedder(dim=64), ssg=True)
    index.add_documents(CORPUS)
    return index


def fake_model(cls: Any) -> dict[str, Any]:
    preset = getattr(cls, "preset", "")
    return {"model": FAKE_MODELS[preset]} if preset else {}


class SlowLLM:
    """A semrag LLM: the sync call blocks; the async one awaits (a network model)."""

    def __init__(self, reply: Callable[[str], str] = lambda prompt: "not json") -> None:
        self.reply = reply

    def complete(self, prompt: str) -> str:
        time.sleep(DELAY)
        return self.reply(prompt)

    async def acomplete(self, prompt: str) -> str:
        await asyncio.sleep(DELAY)
        return self.reply(prompt)


class SlowLCEmbeddings(DeterministicFakeEmbedding):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        time.sleep(DELAY)
        return super().embed_documents(texts)


class SlowLIEmbedding(MockEmbedding):
    def _get_text_embedding(self, text: str) -> list[float]:
        time.sleep(DELAY)
        return super()._get_text_embedding(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        time.sleep(DELAY)
        return [super(SlowLIEmbedding, self)._get_text_embedding(t) for t in texts]


TOPICS = ["bees hive honey", "rockets orbit fuel", "bread dough oven", "rivers delta flood"]
# Big enough that CPU work done on the loop (indexing, a graph rebuild) shows as a stall.
CORPUS = [
    Document(
        f"c{i}",
        " ".join(
            f"Sentence {j} of note {i} is about {TOPICS[(i + j // 3) % len(TOPICS)]}."
            for j in range(12)
        ),
    )
    for i in range(150)
]


@dataclass
class Env:
    index: SemanticIndex
    kg: KnowledgeGraph
    big: SemanticIndex
    counter: int = 0

    def query(self, stem: str = "honey bees") -> str:
        """A fresh query each time, so no embedding cache hides a blocking call."""
        self.counter += 1
        return f"What about {stem} number {self.counter}?"


@pytest.fixture(scope="module")
def env() -> Env:
    # A library's first import (torch's shared libraries, for the PSC/MFC models) holds the
    # GIL in C for hundreds of milliseconds whichever thread runs it; it is a one-time cost
    # of the process, not a blocking call, so it happens before anything is measured.
    importlib.import_module("torch")
    index = SemanticIndex(embedder=SlowEmbedder(dim=384), ssg=True)
    index.add_documents([Document(k, v) for k, v in TEXTS.items()])
    kg = KnowledgeGraph.build(index, extractor=HeuristicGraphExtractor())
    big = SemanticIndex(embedder=SlowEmbedder(dim=64), ssg=True)
    big.add_documents(CORPUS)
    return Env(index, kg, big)


@functools.cache
def warm_minilm() -> MiniLMEmbedder:
    model = MiniLMEmbedder(cache_size=0)
    model.embed_pooled(["warm up"], [[(0, 4)]])
    return model


def pooled_pass(e: Env, model: MiniLMEmbedder) -> Callable[[], Awaitable[Any]]:
    return lambda: model.aembed_pooled([f"{TEXTS['pm']} {e.query()}"] * 48, [[(0, 20)]] * 48)


async def longest_stall(make: Callable[[], Awaitable[Any]]) -> float:
    # A full garbage collection of this large test process can pause every thread for a
    # few hundred ms; that is the process, not a blocking call, so the heap that exists is
    # frozen out of collection while measuring.
    gc.freeze()
    try:
        return await _longest_stall(make)
    finally:
        gc.unfreeze()


async def _longest_stall(make: Callable[[], Awaitable[Any]]) -> float:
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.002)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    try:
        await make()
    finally:
        done.set()
        await task
    return max(gaps)


def hit(env: Env) -> ScoredChunk:
    text = TEXTS["pm"]
    frag = "He then resigned after the investigation concluded."
    start = text.index(frag)
    return ScoredChunk(Chunk("pm", start, start + len(frag), frag, 7), 1.0)


def fresh_graph_change(env: Env) -> SemanticIndex:
    """Make the next SSG read of the big index rebuild its graph (inside the measured call)."""
    env.counter += 1
    env.big.add_documents([Document(f"extra{env.counter}", "Rockets burn fuel. Orbits.")])
    return env.big


# Each case: sync set-up (not measured), returning the awaitable factory that is measured.
Case = Callable[[Env], Callable[[], Awaitable[Any]]]


class _Nearest(IndexRetriever):
    """A retriever written on the base alone: its steps read the nearest chunks."""

    def steps(self, query, q, k):
        sims, ids = yield Call(self.index.dense_search, (q, k))
        chunks = yield Call(self.index.chunks_of, (ids.tolist(),))
        return [ScoredChunk(c, float(s)) for c, s in zip(chunks, sims, strict=True)]


CASES: dict[str, list[Case]] = {
    "semrag.chunking.base:BoundaryChunker.achunk": [
        lambda e: lambda: SemanticChunker(SlowEmbedder()).achunk(TEXTS["pm"] + " x" * e.counter)
    ],
    "semrag.chunking.base:BoundaryChunker.achunk_documents": [
        lambda e: (
            lambda: PSCChunker(SLOW_384, model=FAKE_MODELS["psc"]).achunk_documents(
                list(TEXTS.values())
            )
        )
    ],
    "semrag.chunking.base:BoundaryChunker.achunk_with_stats": [
        lambda e: lambda: SemanticChunker(SlowEmbedder()).achunk_with_stats(list(TEXTS.values()))
    ],
    "semrag.minilm:MiniLMEmbedder.aembed_pooled": [
        # the real model, loaded first (reading tokenizer.json holds the GIL once): 48
        # chunks take longer than DELAY, all of it off the loop
        lambda e: pooled_pass(e, warm_minilm())
    ],
    "semrag.embeddings:BaseEmbedder.aembed": [
        lambda e: lambda: SlowEmbedder().aembed(["one", "two"])
    ],
    "semrag.embeddings:BaseEmbedder._aembed_batch": [
        lambda e: lambda: SlowEmbedder()._aembed_batch(["one"])
    ],
    "semrag.graph.extract:HeuristicGraphExtractor.aextract": [
        lambda e: lambda: HeuristicGraphExtractor().aextract(hit(e).chunk)
    ],
    "semrag.graph.extract:HeuristicGraphExtractor.aextract_many": [
        lambda e: lambda: HeuristicGraphExtractor().aextract_many(e.big.chunks())
    ],
    "semrag.graph.extract:LLMGraphExtractor.aextract": [
        lambda e: lambda: LLMGraphExtractor(SlowLLM()).aextract(hit(e).chunk)
    ],
    "semrag.graph.extract:LLMGraphExtractor.aextract_many": [
        lambda e: lambda: LLMGraphExtractor(SlowLLM()).aextract_many(e.index.chunks())
    ],
    "semrag.graph.extract:HeuristicGraphExtractor.aprefetch": [
        lambda e: lambda: HeuristicGraphExtractor().aprefetch(e.big.chunks())
    ],
    "semrag.graph.extract:LLMGraphExtractor.aprefetch": [
        lambda e: lambda: LLMGraphExtractor(SlowLLM()).aprefetch(e.index.chunks())
    ],
    "semrag.graph.knowledge:KnowledgeGraph.acurrent_version": [
        lambda e: lambda: e.kg.acurrent_version(),
    ],
    "semrag.graph.knowledge:KnowledgeGraph.asearch_entities": [
        lambda e: functools.partial(e.kg.asearch_entities, e.index.reader().embed_query("bees"), 5),
    ],
    "semrag.graph.knowledge:KnowledgeGraph.abuild": [
        lambda e: lambda: KnowledgeGraph.abuild(e.index),
        lambda e: lambda: KnowledgeGraph.abuild(e.index, extractor=LLMGraphExtractor(SlowLLM())),
    ],
    "semrag.index.semantic_index:SemanticIndex.aadd_documents": [
        lambda e: (
            lambda: SemanticIndex(embedder=SlowEmbedder(dim=64), ssg=True).aadd_documents(CORPUS)
        )
    ],
    "semrag.index.semantic_index:SemanticIndex.aadd_chunks": [
        lambda e: (
            lambda: SemanticIndex(embedder=SlowEmbedder(dim=64), ssg=True).aadd_chunks(
                e.index.chunks()
            )
        )
    ],
    "semrag.index.semantic_index:SemanticIndex.adelete": [
        on(filled_index, lambda ix, e: ix.adelete(ix.doc_ids)),
    ],
    "semrag.index.semantic_index:SemanticIndex.areembed": [
        on(filled_index, lambda ix, e: ix.areembed(SlowEmbedder(dim=32))),
    ],
    "semrag.index.index_reader:IndexReader.aembed_query": [
        lambda e: lambda: e.index.reader().aembed_query(e.query())
    ],
    "semrag.index.reader:aquery_vector": [
        lambda e: lambda: aquery_vector(e.index.reader(), e.query())
    ],
    "semrag.index.semantic_index:SemanticIndex.asearch": [
        lambda e: lambda: e.index.asearch(e.query(), 2)
    ],
    "semrag.llm:acomplete_json": [
        lambda e: lambda: acomplete_json(SlowLLM(lambda p: '{"a": 1}'), "prompt", {})
    ],
    "semrag.postprocess.spc:SPC.aprocess": [
        lambda e: lambda: SPC(e.index).aprocess(e.query("resign"), [hit(e)]),
        lambda e: lambda: SPC(e.index, llm=SlowLLM()).aprocess(e.query("resign"), [hit(e)]),
    ],
    "semrag.postprocess.spc:SPC.aaudit_coverage": [
        lambda e: lambda: SPC(e.index).aaudit_coverage(e.query("John Smith"), [hit(e)])
    ],
    "semrag.retrieval.check:RetrieveAndCheck.arun": [
        lambda e: (
            lambda: RetrieveAndCheck(IntentAwareRetriever(e.index, k=1), SPC(e.index)).arun(
                e.query("queen bee and the election")
            )
        )
    ],
    "semrag.retrieval.check:RetrieveAndCheck.aretrieve": [
        lambda e: (
            lambda: RetrieveAndCheck(IntentAwareRetriever(e.index, k=1), SPC(e.index)).aretrieve(
                e.query("queen bee and the election")
            )
        )
    ],
    "semrag.retrieval.base:IndexRetriever.aretrieve": [
        lambda e: lambda: _Nearest(e.index, k=2).aretrieve(e.query()),
        lambda e: lambda: CommunityRetriever(e.index, e.kg, strategy="local").aretrieve(e.query()),
        lambda e: lambda: CommunityRetriever(e.index, e.kg, strategy="global").aretrieve(e.query()),
        lambda e: lambda: SketchRetriever(e.index, e.kg).aretrieve(e.query()),
        lambda e: lambda: SketchRetriever(e.index, e.kg, llm=SlowLLM()).aretrieve(e.query()),
        lambda e: lambda: PPRRetriever(e.index).aretrieve(e.query()),
        lambda e: lambda: PPRRetriever(e.index, e.kg, llm=SlowLLM()).aretrieve(e.query()),
        lambda e: lambda: IntentAwareRetriever(e.index).aretrieve(e.query()),
        lambda e: (
            lambda: IntentAwareRetriever(e.index, graph=e.kg, llm=SlowLLM()).aretrieve(e.query())
        ),
    ],
    "semrag.retrieval.graph:GraphRetriever.aretrieve": [
        lambda e: lambda: GraphRetriever(e.index, e.kg).aretrieve(e.query())
    ],
    "semrag.retrieval.intent:IntentAwareRetriever.aplan": [
        lambda e: lambda: IntentAwareRetriever(e.index, llm=SlowLLM()).aplan(e.query())
    ],
    "semrag.retrieval.sketch:SketchRetriever.aquery_entities": [
        lambda e: lambda: SketchRetriever(e.index, e.kg, llm=SlowLLM()).aquery_entities(e.query())
    ],
    "semrag.retrieval.ssg:SSGRetriever.aretrieve": [
        lambda e, a=a: (lambda big: lambda: SSGRetriever(big, strategy=a).aretrieve(e.query()))(
            fresh_graph_change(e)
        )
        for a in ("query_traversal", "triangulation_geometric_3d", "ssg_traversal")
    ]
    + [
        lambda e: (
            lambda: SSGRetriever(e.index, strategy="llm_guided_traversal", llm=SlowLLM()).aretrieve(
                e.query()
            )
        )
    ],
    # -- LangChain ------------------------------------------------------------------------------
    "langchain_semrag.compressors:SPCCompressor.acompress_documents": [
        lambda e: (
            lambda: lcs.SPCCompressor(index=e.index).acompress_documents(
                [LCDocument(hit(e).chunk.text, metadata={"doc_id": "pm", "start_index": 63})],
                e.query("resign"),
            )
        )
    ],
    "langchain_semrag.embeddings:LangChainEmbedder._aembed_batch": [
        lambda e: lambda: lcs.LangChainEmbedder(SlowLCEmbeddings(size=8)).aembed(["a", "b"])
    ],
    "langchain_semrag.embeddings:SemragEmbeddings.aembed_documents": [
        lambda e: lambda: lcs.SemragEmbeddings(SlowEmbedder()).aembed_documents(["a", "b"])
    ],
    "langchain_semrag.embeddings:SemragEmbeddings.aembed_query": [
        lambda e: lambda: lcs.SemragEmbeddings(SlowEmbedder()).aembed_query("a")
    ],
    "langchain_semrag.embeddings:LangChainLLM.acomplete": [
        lambda e: lambda: lcs.LangChainLLM(FakeListLLM(responses=["ok"])).acomplete("hi")
    ],
    "langchain_semrag.retrievers:_CoreRetriever._aget_relevant_documents": [
        lambda e, make=make: lambda: make(e).ainvoke(e.query()) for make in every_retriever(lcs)
    ],
    "langchain_semrag.text_splitters:_CoreTextSplitter.acreate_documents": [
        lambda e: (
            lambda: lcs.SemanticTextSplitter(SlowEmbedder()).acreate_documents(list(TEXTS.values()))
        )
    ],
    "langchain_semrag.text_splitters:_CoreTextSplitter.asplit_documents": [
        lambda e: (
            lambda: lcs.PSCTextSplitter(SLOW_384, model=FAKE_MODELS["psc"]).asplit_documents(
                [LCDocument(t) for t in TEXTS.values()]
            )
        )
    ],
    "langchain_semrag.text_splitters:_CoreTextSplitter.atransform_documents": [
        lambda e: (
            lambda: lcs.MFCTextSplitter(SLOW_384, model=FAKE_MODELS["mfc"]).atransform_documents(
                [LCDocument(t) for t in TEXTS.values()]
            )
        )
    ],
    # -- LlamaIndex -----------------------------------------------------------------------------
    "llama_index_semrag.embeddings:LlamaIndexEmbedder._aembed_batch": [
        lambda e: lambda: lis.LlamaIndexEmbedder(SlowLIEmbedding(embed_dim=8)).aembed(["a", "b"])
    ],
    "llama_index_semrag.embeddings:SemragEmbedding._aget_query_embedding": [
        lambda e: lambda: lis.SemragEmbedding(SlowEmbedder()).aget_query_embedding("a")
    ],
    "llama_index_semrag.embeddings:SemragEmbedding._aget_text_embedding": [
        lambda e: lambda: lis.SemragEmbedding(SlowEmbedder()).aget_text_embedding("a")
    ],
    "llama_index_semrag.embeddings:SemragEmbedding._aget_text_embeddings": [
        lambda e: lambda: lis.SemragEmbedding(SlowEmbedder()).aget_text_embedding_batch(["a", "b"])
    ],
    "llama_index_semrag.embeddings:LlamaIndexLLM.acomplete": [
        lambda e: lambda: lis.LlamaIndexLLM(MockLLM(max_tokens=4)).acomplete("hi")
    ],
    "llama_index_semrag.embeddings:SemragLLM.acomplete": [
        lambda e: lambda: lis.SemragLLM(SlowLLM()).acomplete("hi")
    ],
    "llama_index_semrag.node_parsers:_CoreNodeParser._aparse_nodes": [
        lambda e, cls=cls: (
            lambda: cls(SLOW_384, **fake_model(cls)).aget_nodes_from_documents(
                [LIDocument(text=t) for t in TEXTS.values()]
            )
        )
        for cls in (lis.SemanticNodeParser, lis.PSCNodeParser, lis.MFCNodeParser)
    ],
    "llama_index_semrag.postprocessors:SPCPostprocessor._apostprocess_nodes": [
        lambda e: (
            lambda: lis.SPCPostprocessor(index=e.index).apostprocess_nodes(
                [NodeWithScore(node=TextNode(text=hit(e).chunk.text), score=1.0)],
                query_str=e.query("resign"),
            )
        )
    ],
    "langchain_semrag.vectorstores:SemanticVectorStore.aadd_texts": [
        on(lc_store, lambda s, e: s.aadd_texts(["Bees are back again."], ids=["pm"]))
    ],
    "langchain_semrag.vectorstores:SemanticVectorStore.asimilarity_search_with_score": [
        on(lc_store, lambda s, e: s.asimilarity_search_with_score(e.query(), k=2)),
        on(lc_store, lambda s, e: s.asimilarity_search_with_score(e.query(), filter={"a": 1})),
    ],
    "langchain_semrag.vectorstores:SemanticVectorStore.asimilarity_search": [
        on(lc_store, lambda s, e: s.asimilarity_search(e.query(), k=2))
    ],
    "llama_index_semrag.vector_stores:SemanticVectorStore.async_add": [
        on(li_store, lambda s, e: s.async_add([TextNode(id_="pm", text="Bees are back.")]))
    ],
    "llama_index_semrag.vector_stores:SemanticVectorStore.aquery": [
        on(li_store, lambda s, e: s.aquery(VectorStoreQuery(query_str=e.query()))),
        on(
            li_store,
            lambda s, e: s.aquery(
                VectorStoreQuery(query_str=e.query(), mode=VectorStoreQueryMode.MMR)
            ),
        ),
        on(
            li_store,
            lambda s, e: s.aquery(
                VectorStoreQuery(query_str=e.query(), mode=VectorStoreQueryMode.SPARSE)
            ),
        ),
    ],
    "llama_index_semrag.vector_stores:SemanticVectorStore.adelete": [
        on(li_store, lambda s, e: s.adelete("src"))
    ],
    "llama_index_semrag.vector_stores:SemanticVectorStore.adelete_nodes": [
        on(li_store, lambda s, e: s.adelete_nodes(["pm"]))
    ],
    "llama_index_semrag.vector_stores:SemanticVectorStore.aget_nodes": [
        on(li_store, lambda s, e: s.aget_nodes())
    ],
    "llama_index_semrag.vector_stores:SemanticVectorStore.aclear": [
        on(li_store, lambda s, e: s.aclear())
    ],
    "llama_index_semrag.retrievers:_CoreRetriever._aretrieve": [
        lambda e, make=make: lambda: make(e).aretrieve(QueryBundle(e.query()))
        for make in every_retriever(lis)
    ],
    "llama_index_semrag.retrievers:_CoreRetriever.aretrieve": [
        lambda e: lambda: lis.GraphRetriever(index=e.index).aretrieve(e.query(), k=2),
        lambda e: lambda: lis.IntentAwareRetriever(index=e.index).aretrieve(e.query(), k=1),
    ],
}


def public_async_methods() -> set[str]:
    found: set[str] = set()
    for name in PUBLIC:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr, None)
            if inspect.isclass(obj):
                if getattr(obj, "_is_protocol", False):
                    continue  # a Protocol's stub: nothing runs
                for method_name, fn in inspect.getmembers(obj):
                    public = not method_name.startswith("_") or method_name in HOOKS | BRIDGES
                    if public and inspect.iscoroutinefunction(fn):
                        if fn.__module__.split(".")[0] in OURS:
                            found.add(f"{fn.__module__}:{fn.__qualname__}")
            elif inspect.iscoroutinefunction(obj) and obj.__module__.split(".")[0] in OURS:
                found.add(f"{obj.__module__}:{obj.__qualname__}")
    return found


# Methods whose cases need the real Neo4j server: measured in the test named here.
ELSEWHERE = (
    {
        f"semrag.neo4j.index_reader:Neo4jIndex.{name}": "tests/graph/test_neo4j_index.py"
        "::test_the_readers_async_twins_leave_the_loop_free"
        for name in (
            "asearch",
            "asearch_sparse",
            "asearch_channels",
            "asparse_scores_many",
            "asentence_vectors_of",
            "acurrent_version",
            "adense_search",
        )
    }
    | {
        f"semrag.neo4j._stored:{name}": "tests/graph/test_neo4j_index.py"
        "::test_the_readers_async_twins_leave_the_loop_free"
        for name in (
            "StoredCorpus.aoverlapping_chunks_many",
            "StoredCorpus.achunks_of",
            "StoredCorpus.adocuments",
        )
    }
    | {
        # they await the store's session (store.session.aread_rows, arun_steps,
        # arun_together): every async read of every class on Neo4j goes through it
        f"semrag.neo4j._graph_reads:CypherGraphReads.{name}": "tests/graph/test_neo4j_index.py"
        "::test_the_readers_async_twins_leave_the_loop_free"
        for name in ("alookup", "aexpand", "achunks_for", "asearch_entities")
    }
    | {
        "semrag.neo4j.graph_store:Neo4jGraphStore.achange_stamp": "tests/graph/test_neo4j_index.py"
        "::test_the_readers_async_twins_leave_the_loop_free"
    }
)


def test_every_async_method_has_a_case():
    found = public_async_methods()
    cased = set(CASES) | set(ELSEWHERE)
    assert found - cased == set(), "async methods without a loop-stall case"
    assert cased - found == set(), "cases for methods that no longer exist"


@pytest.mark.parametrize(
    ("key", "i"), [(key, i) for key, cases in CASES.items() for i in range(len(cases))]
)
async def test_async_method_never_blocks_the_loop(env, key, i):
    make = CASES[key][i](env)
    stall = await longest_stall(make)
    limit = MAX_STALL
    if stall >= limit:  # a busy machine or a blocking call: what does a wait off the loop see?
        baseline = await longest_stall(lambda: asyncio.to_thread(time.sleep, DELAY))
        # calibrated in the same run; a blocking call stalls for DELAY, above this cap
        limit = max(MAX_STALL, min(baseline + MAX_STALL, DELAY * 0.6))
    assert stall < limit, f"{key} (case {i}) stalled the event loop for {stall * 1000:.0f} ms"


async def test_the_harness_sees_a_blocking_call():
    # The measurement itself must be able to fail: a sync model call on the loop is caught,
    # and it stalls above the calibrated limit's cap (DELAY * 0.6) whatever the load.
    async def blocking() -> None:
        SlowEmbedder().embed(["blocks the loop"])

    assert await longest_stall(blocking) >= DELAY * 0.9 > DELAY * 0.6


def test_slow_llm_replies_are_not_json():
    assert json.dumps({}) != SlowLLM().complete("x")  # the LLM paths above take the fallback
