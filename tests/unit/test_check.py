from __future__ import annotations

import asyncio

import pytest

from semrag import Document, SemanticIndex
from semrag.errors import ConfigError
from semrag.postprocess import SPC
from semrag.retrieval import IntentAwareRetriever, RetrieveAndCheck
from semrag.testing import FakeEmbedder

DOCS = [
    Document("ada", "Ada Lovelace wrote the first published program."),
    Document("babbage", "Charles Babbage designed the Analytical Engine in London."),
    Document("bees", "Honey bees dance to share where flowers grow."),
]


@pytest.fixture()
def index():
    idx = SemanticIndex(embedder=FakeEmbedder())
    idx.add_documents(DOCS)
    return idx


class Recorder:
    """Wraps a retriever and records the queries it was asked."""

    def __init__(self, inner):
        self.inner = inner
        self.queries: list[str] = []

    def retrieve(self, query, k=None):
        self.queries.append(query)
        return self.inner.retrieve(query, k=k)

    async def aretrieve(self, query, k=None):
        self.queries.append(query)
        return await self.inner.aretrieve(query, k=k)


def test_missing_element_is_requeried_and_merged(index):
    ret = Recorder(IntentAwareRetriever(index, k=1))
    result = RetrieveAndCheck(ret, SPC(index, k=1)).run("Did Ada Lovelace know Charles Babbage?")
    assert ret.queries[0] == "Did Ada Lovelace know Charles Babbage?"
    assert "Charles Babbage" in ret.queries[1:]
    assert {h.chunk.doc_id for h in result.chunks} >= {"ada", "babbage"}
    added = [h for h in result.chunks if h.provenance[-1].get("step") == "retrieve_and_check"]
    assert added and added[0].provenance[-1]["round"] == 2
    assert "Charles Babbage" not in result.missing


def test_stops_when_nothing_is_missing(index):
    ret = Recorder(IntentAwareRetriever(index, k=1))
    result = RetrieveAndCheck(ret, SPC(index, k=1)).run("Honey bees dance")
    assert result.stop_reason == "covered"
    assert len(result.rounds) == 1 and ret.queries == ["Honey bees dance"]


def test_stops_after_max_rounds(index):
    class Alternating:
        """Returns a different document every call, so every round adds evidence."""

        def __init__(self):
            self.calls = 0

        def retrieve(self, query, k=None):
            doc = DOCS[self.calls % len(DOCS)].id
            self.calls += 1
            return index.search(index.document(doc).text, k=1)

        async def aretrieve(self, query, k=None):
            return self.retrieve(query, k)

    ret = Alternating()
    result = RetrieveAndCheck(ret, SPC(index, k=1), max_rounds=2).run("Who is Zebulon Quux?")
    assert result.missing and "Zebulon Quux" in result.missing
    assert result.stop_reason == "max_rounds"
    assert len(result.rounds) == 2


def test_stops_when_a_round_adds_nothing(index):
    ret = IntentAwareRetriever(index, k=1)
    result = RetrieveAndCheck(ret, SPC(index, k=1), max_rounds=3).run("Who is Zebulon Quux?")
    assert result.stop_reason in ("no new evidence", "max_rounds")
    assert len(result.rounds) <= 3
    meta = result.to_metadata()
    assert meta["rounds"][0]["round"] == 1 and meta["stop_reason"] == result.stop_reason


def test_async_equals_sync(index):
    q = "Did Ada Lovelace know Charles Babbage?"
    loop = RetrieveAndCheck(IntentAwareRetriever(index, k=1), SPC(index, k=1))
    sync = loop.run(q)
    async_ = asyncio.run(loop.arun(q))
    assert [h.chunk for h in sync.chunks] == [h.chunk for h in async_.chunks]
    assert sync.stop_reason == async_.stop_reason and sync.missing == async_.missing
    assert [h.chunk for h in loop.retrieve(q, k=1)] == [sync.chunks[0].chunk]


def test_bad_arguments(index):
    spc = SPC(index)
    with pytest.raises(ConfigError, match="RetrieveAndCheck: max_rounds=0 is not"):
        RetrieveAndCheck(IntentAwareRetriever(index), spc, max_rounds=0)
    with pytest.raises(ConfigError, match="RetrieveAndCheck: retriever="):
        RetrieveAndCheck(object(), spc)


def test_follow_ups_leave_out_what_the_evidence_already_covers(index):
    # The evidence covers Ada Lovelace; the follow-ups for what is missing must not name
    # her again (that steered the search back to the document already found).
    ada = index.search("Ada Lovelace wrote the first published program", k=1)
    assert ada[0].chunk.doc_id == "ada"
    spc = SPC(index, k=1)
    audit = spc.audit_coverage("What did Ada Lovelace write, and how do honey bees dance?", ada)
    assert "Ada Lovelace" not in audit.missing and audit.follow_up_queries
    assert all("Ada" not in q for q in audit.follow_up_queries)
    result = RetrieveAndCheck(IntentAwareRetriever(index, k=1), spc, max_rounds=2).run(
        "What did Ada Lovelace write, and how do honey bees dance?"
    )
    assert {h.chunk.doc_id for h in result.chunks} == {"ada", "bees"}


def test_a_retriever_of_ones_own_is_a_retriever_the_loop_and_iar_take(index):
    from semrag.postprocess import SPC
    from semrag.retrieval import IntentAwareRetriever, RetrieveAndCheck, Retriever

    class Mine:  # a user's retriever: two methods, no base class
        def retrieve(self, query, *, k=None):
            return index.search(query, k or 3)

        async def aretrieve(self, query, *, k=None):
            return self.retrieve(query, k=k)

    mine = Mine()
    assert isinstance(mine, Retriever) and not isinstance(object(), Retriever)
    result = RetrieveAndCheck(mine, SPC(index), max_rounds=2).run("Who designed the engine?")
    assert result.chunks and result.rounds[0].queries == ("Who designed the engine?",)
    hits = IntentAwareRetriever(index, k=2, extended=mine).retrieve("Who designed the engine?")
    assert hits and all("extended" in h.channel_scores for h in hits[:1])
