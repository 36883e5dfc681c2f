"""The cyclic collector is paused while a batch is split, and left as it was after."""

import gc

import pytest

from semrag import SemanticChunker
from semrag._gc import collector_paused, paused_collector
from semrag.testing import FakeEmbedder


@pytest.fixture(autouse=True)
def _collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_the_pause_turns_the_collector_off_and_back_on_even_on_an_error():
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), collector_paused():
        raise ValueError("boom")
    assert gc.isenabled()


def test_a_collector_someone_else_turned_off_stays_off():
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()
    with collector_paused(), collector_paused():  # the inner one leaves the switch alone
        pass
    assert not gc.isenabled()


def test_the_decorated_function_runs_paused_and_keeps_its_name():
    @paused_collector
    def state(x: int) -> tuple[int, bool]:
        return x, gc.isenabled()

    assert state(3) == (3, False) and state.__name__ == "state"
    assert gc.isenabled()


def test_a_chunker_splits_with_the_collector_paused_and_resumes_it():
    seen = []

    def words(text):  # the cap's measure, called while the chunks are made
        seen.append(gc.isenabled())
        return len(text.split())

    chunker = SemanticChunker(FakeEmbedder(), tokenizer=words, max_tokens=8, overlap_tokens=0)
    chunks = chunker.chunk("Cats purr. Cats nap in the sun all day long today. Stocks fell.")
    assert chunks and seen and not any(seen)
    assert gc.isenabled()
