from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from semrag import SemanticChunker
from semrag.chunking.boundary import PairModelChunker
from semrag.chunking.boundary.models import encoder_identity
from semrag.chunking.boundary.rules import gap_breaks
from semrag.testing import FakeEmbedder, check_chunks
from semrag.text import WhitespaceTokenizer
from tests.strategies import any_text

TOKENIZER = WhitespaceTokenizer()


def count(text: str) -> int:
    return TOKENIZER.count([text])[0]


def _pair_model(kind: str, window: int):
    import torch

    from semrag.chunking.boundary.models import MFCModel, PSCModel

    torch.manual_seed(window)
    cls = {"psc": PSCModel, "mfc": MFCModel}[kind]
    model = cls(32, proj_dim=8, window=window)
    model.encoder = encoder_identity(EMBEDDER)
    model.eval()
    return model


EMBEDDER = FakeEmbedder(dim=32)
PAIR_MODELS = {(k, w): _pair_model(k, w) for k in ("psc", "mfc") for w in (1, 3)}


configs = st.fixed_dictionaries(
    {
        "buffer_size": st.integers(0, 4),
        "window": st.sampled_from(["centered", "split"]),
        "pooling": st.sampled_from(["mean", "concat"]),
        "threshold": st.sampled_from(["percentile", "std", "interquartile", "gradient", 0.3]),
        "max_tokens": st.integers(8, 40),
        "min_tokens": st.integers(0, 8),
    }
)


@given(text=any_text, config=configs, overlap=st.booleans())
def test_chunks_tile_the_text_and_respect_the_cap(text, config, overlap):
    overlap_tokens = config["max_tokens"] // 4 if overlap else 0
    chunker = SemanticChunker(
        FakeEmbedder(dim=32), tokenizer=TOKENIZER, overlap_tokens=overlap_tokens, **config
    )
    chunks = chunker.chunk(text)
    check_chunks(text, chunks, max_tokens=config["max_tokens"], overlapping=overlap, count=count)
    assert chunker.chunk(text) == chunks  # deterministic


@given(
    text=any_text,
    kind=st.sampled_from(["psc", "mfc"]),
    window=st.sampled_from([1, 3]),
    threshold=st.floats(0.05, 0.95),
    rule=st.sampled_from(["threshold", "valley"]),
    max_tokens=st.integers(8, 40),
    min_tokens=st.integers(0, 8),
    overlap=st.booleans(),
)
def test_pair_model_chunks_tile_the_text_and_respect_the_cap(
    text, kind, window, threshold, rule, max_tokens, min_tokens, overlap
):
    overlap_tokens = max_tokens // 4 if overlap else 0
    chunker = PairModelChunker(
        EMBEDDER,
        model=PAIR_MODELS[(kind, window)],
        threshold=threshold,
        rule=rule,
        tokenizer=TOKENIZER,
        max_tokens=max_tokens,
        min_tokens=min_tokens,
        overlap_tokens=overlap_tokens,
    )
    chunks = chunker.chunk(text)
    check_chunks(text, chunks, max_tokens=max_tokens, overlapping=overlap, count=count)
    assert chunker.chunk(text) == chunks  # deterministic
    batched = chunker.chunk_documents([text, text])
    assert [c.text for c in batched] == [c.text for c in chunks] * 2


@given(
    probs=st.lists(st.floats(0.0, 1.0), max_size=40).map(np.asarray),
    threshold=st.floats(0.01, 0.99),
)
def test_valley_breaks_are_one_per_run_of_low_gaps(probs, threshold):
    low = gap_breaks(probs, threshold, "threshold")
    valley = gap_breaks(probs, threshold, "valley")
    assert np.array_equal(low, probs < threshold)
    assert not np.any(valley & ~low)  # a valley is below the threshold
    assert not np.any(valley[1:] & valley[:-1])  # never two neighbouring breaks
    for g in np.flatnonzero(valley):  # no neighbour is lower
        assert all(probs[g] <= probs[h] for h in (g - 1, g + 1) if 0 <= h < probs.size)
    # every maximal run of gaps below the threshold keeps at least one break
    edges = np.flatnonzero(np.diff(np.concatenate([[0], low.astype(int), [0]])))
    for start, stop in zip(edges[::2], edges[1::2], strict=True):
        assert valley[start:stop].any()


@given(texts=st.lists(any_text, max_size=5))
def test_batched_equals_one_by_one(texts):
    chunker = SemanticChunker(FakeEmbedder(dim=32), tokenizer=TOKENIZER, max_tokens=16)
    batched = chunker.chunk_documents(texts)
    single = [c for t in texts for c in chunker.chunk(t)]
    assert batched == single


@pytest.mark.model
@settings(max_examples=25)
@given(text=any_text)
@example(text="\x0800000000:0:0::0:0")  # a leading character the tokenizer skips
def test_cap_holds_under_minilm_word_pieces(text, minilm_tokenizer):
    chunker = SemanticChunker(
        FakeEmbedder(dim=32), tokenizer=minilm_tokenizer, max_tokens=12, overlap_tokens=3
    )
    check_chunks(
        text,
        chunker.chunk(text),
        max_tokens=12,
        overlapping=True,
        count=lambda t: minilm_tokenizer.count([t])[0],
    )


def _words(text: str) -> int:
    return len(text.split())


@given(
    text=any_text,
    length_function=st.sampled_from([len, _words]),
    cap=st.integers(8, 120),
    overlap_share=st.sampled_from([0, 4, 2]),
)
# a piece that would end at a sentence start no later than the piece before it
@example(text="000:. 0000", length_function=len, cap=8, overlap_share=2)
def test_cap_holds_in_the_units_of_a_users_length_function(
    text, length_function, cap, overlap_share
):
    # LangChain measures chunk_size with length_function (characters by default); the cap
    # step cuts between characters and searches for the longest piece that fits.
    overlap = cap // overlap_share if overlap_share else 0
    chunker = SemanticChunker(
        FakeEmbedder(dim=32),
        tokenizer=length_function,
        max_tokens=cap,
        overlap_tokens=overlap,
        threshold=0.5,
    )
    chunks = chunker.chunk(text)
    check_chunks(text, chunks, max_tokens=cap, overlapping=bool(overlap), count=length_function)
    assert all(length_function(c.text) <= cap for c in chunks)
